"""Running one fuzz case through the command line, and the oracle it is checked against.

Each case file goes through ``evalcore validate``, ``evalcore convert`` to every writable format
and ``evalcore import`` (in this process through ``evalcore.cli.main``, or as real processes), and
the import again through the two-process reader (``import_file(workers=2)``) for some. Checked:

- no traceback, ever (an exception out of ``main``, or "Traceback" on standard error);
- the exit codes the README promises: 0 when the input had no problem, 1 when it had some,
  never 2 (every invocation here is a valid one);
- nothing lost: the oracle reads every unit of the file (a record, or the records a format
  groups into one session) on its own, in its own file, and counts the sessions; ``validate``
  must read as many, ``convert`` must write each (or report why it cannot, record by record),
  and ``import`` must store each (but for a session id seen before in the file, reported);
- one verdict: what ``validate`` accepts, ``convert`` writes and ``import`` stores, and every
  file ``convert`` writes reads back with as many sessions.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
import subprocess
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.cli import main
from evalcore.formats import detect_format, formats, read, read_path

from .cases import Case

WRITABLE = [f.name for f in formats() if f.writable]
EVALCORE = str(Path(sys.executable).parent / "evalcore")
_LONE = re.compile("[\ud800-\udfff]")
_ITEM_TYPES = {
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "custom_task_input_message",
    "custom_task_output_message",
}  # the Open Responses items, as the README lists them
_VALIDATE = re.compile(r": (\d+) sessions read(?: as (\S+))?; (\d+) records with errors, (\d+) warnings$")
_CONVERT = re.compile(r"^(\d+) sessions written to .* \((\S+)\); (\d+) records with errors, (\d+) warnings$")
_IMPORT = re.compile(r": (\d+) new, (\d+) updated, (\d+) unchanged, (\d+) failed, (\d+) warnings$")


@dataclass
class Run:
    """One command: its exit code (None: it raised), standard error, and the traceback if it raised."""

    args: list[str]
    code: int | None
    stderr: str
    crash: str | None = None

    def last(self) -> str:
        lines = self.stderr.strip().splitlines()
        return lines[-1] if lines else ""


def run_in_process(args: Sequence[str]) -> Run:
    err, out = io.StringIO(), io.StringIO()
    crash = None
    code: int | None
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(list(args))
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # what the fuzz looks for: a traceback the user would see
        code, crash = None, traceback.format_exc()
    return Run(list(args), code, err.getvalue(), crash)


def run_process(args: Sequence[str]) -> Run:
    proc = subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=300)
    return Run(list(args), proc.returncode, proc.stderr)


@dataclass
class Expected:
    """What the oracle knows of a case's file."""

    format: str | None
    sessions: int | None  # exactly, when the units are known; else None
    at_least: int  # sessions from units known to be good
    keys: int | None  # distinct session keys among those sessions (what import stores)
    any_bad: bool | None  # whether some unit gives an error on its own


@dataclass
class Verdict:
    """What went wrong with a case (nothing when ``problems`` is empty)."""

    case: str
    problems: list[str] = field(default_factory=list)
    tracebacks: int = 0
    lost: int = 0  # good records not read, written or stored

    def fail(self, message: str) -> None:
        self.problems.append(message)


