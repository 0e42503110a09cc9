"""Changing many sessions at once: status and tags, for chosen sessions or everything a filter matches.

Each changed session gets a new version and an entry in its history, as a single save would, so a reviewer who
has the session open is told of the change instead of overwriting it. The rows are locked as they are read (on
PostgreSQL; SQLite's writers take turns), so a save at the same moment waits and is then refused as stale.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from evalcore.errors import UsageError
from evalcore.schema import STATUSES
from evalcore.store.engine import Engine
from evalcore.store.records import now

__all__ = ["BulkChanges"]

_CHUNK = 500


def _chunks(pks: Iterable[int]) -> Iterable[list[int]]:
    chunk: list[int] = []
    for pk in pks:
        chunk.append(pk)
        if len(chunk) == _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class BulkChanges:
    """The part of ``store.sessions`` that changes many sessions in one go."""

    _engine: Engine

    def set_status_many(self, pks: Iterable[int], status: str, *, author: str, reason: str | None = None) -> int:
        """Set the review status of every session in ``pks``; returns how many changed."""
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
        if not author:
            raise UsageError("every edit needs an author")
        changed = 0
        for chunk in _chunks(pks):
            stamp = now()
            with self._engine.write() as conn:
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT id, status, version FROM sessions WHERE id IN ({marks}) AND status != ? ORDER BY id"
                    + self._engine.for_update,
                    [*chunk, status],
                ).fetchall()
                if not rows:
                    continue
                conn.executemany(
                    "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version) "
                    "VALUES (?, NULL, 'status', ?, ?, ?, ?, ?, ?)",
                    [(pk, json.dumps(old), json.dumps(status), author, stamp, reason, v + 1) for pk, old, v in rows],
                )
                conn.executemany(
                    "UPDATE sessions SET status = ?, status_by = ?, status_at = ?, version = version + 1, "
                    "updated_at = ?, updated_by = ?, n_edits = n_edits + 1 WHERE id = ?",
                    [(status, author, stamp, stamp, author, pk) for pk, _, _ in rows],
                )
                changed += len(rows)
        return changed

    def tag_many(
        self,
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
            with self._engine.write() as conn:
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT id, tags, version FROM sessions WHERE id IN ({marks}) ORDER BY id"
                    + self._engine.for_update,
                    chunk,
                ).fetchall()
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
                changed_pks = [u[3] for u in updates]
                conn.execute(
                    f"DELETE FROM session_tags WHERE session_pk IN ({','.join('?' * len(changed_pks))})", changed_pks
                )
                conn.executemany(
                    "INSERT INTO session_tags (session_pk, tag) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    [(u[3], t) for u in updates for t in json.loads(u[0])],
                )
                changed += len(updates)
        return changed
