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
from evalcore.formats.jsonio import RawRecord, iter_records, iter_records_on, line_records
from evalcore.formats.langchain import is_langchain_message
from evalcore.schema import Problem, Provenance, Session, validate_session
from evalcore.schema.validation import SHALLOW

__all__ = [
    "ReadResult",
    "SessionWriter",
    "detect_format",
    "read",
    "read_lines",
    "read_on",
    "read_path",
    "reads_by_line",
    "writer_for",
]


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
    """The first registered format whose ``sniff`` recognises ``value``.

    A sniffer that fails on a shape it does not expect (an unhashable ``type``, say) does not
    recognise the value: detection goes on to the next format.
    """
    for fmt in formats():
        try:
            if fmt.sniff(value):
                return fmt
        except Exception:  # a sniffer's bug must not stop the file
            continue
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
    reading = _Reading(get_format(fmt) if isinstance(fmt, str) else fmt, source, validate)
    return _results(_conversations(iter_records(stream)), reading)


def reads_by_line(fmt: Format) -> bool:
    """Whether ``fmt`` reads each record into a session on its own (its reader holds nothing back): a stretch of
    a JSON Lines file in it reads the same on its own (``read_lines``) as within the file."""
    return type(fmt).reader is Format.reader


def read_lines(
    lines: list[str], fmt: Format, *, first_line: int, first_position: int, source: str | None, validate: bool = True
) -> list[ReadResult] | None:
    """What ``read`` gives for ``lines``, a stretch of a JSON Lines file in ``fmt`` (see ``reads_by_line``) that
    starts on line ``first_line`` with the record at ``first_position`` (the file's non-blank lines before it:
    one record each); None when a line may start a document spanning lines (then ``read_on`` reads from there)."""
    records = line_records(lines, first_line)
    if records is None:
        return None
    reading = _Reading(fmt, source, validate)
    reading.position = first_position
    return list(_results(iter(records), reading))


def read_on(
    stream: IO[str],
    head: str,
    fmt: Format,
    *,
    first_line: int,
    first_position: int,
    source: str | None,
    validate: bool = True,
) -> Iterator[ReadResult]:
    """What ``read`` gives for the rest of a file in ``fmt`` whose JSON Lines go on at line ``first_line`` (the
    record at ``first_position``): ``head``, its next whole lines read already, then the rest of ``stream``."""
    reading = _Reading(fmt, source, validate)
    reading.position = first_position
    return _results(iter_records_on(stream, head, first_line), reading)


def _results(records: Iterator[RawRecord], reading: _Reading) -> Iterator[ReadResult]:
    for raw in records:
        if raw.warning is not None:
            yield ReadResult(raw.line, -1, None, [Problem("warning", raw.field, raw.warning)])
        elif raw.error is not None:
            yield reading.failure(raw.line, Problem("error", raw.field, raw.error))
        else:
            yield from reading.feed(raw)  # a list: no generator per record (this runs for every one)
    yield from reading.close()


