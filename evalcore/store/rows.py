"""A session as a row of the sessions table: the columns an import fills, and the text search sees.

Plain values only (the row is pickled from the reader process to the importer): no database code here.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalcore.identity import identity_key
from evalcore.schema import Session, block_text, labels_of
from evalcore.store.parts import Part, parts_of

__all__ = [
    "ROW_COLUMNS",
    "Row",
    "outcomes",
    "row_for",
    "search_text",
    "search_texts",
    "session_key",
    "system_text",
]


def search_text(session: Session) -> str:
    """The text full-text search sees: every message but the system prompt's, each tool call's name and
    arguments, and the ground truth."""
    return _scan(session).search_text


def system_text(session: Session) -> str:
    """The system prompt as search sees it, when asked to: the session's context and its system messages."""
    return _scan(session).system_text


def search_texts(session: Session) -> tuple[str, str]:
    """``search_text`` and ``system_text`` of ``session``, in one pass over its messages."""
    scan = _scan(session)
    return scan.search_text, scan.system_text


def _args_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, default=str)``, the same text, without making an encoder for every
    call's arguments: the C encoder ``json.dumps`` makes for each value, made once (an import encodes every
    call of every session). Without a circular-reference check: arguments read from a file have no cycles."""
    encoder = json.JSONEncoder(ensure_ascii=False, default=str)
    make = getattr(json.encoder, "c_make_encoder", None)  # None where the json module has no C speedups
    if make is None:
        return encoder.encode
    encode = make(
        None, str, json.encoder.encode_basestring, None, encoder.key_separator, encoder.item_separator, False, False,
        True,
    )  # fmt: skip
    return lambda value: "".join(encode(value, 0))


_ARGS_TEXT = _args_encoder()


@dataclass(slots=True)
class _Scanned:
    """What a row takes from a session's messages (``_scan``)."""

    title: str  # the first user message's text, its first 200 characters
    n_turns: int  # user messages
    n_tool_calls: int  # the assistant's calls (``Session.tool_calls``)
    search_text: str
    system_text: str


def _scan(session: Session) -> _Scanned:
    """The texts and counts of a row, in one pass over the messages (an import makes them for every record)."""
    parts: list[str] = []
    system = [session.context] if session.context else []
    calls: list[str] = []
    title: str | None = None
    users = n_calls = 0
    for m in session.messages:
        text = content if type(content := m.content) is str else block_text(content)
        role = m.role
        if role == "system":
            if text:
                system.append(text)
            continue
        if text:
            parts.append(text)
        if role == "user":
            if title is None:
                title = text[:200]
            users += 1
        elif role == "assistant" and m.tool_calls:  # (as ``Session.tool_calls``: the assistant's calls, in order)
            n_calls += len(m.tool_calls)
            for call in m.tool_calls:
                if call.name:
                    calls.append(call.name)
                if call.args:
                    calls.append(_ARGS_TEXT(call.args))
    parts += calls
    if session.goal:
        parts.append(session.goal)
    if session.reference:
        parts.append(session.reference)
    if session.expected_facts:
        parts += [fact for fact in session.expected_facts if fact]
    if session.turn_truth:
        parts += [t.ground_truth for t in session.turn_truth if t.ground_truth]
        parts += [t.observation for t in session.turn_truth if t.observation]
    return _Scanned(title or "", users, n_calls, "\n".join(parts), "\n".join(system))


def session_key(session: Session, source: str) -> str:
    """A session's identity in a dataset (``evalcore.identity``): its ``session_id`` and ``assistant_id``,
    else its file and position."""
    position = session.provenance.position if session.provenance else None
    return identity_key(session.session_id, session.assistant_id, source, position)


#: The sessions-table columns a ``Row`` fills, in the order of ``Row.values`` (the field names of ``Row``).
ROW_COLUMNS = (
    "dataset_id", "key", "session_id", "assistant_id", "title", "status", "tags", "n_turns", "n_messages",
    "n_tool_calls", "source", "format", "position", "line", "data", "content_hash", "search_text", "system_text",
    "has_truth",
)  # fmt: skip


