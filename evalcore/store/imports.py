"""Storing a batch of imported rows into a dataset, in one transaction, idempotent.

A session's identity is its row's ``key``: a new one is inserted, an unchanged one (same content hash) left
alone, a changed conversation replaces the stored one and keeps the reviewers' edits, which live apart from it.
``evalcore.importing`` reads files into rows and calls ``store.sessions.store_batch``.

One record costs only itself: a batch the database refuses because of one row (a value larger than it accepts,
a character it cannot store) is stored again row by row, each in its own transaction, and the rows it refuses
are named by their line, the others kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalcore.errors import DatabaseFaultError
from evalcore.store.carried import store_carried
from evalcore.store.engine import Conn, Engine
from evalcore.store.outcomes import store_outcomes
from evalcore.store.records import now
from evalcore.store.rows import Row, search_texts

if TYPE_CHECKING:
    from evalcore.store.records import StoredSession
    from evalcore.store.store import Store

__all__ = ["BatchCounts", "Importing"]

#: The faults of one record, not of the database: the others of its batch are stored without it.
_RECORD_FAULTS = ("too_big", "value")


@dataclass
class BatchCounts:
    """What storing a batch did: sessions new, updated (a changed conversation), unchanged; the rows the database
    refused, as ``(line, why)``; and what of the labels rows brought could not be stored (``notes``, the same way:
    their sessions are stored)."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0
    refused: list[tuple[int | None, str]] = field(default_factory=list)
    notes: list[tuple[int | None, str]] = field(default_factory=list)

    def add(self, other: BatchCounts) -> None:
        self.new += other.new
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.refused += other.refused
        self.notes += other.notes


