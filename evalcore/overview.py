"""What a file holds, at a glance: the summary the app's file browser shows."""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.formats import read, read_path
from evalcore.formats.files import ReadResult
from evalcore.schema import Problem, Session

__all__ = ["FileOverview", "overview_of_bytes", "overview_of_path", "sample_files", "session_row"]


@dataclass
class FileOverview:
    """The sessions of one file, the format they were read as, and every problem met."""

    name: str
    format: str | None = None
    sessions: list[Session] = field(default_factory=list)
    problems: list[tuple[int, Problem]] = field(default_factory=list)

    @property
    def warnings(self) -> int:
        """How many warnings the file gave."""
        return sum(1 for _line, p in self.problems if p.level == "warning")

    @property
    def records_with_errors(self) -> int:
        """How many records had an error (a record may have several problems)."""
        return len({line for line, p in self.problems if p.level == "error"})

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One summary row per session, for a table."""
        return [session_row(s) for s in self.sessions]


def session_row(session: Session) -> dict[str, Any]:
    """A flat summary of a session: ids, sizes, and which ground truth it carries."""
    ground_truth = [
        name
        for name, value in (
            ("reference", session.reference),
            ("reference tool calls", session.reference_tool_calls),
            ("expected facts", session.expected_facts),
            ("rubrics", session.rubrics),
            ("guidelines", session.guidelines),
            ("topics", session.reference_topics),
            ("per-turn", [t for t in session.turn_truth if t.ground_truth or t.observation or t.weight is not None]),
        )
        if value
    ]
    first_user = next((m.text for m in session.messages if m.role == "user"), "")
    return {
        "line": session.provenance.line if session.provenance else None,
        "session_id": session.session_id or "",
        "assistant": session.assistant_id or "",
        "first question": first_user[:120],
        "turns": len(session.turns()),
        "messages": len(session.messages),
        "tool calls": len(session.tool_calls()),
        "ground truth": ", ".join(ground_truth),
        "status": session.status,
    }


def _collect(name: str, records: Iterable[ReadResult]) -> FileOverview:
    result = FileOverview(name=name)
    for record in records:
        for problem in record.problems:
            result.problems.append((record.line, problem))
        if record.session is not None and record.ok:
            result.sessions.append(record.session)
            if record.session.provenance is not None:
                result.format = record.session.provenance.format
    return result


def overview_of_bytes(data: bytes, name: str, fmt: str | None = None) -> FileOverview:
    """Read an uploaded file's bytes (bad UTF-8 is reported per record, not raised)."""
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", newline="")
    return _collect(name, read(stream, fmt, source=name))


def overview_of_path(path: str | os.PathLike[str], fmt: str | None = None) -> FileOverview:
    """Read a file on disk."""
    with read_path(path, fmt) as results:
        return _collect(Path(path).name, results)


def sample_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The data files of a sample folder (JSON and JSONL), sorted by name."""
    root = Path(folder)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
