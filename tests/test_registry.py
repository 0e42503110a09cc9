"""One registry (``evalcore.registry``) serves formats, metrics and the solver's message builders: built-ins
imported on first lookup, unknown names listed, a taken name refused (never silently replaced)."""

from __future__ import annotations

import subprocess
import sys
from typing import ClassVar

import pytest

from evalcore.errors import RegistryError, UnknownNameError
from evalcore.formats import Format, get_format, register
from evalcore.metrics import Metric, get_metric, metric_names, register_metric
from evalcore.metrics.base import Level
from evalcore.registry import Registry
from evalcore.solver.task import BUILDERS


def test_a_taken_name_is_refused_in_every_registry() -> None:
    class AnotherRagas(Format):
        name = "ragas"

    with pytest.raises(RegistryError, match="a format named 'ragas' is registered already"):
        register(AnotherRagas)
    assert type(get_format("ragas")).__name__ == "RagasFormat"  # the built-in stays

    class AnotherExactMatch(Metric):
        name = "exact_match"
        description = "another"

    with pytest.raises(RegistryError, match="a metric named 'exact_match' is registered already"):
        register_metric(AnotherExactMatch)
    assert get_metric("exact_match") is not AnotherExactMatch
    with pytest.raises(RegistryError, match="a message builder named 'generate' is registered already"):
        BUILDERS.add("generate", object)  # type: ignore[arg-type]


def test_unknown_names_list_the_known_and_the_same_entry_may_come_again() -> None:
    registry: Registry[int] = Registry("thing")
    registry.add("one", 1)
    registry.add("one", 1)  # the same entry again (a module imported twice): no harm
    assert registry.names() == ["one"] and registry.get("one") == 1
    with pytest.raises(UnknownNameError, match="unknown thing 'two'; known: one"):
        registry.get("two")


def test_built_ins_are_imported_on_first_lookup_not_with_the_package() -> None:
    code = (
        "import sys, evalcore.formats, evalcore.metrics\n"
        "before = [m for m in ('evalcore.formats.ragas', 'evalcore.metrics.tool_calls') if m in sys.modules]\n"
        "evalcore.formats.get_format('ragas'); evalcore.metrics.get_metric('tool_call_f1')\n"
        "after = [m for m in ('evalcore.formats.ragas', 'evalcore.metrics.tool_calls') if m in sys.modules]\n"
        "print(before, after)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] ['evalcore.formats.ragas', 'evalcore.metrics.tool_calls']"


def test_a_lookup_imports_the_built_in_modules_only_until_the_name_is_found() -> None:
    """Scoring with a tool-call metric imports neither the judge's metrics nor the judge's client (asyncio);
    a listing, or a name no module has, imports them all."""
    code = (
        "import sys, evalcore.metrics\n"
        "evalcore.metrics.get_metric('tool_call_f1')\n"
        "print(sorted(m for m in sys.modules if m.startswith('evalcore.metrics.')), 'asyncio' in sys.modules)\n"
        "evalcore.metrics.metric_names()\n"
        "print('evalcore.metrics.judged' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == (
        "['evalcore.metrics.base', 'evalcore.metrics.calls', 'evalcore.metrics.recorded', "
        "'evalcore.metrics.tool_calls'] False"
    )
    assert out[1] == "True"


def test_a_metric_that_reads_calls_must_be_able_to() -> None:
    """``reads_calls`` is for session-level deterministic metrics whose needs calls can tell."""
    with pytest.raises(RegistryError, match="reads_calls: it must be a session-level deterministic metric"):

        @register_metric
        class _PerTurn(Metric):
            name: ClassVar[str] = "per_turn_calls"
            description: ClassVar[str] = "x"
            level: ClassVar[Level] = "turn"
            reads_calls: ClassVar[bool] = True

    with pytest.raises(RegistryError, match="reads_calls"):

        @register_metric
        class _NeedsAnswer(Metric):
            name: ClassVar[str] = "needs_answer_calls"
            description: ClassVar[str] = "x"
            needs: ClassVar[tuple[str, ...]] = ("reference_tool_calls", "answer")
            reads_calls: ClassVar[bool] = True

    assert "per_turn_calls" not in metric_names() and "needs_answer_calls" not in metric_names()
