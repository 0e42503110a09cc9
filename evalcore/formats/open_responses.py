"""``open-responses``: Open Responses items and LatticeFlow ``Trace`` JSON.

Items: ``message`` (any role, text parts or a string), ``function_call`` /
``function_call_output`` (linked by ``call_id``, never by ``id``), ``reasoning``
(its text becomes the next assistant message's reasoning), and LatticeFlow's custom task
input and output messages. A record is a Trace (``{"items": [...], "metadata": ...}``)
or a list of items; a file that is one JSON array of items is one session. A LatticeFlow
dataset row is read too: a record whose column (``trace``, or any holding a Trace marked
``"FORMAT": "open_responses"``, as an object or as JSON text) is the conversation; its other
columns are kept, and ``target``, the free-form reference LatticeFlow's scorers use, is the
session's reference answer.

OpenAI Responses API response objects and logs of their streaming events are read too (see
:mod:`evalcore.formats.responses_api`); written back, they are Open Responses traces.

A file of one item a line (or one JSON array of items) is one session; an item that cannot be
read is reported on its own line and the session read from the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._blocks import image_url_of, is_text_block
from evalcore.formats._records import (
    CallNames,
    build_session,
    dump_args,
    expect_dict,
    expect_list,
    expect_str,
    load_args,
    memo,
)
from evalcore.formats.base import Format, Reader, register
from evalcore.formats.jsonio import loads
from evalcore.formats.responses_api import EventLog, Items, is_event, is_response, response_items
from evalcore.schema import Message, Session, block_text
from evalcore.schema import call_ids as session_call_ids

NS = "open_responses"
ITEM_TYPES = {
    "message", "function_call", "function_call_output", "reasoning",
    "custom_task_input_message", "custom_task_output_message",
}  # fmt: skip
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
#: Content-part types of Open Responses messages (a lone message line must use these to be claimed).
_PART_SUFFIXES = ("_text", "refusal", "_image", "_file", "_audio", "_video")
_ITEM_FIELD = re.compile(r"items\[(\d+)\](.*)", re.DOTALL)


def _is_item(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    return isinstance(kind, str) and kind in ITEM_TYPES


def _is_lone_item(value: Any) -> bool:
    """Whether a record on its own (the first of a file) is an Open Responses item.

    The type alone is not enough: an item of a type that has required fields has them, and a
    message's content parts are Open Responses parts (an Anthropic Messages response is also
    ``{"type": "message", "role", "content"}``, with ``text`` blocks and a ``stop_reason``).
    """
    if not _is_item(value):
        return False
    kind = value["type"]
    if kind == "message":
        content = value.get("content")
        parts_ok = isinstance(content, str) or (
            isinstance(content, list)
            and all(isinstance(p, dict) and str(p.get("type", "")).endswith(_PART_SUFFIXES) for p in content)
        )
        return value.get("role") in _ROLES and parts_ok and "stop_reason" not in value
    if kind == "function_call":
        return isinstance(value.get("call_id"), str) and isinstance(value.get("name"), str)
    if kind == "function_call_output":
        return isinstance(value.get("call_id"), str) and "output" in value
    return True


def _as_trace(column: str, value: Any) -> dict[str, Any] | None:
    """``value`` as a serialised Trace, if that is what it is (``trace`` needs no FORMAT mark)."""
    if isinstance(value, str):
        if '"items"' not in value:
            return None
        try:
            value = loads(value)
        except ValueError:
            return None
    marked = isinstance(value, dict) and (value.get("FORMAT") == "open_responses" or column == "trace")
    return value if marked and isinstance(value.get("items"), list) else None


def _trace_column(row: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The column of a LatticeFlow dataset row that holds the conversation's Trace, with the Trace
    (parsed once, when the column holds JSON text): ``trace`` first, else the first marked column."""
    if "items" in row:
        return None  # a Trace itself, not a row
    for column in ("trace", *row):
        trace = _as_trace(column, row.get(column))
        if trace is not None:
            return column, trace
    return None


