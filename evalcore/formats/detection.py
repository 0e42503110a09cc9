"""Telling a record's format from its content, when ``--from`` does not name it.

Every format whose ``sniff`` recognises the record is a candidate, in sniffing order (``Format.priority``: the
specific shapes first). One candidate is the answer. Several are weighed: each reads the record, as a file of
it would be read, and what it reads of the conversation (messages and tool calls) is its weight.

- Candidates that read the same conversation are one answer: the first is taken, and nothing is said (an
  ``evalcore`` row is an OpenAI one too; a Swarm row, an OpenAI one with senders).
- The heaviest reading wins, the first candidate on a tie. When that is not the first candidate (a format that
  recognises one key, ``request`` or ``items``, beside a conversation another reads whole), the winner is taken
  and a warning says so, naming the other: ``--from`` chooses it.
- Two candidates that read different conversations equally well make the record ambiguous:
  ``FormatDetectionError`` names both and asks for ``--from``.
- When the first candidate cannot read the record, it is taken all the same, as before: it recognised the record
  first, and its reader says what is wrong (a bad first record of a file in that format must not turn the whole
  file into another format's, which would read the rest with its ground truth left in metadata).

A sniffer or a reader that fails on a shape it does not expect (an unhashable ``type``, say) does not
recognise, or cannot read, the record: detection goes on with the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalcore.errors import FormatDetectionError
from evalcore.formats.base import Format, formats
from evalcore.schema import Session

__all__ = ["Detection", "detect", "detect_format"]


@dataclass(frozen=True)
class Detection:
    """The format a record is read as, and what to say about the choice (None: nothing)."""

    format: Format
    warning: str | None = None


def detect_format(value: Any) -> Format:
    """The format ``value`` (a file's first record) is read as (see the module's docstring)."""
    return detect(value).format


def detect(value: Any) -> Detection:
    """The format ``value`` (a file's first record) is read as, with a warning when the choice needs one; raises
    ``FormatDetectionError`` when no format recognises it, or two read it differently and equally well."""
    candidates = [fmt for fmt in formats() if _sniffs(fmt, value)]
    if not candidates:
        names = ", ".join(f.name for f in formats())
        raise FormatDetectionError(f"no format recognises this record (tried {names}); name one with --from")
    if len(candidates) == 1:
        return Detection(candidates[0])
    readings = [_Reading.of(fmt, value) for fmt in candidates]
    first = readings[0]
    if first.error is not None:
        return Detection(first.format)  # its reader says what is wrong
    read = [r for r in readings if r.error is None]
    best = max(read, key=lambda r: r.weight)  # (the first of the heaviest)
    rivals = [r for r in read if r.weight == best.weight and r.conversation != best.conversation]
    if rivals:
        other = rivals[0]
        raise FormatDetectionError(
            f"this record reads as {best.format.name} ({best.describe()}) and as {other.format.name} "
            f"({other.describe()}), differently and equally well: name its format with --from"
        )
    if best is first or best.conversation == first.conversation:
        return Detection(first.format)
    why = f"as {first.format.name} it gives {first.describe()}, as {best.format.name} {best.describe()}"
    warning = f"read as {best.format.name}, not {first.format.name}: {why}; --from names the format to read it as"
    return Detection(best.format, warning)


def _sniffs(fmt: Format, value: Any) -> bool:
    try:
        return bool(fmt.sniff(value))
    except Exception:  # a sniffer's bug must not stop the file
        return False


@dataclass(frozen=True)
class _Reading:
    """What one candidate reads of a record: its sessions' conversation (each message's role, text and tool calls),
    and its weight (messages and tool calls); or why it cannot read the record."""

    format: Format
    conversation: tuple[Any, ...] = ()
    messages: int = 0
    calls: int = 0
    error: str | None = None

    @property
    def weight(self) -> int:
        return self.messages + self.calls

    def describe(self) -> str:
        def count(n: int, what: str) -> str:
            return f"{n} {what}{'' if n == 1 else 's'}"

        return f"{count(self.messages, 'message')} and {count(self.calls, 'tool call')}"

    @classmethod
    def of(cls, fmt: Format, value: Any) -> _Reading:
        try:
            reader = fmt.reader()
            sessions = [session for _, session in [*reader.feed(value, 1), *reader.close()]]
        except Exception as exc:  # a RecordError (it names the field), or a reader's bug: it cannot read this
            return cls(fmt, error=str(exc))
        if not sessions and reader.failures:
            return cls(fmt, error=str(reader.failures[0][1]))
        conversation = tuple(_conversation(session) for session in sessions)
        calls = sum(len(message[2]) for messages in conversation for message in messages)
        return cls(fmt, conversation, sum(len(messages) for messages in conversation), calls)


def _conversation(session: Session) -> tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]:
    return tuple(
        (
            message.role,
            message.text,
            tuple((call.name, json.dumps(call.args, sort_keys=True, default=str)) for call in message.tool_calls or ()),
        )
        for message in session.messages
    )
