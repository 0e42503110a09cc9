"""What a reviewer is typing into a ground-truth editor and has not saved (``store.drafts``): kept as they type, given
back when they return to the session (another page, a reload, a new tab), dropped when they save the field or
throw the draft away. One draft per (session, person, field, turn), with the session's version it was begun on, so
that a draft of an older version is shown as such rather than laid silently over newer truth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import NotFoundError, UsageError
from evalcore.store.answers import SESSION
from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["Draft", "Drafts"]

MAX_DRAFT = 1_000_000  # characters of JSON


@dataclass(frozen=True)
class Draft:
    """An unsaved value of one field of a session (``turn`` None) or of one of its turns."""

    field: str
    turn: int | None
    value: Any
    base_version: int
    at: str


class Drafts:
    """The ground-truth editors' drafts of one store (``store.drafts``), each the store's user's own."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    def save(self, pk: int, field: str, value: Any, *, base_version: int, turn: int | None = None) -> None:
        """Keep ``value`` as the user's draft of ``field`` (of ``turn``) on session ``pk``, begun on its
        ``base_version``."""
        text = json.dumps(value)
        if len(text) > MAX_DRAFT:
            raise UsageError(f"{field}: a draft is at most {MAX_DRAFT:,} characters")
        self._store.require("review", "keep a draft")
        with self._engine.write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", [pk]).fetchone() is None:
                raise NotFoundError(f"no session #{pk}")
            _, user_id = self._store.author(conn)
            conn.execute(
                "INSERT INTO drafts (session_pk, user_id, field, turn, value, base_version, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_pk, user_id, field, turn) DO UPDATE SET "
                "value = excluded.value, base_version = excluded.base_version, at = excluded.at",
                [pk, user_id, field, SESSION if turn is None else turn, text, base_version, now()],
            )

    def of(self, pk: int) -> list[Draft]:
        """The user's drafts on session ``pk``."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT field, turn, value, base_version, at FROM drafts WHERE session_pk = ? AND user_id = ? "
                "ORDER BY turn, field",
                [pk, self._store.user.id],
            ).fetchall()
        return [Draft(r[0], None if r[1] == SESSION else int(r[1]), json.loads(r[2]), int(r[3]), r[4]) for r in rows]

    def drop(self, pk: int, field: str | None = None, *, turn: int | None = None) -> None:
        """Throw away the user's draft of ``field`` (of ``turn``) on session ``pk`` (``field`` None: every draft of
        theirs on it)."""
        user_id = self._store.user.id
        with self._engine.write() as conn:
            if field is None:
                conn.execute("DELETE FROM drafts WHERE session_pk = ? AND user_id = ?", [pk, user_id])
            else:
                conn.execute(
                    "DELETE FROM drafts WHERE session_pk = ? AND user_id = ? AND field = ? AND turn = ?",
                    [pk, user_id, field, SESSION if turn is None else turn],
                )
