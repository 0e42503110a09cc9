"""Writing a batch of imported rows into a dataset, in one transaction, idempotent.

A session's identity is its row's ``key``: a new one is inserted, an unchanged one (same content hash) left
alone, a changed conversation replaces the stored one and keeps the reviewers' edits, which live apart from it.
``evalcore.importing`` reads files into rows and calls these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore.store.records import now
from evalcore.store.rows import ROW_COLUMNS, Row, search_text
from evalcore.store.store import Store

__all__ = ["BatchCounts", "mark_imported", "store_batch"]

_INSERT_COLUMNS = ", ".join((*ROW_COLUMNS, "created_at", "updated_at"))


@dataclass
class BatchCounts:
    """What storing a batch did: sessions new, updated (a changed conversation), unchanged."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0


def mark_imported(store: Store, dataset_id: int, source: str) -> None:
    """Record that ``source`` was just imported into the dataset (the Datasets page's "last import")."""
    with store.write() as conn:
        conn.execute(
            "UPDATE datasets SET last_import_at = ?, last_import_source = ? WHERE id = ?", [now(), source, dataset_id]
        )


def store_batch(store: Store, dataset_id: int, source: str, batch: list[Row]) -> BatchCounts:
    """Store ``batch`` (rows of distinct keys) in the dataset, in one transaction."""
    report = BatchCounts()
    stamp = now()
    with store.write() as conn:
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
        for row in batch:
            old = existing.get(row.key)
            if old is None:
                inserts.append(row)
                report.new += 1
            elif old[1] == row.content_hash:
                report.unchanged += 1
            else:
                _update_conversation(store, conn, old[0], old[2] + 1, row, stamp, source)
                report.updated += 1
        if inserts:
            first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM sessions").fetchone()[0]
            conn.executemany(
                f"INSERT INTO sessions ({_INSERT_COLUMNS}) VALUES ({', '.join('?' * (len(ROW_COLUMNS) + 2))})",
                [(*r.values(), stamp, stamp) for r in inserts],
            )
            conn.execute(
                "INSERT INTO sessions_fts (rowid, search_text) SELECT id, search_text FROM sessions WHERE id >= ?",
                [first],
            )
            tagged = [(tag, dataset_id, r.key) for r in inserts for tag in r.tag_list]
            if tagged:
                conn.executemany(
                    "INSERT OR IGNORE INTO session_tags SELECT id, ? FROM sessions WHERE dataset_id = ? AND key = ?",
                    tagged,
                )
    return report


def _update_conversation(store: Store, conn: Any, pk: int, version: int, row: Row, stamp: str, source: str) -> None:
    conn.execute(
        "UPDATE sessions SET data = ?, content_hash = ?, version = ?, session_id = ?, assistant_id = ?, title = ?, "
        "n_turns = ?, n_messages = ?, n_tool_calls = ?, format = ?, position = ?, line = ?, updated_at = ?, "
        "updated_by = ?, n_edits = n_edits + 1 WHERE id = ?",
        [row.data, row.content_hash, version, row.session_id, row.assistant_id, row.title, row.n_turns,
         row.n_messages, row.n_tool_calls, row.format, row.position, row.line, stamp, f"import:{source}", pk],
    )  # fmt: skip
    conn.execute(
        "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version) "
        "VALUES (?, NULL, 'conversation', NULL, NULL, ?, ?, ?, ?)",
        [pk, f"import:{source}", stamp, f"re-imported from {source} line {row.line}", version],
    )
    # The text search sees the new conversation with the reviewers' ground truth laid over it.
    effective = store.get(pk)
    conn.execute(
        "UPDATE sessions SET search_text = ?, has_truth = ? WHERE id = ?",
        [search_text(effective.session), int(effective.session.has_ground_truth()), pk],
    )