@register
class OpenResponsesFormat(Format):
    """Open Responses traces."""

    name = "open-responses"
    description = (
        "Open Responses items, LatticeFlow Trace JSON, OpenAI Responses API responses and stream logs "
        "(calls linked by call_id)"
    )
    writable = True

    def kept_truth(self, session: Session) -> frozenset[str]:
        row = session.metadata.get(NS, {}).get("row") if isinstance(session.metadata.get(NS), dict) else None
        return frozenset({"reference"}) if row else frozenset()  # a LatticeFlow row's ``target``

    def carries(self, block: dict[str, Any]) -> bool:
        return str(block.get("type", "")).endswith(_PART_SUFFIXES) or image_url_of(block) is not None

    priority = 15

    def sniff(self, value: Any) -> bool:
        if isinstance(value, dict) and isinstance(value.get("items"), list):
            return value.get("FORMAT") == "open_responses" or not value["items"] or _is_item(value["items"][0])
        if isinstance(value, dict) and _trace_column(value) is not None:
            return True  # a LatticeFlow dataset row (before Databricks, whose rows may have a trace column)
        if isinstance(value, list):
            return bool(value) and _is_item(value[0])
        return is_response(value) or is_event(value) or _is_lone_item(value)

    def parse(self, value: Any) -> Session:
        if isinstance(value, list):
            return _trace_in({"items": value}, bare=True)
        record = expect_dict(value, "record")
        if is_response(record):
            session, failures = items_session(response_items(record))
            if failures:
                raise failures[0][1]
            assert session is not None
            return session
        found = _trace_column(record)
        if found is not None:
            return _row_in(record, *found)
        return _trace_in(record, bare=False)

    def reader(self) -> Reader:
        return _ItemsReader(self.parse)

    def write(self, session: Session) -> Iterable[Any]:
        extras = dict(memo(session.metadata, NS))
        row = extras.pop("row", None)
        if isinstance(row, dict):
            (inner,) = self.write(session.model_copy(update={"metadata": {**session.metadata, NS: extras}}))
            return [_row_out(session, row, inner)]
        items = _items_out(session, expect_list(extras.pop("trailing", None) or [], f"metadata.{NS}.trailing"))
        if extras.pop("items_only", False):
            return items  # one value per item: a .json output is again one flat array of items
        if extras.pop("bare", False):
            return [items]
        trace: dict[str, Any] = {"items": items}
        raw_metadata = extras.pop("metadata", None)
        if raw_metadata is not None and not isinstance(raw_metadata, dict):
            return [trace | {"metadata": raw_metadata} | extras]  # not ours to fix: given back as it came
        metadata = dict(raw_metadata or {})
        if session.session_id is not None and metadata.get("trace_id") != session.session_id:
            metadata["trace_id"] = session.session_id
        if session.tags != (metadata.get("tags") or []):
            metadata["tags"] = session.tags
        if metadata:
            trace["metadata"] = metadata
        return [trace | extras]


class _ItemsReader(Reader):
    """Reads a file whose top-level array (or lines) hold bare items, or stream events, as one session."""

    def __init__(self, parse: Any) -> None:
        super().__init__(parse)
        self._items = Items()
        self._events: EventLog | None = None
        self._line = 0

    def feed(self, value: Any, line: int) -> list[tuple[int, Session]]:
        if is_event(value):
            done = self._close_items()
            if self._events is None:
                self._events, self._line = EventLog(), line
            self._events.feed(value, line)  # a bad event is its own problem; the others are kept
            return done
        # Once a file has started with bare items, any further typed object is an item too.
        if _is_item(value) or (self._items.items and isinstance(value, dict) and ("type" in value or "role" in value)):
            done = self._close_events()
            if not self._items.items:
                self._line = line
            self._items.add(value, line, "")
            return done
        parsed = self._parse(value)  # raises before the held items are touched
        return self.close() + [(line, parsed)]

    def close(self) -> list[tuple[int, Session]]:
        return self._close_items() + self._close_events()

    def _close_items(self) -> list[tuple[int, Session]]:
        if not self._items.items:
            return []
        found, self._items = self._items, Items()
        found.data = {"metadata": {NS: {"items_only": True}}}
        return self._finish(found, self._line)

    def _close_events(self) -> list[tuple[int, Session]]:
        if self._events is None:
            return []
        log, self._events = self._events, None
        return self._finish(log.items(), self._line)

    def _finish(self, found: Items, line: int) -> list[tuple[int, Session]]:
        session, failures = items_session(found, first_line=line)
        self.failures.extend(failures)  # each on its own item's line; the session read from the others
        return [] if session is None else [(line, session)]


