"""Streaming JSON input and output with line numbers.

An input is a sequence of JSON values: one a line (JSON Lines), or pretty-printed documents one
after another (the two may mix). When the whole input is one JSON array (nothing but whitespace
after it), its elements are the records, streamed one at a time. The choice is made on the whole
input, not on its first character: a JSON Lines file whose first line is an array (``[]``, a bare
message list) is a file of lines, and its first line one record among the others. To tell the two
apart, up to ``_LOOKAHEAD`` characters of a leading array are held back; an array longer than that
is streamed, and if JSON follows it, its elements were read as records and a warning says so
(nothing is dropped; text after an array that is no JSON is reported, and the array read). Memory
stays bounded by the largest single record and that look-ahead, never by the file.

A bad record costs only itself: a broken line is reported and the next one read; a broken
document is reported on its first line and reading goes on at the next line that starts in the
first column; a broken element of a pretty-printed array, at the next line that starts an element
as the first one did.

What JSON allows but no part of evalcore can hold is a problem on its own record, never an
exception that stops the file: nesting deeper than the parser goes (about 1,000 levels), an
integer longer than Python's digit limit (``sys.get_int_max_str_digits()``, 4,300 by default), and
an escaped lone surrogate (``"\\ud800"``, half of a UTF-16 pair: not a character, and refused by
every encoder downstream). ``loads`` refuses the same, so JSON parsed inside a record (tool-call
arguments, traces kept as JSON text) can never bring them in either. Nesting within that limit
but deeper than evalcore stores is measured on the session (``evalcore.schema.check_storable``);
``nesting_bound`` tells, from the text alone and at C speed, which records need measuring.

Reading is bounded, whatever the input: no record is held past ``max_record`` characters of text
(``MAX_RECORD``, 64 MiB, by default; characters are bytes in ASCII text). A record larger than that
is reported on its line (and element) and reading stops there, with everything before it read: its
end is looked for no further, so a line that never ends (``/dev/zero``) stops too. A line is read
``PIECE`` characters (a megabyte) at a time, so that one that cannot be JSON from its first
characters (NUL bytes, binary data) is known at once: it is reported without being held, and
reading goes on after it when it ends within ``max_record`` characters. An input whose first bytes
show it is UTF-16, UTF-32 or compressed is reported as such on line 1, and not read
(``evalcore.formats._encodings``).

A number too large for a float (``1e999``) is read as infinity, which JSON has no way to write: the
record is read, with a remark (a warning) naming the field (``evalcore.formats._overflow``). ``NaN``
and ``Infinity`` written as such (ragas writes ``NaN``) are read as they are, with no remark.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import IO, Any, Protocol

import orjson

from evalcore.formats._encodings import foreign_encoding
from evalcore.formats._overflow import Overflow, Remark, finite_float, overflow_remark

__all__ = [
    "MAX_RECORD",
    "PIECE",
    "RawRecord",
    "Unreadable",
    "dumps_compact",
    "iter_records",
    "iter_records_on",
    "line_records",
    "loads",
    "nesting_bound",
    "too_large",
]

#: The largest record read by default, in characters of text (see the module's docstring).
MAX_RECORD = 64 << 20
_CHUNK = 1 << 16
#: Characters of a leading JSON array held back to tell one array from JSON Lines (see above).
_LOOKAHEAD = 1 << 20
#: Lines are read this many characters at a time at most: a longer line's start is looked at before the rest is read.
PIECE = 1 << 20
# Raises ``Overflow`` for a number that overflows; ``_lenient`` reads it as infinity (once it is known).
_decoder = json.JSONDecoder(parse_float=finite_float)
_lenient = json.JSONDecoder()
# Bytes that are not UTF-8 arrive as lone surrogates (the file is opened with surrogateescape).
_BAD_BYTES = re.compile("[\udc80-\udcff]")
_NOT_UTF8 = "not valid UTF-8 text"
_NOT_JSON = "not valid JSON"
_NUL = "NUL bytes, as in a file a crash left zero-filled"
_STOPS = "reading stops here: the rest of the file is not read"
_NEWLINE = re.compile("\r\n|\r|\n")
# An escape that may stand for half of a surrogate pair (checked further when present).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_DIGIT_RUN = re.compile(r"\d+")
# What a value scan looks at: whole strings, brackets, and a quote that opens a string not closed here.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|"', re.DOTALL)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(r"[^\s,\]}]+")
_SPACE = re.compile(r"[ \t\r\n]*")
# A syntax error this far before the end of the text read so far cannot be cured by reading more.
_SLACK = 32


@dataclass
class RawRecord:
    """One JSON value read from a file, or the reason it could not be read.

    ``field`` names where in the value the problem (or the remark) is, when known. A record with a
    ``warning`` (and no value) is a remark about the file at that line; a ``remark`` is a warning
    about a record read all the same (its value is good). ``nesting`` bounds how deep anything read
    out of the record can nest, JSON text inside its strings included (see ``nesting_bound``);
    ``None`` when unknown. ``element`` is the record's place (from 1) in the JSON array that is the
    whole input, and ``size`` its length in characters (elements of that array only; else 0).
    """

    line: int
    value: Any = None
    error: str | None = None
    in_array: bool = False  # an element of the JSON array that is the whole input
    field: str | None = None
    warning: str | None = None
    nesting: int | None = None
    remark: str | None = None
    element: int | None = None
    size: int = 0


@dataclass(frozen=True)
class _Cut:
    """A line not kept (``_long_line``): why (a problem on the line), and whether reading stops there (the line
    is longer than the maximum record size)."""

    reason: str
    stop: bool


def too_large(limit: int) -> str:
    """The problem of a record longer than ``limit`` characters: it names the limit and what raises it."""
    return f"a record of more than {limit / (1 << 20):g} MiB: larger than the maximum record size (--max-record-mb)"


def nesting_bound(text: str, start: int = 0, end: int | None = None) -> int:
    r"""An upper bound on how deep any JSON value parsed out of ``text[start:end]`` nests, however
    many times JSON text inside its strings is parsed in turn (tool-call arguments, say).

    Every opening bracket of any such value is a bracket of the text itself or comes out of an
    escape that can make one, or make the backslash of a further escape: ``\\`` and ``\uXXXX``.
    Each comes from its own stretch of the text, so their count bounds the depth. A few scans
    at C speed, for every record read: what lets ``validate_session`` skip measuring the nesting
    of sessions that cannot be deep.
    """
    stop = len(text) if end is None else end
    bound = text.count("{", start, stop) + text.count("[", start, stop)
    if text.find("\\", start, stop) >= 0:
        bound += text.count("\\\\", start, stop) + text.count("\\u", start, stop)
    return bound


class Unreadable(json.JSONDecodeError):
    """Well-formed JSON that evalcore cannot hold: nested too deep, an integer too long, a lone
    surrogate. ``reason`` says which; ``field`` names where, when known."""

    def __init__(self, reason: str, doc: str, field: str | None = None) -> None:
        super().__init__(reason, doc, 0)
        self.reason = reason
        self.field = field

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.reason, "", self.field)


# orjson turns integers beyond 64 bits into floats: text with a run of 19 digits goes to the
# stdlib parser. (Mapping every digit of the UTF-8 bytes to 9 and searching is 15x faster than a
# regex, and 6x faster than the same on the ``str``; brackets are mapped to ``{`` for the nesting
# bound. A multi-byte UTF-8 character has no ASCII byte in it, so counts on the bytes are counts
# on the text.)
_MARKS = bytes.maketrans(b"0123456789[", b"9999999999{")
_NINETEEN = b"9" * 19


def _utf8(text: str) -> bytes | None:
    """``text`` in UTF-8; None when it holds a lone surrogate (bad bytes of the file, kept by
    ``surrogateescape``): only the careful path reads those."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return None


