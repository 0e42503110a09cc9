"""Turning a file into rows for the sessions table: in this process, or in a second one.

A large import runs ``python -m evalcore.reading`` beside the importer: that process reads,
parses and validates the file and sends the rows, pickled, through a pipe, while the
importer writes them to the database. This module imports no database code, so that the
reader starts fast.

Both ways give the importer the same events (``Event``): a ``ProblemEvent`` for each problem,
``BatchEvent`` of ``Row`` (one named field per column), and last ``CountsEvent``, or
``FailedEvent`` when reading stopped (an I/O error, say) — after the rows read before it, naming
the last line read. A record is checked by the same ``validate_session`` as ``validate`` and
``convert`` (so what validate accepts, import stores), and a record the row cannot hold anyway
is a problem on its line: one bad record never costs the others, in either process.
"""

from __future__ import annotations

import functools
import gc
import io
import json
import pickle
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from evalcore._infra.workers import die_with_parent
from evalcore.formats import read
from evalcore.formats.files import ReadResult
from evalcore.formats.jsonio import MAX_RECORD
from evalcore.formats.parallel import map_read
from evalcore.identity import repeat_name
from evalcore.store.rows import Row, row_for

__all__ = [
    "BatchEvent",
    "CountsEvent",
    "Event",
    "FailedEvent",
    "Prepared",
    "ProblemEvent",
    "events",
    "prepare",
    "run_reader",
    "stream_events",
]


@dataclass(frozen=True, slots=True)
class ProblemEvent:
    """A problem with the record on ``line`` (``level`` "error" or "warning")."""

    line: int
    level: str
    message: str


@dataclass(frozen=True, slots=True)
class BatchEvent:
    """Rows ready for the store, and how many bytes of the file had been read when they were."""

    rows: list[Row]
    bytes_read: int


@dataclass(frozen=True, slots=True)
class CountsEvent:
    """The last event of a file read to its end: records that failed, warnings, the format read."""

    failed: int
    warnings: int
    format: str | None


@dataclass(frozen=True, slots=True)
class FailedEvent:
    """Reading stopped before the end of the file: why, and the last line read (0 when none was)."""

    reason: str
    line: int


#: What reading a file gives the importer, in order: problems and batches as they come, then
#: ``CountsEvent`` (or ``FailedEvent`` if reading stopped). Events are pickled from the reader
#: process to the importer: plain dataclasses of strings and numbers.
Event = ProblemEvent | BatchEvent | CountsEvent | FailedEvent


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


def events(
    path: str,
    fmt: str | None,
    dataset_id: int,
    batch_size: int,
    workers: int = 1,
    max_record: int = MAX_RECORD,
    assistant: str | None = None,
) -> Iterator[Event]:
    """Read ``path`` into events (see ``Event``): problems, batches of rows, and the counts. With ``workers`` > 1,
    a big JSON Lines file's records are read and made rows by that many forked processes
    (``evalcore.formats.parallel``); the events are the same. No record longer than ``max_record`` characters is
    read: it is a problem, and reading stops there. ``assistant``, when given, is every session's ``assistant_id``
    (see ``prepare``)."""
    source = Path(path).name
    work = functools.partial(prepare, dataset_id, source, assistant=assistant)
    try:
        mapped = map_read(path, fmt, work, workers=workers, source=source, max_record=max_record)
    except OSError as exc:
        yield FailedEvent(f"{type(exc).__name__}: {exc}", 0)
        return
    yield from _events(mapped, lambda: mapped.bytes_read, batch_size)


