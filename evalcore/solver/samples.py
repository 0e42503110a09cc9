"""The samples a task is solved for: rows of a JSONL, JSON or CSV file.

Each sample is a dict of fields (``question``, ``target``, a trace column...). ``read_samples`` gives the
good rows and a problem for each bad one (naming its line or row); ``load_samples`` gives the rows when
the file has no problem, else a ``SamplesError`` listing them all (nothing is run on half a file).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from evalcore.formats.jsonio import loads
from evalcore.solver.task import TaskError

__all__ = ["SamplesError", "load_samples", "parse_samples", "read_samples"]


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
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SamplesError(str(path), [f"cannot read the file: {exc}"]) from None
    return parse_samples(text, path.name)


def parse_samples(text: str, name: str = "samples.jsonl") -> tuple[list[dict[str, Any]], list[str]]:
    """The good samples of a file's ``text`` (an upload, say), and a problem for each bad line or row; ``name``
    ending in ``.csv`` reads it as CSV, else as JSON."""
    text = text.removeprefix("\ufeff")
    rows, problems = _csv_rows(text) if name.lower().endswith(".csv") else _json_rows(text)
    if not rows and not problems:
        problems.append("no samples in the file")
    return rows, problems


def _json_rows(text: str) -> tuple[list[dict[str, Any]], list[str]]:
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
            return [whole], []  # one sample, written over several lines
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    values: list[tuple[str, Any]] = []
    problems = []
    for n, line in numbered:
        try:
            values.append((f"line {n}", loads(line)))
        except ValueError as exc:
            problems.append(f"line {n}: not valid JSON: {exc}")
    rows, more = _objects(values)
    return rows, problems + more


def _objects(values: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    rows = []
    problems = []
    for where, value in values:
        if isinstance(value, dict):
            rows.append(value)
        else:
            problems.append(f"{where}: expected a JSON object (a sample's fields), got {type(value).__name__}")
    return rows, problems


def _csv_rows(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        return [], [f"line 1: not valid CSV: {exc}"]
    if not header or not any(name.strip() for name in header):
        return [], ["line 1: expected a header row naming the columns"]
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        return [], [f"line 1: the header names a column more than once: {', '.join(duplicated)}"]
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        for cells in reader:
            line = reader.line_num
            if not cells:
                continue  # a blank line
            if len(cells) != len(header):
                problems.append(f"line {line}: {len(cells)} fields, the header has {len(header)}")
                continue
            rows.append(dict(zip(header, cells, strict=True)))
    except csv.Error as exc:
        problems.append(f"line {reader.line_num}: not valid CSV: {exc}")
    return rows, problems
