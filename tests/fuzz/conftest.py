"""The fuzz suite's budget and its tally, printed in the test summary.

The budget is small by default (``make test``); ``EVALCORE_FUZZ_CASES`` (cases, in all) and
``EVALCORE_FUZZ_SECONDS`` (a time limit, in all) raise it, and ``make fuzz`` runs a large one.
``EVALCORE_FUZZ_SEED`` picks other cases (the default is fixed: every run tries the same ones).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest


@dataclass
class Budget:
    cases: int
    seconds: float
    seed: int
    started: float = field(default_factory=time.monotonic)

    def share(self, part: float) -> tuple[int, float]:
        """Cases and a deadline for a test that takes ``part`` of the whole budget."""
        return max(1, int(self.cases * part)), time.monotonic() + self.seconds * part


@dataclass
class Tally:
    """What the fuzz tests ran and found, for the summary."""

    cases: Counter[str] = field(default_factory=Counter)
    commands: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    tracebacks: int = 0
    lost: int = 0
    stopped_early: list[str] = field(default_factory=list)


TALLY = Tally()


@pytest.fixture(scope="session")
def budget() -> Budget:
    return Budget(
        cases=int(os.environ.get("EVALCORE_FUZZ_CASES", "500")),
        seconds=float(os.environ.get("EVALCORE_FUZZ_SECONDS", "120")),
        seed=int(os.environ.get("EVALCORE_FUZZ_SEED", "20240612")),
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TALLY.cases:
        return
    write = terminalreporter.write_line
    terminalreporter.section("fuzz")
    total = sum(TALLY.cases.values())
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(TALLY.cases.items()))
    write(f"fuzz: {total} cases run ({kinds}); {sum(TALLY.commands.values())} commands "
          f"({', '.join(f'{n} {c}' for c, n in sorted(TALLY.commands.items()))})")  # fmt: skip
    failed = sum(TALLY.failed.values())
    write(f"fuzz: {failed} cases failed, {TALLY.tracebacks} tracebacks, {TALLY.lost} good records lost")
    for note in TALLY.stopped_early:
        write(f"fuzz: {note}")