def items_session(found: Items, *, first_line: int = 0) -> tuple[Session | None, list[tuple[int, RecordError]]]:
    """The session ``found`` holds, and the problems of the items left out of it.

    An item that cannot be read is left out and reported (on its line, named by its name in
    ``found``); the session is read from the others. ``None`` when no item could be read, or
    when the problem is the session's, not an item's (then reported on ``first_line``).
    """
    items, lines, names = list(found.items), list(found.lines), list(found.names)
    failures: list[tuple[int, RecordError]] = []
    while True:
        if not items and failures:
            return None, failures
        try:
            messages, pending = _items_in(items)
        except RecordError as exc:
            match = _ITEM_FIELD.fullmatch(exc.field or "")
            if match is None:
                failures.append((first_line, exc))
                return None, failures
            k = int(match[1])
            failures.append((lines[k], RecordError(exc.reason, (names[k] + match[2]).lstrip(".") or None)))
            del items[k], lines[k], names[k]
            continue
        data = {**found.data, "messages": messages}
        data["metadata"] = dict(data.get("metadata") or {})
        if pending:
            data["metadata"][NS] = {**data["metadata"].get(NS, {}), "trailing": pending}
        try:
            return build_session(data), failures
        except RecordError as exc:
            failures.append((first_line, exc))
            return None, failures


def _row_in(record: dict[str, Any], column: str, trace: dict[str, Any]) -> Session:
    try:
        session = _trace_in(trace, bare=False)
    except RecordError as exc:  # the trace's fields are named from the row
        raise RecordError(exc.reason, f"{column}.{exc.field}" if exc.field else column) from exc
    columns = {k: None if k == column else v for k, v in record.items()}  # the trace's place kept
    text = isinstance(record[column], str)
    session.metadata.setdefault(NS, {})["row"] = {"column": column, "columns": columns, "text": text}
    if isinstance(columns.get("target"), str):
        session.reference = columns["target"]
    return session


def _row_out(session: Session, row: dict[str, Any], trace: Any) -> dict[str, Any]:
    columns = dict(expect_dict(row.get("columns") or {}, f"metadata.{NS}.row.columns"))
    if session.reference is not None or isinstance(columns.get("target"), str):
        columns["target"] = session.reference  # the reviewer's reference, where LatticeFlow's scorers read it
    column = str(row.get("column") or "trace")
    columns[column] = json.dumps(trace, ensure_ascii=False) if row.get("text") else trace
    return columns


def _trace_in(trace: dict[str, Any], *, bare: bool, items_only: bool = False) -> Session:
    messages, pending = _items_in(expect_list(trace.get("items"), "items"))
    data: dict[str, Any] = {"messages": messages}
    meta: dict[str, Any] = {k: v for k, v in trace.items() if k != "items"}
    if bare:
        meta["bare"] = True
    if items_only:
        meta["items_only"] = True
    if pending:
        meta["trailing"] = pending
    trace_meta = trace.get("metadata")
    if isinstance(trace_meta, dict):
        if trace_meta.get("trace_id") is not None:
            data["session_id"] = str(trace_meta["trace_id"])
        if isinstance(trace_meta.get("tags"), list):
            data["tags"] = [str(t) for t in trace_meta["tags"]]
        if isinstance(trace_meta.get("model"), str):
            data["metadata"] = {"model": trace_meta["model"]}
    if meta:
        data.setdefault("metadata", {})[NS] = meta
    return build_session(data)