@dataclass(slots=True)
class Row:
    """A session ready for the sessions table: one field per column (``ROW_COLUMNS``), and its tags."""

    dataset_id: int
    key: str
    session_id: str | None
    assistant_id: str | None
    title: str
    status: str
    tags: str  # the tags as a JSON array (the column)
    n_turns: int
    n_messages: int
    n_tool_calls: int
    source: str | None
    format: str | None
    position: int | None
    line: int | None
    data: str  # the session as JSON, without its provenance
    content_hash: str
    search_text: str
    system_text: str
    has_truth: int
    tag_list: tuple[str, ...]  # the tags, one a row of session_tags
    outcomes: tuple[tuple[str, float], ...] = ()  # the scores that came with the data (``outcomes``)
    parts: tuple[Part, ...] = ()  # a large session's page index (``evalcore.store.parts``)
    labels: str | None = None  # the answers and gold that came with the data (``LabelledSession.labels``), as JSON

    def values(self) -> tuple[Any, ...]:
        """The values of ``ROW_COLUMNS``, in order."""
        return (
            self.dataset_id, self.key, self.session_id, self.assistant_id, self.title, self.status, self.tags,
            self.n_turns, self.n_messages, self.n_tool_calls, self.source, self.format, self.position, self.line,
            self.data, self.content_hash, self.search_text, self.system_text, self.has_truth,
        )  # fmt: skip

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by position: half the bytes and time of the default (a dict of field names per row).
        return Row, (*self.values(), self.tag_list, self.outcomes, self.parts, self.labels)


def outcomes(scores: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    """The scores a session came with (``Session.scores``: τ-bench's ``reward``, say) that are numbers, as
    ``(metric, value)`` sorted by metric: the store keeps them as the dataset's imported run
    (``evalcore.store.outcomes``). A number, a true/false (1/0) or ``{"value": number}`` counts; text, lists,
    ``null`` and numbers that are not finite (or not a float) are left out."""
    found = []
    for name, given in scores.items():
        if not name.strip():
            continue
        value = given.get("value") if isinstance(given, dict) else given
        if isinstance(value, bool):
            found.append((name, 1.0 if value else 0.0))
        elif isinstance(value, int | float):
            try:
                number = float(value)
            except OverflowError:  # an integer beyond a float
                continue
            if math.isfinite(number):
                found.append((name, number))
    return tuple(sorted(found))


_NOT_DATA: set[str] = {"provenance", "labels"}  # what of a session its ``data`` column leaves out (never changed)


def row_for(dataset_id: int, source: str, session: Session) -> Row:
    """The sessions-table row of ``session``, with the hash that tells whether it changed."""
    # (The labels that came with it are stored apart from the session: ``evalcore.store.carried``.) The JSON is
    # ``model_dump_json``'s, taken as bytes from the serializer: hashed as they are, decoded once.
    raw = type(session).__pydantic_serializer__.to_json(session, exclude=_NOT_DATA, exclude_defaults=True)
    data = raw.decode()
    content_hash = hashlib.sha256(raw).hexdigest()
    key = session_key(session, source)
    scan = _scan(session)
    p = session.provenance
    return Row(
        dataset_id, key, session.session_id, session.assistant_id, scan.title, session.status,
        json.dumps(session.tags) if session.tags else "[]", scan.n_turns, len(session.messages), scan.n_tool_calls,
        p.source if p else None, p.format if p else None, p.position if p else None, p.line if p else None, data,
        content_hash, scan.search_text, scan.system_text, int(session.has_ground_truth()),
        tuple(session.tags), outcomes(session.scores) if session.scores else (), parts_of(session),
        labels.model_dump_json(exclude_defaults=True) if (labels := labels_of(session)) is not None else None,
    )  # fmt: skip
