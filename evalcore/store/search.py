"""Full-text search: the words of a session's text and of a person's query, the same on both engines.

SQLite indexes a session's ``search_text`` with FTS5 (``unicode61 remove_diacritics 2``). PostgreSQL is given
the words FTS5 would see — cut and folded by the same table (``fts5_table``, read off SQLite itself) — as the
lexemes of a ``tsvector`` (``array_to_tsvector``, no parser of its own in between), and a query as the same
lexemes of a ``tsquery``. So both engines find the same sessions for the same query.

A query is the words a person typed: every word must appear; ``word*`` matches words that start with it.
A typed word that FTS5 cuts in several (``foo_bar``, ``naïve-x``) asks for each of its parts.

A session has two texts (``evalcore.store.rows``): ``search_text`` (the conversation without its system prompt,
the tools' names and arguments, the ground truth) and ``system_text`` (the system prompt and context). A search
looks in the first only, unless asked to look in the system prompt too: words a system prompt shares with
every session of a dataset would otherwise match them all.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["MAX_WORD_BYTES", "document", "documents", "fts5_query", "terms", "tsquery", "words"]

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


def fts5_query(found: list[tuple[str, bool]], *, system: bool = False) -> str:
    """``terms`` as an FTS5 query: ``"word" "pre"*`` (a word holds no quote: quotes separate words), in the
    ``search_text`` column only unless ``system`` (then in either column: each word in one or the other)."""
    words = " ".join(f'"{word}"' + ("*" if prefix else "") for word, prefix in found)
    return words if system else "{search_text} : (" + words + ")"


def tsquery(found: list[tuple[str, bool]]) -> str:
    """``terms`` as PostgreSQL ``tsquery`` text, lexemes taken as they are: ``'word' & 'pre':*``."""
    quoted = (
        "'" + word.replace("\\", "\\\\").replace("'", "''") + "'" + (":*" if prefix else "") for word, prefix in found
    )
    return " & ".join(quoted)


def document(text: str, *, skip: frozenset[str] | set[str] = frozenset(), budget: int = _MAX_DOCUMENT_BYTES) -> str:
    """A session's text as PostgreSQL indexes it: its distinct words (as ``words``), space-separated, each of at
    most ``MAX_WORD_BYTES``, up to ``budget`` bytes (about 900 KB) in all; the words in ``skip`` left out."""
    kept: dict[str, None] = {}
    size = 0
    for word in words(text):
        if word in kept or word in skip:
            continue
        length = len(word.encode())
        if length > MAX_WORD_BYTES:
            continue
        size += length + 1
        if size > budget:
            break
        kept[word] = None
    return " ".join(kept)


def documents(search_text: str, system_text: str) -> tuple[str, str]:
    """A session's two texts as PostgreSQL indexes them: the system text's document holds only the words the
    other lacks (a search of both asks each word of one or the other), and both together take no more than one
    document did when the system prompt was part of the text."""
    first = document(search_text)
    kept = set(first.split())
    return first, document(system_text, skip=kept, budget=_MAX_DOCUMENT_BYTES - len(first.encode()))
