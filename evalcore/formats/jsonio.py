"""Streaming JSON input and output with line numbers.

A file is read as JSON Lines (one value a line), as one JSON array whose elements are
streamed one at a time, or as a sequence of pretty-printed JSON documents. Memory stays
bounded by the largest single record, never by the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import orjson

__all__ = ["RawRecord", "dumps_compact", "iter_records", "loads"]

_CHUNK = 1 << 16
_decoder = json.JSONDecoder()
# Bytes that are not UTF-8 arrive as lone surrogates (the file is opened with surrogateescape).
_BAD_BYTES = re.compile("[\udc80-\udcff]")
_NOT_UTF8 = "not valid UTF-8 text"


@dataclass
class RawRecord:
    """One JSON value read from a file, or the reason it could not be read."""

    line: int
    value: Any = None
    error: str | None = None
    in_array: bool = False  # an element of a top-level JSON array


# orjson turns integers beyond 64 bits into floats: text with a run of 19 digits goes to the
# stdlib parser. (Mapping every digit to 9 and searching is 3x faster than a regex.)
_DIGITS_TO_NINE = str.maketrans("0123456789", "9999999999")
_NINETEEN = "9" * 19


def loads(text: str) -> Any:
    """Parse one JSON value: orjson, or the stdlib where orjson would refuse or change the data.

    The stdlib accepts ``NaN`` and ``Infinity`` (which ragas writes) and keeps big integers exact.
    """
    if _NINETEEN not in text.translate(_DIGITS_TO_NINE):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    if _BAD_BYTES.search(text):
        raise json.JSONDecodeError(_NOT_UTF8, text, 0)
    return json.loads(text)


def dumps_compact(value: Any) -> str:
    """Serialise ``value`` as compact JSON (non-ASCII kept as is).

    JSON has no NaN or Infinity: they are written as null, as orjson does.
    """
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def iter_records(stream: IO[str]) -> Iterator[RawRecord]:
    """Yield every top-level record of ``stream`` with the line it starts on."""
    head = stream.read(_CHUNK)
    stripped = head.lstrip()
    if stripped.startswith("\ufeff"):  # a byte-order mark left by some editors
        head = head.replace("\ufeff", "", 1)
        stripped = head.lstrip()
    if not stripped:
        return
    if stripped.startswith("["):
        yield from _iter_array(stream, head)
        return
    # JSON Lines, unless the first line is not a whole value but starts a (pretty-printed) document.
    start = len(head) - len(stripped)
    newline = head.find("\n", start)
    if newline < 0 and len(head) == _CHUNK:
        head += stream.readline()
        newline = head.find("\n", start)
    first = head[start : newline if newline >= 0 else len(head)]
    if _is_whole_value(first):
        yield from _iter_lines(stream, head)
        return
    is_document, head = _starts_document(stream, head, start)
    if is_document:
        yield from _iter_documents(stream, head)
    else:
        yield from _iter_lines(stream, head)


def _starts_document(stream: IO[str], text: str, start: int) -> tuple[bool, str]:
    """Whether a whole JSON value starts at ``start``; reads only as far as needed to tell."""
    while True:
        try:
            _decoder.raw_decode(text, start)
            return True, text
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated string"):
                broken = "\n" in text[exc.pos :]  # a JSON string never holds a raw newline
            else:
                broken = exc.pos < len(text)
            if broken:
                return False, text
        chunk = stream.read(max(_CHUNK, len(text)))
        if not chunk:
            return False, text
        text += chunk


def _is_whole_value(text: str) -> bool:
    try:
        loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _iter_lines(stream: IO[str], head: str) -> Iterator[RawRecord]:
    lines = head.split("\n")
    tail = lines.pop()  # what follows the head's last newline: the start of a line
    number = 0
    for text in lines:
        number += 1
        record = _parse_line(text, number)
        if record is not None:
            yield record
    text = tail + stream.readline()
    while text:
        number += 1
        record = _parse_line(text.rstrip("\n"), number)
        if record is not None:
            yield record
        text = stream.readline()


def _parse_line(text: str, number: int) -> RawRecord | None:
    text = text.rstrip("\r")
    if not text.strip():
        return None
    try:
        return RawRecord(number, loads(text))
    except json.JSONDecodeError as exc:
        if _BAD_BYTES.search(text):
            return RawRecord(number, error=_NOT_UTF8)
        return RawRecord(number, error=f"not valid JSON ({_short(exc)})")


def _short(exc: Exception) -> str:
    message = str(exc)
    return message.split(":", 1)[0] if len(message) > 120 else message


class _Buffer:
    """A growing text buffer over a stream that counts the lines it consumes."""

    def __init__(self, stream: IO[str], head: str) -> None:
        self.stream = stream
        self.text = head
        self.pos = 0
        self.eof = False
        # Lines are counted incrementally: ``line`` is the line number at offset ``counted``.
        self.line = 1
        self.counted = 0

    def more(self) -> bool:
        if self.eof:
            return False
        self.current_line()
        self.text = self.text[self.pos :]
        self.counted -= self.pos
        self.pos = 0
        chunk = self.stream.read(max(_CHUNK, len(self.text)))
        if not chunk:
            self.eof = True
            return False
        self.text += chunk
        return True

    def skip_space(self) -> str:
        """Skip whitespace; return the next character ('' at the end)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def current_line(self) -> int:
        self.line += self.text.count("\n", self.counted, self.pos)
        self.counted = self.pos
        return self.line

    def decode(self) -> Any:
        """Decode one value at the cursor, reading more until it is complete."""
        while True:
            try:
                value, end = _decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.more():
                    continue
                raise _Malformed(exc) from exc
            # A number at the end of the buffer may continue in the next chunk.
            if end == len(self.text) and not self.eof and self.more():
                continue
            start, self.pos = self.pos, end
            if _BAD_BYTES.search(self.text, start, end):
                raise _Malformed(json.JSONDecodeError(_NOT_UTF8, self.text, start))
            return value


class _Malformed(Exception):
    def __init__(self, exc: json.JSONDecodeError) -> None:
        super().__init__(exc.msg)
        self.reason = exc.msg


def _iter_array(stream: IO[str], head: str) -> Iterator[RawRecord]:
    buf = _Buffer(stream, head)
    buf.skip_space()
    buf.pos += 1  # the opening bracket
    expect_value = True
    while True:
        char = buf.skip_space()
        line = buf.current_line()
        if char == "":
            yield RawRecord(line, error="not valid JSON (the array is not closed)")
            return
        if char == "]":
            return
        if char == ",":
            if expect_value:
                yield RawRecord(line, error="not valid JSON (an empty array element)")
                return
            buf.pos += 1
            expect_value = True
            continue
        if not expect_value:
            yield RawRecord(line, error="not valid JSON (expected ',' or ']' between elements)")
            return
        try:
            value = buf.decode()
        except _Malformed as exc:
            yield RawRecord(line, error=f"not valid JSON ({exc.reason}); the rest of the array is unreadable")
            return
        expect_value = False
        yield RawRecord(line, value, in_array=True)


def _iter_documents(stream: IO[str], head: str) -> Iterator[RawRecord]:
    buf = _Buffer(stream, head)
    while True:
        if buf.skip_space() == "":
            return
        line = buf.current_line()
        try:
            value = buf.decode()
        except _Malformed as exc:
            yield RawRecord(line, error=f"not valid JSON ({exc.reason}); the rest of the file is unreadable")
            return
        yield RawRecord(line, value)