class Oracle:
    """Reads units on their own (with a cache: most units of a case are the sample's own)."""

    def __init__(self) -> None:
        self._alone: dict[tuple[str, str], Alone] = {}

    def expect(self, case: Case) -> Expected:
        sample = case.sample
        if case.units is not None:
            units: list[str | None] = list(case.units)
        elif (case.framing or sample.framing) == "lines":
            units = _lines_of(case.data)
        else:
            units = None  # type: ignore[assignment]
        if units is None:
            return self._lower_bound(case)
        values = [_parse(u) for u in units]
        first = next((i for i, v in enumerate(values) if v is not _BAD and _detect(v) is not None), None)
        if first is None:
            return Expected(None, 0, 0, 0, bool(units))
        fmt = _detect(values[first])
        assert fmt is not None
        sessions, ids, any_bad = 0, [], first > 0
        for group in self._groups(fmt, units[first:], values[first:]):
            alone = self.alone(group, fmt)
            sessions += alone.sessions
            ids += alone.ids
            any_bad = any_bad or alone.bad
        keys = sum(1 for i in ids if i is None) + len({i for i in ids if i is not None})
        return Expected(fmt, sessions, sessions, keys, any_bad)

    def _groups(self, fmt: str, units: list[str | None], values: list[Any]) -> list[list[str]]:
        """Units read together, as the format's documented rules group them: Gaussia's streamed
        batches of one session (consecutive lines of one ``session_id``), and bare Open Responses
        items (consecutive). A record the reader refuses leaves a run of them unbroken."""
        texts = [u if u is not None else "?" for u in units]
        if fmt not in ("gaussia", "open-responses"):
            return [[t] for t in texts]
        groups: list[list[str]] = []
        run: list[str] = []
        run_key: Any = None
        for text, value in zip(texts, values, strict=True):
            alone = self.alone([text], fmt)
            if fmt == "gaussia":
                streamed = isinstance(value, dict) and "batch" in value and isinstance(value.get("metadata"), dict)
                key = alone.session_ids[0] if streamed and alone.produced else None
                joins = key is not None
            else:
                kind = value.get("type") if isinstance(value, dict) else None
                joins = (isinstance(kind, str) and kind in _ITEM_TYPES) or (
                    bool(run) and isinstance(value, dict) and ("type" in value or "role" in value)
                )
                key = "items"
            if joins:
                if run and key != run_key:
                    groups.append(run)
                    run = []
                run_key = key
                run.append(text)
            elif alone.produced:  # a session of its own: what the reader held goes first
                if run:
                    groups.append(run)
                    run = []
                groups.append([text])
            else:  # refused: reported on its line, and the run goes on
                groups.append([text])
        if run:
            groups.append(run)
        return groups

    def _lower_bound(self, case: Case) -> Expected:
        """Units known good: those wholly before the damage, or all but the one damaged (a pretty-printed
        array or document reader goes on at the next element or document)."""
        sample = case.sample
        assert case.damage_at is not None
        if case.damaged_unit is not None:
            good = [i for i in range(len(case.spans)) if i != case.damaged_unit]
        else:
            good = [i for i, (_start, end) in enumerate(case.spans) if end <= case.damage_at]
        fmt = _detect(sample.values[0])
        bad = None if case.damaged_unit is not None else True
        if sample.name == "open_responses_items.json" or not good or fmt is None:
            return Expected(None, None, 0, None, bad)
        if good[0] != 0:  # the format is found on the first unit read
            fmt = next((f for i in good if (f := _detect(sample.values[i])) is not None), None)
            if fmt is None:
                return Expected(None, None, 0, None, bad)
        groups = self._groups(fmt, [sample.texts[i] for i in good], [sample.values[i] for i in good])
        at_least = sum(self.alone(group, fmt).sessions for group in groups)
        # A character deleted may leave valid JSON (a letter of a string): no error is promised then.
        return Expected(fmt, None, at_least, None, None if case.damaged_unit is not None else True)

    def alone(self, texts: list[str], fmt: str) -> Alone:
        """What ``texts`` give read as ``fmt`` in a file of their own, one a line.

        A last line ``0`` (which never reads) keeps a lone array from being the whole input, so
        that a unit means what it means on a line of its own; its problem is not counted."""
        text = "\n".join(texts)
        key = (text, fmt)
        if key not in self._alone:
            try:
                results = list(read(io.StringIO(text + "\n0\n"), fmt, source="alone"))
            except Exception:  # a reader that raises: the whole file's run shows the traceback
                self._alone[key] = Alone(0, [], True, 0, [])
                return self._alone[key]
            last = text.count("\n") + 1
            ids = [r.session.session_id for r in results if r.ok and r.session is not None]
            bad = any(p.level == "error" for r in results if r.line <= last for p in r.problems)
            made = [r.session.session_id for r in results if r.session is not None]
            self._alone[key] = Alone(len(ids), ids, bad, len(made), made)
        return self._alone[key]


