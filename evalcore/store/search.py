"""Full-text search: the words of a session's text and of a person's query, the same on both engines.

SQLite indexes a session's ``search_text`` with FTS5 (``unicode61 remove_diacritics 2``). PostgreSQL is given
the words FTS5 would see — cut and folded by the same table (``fts5_table``, read off SQLite itself) — as the
lexemes of a ``tsvector`` (``array_to_tsvector``, no parser of its own in between), and a query as the same
lexemes of a ``tsquery``. So both engines find the same sessions for the same query.

A query is the words a person typed: every word must appear; ``word*`` matches words that start with it.
A typed word that FTS5 cuts in several (``foo_bar``, ``naïve-x``) asks for each of its parts.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["MAX_WORD_BYTES", "document", "fts5_query", "terms", "tsquery", "words"]

_TYPED = re.compile(r"[\w*]+", re.UNICODE)
#: PostgreSQL keeps no lexeme longer than this: a longer word is not searchable there.
MAX_WORD_BYTES = 2000
#: How much of a session's distinct words PostgreSQL indexes (a tsvector holds at most 1 MB).
_MAX_DOCUMENT_BYTES = 900_000


@cache
def _table() -> dict[int, str]:
    from evalcore.store.fts5_table import FOLDED, SEPARATORS  # (on first use: 32 KB of table)

    table = {c: " " for first, last in SEPARATORS for c in range(first, last + 1)}
    table[0] = " "  # (NUL ends a word for FTS5 too: its text stops there)
    table.update(FOLDED)
    return table


def words(text: str) -> list[str]:
    """The words FTS5 indexes in ``text``, in order: cut at separators, lower case, diacritics removed."""
    return text.translate(_table()).split()


def terms(text: str) -> list[tuple[str, bool]]:
    """What a query asks for: ``(word, is a prefix)`` for each word to find, in order."""
    found: list[tuple[str, bool]] = []
    for typed in _TYPED.findall(text):
        parts = words(typed.replace("*", " "))
        for i, part in enumerate(parts):
            found.append((part, typed.endswith("*") and i == len(parts) - 1))
    return found


def fts5_query(found: list[tuple[str, bool]]) -> str:
    """``terms`` as an FTS5 query: ``"word" "pre"*`` (a word holds no quote: quotes separate words)."""
    return " ".join(f'"{word}"' + ("*" if prefix else "") for word, prefix in found)


def tsquery(found: list[tuple[str, bool]]) -> str:
    """``terms`` as PostgreSQL ``tsquery`` text, lexemes taken as they are: ``'word' & 'pre':*``."""
    quoted = (
        "'" + word.replace("\\", "\\\\").replace("'", "''") + "'" + (":*" if prefix else "") for word, prefix in found
    )
    return " & ".join(quoted)


def document(text: str) -> str:
    """A session's text as PostgreSQL indexes it: its distinct words (as ``words``), space-separated, each of at
    most ``MAX_WORD_BYTES``, up to about 900 KB in all."""
    kept: dict[str, None] = {}
    size = 0
    for word in words(text):
        if word in kept:
            continue
        length = len(word.encode())
        if length > MAX_WORD_BYTES:
            continue
        size += length + 1
        if size > _MAX_DOCUMENT_BYTES:
            break
        kept[word] = None
    return " ".join(kept)
