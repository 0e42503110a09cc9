"""File-to-file conversion and validation, streaming, with every problem reported as data."""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from evalcore._infra.printable import visible
from evalcore.errors import EvalcoreError
from evalcore.formats import Format, get_format, writer_for
from evalcore.formats._blocks import non_text_blocks
from evalcore.formats.files import ReadResult
from evalcore.formats.json_problems import plain_json_problem
from evalcore.formats.jsonio import MAX_RECORD
from evalcore.formats.parallel import map_read
from evalcore.identity import identity_key, repeat_name
from evalcore.schema import Problem, Session, labels_of
from evalcore.schema.session import TRUTH_FIELDS

__all__ = ["ConvertReport", "FileProblem", "convert_file", "dropped_blocks", "validate_file"]


@dataclass(frozen=True)
class FileProblem:
    """A problem located in a file: prints as ``FILE:LINE: reason`` (the reason starts ``element N:`` for an element
    of a file that is one JSON array, and names the field when it is known; a JSON error is said plainly, with the
    file's line and column: ``evalcore.formats.json_problems``).

    Printed, it is one line a terminal shows as text: a control character (an escape sequence in a file's name
    or in a value the reason quotes, which a terminal would execute), a line break, an invisible or reordering
    character is written as its escape (``\\x1b``, ``\\n``, ``\\u202e``; ``evalcore._infra.printable``)."""

    path: str
    line: int
    level: str
    message: str

    def __str__(self) -> str:
        prefix = "warning: " if self.level == "warning" else ""
        return visible(f"{self.path}:{self.line}: {prefix}{plain_json_problem(self.message, self.line or None)}")


#: Problems a report keeps in memory; past this they are still counted and passed to ``on_problem``.
MAX_KEPT_PROBLEMS = 10_000


@dataclass
class ConvertReport:
    """What a conversion or validation did: counts, the detected format, the problems.

    ``problems`` keeps the first ``MAX_KEPT_PROBLEMS``; ``on_problem`` sees every one.
    """

    format: str | None = None
    sessions: int = 0
    errors: int = 0
    warnings: int = 0
    problems: list[FileProblem] = field(default_factory=list)


def _note(
    report: ConvertReport, path: str, result: ReadResult, on_problem: Callable[[FileProblem], None] | None
) -> None:
    has_error = False
    for problem in result.problems:
        item = FileProblem(path, result.line, problem.level, result.report(problem))
        if len(report.problems) < MAX_KEPT_PROBLEMS:
            report.problems.append(item)
        if on_problem:
            on_problem(item)
        if problem.level == "error":
            has_error = True
        else:
            report.warnings += 1
    report.errors += has_error


def validate_file(
    path: str | os.PathLike[str],
    *,
    source_format: str | None = None,
    on_problem: Callable[[FileProblem], None] | None = None,
    workers: int = 1,
    max_record: int = MAX_RECORD,
) -> ConvertReport:
    """Read every record of ``path`` and report every problem, with a warning for each session an import
    would not keep: one whose identity (``evalcore.identity``) an earlier record of the file has.

    With ``workers`` > 1, a big JSON Lines file is read by that many processes (``evalcore.formats.parallel``);
    the report is the same. A record longer than ``max_record`` characters is a problem, and reading stops there.
    """
    report = ConvertReport()
    seen: dict[str, int] = {}
    for checked in map_read(path, source_format, _checked, workers=workers, max_record=max_record):
        _note(report, str(path), checked.result, on_problem)
        if checked.format is not None:
            report.format = checked.format
            report.sessions += checked.ok
            if checked.identity is not None:
                _note_repeat(report, str(path), checked, seen, on_problem)
    return report


@dataclass(frozen=True)
class _Checked:
    """What validating needs of a record: its result (without the session: this goes back from a worker
    process), whether it gave a session with no error, the session's format, and for such a session with a
    ``session_id``, its ``(session_id, assistant_id)``."""

    result: ReadResult
    ok: bool
    format: str | None
    identity: tuple[str, str | None] | None


def _checked(result: ReadResult) -> _Checked:
    session = result.session
    if session is None:
        return _Checked(result, False, None, None)
    fmt = session.provenance.format if session.provenance else None
    ok = result.ok
    identity = (session.session_id, session.assistant_id) if ok and session.session_id is not None else None
    return _Checked(_without_session(result, result.problems), ok, fmt, identity)