@dataclass(frozen=True)
class Alone:
    """Units read on their own: sessions read (and their ids), whether any errs, and how many
    sessions the reader made at all (some failing validation) with their ids."""

    sessions: int
    ids: list[str | None]
    bad: bool
    produced: int
    session_ids: list[str | None]


_BAD = object()


def _parse(unit: str | None) -> Any:
    """A unit's value by the standard library's strict reading, or ``_BAD``."""
    if unit is None:
        return _BAD
    try:
        value = json.loads(unit)
    except (ValueError, RecursionError):
        return _BAD
    return _BAD if _has_lone_surrogate(value) else value


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _LONE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _detect(value: Any) -> str | None:
    if value is _BAD:
        return None
    try:
        return detect_format(value).name
    except Exception:
        return None


def _lines_of(data: bytes) -> list[str | None]:
    """JSON Lines by the book: lines split on LF, a CR before it dropped, a BOM at the start
    dropped; a line that is not UTF-8 is a bad unit (``None``)."""
    stripped = data.lstrip(b" \t\r\n")
    if stripped.startswith(b"\xef\xbb\xbf"):
        data = stripped[3:]
    units: list[str | None] = []
    for raw in data.split(b"\n"):
        try:
            text = raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError:
            units.append(None)
            continue
        if text.strip():
            units.append(text)
    return units


def check_case(case: Case, oracle: Oracle, folder: Path, db: Path, number: int, *, processes: bool = False) -> Verdict:
    """Run ``case`` through validate, convert to every writable format and import; judge it."""
    run = run_process if processes else run_in_process
    verdict = Verdict(case.name)
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"case{case.sample.suffix}"
    source.write_bytes(case.data)
    expected = oracle.expect(case)

    def clean(r: Run) -> bool:
        if r.crash is not None or "Traceback" in r.stderr:
            verdict.tracebacks += 1
            verdict.fail(f"traceback from {' '.join(r.args[:1])}:\n{r.crash or r.stderr[-3000:]}")
            return False
        # A reader or writer that raised is caught and reported as the record's problem, but it is a bug:
        # the problem should say what is wrong with the record, and name the field.
        for line in r.stderr.splitlines():
            if "unreadable record (" in line or " writer failed (" in line:
                verdict.fail(f"{r.args[0]}: a reader or writer raised: {line[-300:]}")
                break
        if r.code not in (0, 1):
            verdict.fail(f"{r.args[0]} exited {r.code}: {r.last()}")
            return False
        return True

    validate = run(["validate", str(source)])
    if not clean(validate):
        return verdict
    found = _VALIDATE.search(validate.last())
    if not found:
        verdict.fail(f"validate printed no summary: {validate.stderr[-500:]}")
        return verdict
    sessions, errors = int(found.group(1)), int(found.group(3))
    _check_validate(verdict, validate, found, expected)

    for fmt in WRITABLE:
        out = folder / f"out-{fmt}{'.json' if number % 2 else '.jsonl'}"
        converted = run(["convert", str(source), "-o", str(out), "--to", fmt])
        if not clean(converted):
            continue
        summary = _CONVERT.search(converted.last())
        if not summary:
            verdict.fail(f"convert --to {fmt} printed no summary: {converted.stderr[-500:]}")
            continue
        written, with_errors = int(summary.group(1)), int(summary.group(3))
        unwritable = converted.stderr.count(f": cannot write as {fmt}: ")
        if written + unwritable != sessions:
            verdict.lost += max(0, sessions - written - unwritable)
            verdict.fail(f"convert --to {fmt} wrote {written} and refused {unwritable} of the {sessions} sessions read")
        if with_errors != errors + unwritable or converted.code != (1 if with_errors else 0):
            verdict.fail(f"convert --to {fmt}: exit {converted.code}, {with_errors} records with errors; "
                         f"validate found {errors}, the writer refused {unwritable}")  # fmt: skip
        _check_written(verdict, out, fmt, written)

    dataset = f"case{number}"
    imported = run(["import", str(source), "--dataset", dataset, "--db", str(db)])
    if clean(imported):
        _check_import(verdict, imported, sessions, errors, expected, db, dataset)
    return verdict


