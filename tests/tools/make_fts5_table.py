"""Writes ``evalcore/store/fts5_table.py``: how SQLite's FTS5 ``unicode61 remove_diacritics 2`` tokenizer cuts
and folds every Unicode character, read off the SQLite this Python has (``python tests/tools/make_fts5_table.py``).

PostgreSQL's search is given the same words as SQLite's (``evalcore.store.search``), so that both engines find the
same sessions for the same query. ``tests/test_store_search.py`` checks the table against SQLite again.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

TARGET = Path(__file__).resolve().parents[2] / "evalcore" / "store" / "fts5_table.py"


def read_table() -> tuple[list[tuple[int, int]], dict[int, str]]:
    """(separator ranges, first and last code point; the characters FTS5 folds to something else)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    codes = [c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
    separators: list[int] = []
    folded: dict[int, str] = {}
    for start in range(0, len(codes), 20000):
        part = codes[start : start + 20000]
        db.execute("DELETE FROM f")
        db.execute("INSERT INTO f (rowid, x) VALUES (1, ?)", [" ".join(f"q{chr(c)}q" for c in part)])
        tokens = [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]
        at = 0
        for c in part:
            if tokens[at] == "q" and at + 1 < len(tokens) and tokens[at + 1] == "q":
                separators.append(c)
                at += 2
            else:
                middle = tokens[at][1:-1]
                if middle != chr(c):
                    folded[c] = middle
                at += 1
    ranges: list[tuple[int, int]] = []
    for c in separators:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return ranges, folded


def main() -> int:
    ranges, folded = read_table()
    lines = [
        '"""How SQLite\'s FTS5 ``unicode61 remove_diacritics 2`` tokenizer cuts and folds text, character by '
        "character.",
        "",
        f"Made by tests/tools/make_fts5_table.py from SQLite {sqlite3.sqlite_version}; do not edit by hand.",
        '"""',
        "",
        "# (first, last) code points of the characters that separate words.",
        "SEPARATORS: tuple[tuple[int, int], ...] = (",
        *(f"    ({a:#x}, {b:#x})," for a, b in ranges),
        ")",
        "# Word characters FTS5 indexes as something else (lower case, diacritics removed): code point -> text.",
        "FOLDED: dict[int, str] = {",
        *(f"    {c:#x}: {v!r}," for c, v in sorted(folded.items())),
        "}",
        "",
    ]
    TARGET.write_text("\n".join(lines), encoding="utf-8")
    print(f"{TARGET}: {len(ranges)} separator ranges, {len(folded)} folded characters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
