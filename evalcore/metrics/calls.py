"""A session's tool calls on their own: all the tool-call metrics read.

A metric that reads nothing else (``Metric.reads_calls``) scores a ``SessionCalls``. Given a session, it is
the session's own calls (``SessionCalls.of``); a scoring run whose every metric reads only calls takes them
straight from the JSON the store keeps (``SessionCalls.from_json``), without building the session's ~17
models: a third of the time a scoring worker spent on each session. Both give the metrics the same names
and arguments, so the same results (tested on every sample file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from evalcore.schema import Session

__all__ = ["CALL_REQUIREMENTS", "Call", "CallLike", "SessionCalls"]


class CallLike(Protocol):
    """A tool call as the metrics read it: a ``ToolCall`` or a ``Call``."""

    @property
    def name(self) -> str: ...

    @property
    def args(self) -> dict[str, Any]: ...


class Call(NamedTuple):
    """A tool call read from a session's JSON: its name and arguments."""

    name: str
    args: dict[str, Any]


class SessionCalls(NamedTuple):
    """The tool calls the assistant made, in order, and the reference calls (``None``: the session has none).

    (A named tuple: made for every session a metric scores, and a tuple is made fastest.)"""

    made: Sequence[CallLike]
    reference: Sequence[CallLike] | None

    @classmethod
    def of(cls, session: Session) -> SessionCalls:
        """The session's own calls (its ``ToolCall`` objects)."""
        return cls(session.tool_calls(), session.reference_tool_calls)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionCalls:
        """The calls of a session's JSON form (``Session.model_dump``, defaults left out or not), as ``of`` gives
        them for the session that JSON holds: the calls of assistant messages, an absent ``args`` empty."""
        made: list[CallLike] = []
        for message in data.get("messages") or ():
            calls = message.get("tool_calls")
            if calls and message.get("role") == "assistant":
                made += _calls(calls)
        reference = data.get("reference_tool_calls")
        return cls(made, None if reference is None else _calls(reference))


def _calls(items: list[dict[str, Any]]) -> list[CallLike]:
    return [Call(item["name"], item.get("args") or {}) for item in items]


#: What a metric that reads only calls may need, and how to tell whether the calls have it (as
#: ``REQUIREMENTS`` tells it of the session).
CALL_REQUIREMENTS: dict[str, Callable[[SessionCalls], bool]] = {
    "reference_tool_calls": lambda calls: calls.reference is not None,
}
