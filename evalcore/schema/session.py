"""Sessions (one conversation with its ground truth) and turns (views over them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from evalcore.schema.labels import Labels
from evalcore.schema.message import Message, ToolCall

__all__ = [
    "SCHEMA_VERSION",
    "STATUSES",
    "TRUTH_FIELDS",
    "ContextChunk",
    "LabelledSession",
    "Provenance",
    "Session",
    "Status",
    "Turn",
    "ToolLinks",
    "TurnTruth",
    "Unlinked",
    "labels_of",
    "tool_links",
]

#: Version of the evalcore JSON shape; bump whenever a stored shape changes.
SCHEMA_VERSION = 1

Status = Literal["todo", "in_progress", "approved", "rejected", "flagged"]
STATUSES: tuple[str, ...] = ("todo", "in_progress", "approved", "rejected", "flagged")


class ContextChunk(BaseModel):
    """A retrieved (or expected) chunk of context, as Databricks defines it."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    content: str | None = None
    doc_uri: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class TurnTruth(BaseModel):
    """Ground truth for one turn (a Gaussia ``Batch``'s reference side).

    The i-th entry of ``Session.turn_truth`` belongs to the turn opened by the i-th user message.
    """

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    qa_id: str | None = None
    ground_truth: str | None = None
    observation: str | None = None
    weight: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # NaN is "not a finite number", not "< 0"
    expected_tool_usage: dict[str, Any] | None = None
    logprobs: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Provenance(BaseModel):
    """Where a session came from: file, format, line and 0-based position."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    source: str | None = None
    format: str | None = None
    line: int | None = None
    position: int | None = None


class Session(BaseModel):
    """One conversation, with every session-level field any supported format has."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    session_id: str | None = None
    assistant_id: str | None = None
    language: str | None = None
    context: str | None = None
    messages: list[Message] = Field(default_factory=list)
    # Ground truth for the whole session.
    goal: str | None = None
    reference: str | None = None
    reference_tool_calls: list[ToolCall] | None = None
    rubrics: dict[str, str] | None = None
    reference_topics: list[str] | None = None
    expected_facts: list[str] | None = None
    guidelines: list[str] | dict[str, list[str]] | None = None
    retrieved_context: list[ContextChunk] | None = None
    expected_retrieved_context: list[ContextChunk] | None = None
    # Ground truth per turn, aligned with the user messages (``turns`` in files written before 0.2).
    turn_truth: list[TurnTruth] = Field(default_factory=list, validation_alias=AliasChoices("turn_truth", "turns"))
    # Review and bookkeeping.
    tags: list[str] = Field(default_factory=list)
    status: Status = "todo"
    scores: dict[str, Any] = Field(default_factory=dict)
    provenance: Provenance | None = None
    trace: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    # (21 fields: an instance's ``__dict__`` of 22 takes twice the memory, a cost every session read would pay.
    # What only some sessions carry goes on a subclass: ``LabelledSession``.)

    def n_turns(self) -> int:
        """The number of turns (user messages)."""
        return sum(1 for m in self.messages if m.role == "user")

    def turns(self) -> list[Turn]:
        """The conversation's turns: each opens at a user message and runs to the next one, with its ground truth.

        Messages before the first user message (system prompt, greetings) form no turn;
        ``preamble`` returns them.
        """
        turns: list[Turn] = []
        current: list[Message] | None = None
        for message in self.messages:
            if message.role == "user":
                current = [message]
                index = len(turns)
                truth = self.turn_truth[index] if index < len(self.turn_truth) else None
                turns.append(Turn(index, current, truth))
            elif current is not None:
                current.append(message)
        return turns

    def preamble(self) -> list[Message]:
        """The messages before the first user message."""
        for i, message in enumerate(self.messages):
            if message.role == "user":
                return self.messages[:i]
        return list(self.messages)

    def messages_with_context(self) -> list[Message]:
        """The messages, with the session's ``context`` as a first system message when none is there.

        For formats whose only place for background context is a system message.
        """
        if self.context and not any(m.role == "system" for m in self.preamble()):
            return [Message(role="system", content=self.context), *self.messages]
        return list(self.messages)

    def tool_calls(self) -> list[ToolCall]:
        """Every tool call the assistant made, in order."""
        return _assistant_calls(self.messages)

    def final_answer(self) -> str | None:
        """The text of the last assistant message that has text, if any."""
        return last_answer(self.messages)

    def has_ground_truth(self) -> bool:
        """Whether a reviewer (or the file) gave the session any ground truth, for it or for a turn."""
        if any(getattr(self, name) for name in TRUTH_FIELDS):
            return True
        return any(
            t.ground_truth or t.observation or t.weight is not None or t.expected_tool_usage for t in self.turn_truth
        )

    def reference_answer(self) -> str | None:
        """The session's reference answer, else the last turn's ground truth (what formats with one
        reference per session write)."""
        if self.reference is not None:
            return self.reference
        return self.turn_truth[-1].ground_truth if self.turn_truth and self.turn_truth[-1].ground_truth else None


