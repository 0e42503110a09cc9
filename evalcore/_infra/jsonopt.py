"""JSON given as an option (``--metric '{...}'``, a ``name:key=value`` parameter, a ``--prices`` file): read with a
person's reason when it cannot be, never a traceback.

Python's ``json`` reads nesting recursively (a ``RecursionError`` past about a thousand levels) and refuses
integers of more than 4,300 digits with a bare ``ValueError``; both are usage errors here, and so is anything
nested more than ``MAX_DEPTH`` deep (which the code reading the value would walk recursively too).
"""

from __future__ import annotations

import json
from typing import Any, Final

from evalcore.errors import UsageError

__all__ = ["MAX_DEPTH", "NOT_JSON", "json_option", "shown"]

#: The deepest an option's JSON may nest (lists and objects inside one another).
MAX_DEPTH = 100


#: What ``json_option(..., text_if_not_json=True)`` gives for a text that is not JSON at all.
NOT_JSON: Final = object()


def shown(text: str, length: int = 60) -> str:
    """``text`` as an error quotes it: cut to ``length`` characters."""
    return text if len(text) <= length else text[: length - 3] + "..."


def json_option(text: str, what: str, *, text_if_not_json: bool = False) -> Any:
    """``text`` read as JSON. A ``UsageError`` starting with ``what`` when it is not JSON (unless
    ``text_if_not_json``: then ``NOT_JSON``), is nested more than ``MAX_DEPTH`` deep, or holds a number of more
    than 4,300 digits."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if text_if_not_json:
            return NOT_JSON
        raise UsageError(f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise UsageError(f"{what} is nested more than {MAX_DEPTH} deep") from None
    except ValueError:  # json's only other: an integer past Python's digit limit
        raise UsageError(f"{what} holds a number of more than 4,300 digits") from None
    _check_depth(value, what)
    return value


def _check_depth(value: Any, what: str) -> None:
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UsageError(f"{what} is nested more than {MAX_DEPTH} deep")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
