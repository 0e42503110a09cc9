"""Reviewers' own verdicts on a session: pass / fail, and 1-5 per rubric, kept beside the judges' scores.

Each reviewer has one current verdict per name (``label``, or ``rubric:NAME``); giving it again
replaces it, and clearing it deletes it. The Dashboard compares them with the judges' scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalcore.errors import UsageError
from evalcore.store.records import now
from evalcore.store.store import Store

__all__ = ["LABEL", "Verdict", "human_verdicts", "rubric_verdict", "set_verdict", "verdicts"]

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


def _check(name: str, value: float | None) -> None:
    if name == LABEL:
        if value not in (None, 0.0, 1.0):
            raise UsageError("a pass / fail label is 1 (pass) or 0 (fail)")
    elif name.startswith("rubric:") and len(name) > len("rubric:"):
        if value is not None and (not math.isfinite(value) or value != int(value) or not 1 <= value <= 5):
            raise UsageError(f"{name[7:]}: a rubric score is a whole number from 1 to 5")
    else:
        raise UsageError(f"unknown verdict {name!r}: use {LABEL!r} or 'rubric:NAME'")


def set_verdict(store: Store, pk: int, name: str, value: float | None, *, author: str) -> None:
    """Give (or with ``None`` withdraw) ``author``'s verdict ``name`` on session ``pk``."""
    if not author:
        raise UsageError("every verdict needs an author")
    _check(name, value)
    store.get(pk)  # raises when missing
    with store.write() as conn:
        if value is None:
            conn.execute("DELETE FROM verdicts WHERE session_pk = ? AND author = ? AND name = ?", [pk, author, name])
        else:
            conn.execute(
                "INSERT INTO verdicts (session_pk, author, name, value, at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (session_pk, author, name) DO UPDATE SET value = excluded.value, at = excluded.at",
                [pk, author, name, float(value), now()],
            )


def verdicts(store: Store, pk: int) -> list[Verdict]:
    """Every reviewer's verdicts on session ``pk``."""
    rows = store.db.execute(
        "SELECT session_pk, author, name, value, at FROM verdicts WHERE session_pk = ? ORDER BY name, author", [pk]
    ).fetchall()
    return [Verdict(*r) for r in rows]


def human_verdicts(store: Store, dataset: str) -> list[Verdict]:
    """Every verdict given on the sessions of ``dataset``."""
    rows = store.db.execute(
        "SELECT v.session_pk, v.author, v.name, v.value, v.at FROM verdicts v JOIN sessions s ON s.id = v.session_pk "
        "WHERE s.dataset_id = ? ORDER BY v.session_pk, v.name, v.author",
        [store.dataset_id(dataset)],
    ).fetchall()
    return [Verdict(*r) for r in rows]
