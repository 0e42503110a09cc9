"""What the first bytes of a file say when it is not UTF-8 text at all: UTF-16 or UTF-32, or compressed.

evalcore reads UTF-8. Such a file would otherwise be reported as "not valid UTF-8" line after line;
``foreign_encoding`` names what it looks like and what to do, from its first bytes, so that the
reader says so once and reads no further. The bytes arrive as text decoded with
``surrogateescape``: a byte that is not UTF-8 is the lone surrogate ``U+DC00 + byte``.
"""

from __future__ import annotations

__all__ = ["foreign_encoding"]


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="surrogateescape")


# Byte-order marks, longest first (UTF-32 LE starts with UTF-16 LE's).
_BOMS = (
    (_text(b"\xff\xfe\x00\x00"), "UTF-32"),
    (_text(b"\x00\x00\xfe\xff"), "UTF-32"),
    (_text(b"\xff\xfe"), "UTF-16"),
    (_text(b"\xfe\xff"), "UTF-16"),
)
# Magic numbers of compressed files and archives, with the command that opens each.
_MAGIC = (
    (_text(b"\x1f\x8b"), "gzip-compressed", "gunzip it"),
    (_text(b"BZh"), "bzip2-compressed", "bunzip2 it"),
    (_text(b"\xfd7zXZ\x00"), "xz-compressed", "unxz it"),
    (_text(b"\x28\xb5\x2f\xfd"), "zstd-compressed", "unzstd it"),
    (_text(b"PK\x03\x04"), "a zip archive", "unzip it"),
)


def foreign_encoding(head: str) -> str | None:
    """What is wrong with a file whose text starts with ``head`` (its first characters, read with
    ``surrogateescape``), when its first bytes show it is UTF-16, UTF-32 or compressed; else None."""
    for mark, name in _BOMS:
        if head.startswith(mark):
            return f"the file looks {name} (it starts with a {name} byte-order mark): convert it to UTF-8 first"
    for magic, name, how in _MAGIC:
        if head.startswith(magic) and (name != "bzip2-compressed" or head[3:4].isdigit()):
            return f"the file looks {name} (it starts with the bytes that mark one): {how} first"
    wide = _wide(head)
    if wide is not None:
        return f"the file looks {wide} (NUL bytes between its characters): convert it to UTF-8 first"
    return None


def _wide(head: str) -> str | None:
    """UTF-16 or UTF-32 text without a byte-order mark, told by a JSON file's first character (``{`` or ``[``)
    beside NUL bytes."""
    if len(head) < 4:
        return None
    if head[0] in _OPENING and head[1:4] == "\0\0\0" or head[:3] == "\0\0\0" and head[3] in _OPENING:
        return "UTF-32"
    if head[0] in _OPENING and head[1] == "\0" and head[2] != "\0" and head[3] == "\0":
        return "UTF-16"
    if head[0] == "\0" and head[1] in _OPENING and head[2] == "\0" and head[3] != "\0":
        return "UTF-16"
    return None


_OPENING = ("{", "[")
