"""What reviewers say about a session besides its ground truth (``store.labels``): their verdicts — pass / fail,
and 1-5 per rubric, kept beside the judges' scores — and their comments.

Each reviewer has one current verdict per name (``label``, or ``rubric:NAME``); giving it again replaces it,
and clearing it deletes it. The Dashboard compares them with the judges' scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import UsageError
from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["LABEL", "Comment", "Labels", "Verdict", "rubric_verdict"]

#: The name of the session-level verdict: 1.0 pass, 0.0 fail.
LABEL = "label"


def rubric_verdict(rubric: str) -> str:
    """The verdict name of a 1-5 score for ``rubric``."""
    return f"rubric:{rubric}"


@dataclass(frozen=True)
class Verdict:
    """One reviewer's current verdict on one session."""

    session_pk: int
    author: str
    name: str
    value: float
    at: str


@dataclass(frozen=True)
class Comment:
    """A reviewer's comment on a session (``turn`` None) or one of its turns."""

    id: int
    turn: int | None
    author: str
    body: str
    at: str


def _check(name: str, value: float | None) -> None:
    if name == LABEL:
        if value not in (None, 0.0, 1.0):
            raise UsageError("a pass / fail label is 1 (pass) or 0 (fail)")
    elif name.startswith("rubric:") and len(name) > len("rubric:"):
        if value is not None and (not math.isfinite(value) or value != int(value) or not 1 <= value <= 5):
            raise UsageError(f"{name[7:]}: a rubric score is a whole number from 1 to 5")
    else:
        raise UsageError(f"unknown verdict {name!r}: use {LABEL!r} or 'rubric:NAME'")


class Labels:
    """Verdicts and comments of one store (``store.labels``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    # -- verdicts -----------------------------------------------------------------------------------

    def set_verdict(self, pk: int, name: str, value: float | None, *, author: str) -> None:
        """Give (or with ``None`` withdraw) ``author``'s verdict ``name`` on session ``pk``."""
        if not author:
            raise UsageError("every verdict needs an author")
        _check(name, value)
        self._store.sessions.get(pk)  # raises when missing
        with self._engine.write() as conn:
            if value is None:
                conn.execute(
                    "DELETE FROM verdicts WHERE session_pk = ? AND author = ? AND name = ?", [pk, author, name]
                )
            else:
                conn.execute(
                    "INSERT INTO verdicts (session_pk, author, name, value, at) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (session_pk, author, name) DO UPDATE SET value = excluded.value, at = excluded.at",
                    [pk, author, name, float(value), now()],
                )

    def verdicts(self, pk: int) -> list[Verdict]:
        """Every reviewer's verdicts on session ``pk``."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT session_pk, author, name, value, at FROM verdicts WHERE session_pk = ? ORDER BY name, author",
                [pk],
            ).fetchall()
        return [Verdict(*r) for r in rows]

    def human_verdicts(self, dataset: str) -> list[Verdict]:
        """Every verdict given on the sessions of ``dataset``."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT v.session_pk, v.author, v.name, v.value, v.at FROM verdicts v "
                "JOIN sessions s ON s.id = v.session_pk WHERE s.dataset_id = ? ORDER BY v.session_pk, v.name, v.author",
                [dataset_id],
            ).fetchall()
        return [Verdict(*r) for r in rows]

    def verdict_values(self, dataset: str) -> list[tuple[int, str, str, float]]:
        """``(session pk, its ref, verdict name, value)`` of every pass/fail and rubric verdict given on the
        sessions of ``dataset``, by session (a ref is the session's ``session_id``, else its key)."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            return conn.execute(
                "SELECT v.session_pk, coalesce(s.session_id, s.key), v.name, v.value FROM verdicts v "
                "JOIN sessions s ON s.id = v.session_pk WHERE s.dataset_id = ? AND v.value IS NOT NULL "
                "AND (v.name = ? OR v.name LIKE 'rubric:_%') ORDER BY v.session_pk",
                [dataset_id, LABEL],
            ).fetchall()

    def mark(self, dataset: str) -> tuple[Any, ...]:
        """What changes when a verdict on ``dataset`` is given or withdrawn, or a run made: a cache key."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            verdicts = conn.execute(
                "SELECT count(*), max(v.id), max(v.at) FROM verdicts v JOIN sessions s ON s.id = v.session_pk "
                "WHERE s.dataset_id = ?",
                [dataset_id],
            ).fetchone()
        return (*verdicts, *self._store.runs.mark(dataset_id))

    # -- comments -----------------------------------------------------------------------------------

    def add_comment(self, pk: int, body: str, *, author: str, turn: int | None = None) -> int:
        """Add a comment to the session (or one of its turns); returns its id."""
        if not body.strip():
            raise UsageError("a comment needs some text")
        self._store.sessions.get(pk)
        with self._engine.write() as conn:
            return int(
                conn.execute(
                    "INSERT INTO comments (session_pk, turn, author, body, at) VALUES (?, ?, ?, ?, ?) RETURNING id",
                    [pk, turn, author, body, now()],
                ).fetchone()[0]
            )

    def comments(self, pk: int) -> list[Comment]:
        """The session's comments, oldest first."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT id, turn, author, body, at FROM comments WHERE session_pk = ? ORDER BY id", [pk]
            ).fetchall()
        return [Comment(*r) for r in rows]
