"""Cost, tokens and latency per assistant, and a metric's trend per assistant over runs.

What the data records of each session (``token_usage`` and ``latency``, scored by those metrics here, so a session
counts exactly when the metric applies to it), and what judge runs spent on each assistant's sessions (the judge's
tokens and cost stored with each score). A trend is a metric's mean per assistant in each run that scored it, the
runs in the order they were made.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from evalcore.metrics import create_metric
from evalcore.metrics.aggregate import summarize_counts
from evalcore.store.store import Store
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = ["Trend", "UsageRow", "trend", "usage_by_assistant"]

NO_ASSISTANT = "(no assistant id)"


@dataclass(frozen=True)
class UsageRow:
    """One assistant's sessions with what they cost: tokens and seconds recorded in the data (means over the
    sessions that record them), and the judges' tokens and cost spent scoring them."""

    assistant: str
    sessions: int
    with_tokens: int = column("with tokens")
    tokens_mean: float | None = column("tokens / session")
    tokens_total: int = column("tokens in all")
    with_latency: int = column("with latency")
    seconds_mean: float | None = column("seconds / session")
    seconds_median: float | None = column("median seconds")
    judge_tokens: int = column("judge tokens")
    judge_cost: float | None = column("judge cost ($)")


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def usage_by_assistant(store: Store, dataset: str) -> list[UsageRow]:
    """Each assistant's tokens, seconds and judge spend on ``dataset`` (the most sessions first)."""
    tokens_metric, latency_metric = create_metric("token_usage"), create_metric("latency")
    sessions: dict[str, int] = defaultdict(int)
    tokens: dict[str, list[float]] = defaultdict(list)
    seconds: dict[str, list[float]] = defaultdict(list)
    for _, session in store.runs.sessions(store.sessions.pks(dataset)):
        who = session.assistant_id or NO_ASSISTANT
        sessions[who] += 1
        used = tokens_metric.score_session(session)
        if used.status == "ok" and used.value is not None:
            tokens[who].append(used.value)
        took = latency_metric.score_session(session)
        if took.status == "ok" and took.value is not None:
            seconds[who].append(took.value)
    judge_tokens: dict[str, int] = defaultdict(int)
    judge_cost: dict[str, float] = defaultdict(float)
    costed: set[str] = set()
    runs = [r.id for r in store.runs.recent(dataset) if not r.imported]
    for run_id in store.runs.judge_spend(runs):
        for row in store.runs.scores(run_id):
            who = row.assistant_id or NO_ASSISTANT
            judge_tokens[who] += (row.input_tokens or 0) + (row.output_tokens or 0)
            if row.cost is not None:
                judge_cost[who] += row.cost
                costed.add(who)
    rows = [
        UsageRow(
            visible(who),
            n,
            len(tokens[who]),
            math.fsum(tokens[who]) / len(tokens[who]) if tokens[who] else None,
            int(math.fsum(tokens[who])),
            len(seconds[who]),
            math.fsum(seconds[who]) / len(seconds[who]) if seconds[who] else None,
            _median(seconds[who]),
            judge_tokens[who],
            judge_cost[who] if who in costed else None,
        )  # fmt: skip
        for who, n in sessions.items()
    ]
    return sorted(rows, key=lambda r: (-r.sessions, r.assistant))


@dataclass(frozen=True)
class Trend:
    """A metric per assistant over runs in time order: ``means[assistant][i]`` is its mean in ``runs[i]`` (``None``:
    no score of that assistant in that run), ``counts`` how many sessions each mean is of."""

    metric: str
    runs: list[str]  # ``#3 · 2026-11-23 12:04``, oldest first
    run_ids: list[int]
    means: dict[str, list[float | None]] = field(default_factory=dict)
    counts: dict[str, list[int]] = field(default_factory=dict)
    low: dict[str, list[float | None]] = field(default_factory=dict)
    high: dict[str, list[float | None]] = field(default_factory=dict)


def trend(store: Store, dataset: str, metric: str) -> Trend:
    """``metric``'s mean per assistant in every run of ``dataset`` that scored it, oldest run first (by when it
    started), each mean with its bootstrap interval."""
    runs = sorted(
        (r for r in store.runs.recent(dataset) if metric in r.metrics and r.status != "running"),
        key=lambda r: (r.started_at, r.id),
    )
    owners = store.sessions.assistants(dataset)
    found = Trend(metric, [f"#{r.id} · {r.started_at[:16].replace('T', ' ')}" for r in runs], [r.id for r in runs])
    per_run: list[dict[str, dict[float, int]]] = []
    for r in runs:
        values: dict[str, dict[float, int]] = defaultdict(lambda: defaultdict(int))
        for pk, status, value in store.runs.session_values(r.id, metric):
            if status == "ok" and value is not None and math.isfinite(value):
                values[visible(owners.get(pk) or NO_ASSISTANT)][value] += 1
        per_run.append(values)
    for who in sorted({w for values in per_run for w in values}):
        for key in ("means", "counts", "low", "high"):
            getattr(found, key)[who] = []
        for values in per_run:
            counts = values.get(who)
            s = summarize_counts(metric, list(counts.items())) if counts else None
            found.means[who].append(None if s is None else s.mean)
            found.counts[who].append(0 if s is None else s.count)
            found.low[who].append(None if s is None else s.ci_low)
            found.high[who].append(None if s is None else s.ci_high)
    return found
