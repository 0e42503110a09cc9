"""Helpers for format tests: write records, read them back, compare after dropping nulls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalcore import convert_file, read_path
from evalcore.schema import Session


def drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_none(v) for v in value]
    return value


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def load_output(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def sessions_of(path: Path, fmt: str | None = None) -> list[Session]:
    with read_path(path, fmt) as results:
        out = []
        for result in results:
            assert result.ok, (result.line, [str(p) for p in result.problems])
            assert result.session is not None
            out.append(result.session)
        return out


def round_trip(tmp_path: Path, fmt: str, records: list[Any], *, suffix: str = ".jsonl") -> list[Any]:
    """X -> evalcore -> X; returns what came back (parsed)."""
    source = tmp_path / f"in{suffix}"
    if suffix == ".json":
        source.write_text(json.dumps(records, indent=2, ensure_ascii=False), encoding="utf-8")
    else:
        write_jsonl(source, records)
    middle = tmp_path / "middle.jsonl"
    report = convert_file(source, middle, to="evalcore", source_format=fmt)
    assert report.errors == 0, [str(p) for p in report.problems]
    back = tmp_path / f"back{suffix}"
    report = convert_file(middle, back, to=fmt, source_format="evalcore")
    assert report.errors == 0, [str(p) for p in report.problems]
    return load_output(back)


def assert_round_trip(tmp_path: Path, fmt: str, records: list[Any], *, suffix: str = ".jsonl") -> None:
    assert drop_none(round_trip(tmp_path, fmt, records, suffix=suffix)) == drop_none(records)
