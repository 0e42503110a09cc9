"""OpenAI Responses API shapes as Open Responses items, read by the ``open-responses`` format.

A response object (``{"object": "response", "output": [...items], ...}``) is a conversation: its
``instructions`` (a system message), the ``input`` when it was logged with it (a string is one user
message; a list holds items), then its output items. A log of streaming events (one event a
line: ``response.created``, ``response.output_item.done``, ``response.completed``, deltas) is
one conversation too: the items of ``response.output_item.done`` in order (or, for a response
whose items were not streamed, the output of its ``response.completed``); deltas are ignored.

Nothing here builds a session: each shape becomes a list of items, the name of each item in
problems (``output[2]``, ``item``), and the session's other data (its id, model, usage, and what
the response said beyond its items, under ``metadata["responses_api"]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._records import expect_dict, expect_list

__all__ = ["NS", "EventLog", "Items", "is_event", "is_response", "response_items"]

NS = "responses_api"
#: Events that end a response, carrying it whole.
_FINAL = {"response.completed", "response.incomplete", "response.failed"}
_FIELDS_TAKEN = ("output", "input", "instructions")


def is_response(value: Any) -> bool:
    """Whether ``value`` is a Responses API response object."""
    return isinstance(value, dict) and value.get("object") == "response" and isinstance(value.get("output"), list)


def is_event(value: Any) -> bool:
    """Whether ``value`` is one event of a Responses API stream."""
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if not isinstance(kind, str):
        return False
    if kind.startswith("response."):
        return any(k in value for k in ("response", "item", "sequence_number", "item_id", "delta"))
    return kind == "error" and "sequence_number" in value


@dataclass
class Items:
    """Items read out of one shape: each with its line and its name in problems, and session data."""

    items: list[Any] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def add(self, item: Any, line: int, name: str) -> None:
        self.items.append(item)
        self.lines.append(line)
        self.names.append(name)


def _prompt(items: Items, value: Any, line: int, name: str, role: str) -> None:
    """``instructions`` or ``input``: a string is one message; a list holds items."""
    if value is None or value == "":
        return
    if isinstance(value, str):
        items.add({"type": "message", "role": role, "content": value}, line, name)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            items.add(item, line, f"{name}[{i}]")
    else:
        raise RecordError("expected a string or a list of items", name)


def _session_data(response: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {NS: kept}
    if isinstance(response.get("model"), str):
        metadata["model"] = response["model"]
    if isinstance(response.get("usage"), dict):
        metadata["usage"] = response["usage"]
    data: dict[str, Any] = {"metadata": metadata}
    if isinstance(response.get("id"), str):
        data["session_id"] = response["id"]
    return data


def response_items(response: dict[str, Any], line: int = 0) -> Items:
    """A response object's items: instructions, the logged input, then its output."""
    items = Items()
    _prompt(items, response.get("instructions"), line, "instructions", "system")
    _prompt(items, response.get("input"), line, "input", "user")
    for i, item in enumerate(expect_list(response.get("output"), "output")):
        items.add(item, line, f"output[{i}]")
    items.data = _session_data(response, {k: v for k, v in response.items() if k not in _FIELDS_TAKEN})
    return items


class EventLog:
    """The events of one stream log, collected into items as they are fed."""

    def __init__(self) -> None:
        self.found = Items()
        self.responses: list[dict[str, Any]] = []
        self.errors: list[Any] = []
        self._streamed = 0  # items streamed for the response under way
        self._started = False

    def feed(self, event: dict[str, Any], line: int) -> None:
        """Take one event; a malformed one raises ``RecordError`` (its own problem, on its line)."""
        kind = event.get("type")
        if kind == "response.output_item.done":
            self.found.add(expect_dict(event.get("item"), "item"), line, "item")
            self._streamed += 1
        elif kind == "response.created":
            response = expect_dict(event.get("response"), "response")
            if not self._started:
                _prompt(self.found, response.get("instructions"), line, "response.instructions", "system")
                _prompt(self.found, response.get("input"), line, "response.input", "user")
            self._started = True
            self._streamed = 0
        elif kind in _FINAL:
            response = expect_dict(event.get("response"), "response")
            if not self._streamed:  # its items were not streamed: they are in the response
                for i, item in enumerate(expect_list(response.get("output"), "response.output")):
                    self.found.add(item, line, f"response.output[{i}]")
            self.responses.append({k: v for k, v in response.items() if k not in _FIELDS_TAKEN})
            self._streamed = 0
        elif kind == "error":
            self.errors.append(event)

    def items(self) -> Items:
        """The items collected, with the session's data."""
        kept: dict[str, Any] = {"events": True, "responses": self.responses}
        if self.errors:
            kept["errors"] = self.errors
        last = self.responses[-1] if self.responses else {}
        self.found.data = _session_data(last, kept)
        if self.responses and isinstance(self.responses[0].get("id"), str):
            self.found.data["session_id"] = self.responses[0]["id"]
        return self.found
