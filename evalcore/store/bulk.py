"""Changing many sessions at once: status and tags, for chosen sessions or everything a filter matches.

Each changed session gets a new version and an entry in its history, as a single save would,
so a reviewer who has the session open is told of the change instead of overwriting it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from evalcore.errors import UsageError
from evalcore.schema import STATUSES
from evalcore.store.queries import SessionFilter, iter_pks
from evalcore.store.records import now
from evalcore.store.store import Store

__all__ = ["bulk_set_status", "bulk_tags", "matching_pks"]

_CHUNK = 500


def matching_pks(store: Store, dataset: str, filters: SessionFilter | None = None) -> list[int]:
    """Every session ``filters`` match in ``dataset``, in import order."""
    return list(iter_pks(store, dataset, filters))


def _chunks(pks: Iterable[int]) -> Iterable[list[int]]:
    chunk: list[int] = []
    for pk in pks:
        chunk.append(pk)
        if len(chunk) == _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def bulk_set_status(store: Store, pks: Iterable[int], status: str, *, author: str, reason: str | None = None) -> int:
    """Set the review status of every session in ``pks``; returns how many changed."""
    if status not in STATUSES:
        raise UsageError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if not author:
        raise UsageError("every edit needs an author")
    changed = 0
    for chunk in _chunks(pks):
        stamp = now()
        with store.write() as conn:
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT id, status, version FROM sessions WHERE id IN ({marks}) AND status != ?", [*chunk, status]
            ).fetchall()
            if not rows:
                continue
            conn.executemany(
                "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version) "
                "VALUES (?, NULL, 'status', ?, ?, ?, ?, ?, ?)",
                [(pk, json.dumps(old), json.dumps(status), author, stamp, reason, v + 1) for pk, old, v in rows],
            )
            conn.executemany(
                "UPDATE sessions SET status = ?, status_by = ?, status_at = ?, version = version + 1, updated_at = ?, "
                "updated_by = ?, n_edits = n_edits + 1 WHERE id = ?",
                [(status, author, stamp, stamp, author, pk) for pk, _, _ in rows],
            )
            changed += len(rows)
    return changed


def bulk_tags(
    store: Store,
    pks: Iterable[int],
    *,
    add: Iterable[str] = (),
    remove: Iterable[str] = (),
    author: str,
    reason: str | None = None,
) -> int:
    """Add and remove tags on every session in ``pks``; returns how many changed."""
    adding = [t.strip() for t in add if t.strip()]
    removing = {t.strip() for t in remove if t.strip()}
    if not adding and not removing:
        raise UsageError("name a tag to add or remove")
    if not author:
        raise UsageError("every edit needs an author")
    changed = 0
    for chunk in _chunks(pks):
        stamp = now()
        with store.write() as conn:
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT id, tags, version FROM sessions WHERE id IN ({marks})", chunk).fetchall()
            edits: list[tuple[Any, ...]] = []
            updates: list[tuple[Any, ...]] = []
            for pk, tags_json, version in rows:
                old = json.loads(tags_json)
                new = [t for t in old if t not in removing]
                new += [t for t in dict.fromkeys(adding) if t not in new]
                if new == old:
                    continue
                edits.append((pk, json.dumps(old), json.dumps(new), author, stamp, reason, version + 1))
                updates.append((json.dumps(new), stamp, author, pk))
            if not updates:
                continue
            conn.executemany(
                "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version) "
                "VALUES (?, NULL, 'tags', ?, ?, ?, ?, ?, ?)",
                edits,
            )
            conn.executemany(
                "UPDATE sessions SET tags = ?, version = version + 1, updated_at = ?, updated_by = ?, "
                "n_edits = n_edits + 1 WHERE id = ?",
                updates,
            )
            pks_changed = [u[3] for u in updates]
            conn.execute(f"DELETE FROM session_tags WHERE session_pk IN ({','.join('?' * len(pks_changed))})",
                         pks_changed)  # fmt: skip
            conn.executemany(
                "INSERT OR IGNORE INTO session_tags VALUES (?, ?)",
                [(u[3], t) for u in updates for t in json.loads(u[0])],
            )
            changed += len(updates)
    return changed
