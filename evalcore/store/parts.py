"""A large session's page index: its messages cut into parts, so that Review reads one page of turns.

A session of more than ``PAGED_MESSAGES`` messages is stored whole in ``sessions.data`` (every other reader —
metrics, export, diff, history — reads it as before) and, beside it, in rows of ``session_parts``:

- part 0, the *header*: the session without its messages and turn truth (``data``), and what the page needs of
  the whole conversation (``truth``: the ``Facts``: counts, every turn's weight, the final answer, the turn truth
  beyond the last turn);
- parts 1.., the messages in order, about ``PART_MESSAGES`` a part, cut where a turn begins when one can be
  (``data``: a JSON array of messages), each with the turns of its first and last message (``turn_lo``,
  ``turn_hi``; -1 before the first user message) and the file's truth of the turns that begin in it (``truth``).

The parts are written with ``data``, in the same transaction, by an import and a re-import (never by a
reviewer's save: edits live in ``edits`` and are laid over both). Plain values only: an import's reader process
builds them (``rows.row_for``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from evalcore.schema import Message, Session, TurnTruth
from evalcore.schema.session import last_answer

__all__ = ["PAGED_MESSAGES", "PART_MESSAGES", "Facts", "Part", "parts_of", "read_facts", "read_messages"]

#: Sessions of more messages than this keep a page index (``session_parts``).
PAGED_MESSAGES = 2_000
#: About this many messages a part (a part ends where a turn begins once it holds this many; a turn longer than
#: four times this is cut inside).
PART_MESSAGES = 500

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


#: One row of ``session_parts`` without its session: ``(turn_lo, turn_hi, data, truth)``; its number is its place.
Part = tuple[int, int, str, str]


@dataclass
class Facts:
    """What a page needs of the whole conversation, kept in the header part (the file's, before edits)."""

    parts: int  # how many message parts follow the header
    turns: int
    messages: int
    tool_calls: int
    weights: list[float | None] = field(default_factory=list)  # the file's weight of each turn ([]: none set)
    final_answer: str | None = None
    truth: int = 0  # len(turn_truth) in the file
    extra: list[dict[str, Any]] = field(default_factory=list)  # the file's turn_truth beyond the last turn


def parts_of(session: Session) -> tuple[Part, ...]:
    """The page index of ``session`` (``()`` for a session of at most ``PAGED_MESSAGES`` messages)."""
    messages = session.messages
    if len(messages) <= PAGED_MESSAGES:
        return ()
    turn_truth = session.turn_truth
    cuts: list[tuple[int, int, int, int]] = []  # (start, end, turn_lo, turn_hi)
    start, turn = 0, -1
    lo = 0 if messages[0].role == "user" else -1
    for i, message in enumerate(messages):
        opens = message.role == "user"
        size = i - start
        if size and (size >= PART_MESSAGES * 4 or (opens and size >= PART_MESSAGES)):
            cuts.append((start, i, lo, turn))
            start, lo = i, turn + 1 if opens else turn
        if opens:
            turn += 1
    cuts.append((start, len(messages), lo, turn))
    n_turns = turn + 1
    parts: list[Part] = []
    for start, end, lo, hi in cuts:
        data = _MESSAGES.dump_json(messages[start:end], exclude_defaults=True).decode()
        first = lo if messages[start].role == "user" else lo + 1  # the first turn that begins in it
        truth = {
            str(t): turn_truth[t].model_dump(mode="json", exclude_defaults=True)
            for t in range(max(first, 0), min(hi + 1, len(turn_truth)))
        }
        parts.append((lo, hi, data, _dumps(truth)))
    weights = [t.weight for t in turn_truth[:n_turns]]
    facts = Facts(
        parts=len(parts),
        turns=n_turns,
        messages=len(messages),
        tool_calls=len(session.tool_calls()),
        weights=weights + [None] * (n_turns - len(weights)) if any(w is not None for w in weights) else [],
        final_answer=last_answer(messages),
        truth=len(turn_truth),
        extra=[t.model_dump(mode="json", exclude_defaults=True) for t in turn_truth[n_turns:]],
    )
    header = session.model_dump_json(exclude={"provenance", "messages", "turn_truth"}, exclude_defaults=True)
    return ((-1, -1, header, _dumps(facts.__dict__)), *parts)


def read_facts(text: str) -> Facts:
    """The header part's ``Facts`` from its stored JSON."""
    return Facts(**json.loads(text))


def read_messages(value: Any) -> list[Message]:
    """A part's messages from its parsed JSON."""
    return _MESSAGES.validate_python(value)


def truth_of(value: dict[str, Any]) -> TurnTruth:
    """A turn's truth from its stored JSON."""
    return TurnTruth.model_validate(value)


def _dumps(value: Any) -> str:
    # NaN and infinities as the session's JSON writes them (the store's ``jsontext.loads`` reads them back).
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def page_messages(parts: list[tuple[int, Any]], first: int, count: int) -> tuple[list[Message], list[int]]:
    """The messages of turns ``first`` to ``first + count`` (and, when ``first`` is 0, those before the first
    turn) out of ``parts`` (``(turn_lo, parsed data)`` of the parts that hold them, in order), with the turn of
    each (-1: before the first turn)."""
    messages: list[Message] = []
    turns: list[int] = []
    end = first + count
    for turn_lo, data in parts:
        turn = turn_lo - 1 if data and data[0].get("role") == "user" else turn_lo
        keep: list[Any] = []
        for value in data:
            if value.get("role") == "user":
                turn += 1
            if first <= turn < end or (turn == -1 and first == 0):
                keep.append(value)
                turns.append(turn)
        messages += read_messages(keep)
    return messages, turns
