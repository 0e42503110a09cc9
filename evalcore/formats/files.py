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
from evalcore.formats.detection import detect, detect_format
from evalcore.formats.jsonio import MAX_RECORD, RawRecord, iter_records, iter_records_on, line_records, too_large
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
    """One record of a file: the session read from it (if any) and its problems.

    ``element`` is the record's place (from 1) in the JSON array that is the whole file, if it is one of its
    elements: in a file that is one line, the line does not tell its records apart.
    """

    line: int
    position: int
    session: Session | None
    problems: list[Problem] = field(default_factory=list)
    element: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the record gave a session with no error (warnings allowed)."""
        return self.session is not None and not any(p.level == "error" for p in self.problems)

    def report(self, problem: Problem) -> str:
        """``problem`` (one of this record's) as reported after the file and the line: ``element N: field: what``."""
        where = f"element {self.element}: " if self.element is not None else ""
        return f"{where}{problem.field}: {problem.message}" if problem.field else f"{where}{problem.message}"


def read(
    stream: IO[str],
    fmt: str | Format | None = None,
    *,
    source: str | None = None,
    validate: bool = True,
    max_record: int = MAX_RECORD,
) -> Iterator[ReadResult]:
    """Stream the sessions of ``stream``, detecting the format from content when not given (see
    ``evalcore.formats.detection``). No record longer than ``max_record`` characters is read: past it, one is
    reported and reading stops (``evalcore.formats.jsonio``)."""
    reading = _Reading(get_format(fmt) if isinstance(fmt, str) else fmt, source, validate)
    return _results(_conversations(iter_records(stream, max_record=max_record), max_record), reading)


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
    max_record: int = MAX_RECORD,
) -> Iterator[ReadResult]:
    """What ``read`` gives for the rest of a file in ``fmt`` whose JSON Lines go on at line ``first_line`` (the
    record at ``first_position``): ``head``, its next lines read already (the last may be the start of a line),
    then the rest of ``stream``."""
    reading = _Reading(fmt, source, validate)
    reading.position = first_position
    return _results(iter_records_on(stream, head, first_line, max_record=max_record), reading)


def _results(records: Iterator[RawRecord], reading: _Reading) -> Iterator[ReadResult]:
    for raw in records:
        if raw.warning is not None:
            yield ReadResult(raw.line, -1, None, [Problem("warning", raw.field, raw.warning)], raw.element)
        elif raw.error is not None:
            yield reading.failure(raw.line, Problem("error", raw.field, raw.error), raw.element)
        else:
            if raw.remark is not None:  # a warning about the record, read all the same
                yield ReadResult(raw.line, -1, None, [Problem("warning", raw.field, raw.remark)], raw.element)
            yield from reading.feed(raw)  # a list: no generator per record (this runs for every one)
    yield from reading.close()


class _At(int):
    """A line number that knows the element of the file's array on it: what a reader is given as a record's line
    and hands back with the sessions it makes, so that each result names its element too."""

    element: int | None = None

    @classmethod
    def of(cls, raw: RawRecord) -> int:
        if raw.element is None:
            return raw.line
        at = cls(raw.line)
        at.element = raw.element
        return at


