"""Fuzzing the command line with hostile versions of every sample file (see ``harness.py``).

The budget is shared by the tests here: by default a few hundred cases in about a minute (most
through ``evalcore.cli.main`` in this process, a few as real processes and through the
two-process reader); ``EVALCORE_FUZZ_CASES`` / ``EVALCORE_FUZZ_SECONDS`` or ``make fuzz`` for
more, ``EVALCORE_FUZZ_SEED`` for others, ``EVALCORE_FUZZ_MATCH=text`` for only the cases whose
name holds ``text`` (a failing case's name reproduces it). Failing cases' files are kept under
the test's temporary folder, named in the failure.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore.importing import import_file
from evalcore.store import open_store

from .cases import Case, byte_cases, field_cases, load_samples
from .conftest import TALLY, Budget
from .harness import WRITABLE, Oracle, Verdict, check_case, count_stored, run_in_process

SAMPLES = load_samples()
COMMANDS_PER_CASE = 2 + len(WRITABLE)  # validate, convert to each writable format, import


def _run_cases(
    cases: Iterator[Case], share: tuple[int, float], tmp_path: Path, kind: str, *, processes: bool = False
) -> list[Verdict]:
    limit, deadline = share
    match = os.environ.get("EVALCORE_FUZZ_MATCH")
    oracle = Oracle()
    db = tmp_path / "fuzz.db"
    failures: list[Verdict] = []
    run = scanned = 0
    for case in cases:
        scanned += 1
        if run >= limit or scanned > 100 * limit:
            break
        if time.monotonic() > deadline:
            TALLY.stopped_early.append(f"{kind}: stopped by the time limit after {run} of {limit} cases")
            break
        if match and match not in case.name:
            continue
        folder = tmp_path / f"case{run}"
        verdict = check_case(case, oracle, folder, db, run, processes=processes)
        TALLY.cases[kind] += 1
        TALLY.commands["in real processes" if processes else "in-process"] += COMMANDS_PER_CASE
        TALLY.tracebacks += verdict.tracebacks
        TALLY.lost += verdict.lost
        if not processes and run % 4 == 0:
            _reimport_original(verdict, case, db, run)  # the update path: a stored session replaced
        if verdict.problems:
            TALLY.failed[kind] += 1
            keep = tmp_path / "failed" / f"case{run}{case.sample.suffix}"
            keep.parent.mkdir(exist_ok=True)
            keep.write_bytes(case.data)
            verdict.problems.append(f"(the case's file: {keep})")
            failures.append(verdict)
        shutil.rmtree(folder, ignore_errors=True)
        run += 1
    return failures


def _reimport_original(verdict: Verdict, case: Case, db: Path, number: int) -> None:
    """Import the untouched sample over what the case stored: sessions with an id are replaced."""
    from .harness import _IMPORT

    again = run_in_process(["import", str(Path("sample_data") / case.sample.name), "--dataset", f"case{number}",
                            "--db", str(db)])  # fmt: skip
    if again.crash is not None or "Traceback" in again.stderr or again.code not in (0, 1):
        verdict.tracebacks += again.crash is not None or "Traceback" in again.stderr
        verdict.problems.append(f"importing the sample over the case failed (exit {again.code}):\n"
                                f"{again.crash or again.stderr[-2000:]}")  # fmt: skip
    elif not _IMPORT.search(again.last()):
        verdict.problems.append(f"importing the sample over the case printed no summary: {again.stderr[-500:]}")


def _report(failures: list[Verdict]) -> str:
    shown = "\n\n".join(f"{v.case}:\n  " + "\n  ".join(v.problems) for v in failures[:15])
    more = f"\n\n... and {len(failures) - 15} more" if len(failures) > 15 else ""
    return f"{len(failures)} fuzz cases failed:\n\n{shown}{more}"


@pytest.fixture(autouse=True)
def _from_the_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])


def test_every_field_of_every_sample_file_replaced_by_hostile_values(budget: Budget, tmp_path: Path) -> None:
    failures = _run_cases(field_cases(SAMPLES, budget.seed), budget.share(0.6), tmp_path, "field mutations")
    assert not failures, _report(failures)


def test_hostile_bytes_framings_duplicates_and_truncations(budget: Budget, tmp_path: Path) -> None:
    failures = _run_cases(byte_cases(SAMPLES, budget.seed), budget.share(0.35), tmp_path, "whole-file mutations")
    assert not failures, _report(failures)


def test_real_processes_and_the_two_process_reader(budget: Budget, tmp_path: Path) -> None:
    """A few cases as real ``evalcore`` processes; a few imports through the second reader process
    (``workers=2``, what files over 4 MB get), which must store and report exactly what one process does."""
    few = max(3, budget.cases // 150)
    _cases, deadline = budget.share(0.2)
    mixed = _alternate(field_cases(SAMPLES, budget.seed + 7), byte_cases(SAMPLES, budget.seed + 7))
    failures = _run_cases(mixed, (few, deadline), tmp_path / "processes", "real processes", processes=True)
    oracle = Oracle()
    cases = _alternate(field_cases(SAMPLES, budget.seed + 11), byte_cases(SAMPLES, budget.seed + 11))
    for number, case in enumerate(case for case in cases if "NaN" not in case.name):
        if number >= 2 * few:
            break
        verdict = _two_processes(case, oracle, tmp_path / f"two{number}", number)
        TALLY.cases["two-process imports"] += 1
        TALLY.commands["two-process imports"] += 2
        TALLY.tracebacks += verdict.tracebacks
        TALLY.lost += verdict.lost
        if verdict.problems:
            TALLY.failed["two-process imports"] += 1
            failures.append(verdict)
    assert not failures, _report(failures)


def _alternate(*iterators: Iterator[Case]) -> Iterator[Case]:
    while True:
        for iterator in iterators:
            yield next(iterator)


def _two_processes(case: Case, oracle: Oracle, folder: Path, number: int) -> Verdict:
    verdict = Verdict(case.name)
    folder.mkdir(parents=True)
    source = folder / f"case{case.sample.suffix}"
    source.write_bytes(case.data)
    expected = oracle.expect(case)
    reports = {}
    for workers in (1, 2):
        db = folder / f"w{workers}.db"
        try:
            with open_store(db) as store:
                reports[workers] = import_file(store, source, "d", workers=workers)
        except Exception as exc:  # a StoreError is a failure here too: these files are all readable
            verdict.tracebacks += 1
            verdict.fail(f"import with workers={workers} raised {type(exc).__name__}: {exc}")
            return verdict
        if count_stored(db, "d") != reports[workers].stored:
            verdict.fail(f"workers={workers}: the report and the database disagree")
    one, two = reports[1], reports[2]
    if (one.new, one.failed, one.warnings) != (two.new, two.failed, two.warnings):
        verdict.lost += max(0, one.new - two.new)
        verdict.fail(f"one process stored {one.new} and failed {one.failed}; two stored {two.new}, failed {two.failed}")
    if [str(p) for p in one.problems] != [str(p) for p in two.problems]:
        first, second = [str(p) for p in one.problems][:3], [str(p) for p in two.problems][:3]
        verdict.fail(f"the problems differ: {first} vs {second}")
    if expected.keys is not None and two.stored != expected.keys:
        verdict.lost += max(0, expected.keys - two.stored)
        verdict.fail(f"two processes stored {two.stored}; the units on their own give {expected.keys}")
    if two.stored < expected.at_least:
        verdict.lost += expected.at_least - two.stored
        verdict.fail(f"two processes stored {two.stored}; the units before the damage give {expected.at_least}")
    return verdict
