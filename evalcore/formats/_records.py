"""Small helpers shared by the format modules: field access with clear errors, JSON args."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from evalcore.errors import RecordError
from evalcore.formats.jsonio import loads
from evalcore.schema import LabelledSession, Session

__all__ = [
    "CallNames",
    "build_session",
    "drop_none",
    "dump_args",
    "expect_dict",
    "expect_list",
    "expect_str",
    "load_args",
    "memo",
]


class CallNames:
    """The tool names of the calls read so far, to name the results that follow them by call id.

    Calls sharing an id (parallel calls some providers give one id) name their results in the order the
    results come, as ``evalcore.schema.tool_links`` pairs them: the first result of the id is named after the
    first call, the second after the second (a plain ``{id: name}`` map named both after the last call).
    """

    def __init__(self) -> None:
        self._waiting: dict[str, list[str]] = {}
        self._last: dict[str, str] = {}

    def call(self, call_id: str, name: str) -> None:
        """A call ``call_id`` of tool ``name`` was read."""
        self._waiting.setdefault(call_id, []).append(name)
        self._last[call_id] = name

    def result(self, call_id: str) -> str | None:
        """The tool name of the result naming ``call_id`` (the first call of that id not named yet; once all
        are, the last one's), ``None`` for an id no call had."""
        waiting = self._waiting.get(call_id)
        return waiting.pop(0) if waiting else self._last.get(call_id)


def expect_dict(value: Any, field: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else a ``RecordError`` naming ``field``."""
    if not isinstance(value, dict):
        raise RecordError(f"expected an object, got {_kind(value)}", field)
    return value


def expect_list(value: Any, field: str) -> list[Any]:
    """``value`` if it is a JSON array, else a ``RecordError`` naming ``field``."""
    if not isinstance(value, list):
        raise RecordError(f"expected an array, got {_kind(value)}", field)
    return value


def expect_str(value: Any, field: str, *, optional: bool = False) -> Any:
    """``value`` if it is a string (or null when ``optional``), else a ``RecordError``."""
    if isinstance(value, str) or (optional and value is None):
        return value
    raise RecordError(f"expected a string, got {_kind(value)}", field)


def wrapped_list(value: Any) -> list[Any] | None:
    """The messages of ``{"messages": [...]}`` or of a bare list, as given; ``None`` when ``value`` is neither
    or holds none."""
    if isinstance(value, dict):
        value = value.get("messages")
    return value if isinstance(value, list) and value else None


def named_call_in(value: Any, field: str, args_key: str = "args") -> tuple[dict[str, Any], dict[str, Any]]:
    """A tool call given as ``{name, <args_key>, id?}`` (ragas, LangChain ``tool_calls``, τ²-bench): the canonical
    call dict (its arguments an object, ``{}`` when missing or null; its id when it has one) and the record read."""
    c = expect_dict(value, field)
    if not isinstance(c.get("name"), str):
        raise RecordError("missing tool name" if c.get("name") is None else "expected a string", f"{field}.name")
    args = expect_dict(c[args_key] if c.get(args_key) is not None else {}, f"{field}.{args_key}")
    call: dict[str, Any] = {"name": c["name"], "args": args}
    if c.get("id"):
        call["id"] = expect_str(c["id"], f"{field}.id")
    return call, c


def memo(metadata: dict[str, Any], ns: str, where: str = "metadata") -> dict[str, Any]:
    """``metadata[ns]``: what format ``ns`` kept of a value to write it back the way it came.

    An object, or ``{}`` when there is none. Anything else (a memo edited by hand, or a file of
    ours whose metadata says odd things) is a ``RecordError`` naming the field ``where.ns``: a
    writer never fails on it with anything but a clear problem.
    """
    value = metadata.get(ns)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordError(f"expected an object (what the {ns} format keeps to write it back), got {_kind(value)}",
                          f"{where}.{ns}")  # fmt: skip
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def load_args(raw: Any, field: str) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call arguments given as a JSON string (or an object).

    Returns the argument object and the original string when writing the object back
    would not reproduce it byte for byte (so that writers can give it back unchanged).
    Arguments that are JSON text of a JSON string holding an object (double-encoded, common
    in real fine-tuning files) give that inner object. Arguments that are no object at all
    (a list, a number, text that is no JSON) give ``{}`` and are kept only as the string.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        raise RecordError(f"expected a JSON string or an object, got {_kind(raw)}", field)
    parsed, depth = _decode_args(raw)
    if depth != 1:
        return parsed, raw
    try:
        same = json.dumps(parsed, ensure_ascii=False) == raw
    except (RecursionError, ValueError):  # nested too deep to write back: validation reports it
        same = False
    return parsed, None if same else raw


def _decode_args(raw: str) -> tuple[dict[str, Any], int]:
    """The argument object ``raw`` stands for, and how many times it was JSON-encoded (0: none).

    Text that is no JSON (or JSON that evalcore refuses, a lone surrogate say) and JSON of
    anything but an object or a string holding one stand for no arguments (``{}``, depth 0).
    """
    try:
        parsed = loads(raw)
    except json.JSONDecodeError:
        return {}, 0
    if isinstance(parsed, dict):
        return parsed, 1
    if isinstance(parsed, str):
        try:
            inner = loads(parsed)
        except json.JSONDecodeError:
            return {}, 0
        if isinstance(inner, dict):
            return inner, 2
    return {}, 0


def dump_args(args: dict[str, Any], raw: str | None) -> str:
    """Tool-call arguments as a JSON string: ``raw`` when it still says the same, else fresh.

    Arguments that came double-encoded and were edited since are written double-encoded again.
    """
    if raw is not None:
        if not isinstance(raw, str):
            raise RecordError(f"expected the original arguments as a string, got {_kind(raw)}", "arguments")
        decoded, depth = _decode_args(raw)
        if decoded == args:
            return raw
        if depth == 2:
            return json.dumps(json.dumps(args, ensure_ascii=False), ensure_ascii=False)
    return json.dumps(args, ensure_ascii=False)


def drop_none(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without its ``None`` values."""
    return {k: v for k, v in data.items() if v is not None}


_TYPE_TAGS = {"str", "int", "float", "bool", "list", "dict", "none"}


def _is_type_tag(part: str) -> bool:
    # pydantic names the member of a union it tried ("str", "list[dict[str,any]]"): not a field
    return part in _TYPE_TAGS or "[" in part or "-" in part


def build_session(data: dict[str, Any]) -> Session:
    """Validate canonical session data, turning a pydantic error into a ``RecordError``."""
    try:
        if "labels" in data:  # (the evalcore format's: what people answered about it, carried with it)
            return LabelledSession.model_validate(data)
        return Session.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        loc = [p for p in error["loc"] if isinstance(p, int) or not _is_type_tag(str(p))]
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        raise RecordError(error["msg"], field or None) from exc
