"""A session as a row of the sessions table: the columns an import fills, and the text search sees.

Plain values only (the row is pickled from the reader process to the importer): no database code here.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from evalcore.identity import identity_key
from evalcore.schema import Message, Session, block_text
from evalcore.store.parts import Part, parts_of

__all__ = ["ROW_COLUMNS", "Row", "message_texts", "outcomes", "row_for", "search_text", "session_key", "system_text"]


def search_text(session: Session, texts: list[str] | None = None) -> str:
    """The text full-text search sees: every message but the system prompt's, each tool call's name and
    arguments, and the ground truth. ``texts``: the messages' texts (``message_texts``), when the caller has
    them already."""
    texts = message_texts(session.messages) if texts is None else texts
    parts = [text for m, text in zip(session.messages, texts, strict=True) if m.role != "system"]
    for call in session.tool_calls():
        parts.append(call.name)
        if call.args:
            parts.append(json.dumps(call.args, ensure_ascii=False, default=str))
    parts += [session.goal or "", session.reference or "", *(session.expected_facts or [])]
    parts += [t.ground_truth or "" for t in session.turn_truth] + [t.observation or "" for t in session.turn_truth]
    return "\n".join(p for p in parts if p)


def system_text(session: Session, texts: list[str] | None = None) -> str:
    """The system prompt as search sees it, when asked to: the session's context and its system messages."""
    texts = message_texts(session.messages) if texts is None else texts
    system = (text for m, text in zip(session.messages, texts, strict=True) if m.role == "system")
    parts = [session.context or "", *system]
    return "\n".join(p for p in parts if p)


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
    labels: str | None = None  # the answers and gold that came with the data (``Session.labels``), as JSON

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


def message_texts(messages: list[Message]) -> list[str]:
    """Each message's text (``Message.text``), in one pass (an import makes a row of every record)."""
    return [content if type(content := m.content) is str else block_text(content) for m in messages]


def row_for(dataset_id: int, source: str, session: Session) -> Row:
    """The sessions-table row of ``session``, with the hash that tells whether it changed."""
    # (The labels that came with it are stored apart from the session: ``evalcore.store.carried``.)
    data = session.model_dump_json(exclude={"provenance", "labels"}, exclude_defaults=True)
    content_hash = hashlib.sha256(data.encode()).hexdigest()
    key = session_key(session, source)
    messages = session.messages
    texts = message_texts(messages)
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    p = session.provenance
    return Row(
        dataset_id, key, session.session_id, session.assistant_id, texts[users[0]][:200] if users else "",
        session.status, json.dumps(session.tags) if session.tags else "[]", len(users), len(messages),
        len(session.tool_calls()), p.source if p else None, p.format if p else None, p.position if p else None,
        p.line if p else None, data, content_hash, search_text(session, texts), system_text(session, texts),
        int(session.has_ground_truth()),
        tuple(session.tags), outcomes(session.scores) if session.scores else (), parts_of(session),
        session.labels.model_dump_json(exclude_defaults=True) if session.labels is not None else None,
    )  # fmt: skip
