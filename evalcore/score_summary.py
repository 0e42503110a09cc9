"""What a scoring run tells a CI job: the floors its metrics' means must reach (``score --fail-under``) and its
summary as a JSON document (``score --summary-json``).

A floor is ``METRIC=X``: METRIC is a metric's key as the run names it (``string_similarity:measure=jaro_winkler``)
or, when the run has one metric of that name, its name; X a finite number. A metric is below its floor when its
mean is less than X, or when it has no mean at all: it applied to no session (every one lacked what it needs), or
every session it applied to failed. A metric that applied to nothing never passes a gate.

The summary document (``SUMMARY_SCHEMA``) is one JSON object::

    {"schema": "evalcore.score-summary/1", "dataset": "support", "run": 3, "status": "done", "resumed": false,
     "sessions": 160, "judge_model": null, "judge_requests": 0, "scores_output": "scores.jsonl",
     "metrics": [{"metric": "tool_call_f1", "name": "tool_call_f1", "sessions": 160, "applied": 150,
                  "scored": 148, "failed": 2, "not_applicable": 10, "warnings": 0, "mean": 0.8123,
                  "ci_low": 0.78, "ci_high": 0.84, "floor": 0.8, "below_floor": false}],
     "below_floor": [], "failed_items": 2, "exit_code": 1}

per metric: ``sessions`` the sessions the run covers, ``applied`` those the metric applied to (``scored`` +
``failed``), ``not_applicable`` the others; ``mean`` and its 95% bootstrap interval over the ``scored`` (null when
none); ``floor`` (null without ``--fail-under``) and ``below_floor`` (null without a floor). ``below_floor`` at the
top lists the metrics under their floors; ``exit_code`` is the command's: 1 when a metric is below its floor or an
item failed, else 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import UsageError
from evalcore.metrics.aggregate import Summary

if TYPE_CHECKING:
    from evalcore.scoring import RunReport

__all__ = [
    "SUMMARY_SCHEMA",
    "Breach",
    "Floor",
    "breaches",
    "exit_code",
    "parse_floor",
    "resolve_floors",
    "summary_document",
    "summary_json",
]

SUMMARY_SCHEMA = "evalcore.score-summary/1"


@dataclass(frozen=True)
class Floor:
    """A ``--fail-under METRIC=X`` as given: the metric (key or name) and the lowest mean that passes."""

    metric: str
    floor: float


def parse_floor(text: str) -> Floor:
    """``METRIC=X`` read (split at the last ``=``: a key's own parameters keep theirs); a ``UsageError`` names what
    is wrong with it."""
    metric, sep, value = text.rpartition("=")
    if not sep or not metric.strip():
        raise UsageError(f"--fail-under wants METRIC=X (such as tool_call_f1=0.8), got {text!r}")
    try:
        floor = float(value)
    except ValueError:
        raise UsageError(f"--fail-under {text!r}: the floor {value!r} is not a number") from None
    if not math.isfinite(floor):
        raise UsageError(f"--fail-under {text!r}: the floor must be a finite number")
    return Floor(metric.strip(), floor)


def resolve_floors(floors: Sequence[Floor], keys: Sequence[str]) -> dict[str, float]:
    """Each floor by the key of the run's metric it names (``keys``: the run's, in order): its key, or its name
    when one metric of the run has it. A floor naming no metric of the run, or two, or one metric given two
    floors, is a ``UsageError`` (before anything is scored)."""
    resolved: dict[str, float] = {}
    for given in floors:
        if given.metric in keys:
            key = given.metric
        else:
            named = [k for k in keys if k.split(":", 1)[0] == given.metric]
            if not named:
                raise UsageError(
                    f"--fail-under names {given.metric!r}, which this command does not score "
                    f"(it scores: {', '.join(keys)})"
                )
            if len(named) > 1:
                raise UsageError(
                    f"--fail-under names {given.metric!r}, which is {len(named)} metrics here "
                    f"({', '.join(named)}): give the one meant as it is written there"
                )
            key = named[0]
        if key in resolved and resolved[key] != given.floor:
            raise UsageError(f"--fail-under gives {key} two floors ({resolved[key]:g} and {given.floor:g})")
        resolved[key] = given.floor
    return resolved


@dataclass(frozen=True)
class Breach:
    """A metric below its floor: its mean (``None``: no session was scored) and why."""

    metric: str
    floor: float
    mean: float | None
    applied: int

    def describe(self) -> str:
        """One line naming the metric, its mean and its floor."""
        if self.mean is None:
            why = "applied to no session" if self.applied == 0 else f"every one of the {self.applied} sessions failed"
            return f"{self.metric}: no mean ({why}), below its floor {self.floor:g}"
        return f"{self.metric}: mean {self.mean:.6g} is below its floor {self.floor:g}"


def breaches(summaries: Sequence[Summary], floors: dict[str, float]) -> list[Breach]:
    """The metrics below their floors, in the run's order."""
    below = []
    for summary in summaries:
        floor = floors.get(summary.metric)
        if floor is not None and (summary.mean is None or summary.mean < floor):
            below.append(Breach(summary.metric, floor, summary.mean, summary.count + summary.failed))
    return below


def exit_code(summaries: Sequence[Summary], floors: dict[str, float]) -> int:
    """The command's exit code: 1 when a metric is below its floor or an item failed, else 0."""
    return 1 if breaches(summaries, floors) or any(s.failed for s in summaries) else 0


def summary_document(report: RunReport, floors: dict[str, float]) -> dict[str, Any]:
    """The summary of ``report`` as the JSON document the module describes."""
    below = {b.metric for b in breaches(report.summaries, floors)}
    run = report.run
    metrics = []
    for s in report.summaries:
        floor = floors.get(s.metric)
        metrics.append({
            "metric": s.metric, "name": s.metric.split(":", 1)[0], "sessions": s.count + s.failed + s.not_applicable,
            "applied": s.count + s.failed, "scored": s.count, "failed": s.failed, "not_applicable": s.not_applicable,
            "warnings": s.warnings, "mean": s.mean, "ci_low": s.ci_low, "ci_high": s.ci_high, "floor": floor,
            "below_floor": None if floor is None else s.metric in below,
        })  # fmt: skip
    return {
        "schema": SUMMARY_SCHEMA,
        "dataset": run.dataset,
        "run": run.id,
        "status": run.status,
        "resumed": report.resumed,
        "sessions": report.sessions,
        "judge_model": run.judge_model,
        "judge_requests": report.judge_requests,
        "scores_output": report.output,
        "metrics": metrics,
        "below_floor": [s.metric for s in report.summaries if s.metric in below],
        "failed_items": sum(s.failed for s in report.summaries),
        "exit_code": exit_code(report.summaries, floors),
    }


def summary_json(report: RunReport, floors: dict[str, float]) -> str:
    """``summary_document`` as JSON text (indented, ending with a line break; strict JSON: no NaN)."""
    return json.dumps(summary_document(report, floors), ensure_ascii=False, indent=2, allow_nan=False) + "\n"