def loads(text: str) -> Any:
    """Parse one JSON value: orjson, or the stdlib where orjson would refuse or change the data.

    The stdlib accepts ``NaN`` and ``Infinity`` (which ragas writes) and keeps big integers exact;
    a number too large for a float (``1e999``) is read as infinity.
    Raises ``json.JSONDecodeError`` for text that is not JSON, and its subclass ``Unreadable`` for
    JSON evalcore cannot hold (see the module's docstring).
    """
    data = _utf8(text)
    if data is not None and _NINETEEN not in data.translate(_MARKS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return _careful_loads(text)[0]


def _careful_loads(text: str) -> tuple[Any, Remark | None]:
    """``loads`` by the stdlib, with a remark when a number in ``text`` overflows to infinity."""
    if _BAD_BYTES.search(text):
        raise json.JSONDecodeError(_NOT_UTF8, text, 0)
    remark = None
    try:
        try:
            value = _decoder.decode(text)
        except Overflow as exc:
            value = _lenient.decode(text)
            remark = overflow_remark(value, exc.literal)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise Unreadable(_too_deep(text, _leading_space(text)), text) from None
    except ValueError:  # the only other ValueError of the parser: an integer beyond the digit limit
        raise Unreadable(_too_long(text), text) from None
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(value, text)
    return value, remark


def dumps_compact(value: Any) -> str:
    """Serialise ``value`` as compact JSON (non-ASCII kept as is).

    JSON has no NaN or Infinity: orjson writes them as null. Integers beyond 64 bits, and nesting
    deeper than orjson writes, go through the stdlib.
    """
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits, or too deep
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _leading_space(text: str) -> int:
    return len(text) - len(text.lstrip())


def _too_deep(text: str, pos: int) -> str:
    return _deep_reason(_scan(text, pos)[1])


def _deep_reason(deepest: int) -> str:
    return f"nested {deepest} levels deep (arrays and objects): deeper than the JSON reader goes"


def _too_long(text: str) -> str:
    digits = max((len(run) for run in _DIGIT_RUN.findall(text)), default=0)
    limit = sys.get_int_max_str_digits()
    return f"an integer of {digits} digits: more than the {limit} digits Python reads"


def _refuse_lone_surrogates(value: Any, text: str) -> None:
    """Raise ``Unreadable`` naming the first string (or key) of ``value`` that holds a lone surrogate."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            found = _LONE_SURROGATE.search(item)
            if found:
                code = ord(found.group())
                reason = f"a lone surrogate \\u{code:04x}: half of a UTF-16 pair, not a character"
                raise Unreadable(reason, text, path or None)
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                where = f"{path}.{key}".lstrip(".") if not _LONE_SURROGATE.search(key) else f"{path} (a key)"
                stack.append((child, where))
                stack.append((key, where))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(item))))


def _scan(text: str, pos: int) -> tuple[int, int]:
    """Where the JSON value at ``pos`` ends (-1 when the text ends first), and how deep it nests.

    Counts brackets outside strings and checks nothing else: for skipping a value the parser
    refused for its depth or its numbers, not for telling valid JSON.
    """
    first = text[pos : pos + 1]
    if first == '"':
        found = _STRING.match(text, pos)
        return (found.end() if found else -1), 0
    if first not in ("[", "{"):
        scalar = _SCALAR.match(text, pos)
        end = scalar.end() if scalar else pos
        return (end if end < len(text) else -1), 0  # a number at the end may continue
    depth = deepest = 0
    for token in _TOKEN.finditer(text, pos):
        mark = token.group()
        if mark == "[" or mark == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif mark == "]" or mark == "}":
            depth -= 1
            if depth == 0:
                return token.end(), deepest
        elif mark == '"':  # a string that does not end in the text
            return -1, deepest
    return -1, deepest


def _definite(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether a syntax error in ``text`` stays one however much more of the input is read."""
    if exc.msg.startswith("Unterminated string"):
        return False  # (a raw newline in a string is "Invalid control character", found at once)
    return exc.pos < len(text) - _SLACK


def iter_records(stream: IO[str], *, max_record: int = MAX_RECORD) -> Iterator[RawRecord]:
    """Yield every top-level record of ``stream`` with the line it starts on; none longer than ``max_record``
    characters is held (see the module's docstring)."""
    head = stream.read(_CHUNK)
    foreign = foreign_encoding(head[:8])
    if foreign is not None:  # UTF-16, say: every line would be "not valid UTF-8"; say why once, and stop
        yield RawRecord(1, error=foreign)
        return
    buf = _Buffer(stream, head, limit=max_record)
    char = buf.skip_space()
    if char == "\ufeff":  # a byte-order mark left by some editors
        buf.pos += 1
        char = buf.skip_space()
    if char == "":
        return
    if char == "[":
        yield from _leading_array(buf)
    else:
        yield from _sequence(buf)


def line_records(lines: list[str], first: int) -> list[RawRecord] | None:
    """The records of ``lines``, lines of JSON Lines (each without its newline, the first being line
    ``first`` of its file), as ``iter_records`` reads them there; None when one of them may start a
    document spanning lines, which only ``iter_records_on`` reads right (with the lines after it)."""
    records = []
    for number, text in enumerate(lines, first):
        record = _parse_line(text, number)
        if record is None:
            continue
        if record.error is not None and record.error.startswith(_NOT_JSON) and _opens(text):
            return None
        records.append(record)
    return records


def iter_records_on(stream: IO[str], head: str, first: int, *, max_record: int = MAX_RECORD) -> Iterator[RawRecord]:
    """The records of ``head`` (whole lines, starting on line ``first`` of the file, where the file's
    JSON Lines go on; its last line may be the start of one, the rest of it in ``stream``) and of the rest
    of ``stream``, as ``iter_records`` reads them from there."""
    return _iter_lines(stream, head, first, max_record)


def _sequence(buf: _Buffer) -> Iterator[RawRecord]:
    """Values one after another from the cursor (see ``_iter_lines``)."""
    line = buf.current_line()
    yield from _iter_lines(buf.stream, buf.text[buf.pos :], line, buf.limit)


def _starts_document(buf: _Buffer) -> bool:
    """Whether a (pretty-printed) JSON value spanning more than the cursor's line starts there;
    reads only as far as needed to tell. (A value that ends on its first line, with more after it
    on that line, makes a broken line of JSON Lines, not a document.)"""
    while True:
        try:
            _value, end = _lenient.raw_decode(buf.text, buf.pos)
            return buf.text.find("\n", buf.pos, end) >= 0
        except json.JSONDecodeError as exc:
            if _definite(exc, buf.text):
                return False
        except (RecursionError, ValueError):
            return True  # well-formed but unreadable: the document reader reports why
        if not buf.more():
            return False


def _is_whole_value(text: str) -> bool:
    """Whether ``text`` is one JSON value, be it readable or not (a line of bad bytes in a string
    is whole: its line reports it, and the lines around it are read)."""
    try:
        loads(_BAD_BYTES.sub("?", text))
    except Unreadable:
        return True  # a whole value all the same: its line reports why it cannot be read
    except json.JSONDecodeError:
        return False
    return True


def _iter_lines(stream: _Readable, head: str, first: int = 1, limit: int = MAX_RECORD) -> Iterator[RawRecord]:
    """Values one after another: ``head`` (starting on line ``first``), then the rest of ``stream``.

    A line that is a whole value is a record (JSON Lines). A line that is not, but ends open (a
    ``{`` or ``[`` not closed on it), may start a value spanning lines, a pretty-printed document:
    it is read whole if it can be. Else the line is broken: reported, and the next line read. A
    broken document is reported once, on its first line: the indented lines after it (and lone
    closing brackets) are taken as the rest of it, up to the next line that starts in the first
    column, where a value of JSON Lines or the next document starts.

    A line is read a piece at a time (``PIECE`` characters): one that is no JSON from its start is reported
    without being held; one longer than ``limit`` is reported, and reading stops there.
    """
    lines = _Lines(stream, head, limit)
    readline = stream.readline
    number = first - 1
    while True:
        # The lines in front, then the stream's, as fast as can be (this runs for every line).
        front, start = lines.front, lines.at
        for at in range(start, len(front)):
            number += 1
            record = _parse_line(front[at], number)
            if record is None:
                continue
            if record.error is None:
                yield record
                continue
            lines.at = at + 1
            break
        else:
            lines.at = len(front)
            record = None
            piece = readline(PIECE)
            text = lines.tail + piece
            lines.tail = ""
            while text:
                number += 1
                if len(text) >= PIECE:  # a long line: its start looked at first
                    whole = _long_line(stream, text, limit, _ends(piece))
                    if isinstance(whole, _Cut):
                        yield RawRecord(number, error=whole.reason)
                        if whole.stop:
                            return
                        text = piece = readline(PIECE)
                        continue
                    text = whole
                record = _parse_line(text[:-1] if text.endswith("\n") else text, number)
                if record is not None:
                    if record.error is not None:
                        lines.front, lines.at = [text.rstrip("\n")], 1  # the line in hand, for a document
                        break
                    yield record
                text = piece = readline(PIECE)
            else:
                return
        number = yield from _not_a_line(lines, record, number)
        if lines.stop:
            return


def _not_a_line(lines: _Lines, record: RawRecord, number: int) -> Generator[RawRecord, None, int]:
    """The records from a line that did not read (``record``, line ``number``, the last in front of ``lines``)
    on: a document that starts there (and those after it), or the broken line, or a broken document (its
    other lines passed). Returns the number of the last line read."""
    line_text = lines.front[lines.at - 1]
    if not (record.error is not None and record.error.startswith(_NOT_JSON) and _opens(line_text)):
        yield record
        return number
    found, number, buf = _document(lines, line_text, number)
    yield found or record
    if buf is not None and not lines.stop:  # a pretty-printed document: more are likely to follow
        number = yield from _iter_documents(lines, buf, number)
    elif found is None:  # a broken document: its other lines are part of it
        number = _skip_rest_of_document(lines, number)
        if lines.cut is not None:  # the line after it, not kept
            number += 1
            yield RawRecord(number, error=lines.cut.reason)
            lines.cut = None
    return number


def _skip_rest_of_document(lines: _Lines, number: int) -> int:
    """Pass the indented lines (and lone closing brackets) that follow a broken document's first
    line; the number of the last one passed. A line not kept (``lines.cut``) ends them."""
    while (text := lines.next()) is not None:
        if lines.cut is not None:
            break
        if text[:1] not in (" ", "\t", "\r", "") and text.strip() not in ("}", "]", "},", "],"):
            lines.give_back(text + "\n")
            break
        number += 1
    return number


def _opens(text: str) -> bool:
    """Whether a line that is not JSON ends with a value still open (which may go on over the next lines)."""
    text = text.rstrip()
    if text.lstrip()[:1] not in ("{", "["):
        return False
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(text)
    except (RecursionError, ValueError):
        return False
    return False


class _Lines:
    """The lines still to read: those in front (the head's, or read ahead and given back), then the
    stream's. ``read`` gives whole lines, for a ``_Buffer`` reading a document across lines.

    ``cut`` is set when ``next`` met a line it did not keep (see ``_long_line``), and ``stop`` when reading
    must stop there (that line, or a document, was longer than ``limit``)."""

    def __init__(self, stream: _Readable, head: str, limit: int = MAX_RECORD) -> None:
        self.stream = stream
        self.front = _split_lines(head)
        self.tail = self.front.pop()  # what follows the head's last newline: the start of a line
        self.at = 0
        self.limit = limit
        self.cut: _Cut | None = None
        self.stop = False

    def next(self) -> str | None:
        """The next line, without its newline; None at the end. A line not kept is ``""``, with ``cut`` set."""
        if self.at < len(self.front):
            self.at += 1
            return self.front[self.at - 1]
        piece = self.stream.readline(PIECE)
        line, self.tail = self.tail + piece, ""
        if not line:
            return None
        if len(line) >= PIECE:
            whole = _long_line(self.stream, line, self.limit, _ends(piece))
            if isinstance(whole, _Cut):
                self.cut, self.stop = whole, whole.stop
                return ""
            line = whole
        return line[:-1] if line.endswith("\n") else line

    def readline(self, size: int = -1) -> str:
        """The next whole line (``size`` is not heeded: the lines are bounded already)."""
        line = self.next()
        return "" if line is None else line + "\n"

    def read(self, size: int) -> str:
        """At least ``size`` characters (less at the end): lines in front, else the stream's text."""
        if self.at >= len(self.front):
            text, self.tail = self.tail + self.stream.read(size), ""
            return text
        parts: list[str] = []
        got = 0
        while got < size and self.at < len(self.front):
            line = self.front[self.at]
            self.at += 1
            parts.append(line)
            got += len(line) + 1
        return "".join(f"{line}\n" for line in parts)

    def give_back(self, text: str) -> None:
        """Put ``text`` (read ahead, not used) back in front of the lines still to read. Text that
        does not end a line was read from the stream: its last piece leads the stream's next line."""
        lines = _split_lines(text)
        last = lines.pop()
        self.front = lines + self.front[self.at :]
        self.at = 0
        if last:
            self.tail = last + self.tail


def _split_lines(text: str) -> list[str]:
    """``text`` cut into lines as the file's ``readline`` cuts them (open with ``newline=""``): at
    LF, CRLF and a lone CR, which JSON allows only as whitespace. A CR at the very end stays on
    the last piece: the LF that may follow it comes with the next read."""
    if "\r" not in text:
        return text.split("\n")
    kept = "\r" if text.endswith("\r") else ""
    lines = _NEWLINE.split(text[: len(text) - len(kept)])
    lines[-1] += kept
    return lines


def _document(lines: _Lines, text: str, number: int) -> tuple[RawRecord | None, int, _Buffer | None]:
    """Read a value spanning lines from line ``number`` (``text``) on.

    Returns the record (``None`` when no such value starts there: whatever was read ahead goes
    back to ``lines``), the number of the line before what is left to read, and, after a
    document, the buffer it was read with, its cursor just past it (for ``_iter_documents``)."""
    # Grown by doubling: what is read ahead stays small.
    buf = _Buffer(lines, text + "\n", chunk=256, limit=lines.limit)
    buf.keep = True  # on failure, everything read goes back to the lines
    buf.skip_space()
    try:
        record = buf.record(number)
    except _Skipped as exc:  # well-formed, and the cursor is past it: unreadable all the same
        record = RawRecord(number, error=exc.reason, field=exc.field)
    except _TooLarge:  # what follows the line is not given back: reading stops
        lines.stop = True
        return RawRecord(number, error=f"{too_large(buf.limit)}; {_STOPS}"), number, None
    except _Malformed:
        lines.give_back(buf.text[len(text) + 1 :])
        return None, number, None
    if not buf.text.count("\n", 0, buf.pos):  # ends on its own line, more after it: a broken line
        lines.give_back(buf.text[len(text) + 1 :])
        return None, number, None
    return record, number, buf


def _iter_documents(lines: _Lines, buf: _Buffer, first: int) -> Generator[RawRecord, None, int]:
    """Documents one after another with the buffer that read the first (which starts on line
    ``first``), read as a stream, until one breaks: then what is left goes back to ``lines``
    from that document on. Returns the number of the line before what is left."""
    buf.keep, buf.chunk = False, _CHUNK
    while True:
        char = buf.skip_space()
        line = first + buf.current_line() - 1
        if char == "":
            return line
        try:
            yield buf.record(line)
        except _Skipped as exc:
            yield RawRecord(line, error=exc.reason, field=exc.field)
        except _TooLarge:
            yield RawRecord(line, error=f"{too_large(buf.limit)}; {_STOPS}")
            lines.stop = True
            return line
        except _Malformed:  # read on line by line from there (the lines say what is wrong)
            lines.give_back(buf.text[buf.pos :])
            return line - 1


def _parse_line(text: str, number: int) -> RawRecord | None:
    """The record on a line; None for a blank one."""
    text = text.rstrip("\r")
    if not text.strip():
        return None
    # ``loads``, inline, with the nesting bound from the same pass over the text (digits to 9 for
    # ``loads``, brackets to ``{`` for the bound).
    data = _utf8(text)
    marked = data.translate(_MARKS) if data is not None else None
    if data is not None and marked is not None and _NINETEEN not in marked:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
        else:
            bound = marked.count(b"{")
            if b"\\" in marked:
                bound += marked.count(b"\\\\") + marked.count(b"\\u")
            return RawRecord(number, value, nesting=bound)
    try:
        value, remark = _careful_loads(text)  # (orjson refused it, or was not asked)
    except Unreadable as exc:
        return RawRecord(number, error=exc.reason, field=exc.field)
    except json.JSONDecodeError as exc:
        if _BAD_BYTES.search(text):
            return RawRecord(number, error=_NOT_UTF8)
        return RawRecord(number, error=_not_json(text, exc))
    record = RawRecord(number, value, nesting=nesting_bound(text))
    if remark is not None:
        record.remark, record.field = remark.message, remark.field
    return record


def _not_json(text: str, exc: json.JSONDecodeError) -> str:
    """The problem of a line (or the start of one) that is not JSON: the parser's words, or what NUL bytes mean."""
    if text.lstrip(" \t")[:1] == "\0":
        return f"{_NOT_JSON} ({_NUL})"
    return f"{_NOT_JSON} ({_short(exc)})"


def _short(exc: Exception) -> str:
    message = str(exc)
    return message.split(":", 1)[0] if len(message) > 120 else message


def _ends(piece: str) -> bool:
    """Whether ``piece``, read by ``readline(PIECE)``, ends its line. (A lone CR ends a line, but one that fills the
    piece may be the first half of a CRLF: the LF then comes with the next piece.)"""
    last = piece[-1:]
    return last == "\n" or (last == "\r" and len(piece) < PIECE)


def _long_line(stream: _Readable, text: str, limit: int, ended: bool) -> str | _Cut:
    """The line that starts with ``text`` (``PIECE`` characters or more, read from ``stream``; ``ended`` when its
    end is in it): read on a piece at a time while it may be JSON and is not longer than ``limit`` (its end
    included). A line that is not kept is a ``_Cut``: no JSON from its start (reading goes on after it), or
    longer than ``limit`` (reading stops: its end is looked for no further)."""
    hopeless = _hopeless(text[:_CHUNK])
    pieces: list[str] | None = [text] if hopeless is None else None
    size = len(text)
    while not ended and size <= limit:
        piece = stream.readline(PIECE)
        if not piece:
            break  # the end of the input ends the line
        size += len(piece)
        if pieces is not None:
            pieces.append(piece)
        ended = _ends(piece)
    if size > limit:
        if hopeless is None:
            return _Cut(f"{too_large(limit)}; {_STOPS}", stop=True)
        where = f"on a line of more than {limit / (1 << 20):g} MiB (the maximum record size, --max-record-mb)"
        return _Cut(f"{hopeless}, {where}: {_STOPS}", stop=True)
    if hopeless is not None:
        return _Cut(hopeless, stop=False)
    assert pieces is not None
    return "".join(pieces)


def _hopeless(head: str) -> str | None:
    """Why a line that starts with ``head`` cannot be JSON, whatever follows; None when it may be."""
    text = head.lstrip(" \t")
    if text[:1] == "\0":
        return f"{_NOT_JSON} ({_NUL})"
    try:
        _decoder.decode(text)
    except json.JSONDecodeError as exc:
        if not _definite(exc, text):
            return None
        return _NOT_UTF8 if _BAD_BYTES.search(text) else _not_json(text, exc)
    except (RecursionError, ValueError, Overflow):
        return None
    return None


class _Readable(Protocol):
    """What the readers here need of a stream (a text file; ``_Lines``)."""

    def read(self, size: int, /) -> str: ...

    def readline(self, size: int = -1, /) -> str: ...


class _Buffer:
    """A growing text buffer over a stream that counts the lines it consumes.

    Text before the cursor is dropped as more is read, unless ``keep`` is set (while a decision
    about the input may still send the reader back to the start). The text held (from the cursor,
    or from the start while ``keep`` is set) never grows past ``cap`` characters: reading more
    then raises ``_TooLarge``. ``cap`` is ``limit``, the maximum record size, unless a reader holds
    more back on purpose (a leading array's look-ahead).
    """

    def __init__(self, stream: _Readable, head: str, *, chunk: int = _CHUNK, limit: int = MAX_RECORD) -> None:
        self.stream = stream
        self.chunk = chunk  # the least read at a time
        self.text = head
        self.pos = 0
        self.eof = False
        self.keep = False
        self.limit = limit
        self.cap = limit
        self.base = 0  # the input offset of ``text[0]``
        # Of the last value decoded: ``nesting_bound``, its length, and a remark on it (``Overflow``).
        self.nesting = 0
        self.size = 0
        self.remark: Remark | None = None
        # Lines are counted incrementally: ``line`` is the line number at offset ``counted``.
        self.line = 1
        self.counted = 0

    def offset(self) -> int:
        """The cursor's offset in the whole input."""
        return self.base + self.pos

    def more(self) -> bool:
        if self.eof:
            return False
        if not self.keep:
            self.current_line()
            self.text = self.text[self.pos :]
            self.counted -= self.pos
            self.base += self.pos
            self.pos = 0
        held = len(self.text)
        if held > self.cap:
            raise _TooLarge
        chunk = self.stream.read(min(max(self.chunk, held - self.pos), max(self.chunk, self.cap + 1 - held)))
        if not chunk:
            self.eof = True
            return False
        self.text += chunk
        return True

    def skip_space(self) -> str:
        """Skip whitespace; return the next character ('' at the end)."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
                if pos - self.pos == 16:  # a long run: the rest at C speed
                    found = _SPACE.match(text, pos)
                    assert found is not None  # (it matches nothing too)
                    pos = found.end()
            self.pos = pos
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def line_end(self) -> int:
        """The offset of the end of the cursor's line (its newline, or the end of the input)."""
        while True:
            newline = self.text.find("\n", self.pos)
            if newline >= 0:
                return newline
            if not self.more():
                return len(self.text)

    def current_line(self) -> int:
        self.line += self.text.count("\n", self.counted, self.pos)
        self.counted = self.pos
        return self.line

    def record(self, line: int) -> RawRecord:
        """The value at the cursor (``decode``) as the record on ``line``, with what is known of it."""
        value = self.decode()
        record = RawRecord(line, value, nesting=self.nesting, size=self.size)
        if self.remark is not None:
            record.remark, record.field = self.remark.message, self.remark.field
        return record

    def decode(self) -> Any:
        """Decode one value at the cursor, reading more until it is complete.

        Raises ``_Malformed`` for a syntax error (the cursor stays), ``_Skipped`` for a
        well-formed value that cannot be held (the cursor moves past it), and ``_TooLarge`` for
        a value longer than the buffer may hold.
        """
        self.remark = None
        while True:
            try:
                try:
                    value, end = _decoder.raw_decode(self.text, self.pos)
                except Overflow as exc:
                    value, end = _lenient.raw_decode(self.text, self.pos)
                    self.remark = overflow_remark(value, exc.literal)
            except json.JSONDecodeError as exc:
                if not _definite(exc, self.text) and self.more():
                    continue
                raise _Malformed(exc.msg, exc.pos) from None
            except RecursionError:
                _end, deepest = self._value_end()
                raise _Skipped(_deep_reason(deepest)) from None
            except ValueError:  # an integer beyond the digit limit
                start = self.pos
                end, _deepest = self._value_end()
                raise _Skipped(_too_long(self.text[start:end])) from None
            # A number at the end of the buffer may continue in the next chunk.
            if end == len(self.text) and not self.eof and self.more():
                continue
            start, self.pos = self.pos, end
            self.nesting, self.size = nesting_bound(self.text, start, end), end - start
            if self.size > self.limit:  # (read whole while more was held back on purpose)
                raise _TooLarge
            if _BAD_BYTES.search(self.text, start, end):
                raise _Skipped(_NOT_UTF8)
            if self.text.find("\\u", start, end) >= 0 and _SURROGATE_ESCAPE.search(self.text, start, end):
                try:
                    _refuse_lone_surrogates(value, "")
                except Unreadable as exc:
                    raise _Skipped(exc.reason, exc.field) from None
            return value

    def _value_end(self) -> tuple[int, int]:
        """Move the cursor past the value there (reading as needed); its end and depth."""
        while True:
            end, deepest = _scan(self.text, self.pos)
            if end >= 0:
                self.pos = end
                return end, deepest
            if not self.more():
                raise _Malformed("a value that does not end", len(self.text))


class _Malformed(Exception):
    def __init__(self, reason: str, pos: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pos = pos  # where in the buffer's text


class _Skipped(Exception):
    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


class _TooLarge(Exception):
    """More text than a buffer may hold: a record larger than the maximum record size."""


def _leading_array(buf: _Buffer) -> Iterator[RawRecord]:
    """An input that starts with an array: one JSON array (its elements are the records), or the first
    value of a sequence (then the array is one record) — told by what follows it."""
    start, start_line, origin = buf.pos, buf.current_line(), buf.offset()
    buf.keep = True  # until the array is known to be the whole input, or is too long to hold back
    buf.cap = buf.limit + _LOOKAHEAD + _CHUNK  # the look-ahead, and after it an element of the largest size
    buf.pos += 1  # the opening bracket
    pending: list[RawRecord] | None = []  # held back; None once streaming
    expect_value = True
    indent: str | None = None  # what stands before the first element on its line, when it starts one
    element = 0  # elements met, from 1 (an empty one counts)
    while True:
        if pending is not None and buf.offset() - origin > _LOOKAHEAD:
            yield from pending
            pending, buf.keep, buf.cap = None, False, buf.limit
        try:
            char = buf.skip_space()
        except _TooLarge:  # whitespace past what is held back: stream from here
            yield from pending or []
            pending, buf.keep, buf.cap = None, False, buf.limit
            continue
        line = buf.current_line()
        broken: str | None = None
        found: RawRecord | None = None
        if char == "":
            broken = "the array is not closed"
        elif char == "]":
            buf.pos += 1
            yield from _after_array(buf, pending, start_line)
            return
        elif char == ",":
            if expect_value:
                element += 1
                broken = "an empty array element"
            else:
                buf.pos += 1
                expect_value = True
                continue
        elif not expect_value:  # (reported at the element before)
            broken = "expected ',' or ']' between elements"
        if broken is None:
            if indent is None:
                indent = _indent_at(buf.text, buf.pos) or ""
            element += 1
            try:
                found, broken = _array_element(buf, line, element)
            except _TooLarge:
                yield from pending or []
                yield RawRecord(line, error=f"{too_large(buf.limit)}; {_STOPS}", in_array=True, element=element)
                return
            expect_value = False
        if broken is not None:
            where = _Broken(broken, line, element if char else None, start, start_line, indent if char else None)
            found = yield from _broken_element(buf, pending, where)
            if found is None:
                return
            expect_value = True
        assert found is not None
        if pending is None:
            yield found
        else:
            pending.append(found)


@dataclass(frozen=True)
class _Broken:
    """Where a leading array broke: why, on which line, at which element (None: at its end), where the array
    starts (offset in the buffer, and line), and the indent of its first element (None: none, or at the end)."""

    reason: str
    line: int
    element: int | None
    start: int
    start_line: int
    indent: str | None


def _broken_element(
    buf: _Buffer, pending: list[RawRecord] | None, broken: _Broken
) -> Generator[RawRecord, None, RawRecord | None]:
    """After a leading array broke: the records of a JSON Lines file whose first line it was, or of the array up
    to there (returns None: nothing more is read); else the problem, to report in its place (reading goes on at
    the next element)."""
    if pending is not None and _reads_as_lines(buf, broken.start):
        buf.keep, buf.cap = False, buf.limit  # a JSON Lines file whose first line is broken: read line by line
        yield from _iter_lines(buf.stream, buf.text[broken.start :], broken.start_line, buf.limit)
        return None
    after = not broken.reason.startswith("expected")
    resume = _resync(buf, broken.indent, after=after) if broken.indent else None
    if resume is None:
        yield from pending or []
        rest = "" if broken.element is None else "; the rest of the array is unreadable"
        error = f"not valid JSON ({broken.reason}){rest}"
        yield RawRecord(broken.line, error=error, in_array=True, element=broken.element)
        return None
    error = f"not valid JSON ({broken.reason}); read on from line {resume}"
    return RawRecord(broken.line, error=error, in_array=True, element=broken.element)


def _array_element(buf: _Buffer, line: int, element: int) -> tuple[RawRecord | None, str | None]:
    """The element of an array at the cursor (its ``element``-th), or why the JSON there is broken. An element
    larger than the maximum record size raises ``_TooLarge``."""
    try:
        value = buf.decode()
    except _Skipped as exc:  # the cursor is past it: the next element is read
        return RawRecord(line, error=exc.reason, field=exc.field, in_array=True, element=element), None
    except _Malformed as exc:
        return None, exc.reason
    record = RawRecord(line, value, in_array=True, nesting=buf.nesting, element=element, size=buf.size)
    if buf.remark is not None:
        record.remark, record.field = buf.remark.message, buf.remark.field
    return record, None


def _indent_at(text: str, pos: int) -> str | None:
    """The whitespace before ``pos`` on its line, when only whitespace is there."""
    start = text.rfind("\n", 0, pos) + 1
    before = text[start:pos]
    return before if not before.strip() else None


def _resync(buf: _Buffer, indent: str, *, after: bool) -> int | None:
    """After a broken element of a pretty-printed array: move the cursor to the next line that
    starts an element as the first one did (``indent``, then ``{`` or ``[``), looking from the end
    of the cursor's line (``after``) or from its start; that line's number, or None if none does."""
    marks = ("\n" + indent + "{", "\n" + indent + "[")
    origin = buf.text.find("\n", buf.pos) if after else buf.text.rfind("\n", 0, buf.pos)
    while True:
        if origin >= 0:
            hits = [i for i in (buf.text.find(mark, origin) for mark in marks) if i >= 0]
            if hits:
                buf.pos = min(hits) + len(marks[0]) - 1
                return buf.current_line()
            buf.pos = max(buf.pos, len(buf.text) - len(marks[0]))  # what was searched may be dropped
        try:
            if not buf.more():
                return None
        except _TooLarge:  # (while held back) as far as the array is read, at most
            return None
        origin = buf.pos if origin >= 0 else buf.text.find("\n", buf.pos)


def _after_array(buf: _Buffer, pending: list[RawRecord] | None, start_line: int) -> Iterator[RawRecord]:
    """The leading array has closed: it was the whole input, or the first value of a sequence.

    What follows decides: nothing, or text that starts no JSON value (junk after the array: it is
    reported, line by line), and the array is the input's body; a JSON value, and it was one."""
    buf.keep, buf.cap = False, buf.limit  # the array is read: nothing sends the reader back before it
    if buf.skip_space() == "":
        yield from pending or []
        return
    if pending is not None and not _starts_value(buf):
        yield from pending
        buf.keep = False
        yield from _sequence(buf)
        return
    if pending is None:
        yield RawRecord(
            buf.current_line(),
            warning=f"more JSON follows the array that starts on line {start_line}; the array was too long "
            "to hold back, so its elements were read as records, and what follows is read too "
            "(a file is one JSON array only when nothing follows it)",
        )
    else:
        errors = [r for r in pending if r.error is not None]
        if errors:  # the array, one record of a sequence, cannot be read: say where and why
            yield from (RawRecord(r.line, error=r.error, field=r.field) for r in errors)
        else:
            bounds = [r.nesting for r in pending]
            nesting = None if None in bounds else max((b for b in bounds if b is not None), default=0) + 1
            yield RawRecord(start_line, [r.value for r in pending], nesting=nesting)
    buf.keep = False
    yield from _sequence(buf)


def _starts_value(buf: _Buffer) -> bool:
    """Whether the cursor's line is a whole JSON value, or a (pretty-printed) one starts there. A line or a
    value too long to tell is taken for one (the line reader then reports it)."""
    try:
        end = buf.line_end()
        return _is_whole_value(buf.text[buf.pos : end]) or _starts_document(buf)
    except _TooLarge:
        return True


def _reads_as_lines(buf: _Buffer, start: int) -> bool:
    """Whether a leading array that broke is better read as JSON Lines: when the first line is not a
    whole value, the next non-blank one is."""
    newline = buf.text.find("\n", start)
    if newline < 0:
        return False
    begin = newline + 1
    while True:
        end = buf.text.find("\n", begin)
        try:
            while end < 0 and buf.more():
                end = buf.text.find("\n", begin)
        except _TooLarge:  # a line too long to hold back: not one to read as JSON Lines here
            return False
        text = buf.text[begin : end if end >= 0 else len(buf.text)]
        if text.strip():
            return _is_whole_value(text.rstrip("\r"))
        if end < 0:
            return False
        begin = end + 1
