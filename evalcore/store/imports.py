"""Importing files into a dataset: in batches, each in one transaction, idempotent.

A crash at any moment leaves a valid database; running the same import again finishes
the job with no duplicates. A session's identity is its ``session_id`` where the format
has one, else its file name and position. A changed conversation replaces the stored one
and keeps the reviewers' edits, which live apart from it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from evalcore.convert import FileProblem
from evalcore.formats import read
from evalcore.formats.files import ReadResult
from evalcore.schema import Session
from evalcore.store.records import now
from evalcore.store.store import Store, search_text

__all__ = ["ImportReport", "import_file"]


@dataclass
class ImportReport:
    """What an import did."""

    dataset: str
    format: str | None = None
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: int = 0
    warnings: int = 0
    problems: list[FileProblem] = field(default_factory=list)

    @property
    def stored(self) -> int:
        """Sessions now in the store from this file."""
        return self.new + self.updated + self.unchanged


class _Counting(io.RawIOBase):
    """A binary reader that counts the bytes read, for progress."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)


def _key(session: Session, source: str) -> str:
    if session.session_id is not None:
        return f"id:{session.session_id}"
    position = session.provenance.position if session.provenance else None
    return f"pos:{source}:{position}"


def import_file(
    store: Store,
    path: str | os.PathLike[str],
    dataset: str,
    *,
    fmt: str | None = None,
    batch_size: int = 2000,
    on_progress: Callable[[int, int], None] | None = None,
    on_problem: Callable[[FileProblem], None] | None = None,
) -> ImportReport:
    """Import ``path`` into ``dataset`` (created if needed); bad records are reported and skipped.

    ``on_progress(bytes_read, total_bytes)`` is called after each batch.
    """
    ds = store.dataset(dataset, create=True)
    report = ImportReport(dataset=dataset)
    source = Path(path).name
    total = os.path.getsize(path)
    seen: dict[str, int] = {}
    # Rows, not sessions, wait for their batch: plain tuples keep the garbage collector idle.
    batch: list[_Row] = []

    def problem(line: int, level: str, message: str) -> None:
        item = FileProblem(str(path), line, level, message)
        report.problems.append(item)
        if on_problem:
            on_problem(item)

    with open(path, "rb") as raw:
        counter = _Counting(raw)
        stream = io.TextIOWrapper(io.BufferedReader(counter), encoding="utf-8", errors="surrogateescape", newline="")
        for result in read(stream, fmt, source=source):
            if not _accept(result, report, problem):
                continue
            assert result.session is not None
            row = _row(ds.id, source, result.session)
            if row.key in seen:
                problem(
                    result.line,
                    "error",
                    f"session {row.key[3:]!r} appears again (first on line {seen[row.key]}); skipped",
                )
                report.failed += 1
                continue
            seen[row.key] = result.line
            batch.append(row)
            if len(batch) >= batch_size:
                _store_batch(store, ds.id, source, batch, report)
                batch = []
                if on_progress:
                    on_progress(counter.count, total)
        if batch:
            _store_batch(store, ds.id, source, batch, report)
    if on_progress:
        on_progress(total, total)
    return report


def _accept(result: ReadResult, report: ImportReport, problem: Callable[[int, str, str], None]) -> bool:
    has_error = False
    for p in result.problems:
        problem(result.line, p.level, f"{p.field}: {p.message}" if p.field else p.message)
        if p.level == "error":
            has_error = True
        else:
            report.warnings += 1
    if has_error:
        report.failed += 1
        return False
    if result.session is None:
        return False
    if result.session.provenance is not None:
        report.format = result.session.provenance.format
    return True


@dataclass(frozen=True)
class _Row:
    """A session ready for the sessions table."""

    key: str
    content_hash: str
    values: tuple[Any, ...]  # in _INSERT's column order
    tags: tuple[str, ...]


_INSERT_COLUMNS = (
    "dataset_id, key, session_id, assistant_id, title, status, tags, n_turns, n_messages, n_tool_calls, "
    "source, format, position, line, data, content_hash, search_text, created_at, updated_at"
)


def _row(dataset_id: int, source: str, session: Session) -> _Row:
    data = session.model_dump_json(exclude={"provenance"}, exclude_defaults=True)
    content_hash = hashlib.sha256(data.encode()).hexdigest()
    key = _key(session, source)
    title = next((m.text for m in session.messages if m.role == "user"), "")[:200]
    p = session.provenance
    values = (
        dataset_id, key, session.session_id, session.assistant_id, title, session.status, json.dumps(session.tags),
        session.n_turns(), len(session.messages), len(session.tool_calls()), p.source if p else None,
        p.format if p else None, p.position if p else None, p.line if p else None, data, content_hash,
        search_text(session),
    )  # fmt: skip
    return _Row(key, content_hash, values, tuple(session.tags))


def _store_batch(store: Store, dataset_id: int, source: str, batch: list[_Row], report: ImportReport) -> None:
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
                f"INSERT INTO sessions ({_INSERT_COLUMNS}) VALUES ({', '.join('?' * 19)})",
                [(*r.values, stamp, stamp) for r in inserts],
            )
            conn.execute(
                "INSERT INTO sessions_fts (rowid, search_text) SELECT id, search_text FROM sessions WHERE id >= ?",
                [first],
            )
            tagged = [(tag, dataset_id, r.key) for r in inserts for tag in r.tags]
            if tagged:
                conn.executemany(
                    "INSERT OR IGNORE INTO session_tags SELECT id, ? FROM sessions WHERE dataset_id = ? AND key = ?",
                    tagged,
                )


def _update_conversation(store: Store, conn: Any, pk: int, version: int, row: _Row, stamp: str, source: str) -> None:
    (_ds, _key_, session_id, assistant_id, title, _status, _tags, n_turns, n_messages, n_calls, _source, fmt,
     position, line, data, content_hash, _text) = row.values  # fmt: skip
    conn.execute(
        "UPDATE sessions SET data = ?, content_hash = ?, version = ?, session_id = ?, assistant_id = ?, title = ?, "
        "n_turns = ?, n_messages = ?, n_tool_calls = ?, format = ?, position = ?, line = ?, updated_at = ?, "
        "updated_by = ?, n_edits = n_edits + 1 WHERE id = ?",
        [data, content_hash, version, session_id, assistant_id, title, n_turns, n_messages, n_calls, fmt, position,
         line, stamp, f"import:{source}", pk],
    )  # fmt: skip
    conn.execute(
        "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version) "
        "VALUES (?, NULL, 'conversation', NULL, NULL, ?, ?, ?, ?)",
        [pk, f"import:{source}", stamp, f"re-imported from {source} line {line}", version],
    )
    # The text search sees the new conversation with the reviewers' ground truth laid over it.
    effective = store._stored(
        conn.execute(
            f"SELECT {Store._COLUMNS} FROM sessions s JOIN datasets d ON d.id = s.dataset_id WHERE s.id = ?", [pk]
        ).fetchone()
    )
    conn.execute("UPDATE sessions SET search_text = ? WHERE id = ?", [search_text(effective.session), pk])
