"""Reading a big file on several processes: a JSON Lines file's lines are cut into blocks, and forked workers
read each block and work on what it gives, while this process hands the blocks out and takes the results back
in the file's order.

The results are those of reading the file in one process (``read_path``), record for record: a block is read
only when the file's format reads each record on its own (``reads_by_line``) and its position in the file is
known (the line it starts on, and the records before it: one a non-blank line). A file that does not start
with a JSON Lines record (a JSON array, a document spanning lines, a first line that is not JSON) is read in
this process; so is the rest of a file from a block with a line that may start a document spanning lines, and
from a line of ``PIECE`` characters or more (one that may not be kept: longer than the maximum record size, or
no JSON from its start; see ``evalcore.formats.jsonio``), and a file whose format needed a word on its detection.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import IO, Any, Generic, TypeVar

from evalcore._infra.workers import can_fork, fork_pool, worker_failures
from evalcore.errors import FormatDetectionError
from evalcore.formats.base import Format, get_format
from evalcore.formats.detection import detect
from evalcore.formats.files import ReadResult, read, read_lines, read_on, reads_by_line
from evalcore.formats.jsonio import MAX_RECORD, PIECE, line_records

__all__ = ["BLOCK_CHARS", "PARALLEL_MIN_BYTES", "MappedRead", "map_read"]

T = TypeVar("T")

#: Files smaller than this are read in one process (forking workers costs more than they save).
PARALLEL_MIN_BYTES = 2 << 20
#: About this many characters of whole lines make a block.
BLOCK_CHARS = 1 << 19


def map_read(
    path: str | os.PathLike[str],
    fmt: str | Format | None,
    work: Callable[[ReadResult], T],
    *,
    workers: int = 1,
    validate: bool = True,
    source: str | None = None,
    max_record: int = MAX_RECORD,
) -> MappedRead[T]:
    """``work`` of each ``ReadResult`` of ``read_path(path, fmt)``, in the file's order; with ``workers`` > 1, a
    big JSON Lines file is read, and worked on, by that many forked processes (``work`` is inherited by them,
    and what it returns goes back pickled: keep it small, a session's lines rather than the session).

    ``source`` is the name the sessions' provenance gives the file (its path unless told). The file is opened
    here (a missing one raises at once); it is closed when the results are all taken, or dropped. No record
    longer than ``max_record`` characters is read (see ``read``).
    """
    chosen = get_format(fmt) if isinstance(fmt, str) else fmt
    raw = open(path, "rb", buffering=0)  # noqa: SIM115  (closed by the generator below, when it ends)
    size = os.fstat(raw.fileno()).st_size
    name = str(path) if source is None else source
    job = _Job(chosen, name, validate, work, max_record)
    results = _mapped(raw, job, workers if size >= PARALLEL_MIN_BYTES else 1)
    return MappedRead(results, raw, size)


class MappedRead(Iterator[T]):
    """What ``map_read`` gives: an iterator over the work's results that also tells how far into the file the
    reading has come (``bytes_read``: bytes taken from the file, for a progress bar)."""

    def __init__(self, results: Iterator[T], raw: io.FileIO, size: int) -> None:
        self._results = results
        self._raw = raw
        self._size = size

    def __next__(self) -> T:
        return next(self._results)

    @property
    def bytes_read(self) -> int:
        """Bytes of the file read so far (its size once it is closed)."""
        return self._size if self._raw.closed else min(self._raw.tell(), self._size)


def _mapped(raw: io.FileIO, job: _Job[T], workers: int) -> Iterator[T]:
    text = io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="surrogateescape", newline="")
    with raw, text as stream:
        if workers > 1 and can_fork():
            by_line = _line_format(stream, job.format)
            stream.seek(0)
            if by_line is not None:
                yield from _map_blocks(stream, dataclasses.replace(job, format=by_line), workers)
                return
        results = read(stream, job.format, source=job.source, validate=job.validate, max_record=job.max_record)
        for result in results:
            yield job.work(result)


@dataclass(frozen=True)
class _Job(Generic[T]):
    """What every worker is given: the format (None: to detect), the file's name, whether to validate, the work,
    the maximum record size."""

    format: Format | None
    source: str
    validate: bool
    work: Callable[[ReadResult], T]
    max_record: int = MAX_RECORD


@dataclass(frozen=True)
class _Block:
    """Whole lines of the file (with their newlines), from line ``first_line``, record ``first_position`` on.

    A block ``alone`` is read in this process, with the rest of the file: its one line is the start of a line of
    ``PIECE`` characters or more, the rest of which the file still holds."""

    first_line: int
    first_position: int
    lines: list[str]
    alone: bool = False


def _line_format(stream: IO[str], chosen: Format | None) -> Format | None:
    """The format of a file that starts with a JSON Lines record of a format read record by record (the one
    chosen, else the one its first record is in, when its detection needs no word); None for any other file."""
    while (text := stream.readline(PIECE)) and not text.strip():
        pass
    if text.lstrip()[:1] != "{" or len(text) >= PIECE:
        return None  # an array, a byte-order mark, a line longer than a piece...: the reader of one process decides
    records = line_records([text.rstrip("\n")], 1)
    if not records or records[0].error is not None:
        return None
    if chosen is None:
        try:
            detection = detect(records[0].value)
        except FormatDetectionError:
            return None
        if detection.warning is not None:  # said by the reader of one process, on the file's first record
            return None
        chosen = detection.format
    return chosen if reads_by_line(chosen) else None


def _blocks(stream: IO[str]) -> Iterator[_Block]:
    """The file's lines in blocks of about ``BLOCK_CHARS`` characters, up to a line of ``PIECE`` characters or
    more: what was read of it ends the blocks (an ``alone`` one: that line may not be kept, and it is read by the
    reader of this process, which holds no line longer than the maximum record size)."""
    line, position = 1, 0
    readline = stream.readline
    while True:
        lines: list[str] = []
        size = 0
        while size < BLOCK_CHARS and (text := readline(PIECE)):
            if len(text) >= PIECE:
                if lines:
                    yield _Block(line, position, lines)
                yield _Block(line + len(lines), position + _records(lines), [text], alone=True)
                return
            lines.append(text)
            size += len(text)
        if not lines:
            return
        yield _Block(line, position, lines)
        line += len(lines)
        position += _records(lines)


def _map_blocks(stream: IO[str], job: _Job[T], workers: int) -> Iterator[T]:
    """The blocks of ``stream`` worked on by ``workers`` processes, at most two blocks each in flight (memory
    stays flat); from a block that cannot be read on its own, the rest of the file read here. A worker that
    dies (killed, out of memory) raises ``WorkerError``."""
    blocks = _blocks(stream)
    pool = fork_pool(workers, _set_job, (job,))
    pending: deque[tuple[_Block, Future[list[T] | None] | None]] = deque()
    try:
        with worker_failures():
            for block in itertools.islice(blocks, 2 * workers):
                pending.append((block, None if block.alone else pool.submit(_work, block)))
            while pending:
                block, future = pending.popleft()
                done = None if future is None else future.result()
                if done is None:
                    rest = [block] + [later for later, _ in pending]
                    for _, later_future in pending:
                        if later_future is not None:
                            later_future.cancel()
                    pending.clear()
                    head = "".join(text for b in rest for text in b.lines)
                    assert job.format is not None
                    results = read_on(
                        stream, head, job.format, first_line=block.first_line, first_position=block.first_position,
                        source=job.source, validate=job.validate, max_record=job.max_record,
                    )  # fmt: skip
                    for result in results:
                        yield job.work(result)
                    return
                yield from done
                for block in itertools.islice(blocks, 1):
                    pending.append((block, None if block.alone else pool.submit(_work, block)))
    finally:
        for _, future in pending:
            if future is not None:
                future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


# Set in each worker process (forked: inherited, never pickled).
_job: _Job[Any] | None = None


def _set_job(job: _Job[Any]) -> None:
    global _job
    _job = job


def _work(block: _Block) -> list[Any] | None:
    """In a worker: ``work`` of every record of ``block``; None when it must be read with the lines after it."""
    job = _job
    assert job is not None and job.format is not None
    lines = [text[:-1] if text.endswith("\n") else text for text in block.lines]
    results = read_lines(
        lines, job.format, first_line=block.first_line, first_position=block.first_position, source=job.source,
        validate=job.validate,
    )  # fmt: skip
    return None if results is None else [job.work(result) for result in results]


def _records(lines: list[str]) -> int:
    """How many records ``lines`` hold: one a non-blank line."""
    return sum(1 for text in lines if text.strip())
