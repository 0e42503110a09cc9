"""Where tools fail: the assistant's tool calls against the reference calls, per tool name.

In each session with reference calls (those the tool-call metrics score), every reference call is matched to a
call the assistant made of the same name: first to one with the same arguments (values compared as ragas compares
them: equal, or equal as ``str()``), then — in order — to any other of that name, a *wrong arguments* match that
names each argument that differs (missing, other value, or not expected). A reference call left over is
*missing*; a made call left over is *extra*. Of the matched calls, those that are not in the longest run kept in
the reference's order are *out of order* (so a swap of two calls counts one). Every figure keeps the sessions
behind it, so a cell of the table opens them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcore.metrics.calls import CallLike, SessionCalls
from evalcore.store.jsontext import loads
from evalcore.store.store import Store
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = ["COLUMNS", "ToolFigures", "ToolFailures", "ToolRow", "dataset_tool_failures", "tool_failures", "tool_rows"]

#: The figures of a tool, in the table's order (each a column and a series of the chart).
COLUMNS = ("expected", "made", "missing", "extra", "wrong_arguments", "out_of_order")


@dataclass
class ToolFigures:
    """One tool's figures and, per figure, the sessions behind it (``pk``s in the order met)."""

    tool: str
    counts: Counter[str] = field(default_factory=Counter)
    sessions: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    arguments: Counter[str] = field(default_factory=Counter)  # which argument was wrong, how many times

    def add(self, figure: str, pk: int, n: int = 1) -> None:
        if n:
            self.counts[figure] += n
            if pk not in self.sessions[figure]:
                self.sessions[figure].append(pk)


@dataclass(frozen=True)
class ToolFailures:
    """Every tool's figures (the most failed first: missing + extra + wrong arguments + out of order), over
    ``sessions`` sessions with reference calls (``skipped``: without, not counted)."""

    tools: list[ToolFigures]
    sessions: int
    skipped: int

    @property
    def failed(self) -> int:
        """How many calls failed in all (missing, extra, wrong arguments, out of order): 0 when every call matched."""
        return sum(
            t.counts[kind] for t in self.tools for kind in ("missing", "extra", "wrong_arguments", "out_of_order")
        )


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) or str(a) == str(b)


def _wrong_arguments(expected: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """The arguments that differ: expected ones missing or with another value, then those not expected."""
    wrong = [k for k, v in expected.items() if k not in given or not _same(given[k], v)]
    return wrong + [k for k in given if k not in expected]


def _longest_in_order(positions: list[int]) -> set[int]:
    """The indexes (into ``positions``) of a longest increasing run of positions (the calls kept in order)."""
    if not positions:
        return set()
    best = [1] * len(positions)
    before = [-1] * len(positions)
    for i, p in enumerate(positions):
        for j in range(i):
            if positions[j] < p and best[j] + 1 > best[i]:
                best[i], before[i] = best[j] + 1, j
    i = max(range(len(positions)), key=lambda k: (best[k], -k))
    kept = set()
    while i != -1:
        kept.add(i)
        i = before[i]
    return kept


def _session(pk: int, made: Sequence[CallLike], reference: Sequence[CallLike], tools: dict[str, ToolFigures]) -> None:
    def figures(name: str) -> ToolFigures:
        return tools.setdefault(name, ToolFigures(name))

    for call in reference:
        figures(call.name).add("expected", pk)
    for call in made:
        figures(call.name).add("made", pk)
    used = [False] * len(made)
    matched: dict[int, int] = {}  # reference index -> made index
    for i, ref in enumerate(reference):  # the same name and arguments
        for j, call in enumerate(made):
            if not used[j] and call.name == ref.name and _wrong_arguments(ref.args, call.args) == []:
                used[j], matched[i] = True, j
                break
    for i, ref in enumerate(reference):  # then the same name, other arguments
        if i in matched:
            continue
        for j, call in enumerate(made):
            if not used[j] and call.name == ref.name:
                used[j], matched[i] = True, j
                wrong = _wrong_arguments(ref.args, call.args)
                figures(ref.name).add("wrong_arguments", pk)
                figures(ref.name).arguments.update(wrong)
                break
        else:
            figures(ref.name).add("missing", pk)
    for j, call in enumerate(made):
        if not used[j]:
            figures(call.name).add("extra", pk)
    order = sorted(matched)
    kept = _longest_in_order([matched[i] for i in order])
    for n, i in enumerate(order):
        if n not in kept:
            figures(reference[i].name).add("out_of_order", pk)


def tool_failures(sessions: Iterable[tuple[int, SessionCalls]]) -> ToolFailures:
    """The figures of every tool over ``sessions`` (``(pk, calls)``); sessions without reference calls skipped."""
    tools: dict[str, ToolFigures] = {}
    counted = skipped = 0
    for pk, calls in sessions:
        if calls.reference is None:
            skipped += 1
            continue
        counted += 1
        _session(pk, calls.made, calls.reference, tools)

    def failed(t: ToolFigures) -> int:
        return sum(t.counts[c] for c in ("missing", "extra", "wrong_arguments", "out_of_order"))

    ordered = sorted(tools.values(), key=lambda t: (-failed(t), -t.counts["expected"], t.tool))
    return ToolFailures(ordered, counted, skipped)


def dataset_tool_failures(store: Store, dataset: str, *, assistant: str | None = None) -> ToolFailures:
    """``tool_failures`` over the dataset's sessions (only ``assistant``'s when given), read as the tool-call
    metrics read them (the calls straight from the stored JSON; reviewers' edits laid over)."""
    owners = store.sessions.assistants(dataset)
    pks = [pk for pk in store.sessions.pks(dataset) if assistant is None or owners.get(pk) == assistant]
    found = store.runs.read_unedited(
        pks, lambda data: SessionCalls.from_json(loads(data)), lambda stored: SessionCalls.of(stored.session)
    )
    return tool_failures(found)


@dataclass(frozen=True)
class ToolRow:
    """A tool's figures as a table row."""

    tool: str
    expected: int
    made: int
    missing: int
    extra: int
    wrong_arguments: int = column("wrong arguments")
    out_of_order: int = column("out of order")
    which_arguments: str = column("which arguments")


def tool_rows(found: ToolFailures) -> list[ToolRow]:
    """The tools as table rows; the wrong arguments named with how many times (``amount ×2, id``)."""
    rows = []
    for t in found.tools:
        which = ", ".join(
            visible(name) + (f" ×{n}" if n > 1 else "") for name, n in sorted(t.arguments.items(), key=lambda x: -x[1])
        )
        c = t.counts
        rows.append(
            ToolRow(
                visible(t.tool),
                c["expected"],
                c["made"],
                c["missing"],
                c["extra"],
                c["wrong_arguments"],
                c["out_of_order"],
                which,
            )  # fmt: skip
        )
    return rows