def _check_validate(verdict: Verdict, validate: Run, found: re.Match[str], expected: Expected) -> None:
    sessions, errors = int(found.group(1)), int(found.group(3))
    if validate.code != (1 if errors else 0):
        verdict.fail(f"validate exited {validate.code} with {errors} records with errors")
    if expected.sessions is not None and sessions != expected.sessions:
        verdict.lost += max(0, expected.sessions - sessions)
        verdict.fail(f"validate read {sessions} sessions; each unit on its own gives {expected.sessions}")
    if sessions < expected.at_least:
        verdict.lost += expected.at_least - sessions
        verdict.fail(f"validate read {sessions} sessions; the units known good alone give {expected.at_least}")
    if expected.any_bad is not None and bool(errors) != expected.any_bad:
        verdict.fail(f"validate found {errors} records with errors; units on their own say bad={expected.any_bad}")
    if expected.format is not None and sessions and found.group(2) != expected.format:
        verdict.fail(f"validate read the file as {found.group(2)}, its first readable unit as {expected.format}")


def _check_written(verdict: Verdict, out: Path, fmt: str, written: int) -> None:
    """The file ``convert`` wrote reads back, as ``fmt``, with a session for each written."""
    if not out.exists():
        verdict.fail(f"convert --to {fmt} left no file")
        return
    back, problems = 0, []
    with read_path(out, fmt) as results:
        for result in results:
            back += result.ok
            problems += [f"{result.line}: {p}" for p in result.problems if p.level == "error"]
    if problems:
        verdict.fail(f"what convert --to {fmt} wrote does not read back: {problems[:3]}")
    # Values of one session that a format writes one after another (Gaussia's streamed batches, bare
    # Open Responses items) are one session again only as long as the next session is another.
    regroups = fmt in ("gaussia", "open-responses")
    if back != written and not (regroups and 0 < back < written):
        verdict.lost += max(0, written - back)
        verdict.fail(f"convert --to {fmt} wrote {written} sessions; {back} read back")


def _check_import(
    verdict: Verdict, imported: Run, sessions: int, errors: int, expected: Expected, db: Path, dataset: str
) -> None:
    summary = _IMPORT.search(imported.last())
    if not summary:
        verdict.fail(f"import printed no summary: {imported.stderr[-500:]}")
        return
    new, updated, unchanged, failed = (int(summary.group(i)) for i in range(1, 5))
    again = imported.stderr.count(" appears again (first on line ")
    stored = new + updated + unchanged
    if stored != sessions - again or failed != errors + again:
        verdict.lost += max(0, sessions - again - stored)
        verdict.fail(f"import stored {stored} and failed {failed}; validate read {sessions} with {errors} "
                     f"records with errors, and {again} sessions repeat an id")  # fmt: skip
    if expected.keys is not None and stored != expected.keys:
        verdict.lost += max(0, expected.keys - stored)
        verdict.fail(f"import stored {stored} sessions; the units on their own give {expected.keys} distinct ones")
    if imported.code != (1 if failed else 0):
        verdict.fail(f"import exited {imported.code} with {failed} failed")
    in_db = count_stored(db, dataset)
    if in_db != stored:
        verdict.fail(f"import says {stored} sessions are stored; the database holds {in_db}")


def count_stored(db: Path, dataset: str) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        row = conn.execute(
            "SELECT count(*) FROM sessions s JOIN datasets d ON d.id = s.dataset_id WHERE d.name = ?", [dataset]
        ).fetchone()
    return int(row[0])
