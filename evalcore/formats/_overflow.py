"""Numbers too large for a float (``1e999``): the parser's hook that notices them, and the remark on their record.

Python's JSON parser reads such a number as infinity, which JSON has no way to write: the evalcore and ragas
formats would write it back as ``Infinity`` (not JSON), the others as ``null``. The record is read all the same,
with a warning naming the field, so that this is never silent. ``NaN`` and ``Infinity`` written as such (ragas
writes ``NaN``) are not numbers the parser overflows on: they are read as they are, with no remark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Overflow", "Remark", "finite_float", "overflow_remark"]

_INFINITY = float("inf")


class Overflow(Exception):
    """A number too large for a float, met by the parser (``finite_float``): its text is ``literal``."""

    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal


def finite_float(literal: str) -> float:
    """The parser's ``parse_float``: the number, or ``Overflow`` when it is too large for a float."""
    number = float(literal)
    if number == _INFINITY or number == -_INFINITY:
        raise Overflow(literal)
    return number


@dataclass(frozen=True)
class Remark:
    """A warning about a record read all the same: where in it (a field path, or None), and what."""

    field: str | None
    message: str


def overflow_remark(value: Any, literal: str) -> Remark:
    """The remark on a record (``value``, read with infinity in place) holding a number that overflows (``literal``,
    the first such)."""
    shown = literal if len(literal) <= 24 else f"{literal[:12]}...{literal[-8:]}"
    message = (
        f"the number {shown} is too large for a float (beyond 1.8e308): read as infinity, which JSON cannot "
        "write (the evalcore and ragas formats write it as Infinity, the others as null)"
    )
    return Remark(_first_infinity(value), message)


def _first_infinity(value: Any) -> str | None:
    """The path of the first infinite number in ``value`` (None: the value itself, or none)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and item in (_INFINITY, -_INFINITY):
            return path or None
        if isinstance(item, dict):
            stack.extend((child, f"{path}.{key}".lstrip(".")) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None