def _element(line: int) -> int | None:
    return line.element if isinstance(line, _At) else None


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
        element = raw.element
        noted: list[ReadResult] | None = None
        if self.chosen is None:
            try:
                detection = detect(raw.value)
            except FormatDetectionError as exc:
                return [self.failure(raw.line, Problem("error", None, str(exc)), element)]
            self.chosen = detection.format
            self.reader = self.chosen.reader()
            self.assistant = self.chosen.assistant_from_source(self.source) if self.source else None
            if detection.warning is not None:
                noted = [ReadResult(raw.line, -1, None, [Problem("warning", None, detection.warning)], element)]
        reader = self.reader
        assert reader is not None
        # A reader that may hold records back hands their lines back later: an element goes with its line.
        line = raw.line if element is None or type(reader) is Reader else _At.of(raw)
        bound, nesting = raw.nesting, self.nesting
        if nesting is not None and (bound is None or bound > nesting):
            self.nesting = bound
        problem: Problem | None = None
        try:
            done = reader.feed(raw.value, line)
        except RecordError as exc:
            problem, done = Problem("error", exc.field, exc.reason), []
        except Exception as exc:  # a reader bug must not stop the file: report it as data
            problem, done = Problem("error", None, f"unreadable record ({type(exc).__name__}: {exc})"), []
        if problem is None and len(done) == 1 and not reader.failures and not reader.warnings and noted is None:
            start, session = done[0]
            results = [self.finish(start, session, element)]  # the common case: one record, one session
        else:
            results = (noted or []) + self._results(reader, done, line, problem, element)
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
        return self._results(reader, done, 0, problem, None)

    def _results(
        self, reader: Reader, done: list[tuple[int, Session]], line: int, problem: Problem | None, element: int | None
    ) -> list[ReadResult]:
        """What one step of the reader gave, in the order of their lines (``line`` and ``element``: the record's)."""
        results = []
        # Sessions the reader held back and could not make (on their own, earlier, lines) come first.
        while reader.failures:
            held, error = reader.failures.pop(0)
            results.append(self.failure(held, Problem("error", error.field, error.reason)))
        if problem is not None:
            results.append(self.failure(line, problem, element))
        results += _drain_warnings(reader)
        results += [self.finish(start, session, element) for start, session in done]
        return results

    def finish(self, line: int, session: Session, element: int | None = None) -> ReadResult:
        """The result of a session that starts on ``line`` (an ``_At`` tells its element, else ``element`` does)."""
        assert self.chosen is not None
        if type(line) is not int:  # an ``_At``, handed back by a reader that held records
            line, element = int(line), _element(line)
        # (Validating four known-good values is twice as fast as pydantic's ``model_construct``.)
        position = self.position
        session.provenance = Provenance(source=self.source, format=self.chosen.name, line=line, position=position)
        self.position += 1
        if self.assistant is not None and session.assistant_id is None:
            session.assistant_id = self.assistant
        shallow = self.nesting is not None and self.nesting <= SHALLOW
        problems = validate_session(session, shallow=shallow) if self.validate else []
        return ReadResult(line, self.position - 1, session, problems, element)

    def failure(self, line: int, problem: Problem, element: int | None = None) -> ReadResult:
        """The result of a record that gave no session (see ``finish``)."""
        if type(line) is not int:
            line, element = int(line), _element(line)
        self.position += 1
        return ReadResult(line, self.position - 1, None, [problem], element)


def _looks_like_message(value: Any) -> bool:
    if not isinstance(value, dict) or "messages" in value:
        return False
    if isinstance(value.get("role"), str) and "type" not in value:
        return True  # a chat message (OpenAI, Swarm)
    return is_langchain_message(value)  # LangChain messages_to_dict or model_dump


def _conversations(records: Iterator[RawRecord], limit: int = MAX_RECORD) -> Iterator[RawRecord]:
    """A file that is one JSON array of messages (``json.dump(messages)``) is one conversation.

    An element that cannot be read is reported on its line, and the conversation is read from
    the others (as Gaussia's batches and Open Responses' items are: a bad record never costs the
    good ones). Records that follow the array (see ``iter_records``) are read as usual. The
    conversation is one record: longer than ``limit`` characters, it is reported, and reading stops.
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
    size = first.size
    for raw in records:
        if not raw.in_array:
            after = raw
            break
        if raw.error is not None:
            broken.append(raw)
        else:
            values.append(raw.value)
            merged.append(raw)
            size += raw.size
            if size > limit:
                yield from broken
                reason = f"a conversation (a JSON array of messages) of {too_large(limit).removeprefix('a record of ')}"
                yield RawRecord(first.line, error=f"{reason}; reading stops here: the rest of the file is not read")
                return
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
        yield ReadResult(int(line), -1, None, [Problem("warning", None, message)], _element(line))


@contextmanager
def read_path(
    path: str | os.PathLike[str],
    fmt: str | Format | None = None,
    *,
    validate: bool = True,
    max_record: int = MAX_RECORD,
) -> Iterator[Iterator[ReadResult]]:
    """Open ``path`` (UTF-8; bad bytes are reported per record) and stream its sessions (see ``read``)."""
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as stream:
        yield read(stream, fmt, source=str(path), validate=validate, max_record=max_record)


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