class LabelledSession(Session):
    """A session with the labels the evalcore format carries (``evalcore.schema.labels``): what people answered about
    it, the gold, the reviewers' comments. Read from a file of that format when its record has them, and made by an
    export in it; the store keeps them apart from the session (``evalcore.store.carried``)."""

    labels: Labels | None = None


def labels_of(session: Session) -> Labels | None:
    """The labels ``session`` carries (a ``LabelledSession``'s), else None."""
    return session.labels if isinstance(session, LabelledSession) else None


#: The session-level ground truth a reviewer edits (besides per-turn truth, status and tags).
TRUTH_FIELDS = (
    "goal",
    "reference",
    "reference_tool_calls",
    "rubrics",
    "reference_topics",
    "expected_facts",
    "guidelines",
    "expected_retrieved_context",
)


class Turn:
    """A view over one turn of a session: the user message, what followed, its ground truth."""

    __slots__ = ("_truth", "index", "messages")

    def __init__(self, index: int, messages: list[Message], truth: TurnTruth | None = None) -> None:
        self.index = index
        self.messages = messages
        self._truth = truth

    def __repr__(self) -> str:
        return f"Turn(index={self.index}, messages={len(self.messages)}, truth={self._truth!r})"

    @property
    def truth(self) -> TurnTruth:
        """The turn's ground truth (empty when the session has none for it)."""
        if self._truth is None:
            self._truth = TurnTruth()
        return self._truth

    @property
    def query(self) -> str:
        """The user's text that opened the turn."""
        return self.messages[0].text

    @property
    def answer(self) -> str | None:
        """The last assistant text of the turn (its final answer), if any."""
        return last_answer(self.messages)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the assistant made during the turn, in order."""
        return _assistant_calls(self.messages)

    def tool_results(self) -> list[tuple[ToolCall, Message | None]]:
        """Each call of the turn with its result, linked by id, else by order."""
        return link_tool_results(self.messages)


def _assistant_calls(messages: list[Message]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for message in messages:  # a plain loop: scoring calls this for every session of a run
        if message.tool_calls and message.role == "assistant":
            calls += message.tool_calls
    return calls


def last_answer(messages: list[Message]) -> str | None:
    """The text of the last assistant message that has text, if any."""
    for message in reversed(messages):
        if message.role == "assistant" and message.text:
            return message.text
    return None


def call_ids(messages: list[Message]) -> tuple[dict[int, str], dict[int, str]]:
    """Ids for writers whose format needs them: each call's id, or ``call_N`` when it has none.

    Returns two maps keyed by ``id()`` of the objects: calls to their id, and tool
    messages to the id of the call they answer.
    """
    for_calls: dict[int, str] = {}
    for_results: dict[int, str] = {}
    for n, (call, result) in enumerate(link_tool_results(messages)):
        call_id = call.id or f"call_{n}"
        for_calls[id(call)] = call_id
        if result is not None:
            for_results[id(result)] = result.tool_call_id or call_id
    return for_calls, for_results


def link_tool_results(messages: list[Message]) -> list[tuple[ToolCall, Message | None]]:
    """Pair every tool call with its tool message, as :func:`tool_links` does (its rules are there)."""
    return tool_links(messages).pairs


#: Why a tool message is linked to no call (``ToolLinks.unlinked``).
Unlinked = Literal["unknown", "answered", "unclaimed"]


@dataclass(frozen=True)
class ToolLinks:
    """The tool calls of a conversation paired with their results, and what could not be paired.

    ``pairs``: every call in order, with its tool message or ``None``. ``unlinked``: the tool messages no call
    claims, by their index in the messages, and why — ``"unknown"``: its ``tool_call_id`` names no call;
    ``"answered"``: every call of that id has a result already; ``"unclaimed"``: it names no call and no call
    waits for a result. ``shared``: the calls whose id another call of the same turn has too (parallel calls
    some providers give one id), keyed by ``id()`` of the call, with how many calls of the turn share it.
    ``duplicates``: each such call after the first, as ``(message index, call index, id, message index and
    call index of the turn's first call with that id)``.
    """

    pairs: list[tuple[ToolCall, Message | None]]
    unlinked: dict[int, Unlinked] = field(default_factory=dict)
    shared: dict[int, int] = field(default_factory=dict)
    duplicates: list[tuple[int, int, str, int, int]] = field(default_factory=list)


def tool_links(messages: list[Message]) -> ToolLinks:
    """Pair every tool call with its tool message.

    - A result that names its call (``tool_call_id``) goes to the first call of that id still waiting for a
      result, in the latest turn that has one: parallel calls sharing an id (made while another call of that
      id still waits, in the same turn) get their results in the order the results come, never swapped; an id
      used again once its call has its result, or in a later turn, names the new call.
    - A result naming no call (no ``tool_call_id``, or an empty one) goes to the first call still waiting,
      whatever its id (first in, first out: formats without ids).
    - A result naming an id no waiting call has goes to the first waiting call that has no id (a call without
      an id cannot say it is another's) unless calls of that id came before (they all have their result: this
      is a second one), else to no call: it is shown on its own, never under another call.

    An empty call id counts as none.
    """
    pairs: list[tuple[ToolCall, Message | None]] = []
    turn_of: list[int] = []  # slot -> the turn of its call
    where: list[tuple[int, int]] = []  # slot -> (message index, call index)
    waiting: dict[int, None] = {}  # slots waiting for a result, in order (a dict: ordered, O(1) removal)
    anonymous: dict[int, None] = {}  # ...those whose call has no id
    by_id: dict[str, list[int]] = {}  # id -> the slots with that id still waiting, in order
    seen: set[str] = set()  # every call id so far
    groups: dict[int, list[int]] = {}  # slot -> the parallel calls sharing its id (one list per group)
    links = ToolLinks(pairs)
    turn = 0
    for i, message in enumerate(messages):
        role = message.role
        if role == "user":
            turn += 1
        elif role == "assistant" and message.tool_calls:
            for j, call in enumerate(message.tool_calls):
                slot = len(pairs)
                pairs.append((call, None))
                turn_of.append(turn)
                where.append((i, j))
                waiting[slot] = None
                if not call.id:
                    anonymous[slot] = None
                    continue
                parallel = [s for s in by_id.get(call.id, ()) if turn_of[s] == turn]
                if parallel:
                    links.duplicates.append((i, j, call.id, *where[parallel[0]]))
                    group = groups.get(parallel[0])
                    if group is None:
                        group = groups[parallel[0]] = [parallel[0]]
                    group.append(slot)
                    groups[slot] = group
                by_id.setdefault(call.id, []).append(slot)
                seen.add(call.id)
        elif role == "tool":
            claimed = _claim(message.tool_call_id, waiting, anonymous, by_id, turn_of, seen)
            if claimed is None:
                if not message.tool_call_id:
                    links.unlinked[i] = "unclaimed"
                else:
                    links.unlinked[i] = "answered" if message.tool_call_id in seen else "unknown"
                continue
            del waiting[claimed]
            anonymous.pop(claimed, None)
            call = pairs[claimed][0]
            if call.id and claimed in by_id.get(call.id, ()):
                by_id[call.id].remove(claimed)
            pairs[claimed] = (call, message)
    for slot, group in groups.items():
        links.shared[id(pairs[slot][0])] = len(group)
    return links


def _claim(
    call_id: str | None,
    waiting: dict[int, None],
    anonymous: dict[int, None],
    by_id: dict[str, list[int]],
    turn_of: list[int],
    seen: set[str],
) -> int | None:
    """The slot a result naming ``call_id`` goes to (see ``tool_links``), or ``None``."""
    if not call_id:
        return next(iter(waiting), None)
    slots = by_id.get(call_id)
    if slots:
        latest = turn_of[slots[-1]]
        first = len(slots) - 1
        while first > 0 and turn_of[slots[first - 1]] == latest:
            first -= 1
        return slots[first]
    if call_id in seen:  # its calls all have their results: a second result of one of them
        return None
    return next(iter(anonymous), None)