def _items_in(items: list[Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Canonical messages from items, and the trailing items we keep but do not model."""
    messages: list[dict[str, Any]] = []
    names = CallNames()
    pending: list[Any] = []  # items we do not model, kept with the message that follows
    for i, item in enumerate(items):
        item = expect_dict(item, f"items[{i}]")
        kind = item.get("type", "message" if "role" in item else None)
        kind = kind if isinstance(kind, str) else None
        where = f"items[{i}]"
        if kind == "message":
            _message_in(item, where, messages)
        elif kind == "function_call":
            call = _call_in(item, where)
            names.call(call["id"], call["name"])
            last = messages[-1] if messages else None
            # A call joins the assistant message before it, unless an item we keep aside stands between.
            if last is None or last["role"] != "assistant" or last.get("_closed") or pending:
                last = {"role": "assistant", "content": None}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append(_output_in(item, where, names))
        elif kind == "reasoning":
            messages.append({"role": "assistant", "reasoning": _reasoning_text(item), "content": None,
                             "metadata": {NS: {"reasoning_item": item}}, "_open": True})  # fmt: skip
        elif kind in ("custom_task_input_message", "custom_task_output_message"):
            role = "user" if kind == "custom_task_input_message" else "assistant"
            messages.append({"role": role, "content": _custom_text(item), "metadata": {NS: {"custom": item}},
                             "_closed": True})  # fmt: skip
        else:
            pending.append(item)
            continue
        if pending:
            messages[-1].setdefault("metadata", {}).setdefault(NS, {})["before"] = pending
            pending = []
    for m in messages:
        m.pop("_open", None)
        m.pop("_closed", None)
    return messages, pending


def _output_in(item: dict[str, Any], where: str, names: CallNames) -> dict[str, Any]:
    call_id = expect_str(item.get("call_id"), f"{where}.call_id")
    output = item.get("output")
    if not isinstance(output, str | list):
        raise RecordError("expected a string or a list of parts", f"{where}.output")
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": output}
    name = names.result(call_id)
    if name is not None:
        message["name"] = name
    _keep(message, item, ("type", "call_id", "output"))
    return message


def _message_in(item: dict[str, Any], where: str, messages: list[dict[str, Any]]) -> None:
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise RecordError(f"unknown role {role!r}; expected user, assistant, system or developer", f"{where}.role")
    content = item.get("content")
    if not isinstance(content, str | list):
        raise RecordError("expected a string or a list of content parts", f"{where}.content")
    last = messages[-1] if messages else None
    if (
        role == "assistant"
        and last is not None
        and last.get("_open")
        and last["content"] is None
        and not last.get("tool_calls")
    ):
        message = last  # the answer that follows a reasoning item
        message.pop("_open")
    else:
        message = {"role": _ROLES[role], "content": None}
        messages.append(message)
    message["content"] = content
    extras = {k: v for k, v in item.items() if k not in ("type", "role", "content")}
    if role == "developer":
        extras["role"] = "developer"
    if "type" not in item:
        extras["no_type"] = True
    # Always noted, so that a writer knows the content's shape came from here.
    message.setdefault("metadata", {}).setdefault(NS, {})["message"] = extras


def _call_in(item: dict[str, Any], where: str) -> dict[str, Any]:
    call_id = expect_str(item.get("call_id"), f"{where}.call_id")
    name = expect_str(item.get("name"), f"{where}.name")
    args, raw = load_args(item.get("arguments"), f"{where}.arguments")
    extras = {k: v for k, v in item.items() if k not in ("type", "call_id", "name", "arguments")}
    if raw is not None:
        extras["arguments"] = raw
    # Always noted (even empty), so that a writer knows the call was read, not made up.
    return {"id": call_id, "name": name, "args": args, "metadata": {NS: extras}}


def _keep(message: dict[str, Any], item: dict[str, Any], handled: tuple[str, ...]) -> None:
    # Always noted (even empty), so that a writer knows the item was read, not made up.
    message["metadata"] = {NS: {k: v for k, v in item.items() if k not in handled}}


# Items made here rather than read: LatticeFlow marks them with an empty id, completed.
_SYNTHETIC = {"id": "", "status": "completed"}


def _items_out(session: Session, trailing: list[Any]) -> list[Any]:
    call_ids, result_ids = session_call_ids(session.messages)
    names = {id(m): f"messages[{i}]" for i, m in enumerate(session.messages)}
    items: list[Any] = []
    for message in session.messages_with_context():
        where = names.get(id(message), "context")
        meta = memo(message.metadata, NS, f"{where}.metadata")
        items.extend(expect_list(meta.get("before") or [], f"{where}.metadata.{NS}.before"))
        custom = meta.get("custom")
        if isinstance(custom, dict) and block_text(_custom_text(custom)) == message.text:
            items.append(custom)
        elif message.role == "tool":
            item: dict[str, Any] = {"type": "function_call_output"}
            item["call_id"] = message.tool_call_id or result_ids.get(id(message), "")
            item["output"] = message.content if message.content is not None else ""
            kept = {k: v for k, v in meta.items() if k != "before"}
            items.append(item | (kept if NS in message.metadata else _SYNTHETIC))
        else:
            items.extend(_assistant_or_message_out(message, meta, call_ids, where))
    return items + trailing


def _custom_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _assistant_or_message_out(
    message: Message, meta: dict[str, Any], call_ids: dict[int, str], where: str
) -> list[Any]:
    items: list[Any] = []
    if message.reasoning is not None:
        raw = meta.get("reasoning_item")
        if isinstance(raw, dict) and _reasoning_text(raw) == message.reasoning:
            items.append(raw)
        else:
            items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": message.reasoning}]})
    from_here = "message" in meta
    empty = message.content is None or (message.content == "" and not from_here)
    if not empty or (message.reasoning is None and not message.tool_calls):
        kept = expect_dict(meta["message"], f"{where}.metadata.{NS}.message") if from_here else _SYNTHETIC
        extras: dict[str, Any] = dict(kept)
        no_type = extras.pop("no_type", False)
        role = extras.pop("role", message.role)
        item = {} if no_type else {"type": "message"}
        item |= {"role": role, "content": _content_out(message, from_here=from_here)}
        items.append(item | extras)
    for i, call in enumerate(message.calls):
        extras = (
            dict(memo(call.metadata, NS, f"{where}.tool_calls[{i}].metadata"))
            if NS in call.metadata
            else dict(_SYNTHETIC)
        )
        raw = extras.pop("arguments", None)
        item = {"type": "function_call", "call_id": call_ids[id(call)], "name": call.name,
                "arguments": dump_args(call.args, raw)}  # fmt: skip
        items.append(item | extras)
    return items


def _reasoning_text(item: dict[str, Any]) -> str:
    summary = item.get("summary")
    content = item.get("content")
    return block_text(summary if isinstance(summary, list) else None) or block_text(
        content if isinstance(content, list) else None
    )


def _content_out(message: Message, *, from_here: bool) -> Any:
    content = message.content
    if from_here and content is not None:
        return content  # read from Open Responses: given back exactly as it came
    if isinstance(content, list) and all(
        isinstance(b, dict) and str(b.get("type", "")).endswith(("_text", "refusal", "_image", "_file", "_video"))
        for b in content
    ):
        return content
    part = "output_text" if message.role == "assistant" else "input_text"
    if isinstance(content, list) and any(image_url_of(b) for b in content):  # another format's images
        return [
            {"type": "input_image", "image_url": url}
            if (url := image_url_of(b)) is not None
            else {"type": part, "text": b["text"]}
            for b in content
            if image_url_of(b) is not None or (is_text_block(b) and isinstance(b.get("text"), str))
        ]
    return [{"type": part, "text": message.text}]
