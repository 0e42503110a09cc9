"""Turning a file into rows for the sessions table: in this process, or in a second one.

A large import runs ``python -m evalcore.reading`` beside the importer: that process reads,
parses and validates the file and sends the rows, pickled, through a pipe, while the
importer writes them to the database. This module imports no database code, so that the
reader starts fast.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from evalcore.formats import read
from evalcore.formats.files import ReadResult
from evalcore.schema import Session

__all__ = ["Event", "Row", "events", "row_for", "run_reader", "search_text", "session_key", "stream_events"]

#: ``("problem", line, level, message)``, ``("batch", rows, bytes_read)``, and last
#: ``("counts", failed, warnings, format)``.
Event = tuple[Any, ...]


def search_text(session: Session) -> str:
    """The text full-text search sees: every message and the ground truth."""
    parts = [m.text for m in session.messages]
    parts += [session.goal or "", session.reference or "", *(session.expected_facts or [])]
    parts += [t.ground_truth or "" for t in session.turn_truth] + [t.observation or "" for t in session.turn_truth]
    return "\n".join(p for p in parts if p)


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


def session_key(session: Session, source: str) -> str:
    """A session's identity in a dataset: its ``session_id``, else its file and position."""
    if session.session_id is not None:
        return f"id:{session.session_id}"
    position = session.provenance.position if session.provenance else None
    return f"pos:{source}:{position}"


@dataclass(frozen=True)
class Row:
    """A session ready for the sessions table."""

    key: str
    content_hash: str
    values: tuple[Any, ...]  # in the order of the sessions table's insert (store/imports.py)
    tags: tuple[str, ...]


def row_for(dataset_id: int, source: str, session: Session) -> Row:
    """The sessions-table row of ``session``, with the hash that tells whether it changed."""
    data = session.model_dump_json(exclude={"provenance"}, exclude_defaults=True)
    content_hash = hashlib.sha256(data.encode()).hexdigest()
    key = session_key(session, source)
    title = next((m.text for m in session.messages if m.role == "user"), "")[:200]
    p = session.provenance
    values = (
        dataset_id, key, session.session_id, session.assistant_id, title, session.status, json.dumps(session.tags),
        session.n_turns(), len(session.messages), len(session.tool_calls()), p.source if p else None,
        p.format if p else None, p.position if p else None, p.line if p else None, data, content_hash,
        search_text(session), int(session.has_ground_truth()),
    )  # fmt: skip
    return Row(key, content_hash, values, tuple(session.tags))


def events(path: str, fmt: str | None, dataset_id: int, batch_size: int) -> Iterator[Event]:
    """Read ``path`` into events (see ``Event``): problems, batches of rows, and the counts."""
    with open(path, "rb") as raw:
        yield from stream_events(raw, Path(path).name, fmt, dataset_id, batch_size)


def stream_events(raw: BinaryIO, source: str, fmt: str | None, dataset_id: int, batch_size: int) -> Iterator[Event]:
    """``events`` of a binary stream (an upload, say) whose file name is ``source``."""
    seen: dict[str, int] = {}
    # Rows, not sessions, wait for their batch: plain tuples keep the garbage collector idle.
    batch: list[Row] = []
    counts = {"failed": 0, "warnings": 0}
    found_format: list[str | None] = [None]
    counter = _Counting(raw)
    stream = io.TextIOWrapper(io.BufferedReader(counter), encoding="utf-8", errors="surrogateescape", newline="")
    for result in read(stream, fmt, source=source):
        problems, ok = _accept(result, counts, found_format)
        yield from problems
        if not ok:
            continue
        assert result.session is not None
        row = row_for(dataset_id, source, result.session)
        if row.key in seen:
            message = f"session {row.key[3:]!r} appears again (first on line {seen[row.key]}); skipped"
            yield ("problem", result.line, "error", message)
            counts["failed"] += 1
            continue
        seen[row.key] = result.line
        batch.append(row)
        if len(batch) >= batch_size:
            yield ("batch", batch, counter.count)
            batch = []
    if batch:
        yield ("batch", batch, counter.count)
    yield ("counts", counts["failed"], counts["warnings"], found_format[0])


def _accept(result: ReadResult, counts: dict[str, int], found_format: list[str | None]) -> tuple[list[Event], bool]:
    out: list[Event] = []
    has_error = False
    for p in result.problems:
        out.append(("problem", result.line, p.level, f"{p.field}: {p.message}" if p.field else p.message))
        if p.level == "error":
            has_error = True
        else:
            counts["warnings"] += 1
    if has_error:
        counts["failed"] += 1
        return out, False
    if result.session is None:
        return out, False
    if result.session.provenance is not None:
        found_format[0] = result.session.provenance.format
    return out, True


def run_reader(argv: list[str]) -> int:
    """The reader process: ``_events`` of the file named in ``argv``, pickled to standard output."""
    path, fmt, dataset_id, batch_size = json.loads(argv[0])
    out = sys.stdout.buffer
    try:
        try:
            for event in events(path, fmt, dataset_id, batch_size):
                pickle.dump(event, out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
        except Exception as exc:  # handed to the importer, which raises it as a StoreError
            pickle.dump(("failed", f"{type(exc).__name__}: {exc}"), out)
            out.flush()
    except BrokenPipeError:  # the importer is gone (stopped or killed): nothing left to do
        return 1
    return 0


if __name__ == "__main__":
    # Run the module's importable twin, so that pickled rows name evalcore.reading.Row, not __main__.Row.
    from evalcore import reading

    sys.exit(reading.run_reader(sys.argv[1:]))