def stream_events(
    raw: BinaryIO,
    source: str,
    fmt: str | None,
    dataset_id: int,
    batch_size: int,
    max_record: int = MAX_RECORD,
    assistant: str | None = None,
) -> Iterator[Event]:
    """``events`` of a binary stream (an upload, say) whose file name is ``source``."""
    counter = _Counting(raw)
    stream = io.TextIOWrapper(io.BufferedReader(counter), encoding="utf-8", errors="surrogateescape", newline="")
    results = read(stream, fmt, source=source, max_record=max_record)
    prepared = (prepare(dataset_id, source, result, assistant=assistant) for result in results)
    yield from _events(prepared, lambda: counter.count, batch_size)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A record made ready for the store (``prepare``): its problems as events, how many are warnings, whether it
    failed (an error: not stored), its row (None when it failed or gave no session), the format it was read as."""

    line: int
    problems: list[ProblemEvent]
    warnings: int
    failed: bool
    row: Row | None
    format: str | None

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by position (a worker sends one per record): a third of the time of a frozen dataclass's default.
        return Prepared, (self.line, self.problems, self.warnings, self.failed, self.row, self.format)


def prepare(dataset_id: int, source: str, result: ReadResult, *, assistant: str | None = None) -> Prepared:
    """``result`` made ready for the store: what one record gives, on its own (a worker process may make it).

    ``assistant`` (``import --assistant``), when given, is the session's ``assistant_id``, whatever the record or
    the file's name said: part of the session's identity, so that two assistants' runs of the same tasks, imported
    from two files, are two sets of sessions.

    A record that cannot be made a row is a problem on its line, like any other: it never costs the others.
    """
    problems = [ProblemEvent(result.line, p.level, result.report(p)) for p in result.problems]
    warnings = sum(p.level != "error" for p in result.problems)
    session = result.session
    if len(problems) > warnings or session is None:
        return Prepared(result.line, problems, warnings, len(problems) > warnings, None, None)
    read_as = session.provenance.format if session.provenance is not None else None
    if assistant is not None:
        session.assistant_id = assistant
    try:
        row = row_for(dataset_id, source, session)
    except Exception as exc:  # what validation let through and the row cannot hold: this record only
        problems.append(ProblemEvent(result.line, "error", f"cannot store this record ({type(exc).__name__}: {exc})"))
        return Prepared(result.line, problems, warnings, True, None, read_as)
    return Prepared(result.line, problems, warnings, False, row, read_as)


def _events(prepared: Iterator[Prepared], bytes_read: Callable[[], int], batch_size: int) -> Iterator[Event]:
    """The events of the records ``prepared`` gives, in order: a session whose identity an earlier record has is
    skipped with an error on its line. Should reading itself fail (an I/O error, a bug), the rows read so far are
    handed over first, then ``FailedEvent`` names the last line read."""
    seen: dict[str, int] = {}
    # Rows, not sessions, wait for their batch: plain values keep the garbage collector idle.
    batch: list[Row] = []
    failed = warnings = line = 0
    read_as: str | None = None
    try:
        for record in prepared:
            line = max(line, record.line)
            yield from record.problems
            warnings += record.warnings
            read_as = record.format or read_as
            row = record.row
            if record.failed or row is None:
                failed += record.failed
                continue
            if row.key in seen:
                name = repeat_name(row.session_id, row.assistant_id, row.key)
                message = f"session {name} appears again (first on line {seen[row.key]}); skipped"
                yield ProblemEvent(record.line, "error", message)
                failed += 1
                continue
            seen[row.key] = record.line
            batch.append(row)
            if len(batch) >= batch_size:
                yield BatchEvent(batch, bytes_read())
                batch = []
    except Exception as exc:
        if batch:
            yield BatchEvent(batch, bytes_read())
        yield FailedEvent(f"{type(exc).__name__}: {exc}", line)
        return
    if batch:
        yield BatchEvent(batch, bytes_read())
    yield CountsEvent(failed, warnings, read_as)


def run_reader(argv: list[str]) -> int:
    """The reader process: ``events`` of the file named in ``argv``, pickled to standard output. It dies with the
    importer that started it (whose pid ``argv`` ends with), as do the workers it forks."""
    path, fmt, dataset_id, batch_size, workers, max_record, assistant, parent = json.loads(argv[0])
    die_with_parent(parent)
    # This process only turns a file into rows, batch after batch, each let go once sent: it makes no cycles, and the
    # cyclic collector would only walk through the batch at hand (as in the workers it forks).
    gc.disable()
    out = sys.stdout.buffer
    try:
        for event in events(path, fmt, dataset_id, batch_size, workers, max_record, assistant):
            pickle.dump(event, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
    except BrokenPipeError:  # the importer is gone (stopped or killed): nothing left to do
        return 1
    except Exception as exc:  # opening the file failed: handed to the importer, which raises it
        try:
            pickle.dump(FailedEvent(f"{type(exc).__name__}: {exc}", 0), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
        except BrokenPipeError:
            return 1
    return 0


if __name__ == "__main__":
    # Run the module's importable twin, so that pickled events name evalcore.reading, not __main__.
    from evalcore import reading

    try:
        sys.exit(reading.run_reader(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C reaches both processes: the importer reports it, quietly here
        sys.exit(130)