def _note_repeat(
    report: ConvertReport,
    path: str,
    checked: _Checked,
    seen: dict[str, int],
    on_problem: Callable[[FileProblem], None] | None,
) -> None:
    assert checked.identity is not None
    session_id, assistant_id = checked.identity
    result = checked.result
    key = identity_key(session_id, assistant_id, path, None)
    first = seen.setdefault(key, result.line)
    if first != result.line:
        name = repeat_name(session_id, assistant_id, key)
        message = f"session {name} appears again (first on line {first}): an import keeps the first, not this one"
        repeat = _without_session(result, [Problem("warning", None, message)])
        _note(report, path, repeat, on_problem)


def convert_file(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    to: str,
    source_format: str | None = None,
    on_problem: Callable[[FileProblem], None] | None = None,
    workers: int = 1,
    max_record: int = MAX_RECORD,
) -> ConvertReport:
    """Convert ``source`` into ``target`` in format ``to``; bad records are reported and skipped.

    With ``workers`` > 1, a big JSON Lines file is read and written by that many processes
    (``evalcore.formats.parallel``); the target and the report are the same. A record longer than
    ``max_record`` characters is a problem, and reading stops there (what was read before is written).
    """
    report = ConvertReport()
    fmt = get_format(to)
    work = functools.partial(_converted, fmt)
    with writer_for(target, fmt) as writer:
        for converted in map_read(source, source_format, work, workers=workers, max_record=max_record):
            for note in converted.notes:
                _note(report, str(source), note, on_problem)
            if converted.format is not None:
                report.format = converted.format
            if converted.lines is not None:
                writer.write_lines(converted.lines)
                report.sessions += 1
    return report


@dataclass(frozen=True)
class _Converted:
    """A record converted: its lines in the target format (None when it gave none), the session's format, and
    what to report (results without their sessions: this goes back from a worker process)."""

    lines: list[str] | None
    format: str | None
    notes: list[ReadResult]


def _converted(fmt: Format, result: ReadResult) -> _Converted:
    notes = [_without_session(result, result.problems)] if result.problems else []
    session = result.session
    if session is None or not result.ok:
        return _Converted(None, None, notes)
    read_as = session.provenance.format if session.provenance else None
    try:
        lines = fmt.write_lines(session)
    except (EvalcoreError, ValueError, TypeError) as exc:
        problem = Problem("error", None, f"cannot write as {fmt.name}: {exc}")
        return _Converted(None, read_as, [*notes, _without_session(result, [problem])])
    lost = dropped_blocks(session, fmt)
    if lost:
        notes.append(_without_session(result, lost))
    return _Converted(lines, read_as, notes)


def _without_session(result: ReadResult, problems: list[Problem]) -> ReadResult:
    """``result``'s place in the file with ``problems``, and no session (what goes back from a worker process)."""
    return ReadResult(result.line, result.position, None, problems, result.element)


def dropped_blocks(session: Session, fmt: Format) -> list[Problem]:
    """A warning for each message whose content has blocks (images, files, ...) ``fmt`` does not carry, and one
    for the ground truth it has no place for: what writing ``session`` in ``fmt`` leaves out, counted, never
    silently."""
    if fmt.lossless:  # (this runs for every session converted)
        return []
    problems = []
    kept = fmt.kept_truth(session)
    lost_truth = [name for name in (*TRUTH_FIELDS, "turn_truth") if name not in kept and _has(session, name)]
    labels = labels_of(session)
    if labels is not None and (labels.answers or labels.questions or labels.comments):
        lost_truth.append("labels")
    if lost_truth:
        problems.append(Problem("warning", None, f"{', '.join(lost_truth)} not carried by {fmt.name}: dropped"))
    for i, message in enumerate(session.messages):
        if type(message.content) is not list:
            continue
        lost = [b for b in non_text_blocks(message.content) if not fmt.carries(b)]
        if lost:
            kinds = Counter(str(b.get("type", "untyped")) for b in lost)
            what = ", ".join(f"{n} {kind} block{'s' if n > 1 else ''}" for kind, n in kinds.items())
            problems.append(Problem("warning", f"messages[{i}].content", f"{what} not carried by {fmt.name}: dropped"))
    return problems


def _has(session: Session, name: str) -> bool:
    """Whether ``session`` has ground truth in field ``name`` (for ``turn_truth``: any turn with some)."""
    if name == "turn_truth":
        return any(t.model_dump(exclude_defaults=True) for t in session.turn_truth)
    return bool(getattr(session, name))
