"""A record's JSON error said plainly, where a person reads it (the command line's problems, the Datasets page):
``not valid JSON at line 3, column 61: a comma or a closing bracket was expected`` rather than Python's
``Expecting ',' delimiter: line 1 column 61 (char 60)``, whose line counts from the record's first line."""

from __future__ import annotations

import re

__all__ = ["plain_json_problem"]

# Python's JSON parser's words, as an import's problem quotes them: "not valid JSON (Expecting ',' delimiter: line 1
# column 61 (char 60))" — its line counted from the record's first line, not the file's.
_PARSER = re.compile(r"not valid JSON \((?P<what>.+?): line (?P<line>\d+) column (?P<column>\d+) \(char \d+\)\)")
_PLAIN = {
    "Expecting ',' delimiter": "a comma or a closing bracket was expected",
    "Expecting ':' delimiter": "a colon was expected after the key",
    "Expecting value": "a value was expected (text in double quotes, a number, an object, a list, true, false or null)",
    "Expecting property name enclosed in double quotes": "a key in double quotes was expected (no comma may end an "
    "object)",
    "Extra data": "more text follows the end of the JSON value",
    "Unterminated string starting at": "a text in double quotes starts here and is never closed",
    "Invalid control character at": "a control character (a tab, a line break) stands inside a text in quotes",
    "Invalid \\escape": "a backslash escape that JSON does not know",
    "Invalid \\uXXXX escape": "a \\u escape without four hexadecimal digits",
}


def plain_json_problem(message: str | None, line: int | None) -> str | None:
    """An import problem with Python's JSON message said plainly: ``not valid JSON at line 3, column 61: a comma or
    a closing bracket was expected`` — the line the file's (the record's ``line`` plus the parser's line within the
    record), the column on that line. Any other message is returned as it is."""
    if not message:
        return message
    found = _PARSER.search(message)
    if found is None:
        return message
    within, column = int(found["line"]), int(found["column"])
    where = f"line {line + within - 1:,}, column {column:,}" if line is not None else f"column {column:,}"
    what = _PLAIN.get(found["what"], found["what"][:1].lower() + found["what"][1:])
    return f"{message[: found.start()]}not valid JSON at {where}: {what}{message[found.end() :]}"
