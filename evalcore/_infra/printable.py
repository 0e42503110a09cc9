"""Text made safe to show as a name or an id, on a screen or a terminal: nothing in it is invisible, nothing in
it reorders what follows, nothing in it is a command to the terminal.

A session id holding a RIGHT-TO-LEFT OVERRIDE (U+202E) reads ``gnp.exe`` as ``exe.png``; an id of
ZERO WIDTH SPACEs shows as nothing; a file name holding ``ESC [ 2 J`` clears the terminal it is printed
on. :func:`visible` writes each such character as the escape Python would write for it (``\\u202e``,
``\\u200b``, ``\\x1b``), so what is shown says what is there.

Escaped: every character Python does not call printable (``str.isprintable``: controls, format
characters such as the bidirectional controls and zero-width characters, line and paragraph separators,
spaces other than the plain space, private-use and unassigned code points), and the few printable ones
that draw nothing (Hangul fillers, the Braille blank, the combining grapheme joiner, variation selectors,
Khmer and Mongolian invisible marks). A backslash is left as it is: a name that holds the text
``\\u202e`` reads like one that holds the character (rare, and harmless: neither hides anything).
"""

from __future__ import annotations

import re

__all__ = ["visible", "visible_json"]

# Printable by Python's rules, yet drawn as nothing (or as a blank of no width).
_BLANK = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef\U0001d173-\U0001d17a]"
)


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` with every invisible, reordering or control character written as its escape (``\\u202e``).

    ``lines``: keep line breaks (``\\n``) as they are, for a message of several lines; else a line break is
    escaped too (a name or an id is one line: a line break in it must not start a line of its own, which
    could pass for another message). Text with nothing to escape is returned as it is (the common case,
    decided at C speed).
    """
    if text.isprintable() and not _BLANK.search(text):
        return text
    out = []
    for char in text:
        if (char.isprintable() and not _BLANK.match(char)) or (lines and char == "\n"):
            out.append(char)
        else:
            out.append(_escape(char))
    return "".join(out)


def visible_json(text: str) -> str:
    """JSON text (line breaks kept) with each character ``visible`` would escape written as JSON's own escape
    (``\\u202e``; a surrogate pair beyond the BMP): the same JSON, showing what is there. (Such characters are only
    ever inside JSON's strings, where the escape means the same character.)"""
    if text.isprintable() and not _BLANK.search(text):
        return text
    out = []
    for char in text:
        if (char.isprintable() and not _BLANK.match(char)) or char == "\n":
            out.append(char)
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            high, low = divmod(ord(char) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
    return "".join(out)
