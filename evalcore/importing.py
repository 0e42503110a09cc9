"""Importing files into a dataset of the store: read, checked, then stored in batches, each in one transaction.

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
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from evalcore._infra.gcpause import paused_gc
from evalcore._infra.workers import default_workers
from evalcore.convert import MAX_KEPT_PROBLEMS, FileProblem
from evalcore.errors import DatabaseFaultError, StoreError, UsageError
from evalcore.formats.jsonio import MAX_RECORD
from evalcore.identity import repeat_name
from evalcore.reading import BatchEvent, CountsEvent, Event, FailedEvent, ProblemEvent, events, stream_events
from evalcore.schema import Session, validate_session
from evalcore.store.imports import BatchCounts
from evalcore.store.rows import row_for
from evalcore.store.store import Store

__all__ = ["ImportReport", "import_file", "import_stream", "store_sessions"]


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
    max_record: int = MAX_RECORD,
    assistant: str | None = None,
) -> ImportReport:
    """Import ``path`` into ``dataset`` (created if needed); bad records are reported and skipped.

    ``assistant``, when given, is the ``assistant_id`` of every session imported, whatever the file or its name
    says (``import --assistant``): two assistants' runs of the same tasks, in two files, are two sets of sessions.

    ``on_progress(bytes_read, total_bytes)`` is called after each batch. With ``workers`` > 1 (by default, the
    CPUs, at most 4, for files over a few megabytes on a machine with two cores or more) a second process reads
    the file while this one writes to the database, and that process reads a JSON Lines file on ``workers``
    forked processes of its own (``evalcore.formats.parallel``). A record longer than ``max_record`` characters
    is a problem, and reading stops there (the records before it are stored).
    """
    assistant = _assistant(assistant)
    total = os.path.getsize(path)  # a missing file fails here, before anything is made
    dataset_id = store.datasets.get(dataset, create=True).id
    if workers is None:
        workers = default_workers() if (os.cpu_count() or 1) > 1 and total > _PARALLEL_FROM else 1
    args = (str(path), fmt, dataset_id, batch_size, workers, max_record, assistant)
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
    max_record: int = MAX_RECORD,
    assistant: str | None = None,
) -> ImportReport:
    """Import an open binary stream (an upload) as if it were a file called ``name``; see ``import_file``.

    ``size`` (bytes, when known) is the total ``on_progress`` reports against.
    """
    assistant = _assistant(assistant)
    source = Path(name).name or "upload"
    dataset_id = store.datasets.get(dataset, create=True).id
    events_ = stream_events(stream, source, fmt, dataset_id, batch_size, max_record, assistant)
    return _store_events(store, dataset, dataset_id, events_, source, size or 0, on_progress, on_problem)


def store_sessions(store: Store, sessions: list[Session], dataset: str, source: str) -> ImportReport:
    """Store sessions made here (the solver's), not read from a file, in ``dataset`` as an import of ``source``
    would: each validated (one with an error is reported and not stored), a session of the same identity
    (``evalcore.identity``) updated in place, an unchanged one left alone; in one transaction."""
    report = ImportReport(dataset=dataset, format="evalcore")
    dataset_id = store.datasets.get(dataset, create=True).id
    rows = []
    keys: set[str] = set()
    for position, session in enumerate(sessions):
        errors = [p for p in validate_session(session) if p.level == "error"]
        if errors:
            report.failed += 1
            where = session.session_id or f"session {position + 1}"
            problem = FileProblem(source, 0, "error", f"{where}: {'; '.join(str(p) for p in errors)}")
            report.problems.append(problem)
            continue
        row = row_for(dataset_id, source, session)
        if row.key in keys:  # one session given twice: the first is kept
            report.failed += 1
            name = repeat_name(session.session_id, session.assistant_id, row.key)
            report.problems.append(FileProblem(source, 0, "error", f"session {name} given twice; the first is kept"))
            continue
        keys.add(row.key)
        rows.append(row)
    if rows:
        _add(report, store.sessions.store_batch(dataset_id, source, rows), source, None)
    return report


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
    with paused_gc():  # (batches of rows, unpickled, stored and let go: no cycles, no collector's walks through them)
        read = _store_stream(store, dataset_id, stream, path, source, total, report, on_progress, on_problem)
    store.datasets.mark_imported(dataset_id, source)
    if on_progress:
        total = max(total, read)
        on_progress(total, total)
    return report


def _store_stream(
    store: Store,
    dataset_id: int,
    stream: Iterator[Event],
    path: str,
    source: str,
    total: int,
    report: ImportReport,
    on_progress: Callable[[int, int], None] | None,
    on_problem: Callable[[FileProblem], None] | None,
) -> int:
    """Store the events of ``stream`` into ``report``; how many bytes of the file were read."""
    read = 0
    for event in stream:
        if isinstance(event, ProblemEvent):
            item = FileProblem(path, event.line, event.level, event.message)
            if len(report.problems) < MAX_KEPT_PROBLEMS:
                report.problems.append(item)
            if on_problem:
                on_problem(item)
        elif isinstance(event, BatchEvent):
            try:
                stored = store.sessions.store_batch(dataset_id, source, event.rows)
            except DatabaseFaultError as exc:  # this batch is not stored; those before it are: say so
                kept = f"{report.stored:,} sessions of {source} were stored before it and are kept"
                raise DatabaseFaultError(
                    f"{exc} ({kept}; the same import, run again, stores the rest)", exc.code, kind=exc.kind
                ) from exc
            _add(report, stored, path, on_problem)
            read = event.bytes_read
            if on_progress:
                on_progress(read, max(total, read))
        elif isinstance(event, CountsEvent):  # the last event
            report.failed, report.warnings = report.failed + event.failed, report.warnings + event.warnings
            report.format = event.format
        else:  # FailedEvent: what was read before is stored; the rest is not
            where = f" after line {event.line}" if event.line else ""
            raise StoreError(
                f"reading {path} stopped{where}: {event.reason}; the {report.stored} sessions before it are stored"
            )
    return read


def _assistant(name: str | None) -> str | None:
    """The assistant every imported session is given: ``None`` (each keeps its own), else a name with text."""
    if name is None:
        return None
    if not name.strip():
        raise UsageError("the assistant's name is empty: give a name, or none to keep each session's own")
    return name


def _events_from_worker(
    path: str, fmt: str | None, dataset_id: int, batch_size: int, workers: int, max_record: int, assistant: str | None
) -> Iterator[Event]:
    """``events``, computed by a second process (``python -m evalcore.reading``) while this
    one stores what it has sent. Events come pickled through a pipe; if this process dies, the
    reader's next write fails and it stops. The reader's standard error goes to a temporary
    file, never to the screen: should it die, its last words end the error raised here."""
    # (The reader dies with this one, whose pid ends the job.)
    job = [path, fmt, dataset_id, batch_size, workers, max_record, assistant, os.getpid()]
    command = [sys.executable, "-m", "evalcore.reading", json.dumps(job)]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        assert process.stdout is not None
        last_line = 0
        try:
            while True:
                try:
                    event = pickle.load(process.stdout)
                except (EOFError, pickle.UnpicklingError):
                    code = process.wait()
                    errors.seek(0)
                    said = [line for line in errors.read().decode(errors="replace").splitlines() if line.strip()]
                    why = f": {said[-1]}" if said else ""
                    yield FailedEvent(f"the process reading it stopped early (exit code {code}){why}", last_line)
                    return
                if isinstance(event, ProblemEvent | FailedEvent):
                    last_line = max(last_line, event.line)
                yield event
                if isinstance(event, CountsEvent | FailedEvent):
                    return
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()


def _add(
    report: ImportReport, counts: BatchCounts, path: str, on_problem: Callable[[FileProblem], None] | None
) -> None:
    """Count a stored batch; each row the database refused is a problem on its line (the others are stored), and
    each of its labels that could not be stored a warning on its line (the session is stored)."""
    report.new += counts.new
    report.updated += counts.updated
    report.unchanged += counts.unchanged
    report.failed += len(counts.refused)
    report.warnings += len(counts.notes)
    problems = [("error", line, why) for line, why in counts.refused] + [("warning", n, w) for n, w in counts.notes]
    for level, line, why in problems:
        item = FileProblem(path, line or 0, level, why)
        if len(report.problems) < MAX_KEPT_PROBLEMS:
            report.problems.append(item)
        if on_problem:
            on_problem(item)
