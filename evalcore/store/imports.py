"""Importing files into a dataset: in batches, each in one transaction, idempotent.

A crash at any moment leaves a valid database; running the same import again finishes
the job with no duplicates. A session's identity is its ``session_id`` where the format
has one, else its file name and position. A changed conversation replaces the stored one
and keeps the reviewers' edits, which live apart from it.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from evalcore.convert import MAX_KEPT_PROBLEMS, FileProblem
from evalcore.errors import StoreError
from evalcore.reading import Event, Row, events, search_text, stream_events
from evalcore.store.records import now
from evalcore.store.store import Store

__all__ = ["ImportReport", "import_file", "import_stream"]


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


_INSERT_COLUMNS = (
    "dataset_id, key, session_id, assistant_id, title, status, tags, n_turns, n_messages, n_tool_calls, "
    "source, format, position, line, data, content_hash, search_text, has_truth, created_at, updated_at"
)
_PARALLEL_FROM = 4 << 20  # bytes: below this, starting a process costs more than it saves


def import_file(
    store: Store,
    path: str | os.PathLike[str],
    dataset: str,
    *,
    fmt: str | None = None,
    batch_size: int = 2000,
    on_progress: Callable[[int, int], None] | None = None,
    on_problem: Callable[[FileProblem], None] | None = None,
    workers: int | None = None,
) -> ImportReport:
    """Import ``path`` into ``dataset`` (created if needed); bad records are reported and skipped.

    ``on_progress(bytes_read, total_bytes)`` is called after each batch. With ``workers=2``
    (the default for files over a few megabytes on a machine with two cores or more) a
    second process reads and parses the file while this one writes to the database.
    """
    total = os.path.getsize(path)  # a missing file fails here, before anything is made
    dataset_id = store.dataset(dataset, create=True).id
    if workers is None:
        workers = 2 if (os.cpu_count() or 1) > 1 and total > _PARALLEL_FROM else 1
    args = (str(path), fmt, dataset_id, batch_size)
    stream = _events_from_worker(*args) if workers > 1 else events(*args)
    return _store_events(store, dataset, dataset_id, stream, str(path), total, on_progress, on_problem)


def import_stream(
    store: Store,
    stream: BinaryIO,
    name: str,
    dataset: str,
    *,
    fmt: str | None = None,
    size: int | None = None,
    batch_size: int = 2000,
    on_progress: Callable[[int, int], None] | None = None,
    on_problem: Callable[[FileProblem], None] | None = None,
) -> ImportReport:
    """Import an open binary stream (an upload) as if it were a file called ``name``; see ``import_file``.

    ``size`` (bytes, when known) is the total ``on_progress`` reports against.
    """
    source = Path(name).name or "upload"
    dataset_id = store.dataset(dataset, create=True).id
    events_ = stream_events(stream, source, fmt, dataset_id, batch_size)
    return _store_events(store, dataset, dataset_id, events_, source, size or 0, on_progress, on_problem)


def _store_events(
    store: Store,
    dataset: str,
    dataset_id: int,
    stream: Iterator[Event],
    path: str,
    total: int,
    on_progress: Callable[[int, int], None] | None,
    on_problem: Callable[[FileProblem], None] | None,
) -> ImportReport:
    report = ImportReport(dataset=dataset)
    source = Path(path).name
    read = 0
    for event in stream:
        if event[0] == "problem":
            item = FileProblem(path, event[1], event[2], event[3])
            if len(report.problems) < MAX_KEPT_PROBLEMS:
                report.problems.append(item)
            if on_problem:
                on_problem(item)
        elif event[0] == "batch":
            _store_batch(store, dataset_id, source, event[1], report)
            read = event[2]
            if on_progress:
                on_progress(read, max(total, read))
        else:  # "counts", the last event
            report.failed, report.warnings, report.format = event[1], event[2], event[3]
    with store.write() as conn:
        conn.execute(
            "UPDATE datasets SET last_import_at = ?, last_import_source = ? WHERE id = ?", [now(), source, dataset_id]
        )
    if on_progress:
        total = max(total, read)
        on_progress(total, total)
    return report


def _events_from_worker(path: str, fmt: str | None, dataset_id: int, batch_size: int) -> Iterator[Event]:
    """``events``, computed by a second process (``python -m evalcore.reading``) while this
    one stores what it has sent. Events come pickled through a pipe; if this process dies, the
    reader's next write fails and it stops."""
    command = [sys.executable, "-m", "evalcore.reading", json.dumps([path, fmt, dataset_id, batch_size])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert process.stdout is not None
    try:
        while True:
            try:
                event = pickle.load(process.stdout)
            except EOFError:
                code = process.wait()
                raise StoreError(f"the process reading {path} stopped early (exit code {code})") from None
            if event[0] == "failed":
                raise StoreError(f"reading {path} failed: {event[1]}")
            yield event
            if event[0] == "counts":
                return
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()


def _store_batch(store: Store, dataset_id: int, source: str, batch: list[Row], report: ImportReport) -> None:
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
                f"INSERT INTO sessions ({_INSERT_COLUMNS}) VALUES ({', '.join('?' * 20)})",
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


def _update_conversation(store: Store, conn: Any, pk: int, version: int, row: Row, stamp: str, source: str) -> None:
    (_ds, _key_, session_id, assistant_id, title, _status, _tags, n_turns, n_messages, n_calls, _source, fmt,
     position, line, data, content_hash, _text, _truth) = row.values  # fmt: skip
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
    effective = store.get(pk)
    conn.execute(
        "UPDATE sessions SET search_text = ?, has_truth = ? WHERE id = ?",
        [search_text(effective.session), int(effective.session.has_ground_truth()), pk],
    )
