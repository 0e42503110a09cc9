"""The samples a task is solved for: rows of a JSONL, JSON or CSV file.

Each sample is a dict of fields (``question``, ``target``, a trace column...). ``read_samples`` gives the
good rows and a problem for each bad one (naming its line or row); ``load_samples`` gives the rows when
the file has no problem, else a ``SamplesError`` listing them all (nothing is run on half a file).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalcore.formats.jsonio import loads
from evalcore.solver.task import TaskError

__all__ = ["SamplesError", "load_samples", "parse_samples", "place_samples", "read_placed_samples", "read_samples"]


class SamplesError(TaskError):
    """A samples file that cannot be used as it is: ``problems`` lists every bad line or row."""


def load_samples(path: str | Path) -> list[dict[str, Any]]:
    """The samples of the file at ``path`` (``.csv``: a header row, then one sample a row; else JSONL, a JSON
    array of objects or one object); a file with any bad line or row is a ``SamplesError`` naming each."""
    rows, problems = read_samples(path)
    if problems:
        raise SamplesError(str(path), problems)
    return rows


def read_samples(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The good samples of the file at ``path``, and a problem for each bad line or row."""
    placed, problems = read_placed_samples(path)
    return [row for _, row in placed], problems


def read_placed_samples(path: str | Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """``read_samples`` with each good sample's place in the file (``place_samples``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SamplesError(str(path), [f"cannot read the file: {exc}"]) from None
    return place_samples(text, path.name)


def parse_samples(text: str, name: str = "samples.jsonl") -> tuple[list[dict[str, Any]], list[str]]:
    """The good samples of a file's ``text`` (an upload, say), and a problem for each bad line or row; ``name``
    ending in ``.csv`` reads it as CSV, else as JSON."""
    placed, problems = place_samples(text, name)
    return [row for _, row in placed], problems


def place_samples(text: str, name: str = "samples.jsonl") -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """``parse_samples`` with each good sample's place among all the file's samples, bad ones included
    (0-based): a sample keeps its place, and so its session, when a bad line before it is mended."""
    text = text.removeprefix("\ufeff")
    placed, problems = _csv_rows(text) if name.lower().endswith(".csv") else _json_rows(text)
    if not placed and not problems:
        problems.append("no samples in the file")
    return placed, problems


Placed = list[tuple[int, dict[str, Any]]]


def _json_rows(text: str) -> tuple[Placed, list[str]]:
    if text.lstrip().startswith("["):  # one JSON array of samples
        try:
            value = loads(text)
        except ValueError as exc:
            return [], [f"not valid JSON: {exc}"]
        if not isinstance(value, list):
            return [], ["expected a JSON array of objects"]
        return _objects([(f"item {i}", v) for i, v in enumerate(value)])
    if text.lstrip().startswith("{"):
        try:
            whole = loads(text)
        except ValueError:
            whole = None  # JSON lines (or a bad line, reported below)
        if isinstance(whole, dict):
            return [(0, whole)], []  # one sample, written over several lines
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    values: list[tuple[str, Any]] = []
    for n, line in numbered:
        try:
            values.append((f"line {n}", loads(line)))
        except ValueError as exc:
            values.append((f"line {n}", _Bad(f"line {n}: not valid JSON: {exc}")))
    return _objects(values)


class _Bad:
    """A line that is not JSON: its problem (it keeps its place among the samples)."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _objects(values: list[tuple[str, Any]]) -> tuple[Placed, list[str]]:
    rows: Placed = []
    problems = []
    for place, (where, value) in enumerate(values):
        if isinstance(value, dict):
            rows.append((place, value))
        elif isinstance(value, _Bad):
            problems.append(value.problem)
        else:
            problems.append(f"{where}: expected a JSON object (a sample's fields), got {type(value).__name__}")
    return rows, problems


#: One CSV record (as Python's csv module reads the default dialect): fields separated by commas, a field quoted
#: with ``"`` (``""`` inside) running over lines (to the end of the text when it is not closed), a record up to the
#: line's end outside quotes.
_FIELD = r'(?:"(?:[^"]|"")*(?:"[^,\r\n]*|\Z)|(?:[^",\r\n][^,\r\n]*)?)'
_RECORD = re.compile(rf"{_FIELD}(?:,{_FIELD})*(?:\r\n|\n|\r|\Z)")
_NEWLINE = re.compile(r"\r\n|\n|\r")


class _Records:
    """The CSV records of ``text``, one string each, as the csv module reads them (``line``: where the last one given
    starts). Given to one ``csv.reader``, a record it refuses (a field over its size limit) costs only itself: the
    reader goes on with the next record, not with the next line of a record it gave up in the middle of."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line = 0

    def __iter__(self) -> Iterator[str]:
        text, pos, line = self.text, 0, 1
        while pos < len(text):
            match = _RECORD.match(text, pos)
            assert match is not None  # (every field may be empty: the pattern always matches)
            record = match.group()
            self.line = line
            yield record
            line += len(_NEWLINE.findall(record))
            pos = match.end()


def _csv_rows(text: str) -> tuple[Placed, list[str]]:
    records = _Records(text)
    reader = csv.reader(records)
    try:
        header = next(reader, [])
    except csv.Error as exc:
        return [], [f"line 1: not valid CSV: {exc}"]
    if not header or not any(name.strip() for name in header):
        return [], ["line 1: expected a header row naming the columns"]
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        return [], [f"line 1: the header names a column more than once: {', '.join(duplicated)}"]
    rows: Placed = []
    problems: list[str] = []
    place = 0
    while True:
        try:
            cells = next(reader, None)
        except csv.Error as exc:  # this record only: the reader goes on with the next one
            place += 1
            problems.append(f"line {records.line}: not valid CSV: {exc}")
            continue
        if cells is None:
            return rows, problems
        if not cells:
            continue  # a blank line
        place += 1
        if len(cells) != len(header):
            problems.append(f"line {records.line}: {len(cells)} fields, the header has {len(header)}")
            continue
        rows.append((place - 1, dict(zip(header, cells, strict=True))))