class _Reading:
    """The state of one ``read``: the format, its reader, the position, and a bound on nesting."""

    def __init__(self, chosen: Format | None, source: str | None, validate: bool) -> None:
        self.chosen = chosen
        self.reader: Reader | None = chosen.reader() if chosen else None
        self.source = source
        # The assistant the file's name says (``Format.assistant_from_source``), for sessions that name none.
        self.assistant: str | None = chosen.assistant_from_source(source) if chosen and source else None
        self.validate = validate
        self.position = 0
        # How deep the records fed to the reader since it last gave sessions can nest (None: unknown).
        # A reader may hold records back (Gaussia's batches): the bound covers every record it may hold.
        self.nesting: int | None = 0

    def feed(self, raw: RawRecord) -> list[ReadResult]:
        if self.chosen is None:
            try:
                self.chosen = detect_format(raw.value)
            except FormatDetectionError as exc:
                return [self.failure(raw.line, Problem("error", None, str(exc)))]
            self.reader = self.chosen.reader()
            self.assistant = self.chosen.assistant_from_source(self.source) if self.source else None
        reader = self.reader
        assert reader is not None
        bound, nesting = raw.nesting, self.nesting
        if nesting is not None and (bound is None or bound > nesting):
            self.nesting = bound
        problem: Problem | None = None
        try:
            done = reader.feed(raw.value, raw.line)
        except RecordError as exc:
            problem, done = Problem("error", exc.field, exc.reason), []
        except Exception as exc:  # a reader bug must not stop the file: report it as data
            problem, done = Problem("error", None, f"unreadable record ({type(exc).__name__}: {exc})"), []
        if problem is None and len(done) == 1 and not reader.failures and not reader.warnings:
            line, session = done[0]
            results = [self.finish(line, session)]  # the common case: one record, one session
        else:
            results = self._results(reader, done, raw.line, problem)
        if done:
            self.nesting = bound  # what the reader may still hold: this record at most
        return results

    def close(self) -> list[ReadResult]:
        reader = self.reader
        if reader is None:
            return []
        problem: Problem | None = None
        try:
            done = reader.close()
        except RecordError as exc:
            problem, done = Problem("error", exc.field, exc.reason), []
        except Exception as exc:  # a reader bug must not stop the file: report it as data
            problem, done = Problem("error", None, f"unreadable record ({type(exc).__name__}: {exc})"), []
        return self._results(reader, done, 0, problem)

    def _results(
        self, reader: Reader, done: list[tuple[int, Session]], line: int, problem: Problem | None
    ) -> list[ReadResult]:
        """What one step of the reader gave, in the order of their lines."""
        results = []
        # Sessions the reader held back and could not make (on their own, earlier, lines) come first.
        while reader.failures:
            held, error = reader.failures.pop(0)
            results.append(self.failure(held, Problem("error", error.field, error.reason)))
        if problem is not None:
            results.append(self.failure(line, problem))
        results += _drain_warnings(reader)
        results += [self.finish(start, session) for start, session in done]
        return results

    def finish(self, line: int, session: Session) -> ReadResult:
        assert self.chosen is not None
        # (Validating four known-good values is twice as fast as pydantic's ``model_construct``.)
        session.provenance = Provenance(source=self.source, format=self.chosen.name, line=line, position=self.position)
        self.position += 1
        if self.assistant is not None and session.assistant_id is None:
            session.assistant_id = self.assistant
        shallow = self.nesting is not None and self.nesting <= SHALLOW
        problems = validate_session(session, shallow=shallow) if self.validate else []
        return ReadResult(line, self.position - 1, session, problems)

    def failure(self, line: int, problem: Problem) -> ReadResult:
        self.position += 1
        return ReadResult(line, self.position - 1, None, [problem])


def _looks_like_message(value: Any) -> bool:
    if not isinstance(value, dict) or "messages" in value:
        return False
    if isinstance(value.get("role"), str) and "type" not in value:
        return True  # a chat message (OpenAI, Swarm)
    return is_langchain_message(value)  # LangChain messages_to_dict or model_dump


def _conversations(records: Iterator[RawRecord]) -> Iterator[RawRecord]:
    """A file that is one JSON array of messages (``json.dump(messages)``) is one conversation.

    An element that cannot be read is reported on its line, and the conversation is read from
    the others (as Gaussia's batches and Open Responses' items are: a bad record never costs the
    good ones). Records that follow the array (see ``iter_records``) are read as usual.
    """
    first = next(records, None)
    if first is None:
        return
    if not (first.in_array and _looks_like_message(first.value)):
        yield first
        yield from records
        return
    values = [first.value]
    merged = [first]
    broken: list[RawRecord] = []
    after: RawRecord | None = None
    for raw in records:
        if not raw.in_array:
            after = raw
            break
        if raw.error is not None:
            broken.append(raw)
        else:
            values.append(raw.value)
            merged.append(raw)
    yield from broken
    bounds = [r.nesting for r in merged]
    nesting = None if None in bounds else max(b for b in bounds if b is not None) + 1
    yield RawRecord(first.line, values, nesting=nesting)
    if after is not None:
        yield after
        yield from records


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
        self.write_lines(self.format.write_lines(session))  # all serialised first, so a failure writes nothing

    def write_lines(self, texts: list[str]) -> None:
        """Write the serialised values of one session (``Format.write_lines``)."""
        for text in texts:
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

    A file appears whole or not at all: it is written to a partial file beside ``path`` (through a
    symbolic link, beside the file it names) and moved into place; a failure, Ctrl-C or SIGTERM
    removes the partial file. A FIFO or a character device (``/dev/stdout``) is written straight
    into; a folder or a block device is refused. See :mod:`evalcore._infra.outputs`.
    """
    from evalcore._infra.outputs import PendingOutput, publish

    out = PendingOutput(path)
    try:
        writer = SessionWriter(out.file, fmt, array=Path(path).suffix.lower() == ".json")
        yield writer
        writer.close()
        publish(out)
    finally:
        out.discard()  # removes the partial file, unless it was put in place
