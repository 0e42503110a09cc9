"""Reading sessions out of files and writing them into files, streaming, one record at a time.

Nothing here raises for a bad record: each comes back as a ``ReadResult`` with its
problems, and every good record is still read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from evalcore.errors import FormatDetectionError, RecordError
from evalcore.formats.base import Format, Reader, formats, get_format
from evalcore.formats.jsonio import RawRecord, iter_records
from evalcore.schema import Problem, Provenance, Session, validate_session

__all__ = ["ReadResult", "SessionWriter", "detect_format", "read", "read_path", "writer_for"]


@dataclass
class ReadResult:
    """One record of a file: the session read from it (if any) and its problems."""

    line: int
    position: int
    session: Session | None
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the record gave a session with no error (warnings allowed)."""
        return self.session is not None and not any(p.level == "error" for p in self.problems)


def detect_format(value: Any) -> Format:
    """The first registered format whose ``sniff`` recognises ``value``."""
    for fmt in formats():
        if fmt.sniff(value):
            return fmt
    names = ", ".join(f.name for f in formats())
    raise FormatDetectionError(f"no format recognises this record (tried {names}); name one with --from")


def read(
    stream: IO[str],
    fmt: str | Format | None = None,
    *,
    source: str | None = None,
    validate: bool = True,
) -> Iterator[ReadResult]:
    """Stream the sessions of ``stream``, detecting the format from content when not given."""
    chosen = get_format(fmt) if isinstance(fmt, str) else fmt
    reader: Reader | None = chosen.reader() if chosen else None
    position = 0

    def finish(line: int, session: Session) -> ReadResult:
        nonlocal position
        assert chosen is not None
        # Known-good values: built without validation (this runs once per session read).
        session.provenance = Provenance.model_construct(source=source, format=chosen.name, line=line, position=position)
        position += 1
        return ReadResult(line, position - 1, session, validate_session(session) if validate else [])

    def failure(line: int, problem: Problem) -> ReadResult:
        nonlocal position
        position += 1
        return ReadResult(line, position - 1, None, [problem])

    for raw in _conversations(iter_records(stream)):
        if raw.error is not None:
            yield failure(raw.line, Problem("error", None, raw.error))
            continue
        if chosen is None:
            try:
                chosen = detect_format(raw.value)
            except FormatDetectionError as exc:
                yield failure(raw.line, Problem("error", None, str(exc)))
                continue
            reader = chosen.reader()
        assert reader is not None
        try:
            done = reader.feed(raw.value, raw.line)
        except RecordError as exc:
            yield failure(raw.line, Problem("error", exc.field, exc.reason))
            continue
        except Exception as exc:  # a reader bug must not stop the file: report it as data
            yield failure(raw.line, Problem("error", None, f"unreadable record ({type(exc).__name__}: {exc})"))
            continue
        yield from _drain_warnings(reader)
        for line, session in done:
            yield finish(line, session)
    if reader is not None:
        try:
            done = reader.close()
        except RecordError as exc:
            yield failure(0, Problem("error", exc.field, exc.reason))
            done = []
        for line, session in done:
            yield finish(line, session)
        yield from _drain_warnings(reader)


def _looks_like_message(value: Any) -> bool:
    if not isinstance(value, dict) or "messages" in value:
        return False
    if isinstance(value.get("role"), str) and "type" not in value:
        return True  # a chat message (OpenAI, Swarm)
    return isinstance(value.get("data"), dict) and isinstance(value.get("type"), str)  # LangChain messages_to_dict


def _conversations(records: Iterator[RawRecord]) -> Iterator[RawRecord]:
    """A file that is one JSON array of messages (``json.dump(messages)``) is one conversation."""
    first = next(records, None)
    if first is None:
        return
    if not (first.in_array and _looks_like_message(first.value)):
        yield first
        yield from records
        return
    values = [first.value]
    for raw in records:
        if raw.error is not None:
            yield raw
            return
        values.append(raw.value)
    yield RawRecord(first.line, values)


def _drain_warnings(reader: Reader) -> Iterator[ReadResult]:
    while reader.warnings:
        line, message = reader.warnings.pop(0)
        yield ReadResult(line, -1, None, [Problem("warning", None, message)])


@contextmanager
def read_path(
    path: str | os.PathLike[str], fmt: str | Format | None = None, *, validate: bool = True
) -> Iterator[Iterator[ReadResult]]:
    """Open ``path`` (UTF-8; bad bytes are reported per record) and stream its sessions."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as stream:
        yield read(stream, fmt, source=str(path), validate=validate)


class SessionWriter:
    """Writes sessions in one format: JSON Lines, or one JSON array when ``array``."""

    def __init__(self, stream: IO[str], fmt: str | Format, *, array: bool = False) -> None:
        self.format = get_format(fmt) if isinstance(fmt, str) else fmt
        if not self.format.writable:
            from evalcore.errors import UsageError

            writable = ", ".join(f.name for f in formats() if f.writable)
            raise UsageError(f"{self.format.name} is read-only; write one of: {writable}")
        self.stream = stream
        self.array = array
        self.count = 0

    def write(self, session: Session) -> None:
        """Write one session (one or more values)."""
        texts = self.format.write_lines(session)
        for text in texts:  # all serialised first, so a failure writes nothing
            if self.array:
                self.stream.write(("[\n" if self.count == 0 else ",\n") + text)
            else:
                self.stream.write(text + "\n")
            self.count += 1

    def close(self) -> None:
        """Finish the file (closes the JSON array)."""
        if self.array:
            self.stream.write("[]\n" if self.count == 0 else "\n]\n")


@contextmanager
def writer_for(path: str | os.PathLike[str], fmt: str | Format) -> Iterator[SessionWriter]:
    """A writer into ``path``: a JSON array when it ends in ``.json``, else JSON Lines.

    The file appears whole or not at all: it is written beside ``path`` and moved into place.
    """
    target = Path(path)
    partial = target.with_name(f".{target.name}.partial")
    try:
        with open(partial, "w", encoding="utf-8", newline="\n") as stream:
            writer = SessionWriter(stream, fmt, array=target.suffix.lower() == ".json")
            yield writer
            writer.close()
        os.replace(partial, target)
    finally:
        if partial.exists():
            partial.unlink()