class Importing:
    """The part of ``store.sessions`` that imports rows."""

    _engine: Engine
    _store: Store

    if TYPE_CHECKING:

        def _get(self, conn: Conn, pk: int) -> StoredSession: ...

    def store_batch(self, dataset_id: int, source: str, batch: list[Row]) -> BatchCounts:
        """Store ``batch`` (rows of distinct keys) in the dataset, in one transaction (see the module's doc)."""
        self._store.require("import", "import sessions")
        try:
            return self._store_rows(dataset_id, source, batch)
        except DatabaseFaultError as exc:
            if exc.kind not in _RECORD_FAULTS:
                raise
            if len(batch) == 1:
                return BatchCounts(refused=[(batch[0].line, _why(exc))])
        counts = BatchCounts()
        for row in batch:  # (each on its own: one refused row costs only itself)
            try:
                counts.add(self._store_rows(dataset_id, source, [row]))
            except DatabaseFaultError as exc:
                if exc.kind not in _RECORD_FAULTS:
                    raise
                counts.refused.append((row.line, _why(exc)))
        return counts

    def _store_rows(self, dataset_id: int, source: str, batch: list[Row]) -> BatchCounts:
        report = BatchCounts()
        stamp = now()
        with self._engine.write() as conn:
            self._engine.lock_dataset(conn, dataset_id)  # two imports into one dataset take turns
            author, author_id = self._store.author(conn)
            existing: dict[str, tuple[int, str, int]] = {}
            keys = [r.key for r in batch]
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for pk, key, content_hash, version in conn.execute(
                    f"SELECT id, key, content_hash, version FROM sessions WHERE dataset_id = ? AND key IN ({marks})",
                    [dataset_id, *chunk],
                ):
                    existing[key] = (pk, content_hash, version)
            inserts = []
            replaced = []
            for row in batch:
                old = existing.get(row.key)
                if old is None:
                    inserts.append(row)
                    report.new += 1
                elif old[1] == row.content_hash:
                    report.unchanged += 1
                else:
                    self._update_conversation(conn, old[0], row, stamp, source, author_id)
                    replaced.append(old[0])
                    report.updated += 1
            if inserts:
                self._engine.insert_sessions(conn, inserts, stamp)
                tagged = [(tag, dataset_id, r.key) for r in inserts for tag in r.tag_list]
                if tagged:
                    conn.executemany(
                        "INSERT INTO session_tags (session_pk, tag) SELECT id, ? FROM sessions "
                        "WHERE dataset_id = ? AND key = ? ON CONFLICT DO NOTHING",
                        tagged,
                    )
            pks = {key: found[0] for key, found in existing.items()}
            paged = [r for r in inserts if r.parts]
            if paged:  # a large session's page index, beside it
                pks.update(self._pks(conn, dataset_id, [r.key for r in paged]))
                for row in paged:
                    _write_parts(conn, pks[row.key], row)
            scored = [r for r in batch if r.outcomes]
            labelled = [r for r in batch if r.labels]
            missing = [r.key for r in (*scored, *labelled) if r.key not in pks]
            if missing:  # the new sessions' ids
                pks.update(self._pks(conn, dataset_id, missing))
            found = [(pks[r.key], r.outcomes) for r in scored]
            if found or replaced:  # the scores that came with the data: the dataset's imported run
                store_outcomes(conn, self._engine, dataset_id, found, replaced, stamp, (author, author_id))
            if labelled:  # the answers and gold that came with the data (the evalcore format's)
                carried = [(pks[r.key], r.line, r.labels) for r in labelled if r.labels]
                report.notes += store_carried(conn, dataset_id, carried, stamp, author_id)
        return report

    @staticmethod
    def _pks(conn: Conn, dataset_id: int, keys: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            found.update(
                (key, pk)
                for pk, key in conn.execute(
                    f"SELECT id, key FROM sessions WHERE dataset_id = ? AND key IN ({','.join('?' * len(chunk))})",
                    [dataset_id, *chunk],
                )
            )
        return found

    def _update_conversation(self, conn: Conn, pk: int, row: Row, stamp: str, source: str, author_id: int) -> None:
        version = conn.execute(
            "UPDATE sessions SET data = ?, content_hash = ?, version = version + 1, session_id = ?, assistant_id = ?, "
            "title = ?, n_turns = ?, n_messages = ?, n_tool_calls = ?, format = ?, position = ?, line = ?, "
            "updated_at = ?, updated_by = ?, n_edits = n_edits + 1 WHERE id = ? RETURNING version",
            [row.data, row.content_hash, row.session_id, row.assistant_id, row.title, row.n_turns, row.n_messages,
             row.n_tool_calls, row.format, row.position, row.line, stamp, f"import:{source}", pk],
        ).fetchone()[0]  # fmt: skip
        conn.execute(
            "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version, author_id) "
            "VALUES (?, NULL, 'conversation', NULL, NULL, ?, ?, ?, ?, ?)",
            [pk, f"import:{source}", stamp, f"re-imported from {source} line {row.line}", version, author_id],
        )
        conn.execute("DELETE FROM session_parts WHERE session_pk = ?", [pk])
        _write_parts(conn, pk, row)
        # The text search sees the new conversation with the reviewers' ground truth laid over it.
        effective = self._get(conn, pk)
        text, system = self._engine.search_documents(*search_texts(effective.session))
        conn.execute(
            "UPDATE sessions SET search_text = ?, system_text = ?, has_truth = ? WHERE id = ?",
            [text, system, int(effective.session.has_ground_truth()), pk],
        )


def _write_parts(conn: Conn, pk: int, row: Row) -> None:
    """Store the row's page index (``evalcore.store.parts``; none for a small session) under session ``pk``."""
    if not row.parts:
        return
    conn.executemany(
        "INSERT INTO session_parts (session_pk, part, turn_lo, turn_hi, data, truth) VALUES (?, ?, ?, ?, ?, ?)",
        [(pk, number, *part) for number, part in enumerate(row.parts)],
    )


def _why(exc: DatabaseFaultError) -> str:
    return f"cannot store this record: {exc}"
