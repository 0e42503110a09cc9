"""What the Dashboard charts, computed from the store: each metric's distribution with its summary,
the comparison by assistant, one run against another on the same sessions, a sessions x metrics
heatmap, and review progress over time.

Every figure comes from SQL aggregates (``GROUP BY value`` and the like), so a dataset of 100,000
sessions costs a few distinct values per metric, not 100,000 Python objects. Intervals are percentile
bootstrap intervals of the mean (``summarize_counts``).
"""

from __future__ import annotations

import heapq
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from evalcore.agreement import Agreement
from evalcore.errors import EvalcoreError, UsageError
from evalcore.metrics import create_metric
from evalcore.metrics.aggregate import Summary, summarize_counts
from evalcore.schema import STATUSES
from evalcore.store.runs import Run
from evalcore.store.store import Store
from evalcore.views.review.tables import session_label
from evalcore.views.table import spread
from evalcore.views.text import visible

__all__ = [
    "Bin",
    "Comparison",
    "DisagreementRow",
    "Distribution",
    "Group",
    "Heatmap",
    "Pair",
    "ReviewProgress",
    "WorseRow",
    "by_assistant",
    "agreement_note",
    "compare_runs",
    "disagreement_rows",
    "distribution",
    "earlier_runs",
    "heatmap",
    "metric_scale",
    "pair_sessions",
    "review_progress",
    "scored_runs",
    "verdicts_version",
    "worse_rows",
]


@dataclass(frozen=True)
class Bin:
    """One bar of a histogram: values in ``[low, high)`` (the last bar includes ``high``), how many
    sessions have one, and the smallest and largest value actually in it (what a drill-down filters on)."""

    low: float
    high: float
    count: int
    min_value: float | None
    max_value: float | None

    @property
    def label(self) -> str:
        """``0.25–0.30``, or ``3`` for a bar of one whole value."""
        if self.high - self.low == 1 and float(self.low + 0.5).is_integer():
            return _number(self.low + 0.5)
        return f"{_number(self.low)}–{_number(self.high)}"


@dataclass(frozen=True)
class Distribution:
    """A metric's session scores in one run: the summary and the histogram."""

    run_id: int
    metric: str
    summary: Summary
    bins: list[Bin]
    scale: tuple[float, float]


@dataclass(frozen=True)
class Group:
    """A metric's summary over the sessions of one assistant (``None``: sessions without one)."""

    assistant: str | None
    summary: Summary

    @property
    def label(self) -> str:
        return self.assistant if self.assistant is not None else "(no assistant id)"


@dataclass(frozen=True)
class Pair:
    """A metric's value for one session (``pk``, exported id ``ref``) in two runs."""

    pk: int
    ref: str
    a: float
    b: float

    @property
    def difference(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class Comparison:
    """Run ``run_b`` against run ``run_a`` on one metric, over the sessions both scored.

    ``points`` are the distinct (a, b) value pairs (rounded to 0.01) with how many sessions share
    each: a scatter that stays small at any size. ``differences`` summarises b - a; ``worse`` lists
    the sessions whose score dropped the most, first.
    """

    metric: str
    run_a: int
    run_b: int
    paired: int
    points: list[tuple[float, float, int]]
    differences: Summary
    worse: list[Pair]
    n_worse: int
    n_better: int
    n_same: int
    spread: list[tuple[float, int]] = field(default_factory=list)  # (difference, sessions), at most 41 bars


@dataclass(frozen=True)
class Heatmap:
    """A page of sessions x a run's metrics: raw values, and values placed on 0..1 by each metric's scale
    (colours compare across metrics), in the order of one metric, lowest first. A metric with an open scale (a
    count: turns, tool calls, tokens, seconds) is ``neutral``: more is not better, so it is not coloured on the
    red-to-green scale of quality. Each row names its session's assistant."""

    run_id: int
    metrics: list[str]
    sessions: list[tuple[int, str]]  # (pk, ref)
    values: list[list[float | None]]
    scaled: list[list[float | None]]
    total: int  # sessions the run scored on the metric that orders them
    neutral: list[bool] = field(default_factory=list)  # per metric: an open scale (a count), not a quality
    assistants: list[str | None] = field(default_factory=list)  # per row

    @property
    def row_labels(self) -> list[str]:
        """Each row's session as shown (``session_label``) with its assistant: ``s-07 · bot-a`` (plain text)."""
        labels = []
        for (_, ref), assistant in zip(self.sessions, self.assistants or [None] * len(self.sessions), strict=True):
            label = session_label(ref)
            if assistant and not label.endswith(" · " + visible(assistant)):
                label += " · " + visible(assistant)
            labels.append(label)
        return labels

    def cells(self, neutral: bool) -> list[list[float | None]]:
        """The scaled values of the neutral metrics (``neutral``) or of the others, ``None`` in the other
        columns: what each colour scale draws."""
        keep = [n == neutral for n in self.neutral] if self.neutral else [not neutral] * len(self.metrics)
        return [[v if k else None for v, k in zip(row, keep, strict=True)] for row in self.scaled]


@dataclass(frozen=True)
class ReviewProgress:
    """Status changes made by reviewers: per day and per reviewer, by the status set."""

    days: list[str]
    by_day: dict[str, list[int]]  # status -> count per day
    reviewers: list[str]
    by_reviewer: dict[str, list[int]]  # status -> count per reviewer
    current: dict[str, int] = field(default_factory=dict)  # how many sessions are in each status now

    @property
    def sentence(self) -> str:
        """``16 todo · 9 approved · 2 rejected``: the statuses now, those with sessions."""
        return " · ".join(f"{n:,} {status.replace('_', ' ')}" for status, n in self.current.items() if n)


def _number(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def scored_runs(store: Store, dataset: str) -> list[Run]:
    """The dataset's runs that have scores to show (finished or not): its imported run first (the outcomes that
    came with the data, what the Dashboard shows first when there are any), then the others newest first."""
    runs = [r for r in store.runs.recent(dataset) if r.metrics]
    return sorted(runs, key=lambda r: not r.imported)  # (a stable sort: the others keep their order)


def earlier_runs(runs: list[Run], run: Run, metric: str) -> list[Run]:
    """Of ``runs``, those made before ``run`` that scored ``metric``: what it can be compared with, newest first."""
    return sorted((r for r in runs if r.id < run.id and metric in r.metrics), key=lambda r: -r.id)


def metric_scale(metric: str) -> tuple[float, float]:
    """A metric's range of values, from its class (``(0, 1)`` for a metric no longer known)."""
    try:
        low, high = create_metric(metric).scale
    except EvalcoreError:
        return (0.0, 1.0)
    return (float(low), float(high))


def _check(store: Store, run_id: int, metric: str) -> Run:
    run = store.runs.get(run_id)
    if metric not in run.metrics:
        raise UsageError(f"run #{run_id} did not score {metric!r}; it scored {', '.join(run.metrics)}")
    return run


def _summary(metric: str, rows: list[tuple[int, str, float | None]]) -> Summary:
    values: dict[float, int] = defaultdict(int)
    failed = not_applicable = 0
    for _, status, value in rows:
        if status == "ok" and value is not None:
            values[value] += 1
        elif status == "error":
            failed += 1
        elif status == "not_applicable":
            not_applicable += 1
    return summarize_counts(metric, list(values.items()), failed=failed, not_applicable=not_applicable)


def distribution(store: Store, run_id: int, metric: str, *, bins: int = 20) -> Distribution:
    """``metric``'s session scores in run ``run_id``: summary (mean, interval, failed, not applicable)
    and histogram over the metric's scale (one bar per whole value for a scale like 1–5)."""
    _check(store, run_id, metric)
    counts = store.runs.value_counts(run_id, metric)
    status = store.runs.status_counts(run_id, metric)
    summary = summarize_counts(
        metric, counts, failed=status.get("error", 0), not_applicable=status.get("not_applicable", 0)
    )
    scale = metric_scale(metric)
    return Distribution(run_id, metric, summary, _histogram(counts, scale, bins), scale)


def _histogram(counts: list[tuple[float, int]], scale: tuple[float, float], bins: int) -> list[Bin]:
    finite = [(v, c) for v, c in counts if math.isfinite(v)]
    low, high = scale
    if finite:  # an open scale (counts) ends where the data does
        low = min(low, min(v for v, _ in finite)) if math.isfinite(low) else min(v for v, _ in finite)
        high = max(high, max(v for v, _ in finite)) if math.isfinite(high) else max(v for v, _ in finite)
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = 0.0, 1.0
    whole = all(float(v).is_integer() for v, _ in finite) and float(low).is_integer() and high - low <= 30
    if whole and float(high).is_integer():
        edges = [low - 0.5 + i for i in range(int(high - low) + 2)]
    else:
        width = (high - low) / bins if high > low else 1.0
        edges = [low + i * width for i in range(bins + 1)]
    n = len(edges) - 1
    tally = [0] * n
    smallest: list[float | None] = [None] * n
    largest: list[float | None] = [None] * n
    for value, count in finite:
        i = n - 1
        for j in range(n):
            if value < edges[j + 1]:
                i = j
                break
        tally[i] += count
        smallest[i] = value if smallest[i] is None else min(value, smallest[i] or value)
        largest[i] = value if largest[i] is None else max(value, largest[i] or value)
    return [Bin(edges[i], edges[i + 1], tally[i], smallest[i], largest[i]) for i in range(n)]


def by_assistant(store: Store, run_id: int, metric: str) -> list[Group]:
    """``metric`` in run ``run_id`` per assistant, each with its interval; the largest group first."""
    run = _check(store, run_id, metric)
    assistant_of = store.sessions.assistants(run.dataset)
    rows: dict[str | None, list[tuple[int, str, float | None]]] = defaultdict(list)
    for row in store.runs.session_values(run_id, metric):
        rows[assistant_of.get(row[0])].append(row)
    groups = [Group(name, _summary(metric, part)) for name, part in rows.items()]
    return sorted(groups, key=lambda g: (-g.summary.count, g.label))


def compare_runs(store: Store, run_a: int, run_b: int, metric: str, *, worst: int = 20) -> Comparison:
    """Run ``run_b`` against ``run_a`` on ``metric``, paired on the sessions both scored (see ``Comparison``)."""
    _check(store, run_a, metric)
    _check(store, run_b, metric)
    first = {
        pk: value
        for pk, status, value in store.runs.session_values(run_a, metric)
        if status == "ok" and value is not None
    }
    pairs = [
        (pk, first[pk], value)
        for pk, status, value in store.runs.session_values(run_b, metric)
        if status == "ok" and value is not None and pk in first
    ]
    points: dict[tuple[float, float], int] = defaultdict(int)
    diffs: dict[float, int] = defaultdict(int)
    for _, a, b in pairs:
        points[(round(a, 2), round(b, 2))] += 1
        diffs[round(b - a, 4)] += 1
    dropped = heapq.nsmallest(worst, (p for p in pairs if p[2] < p[1]), key=lambda p: (p[2] - p[1], p[0]))
    refs = store.sessions.links([pk for pk, _, _ in dropped])
    n_worse = sum(c for d, c in diffs.items() if d < 0)
    n_better = sum(c for d, c in diffs.items() if d > 0)
    return Comparison(
        metric=metric,
        run_a=run_a,
        run_b=run_b,
        paired=len(pairs),
        points=[(a, b, n) for (a, b), n in sorted(points.items())],
        differences=summarize_counts(f"{metric} (#{run_b} - #{run_a})", list(diffs.items())),
        worse=[Pair(pk, refs[pk], a, b) for pk, a, b in dropped],
        n_worse=n_worse,
        n_better=n_better,
        n_same=len(pairs) - n_worse - n_better,
        spread=_spread(list(diffs.items())),
    )


@dataclass(frozen=True)
class WorseRow:
    """A session that got worse from one run to the other: its two values (headed by the runs) and the change."""

    session: str
    runs: dict[str, float] = spread()
    change: float = 0.0


def worse_rows(c: Comparison) -> list[WorseRow]:
    """The sessions that got worse as table rows: session, the two values, the change."""
    return [
        WorseRow(session_label(p.ref), {f"run #{c.run_a}": p.a, f"run #{c.run_b}": p.b}, p.difference) for p in c.worse
    ]


@dataclass(frozen=True)
class DisagreementRow:
    """A session where a judge and the reviewers disagree."""

    session: str
    judge: float
    judge_says: str
    reviewers_say: str
    reviewers: int


def disagreement_rows(a: Agreement) -> list[DisagreementRow]:
    """The sessions where a judge and the reviewers disagree, largest gap first, as table rows."""
    binary = a.kind == "binary"
    return [
        DisagreementRow(
            session_label(p.session_ref),
            p.judge_value,
            ("pass" if p.judge else "fail") if binary else str(p.judge),
            ("pass" if p.human else "fail") if binary else str(p.human),
            p.reviewers,
        )  # fmt: skip
        for p in a.disagreements
    ]


def agreement_note(a: Agreement) -> str:
    """How a binary judge was read, and which sessions were left out and why, in a sentence."""
    left_out = {
        "judge failed": a.n_judge_failed,
        "not applicable": a.n_judge_not_applicable,
        "not scored by the judge": a.n_not_scored,
        "reviewers tied": a.n_reviewer_ties,
        "several rubric verdicts": a.n_ambiguous,
    }
    said = [f"{count:,} {why}" for why, count in left_out.items() if count]
    threshold = f"The judge passes at {a.threshold:g} or more; l" if a.threshold is not None else "L"
    several = f" {a.n_multi_reviewer:,} sessions had several reviewers." if a.n_multi_reviewer else ""
    return f"{threshold}eft out: {', '.join(said) if said else 'none'}.{several}"


def verdicts_version(store: Store, dataset: str) -> tuple[Any, ...]:
    """What changes when verdicts or runs of ``dataset`` change: a cache key for agreement figures."""
    return store.labels.mark(dataset)


def _spread(diffs: list[tuple[float, int]], bars: int = 41) -> list[tuple[float, int]]:
    """The differences as bars: each distinct one, or (when there are many) grouped around ``bars`` centres
    with zero kept a bar of its own."""
    if len(diffs) <= bars:
        return sorted((float(d), int(n)) for d, n in diffs)
    reach = max(abs(d) for d, _ in diffs)
    step = reach / (bars // 2)
    grouped: dict[float, int] = defaultdict(int)
    for d, n in diffs:
        grouped[round(round(d / step) * step, 6)] += n
    return sorted(grouped.items())


def pair_sessions(
    store: Store, run_a: int, run_b: int, metric: str, a: float, b: float, *, limit: int = 50
) -> list[Pair]:
    """The sessions behind one point of a comparison (values rounded to 0.01, as the points are)."""
    rows = store.runs.paired(run_a, run_b, metric, a, b, limit=limit)
    refs = store.sessions.links([pk for pk, _, _ in rows])
    return [Pair(pk, refs[pk], va, vb) for pk, va, vb in rows]


def heatmap(store: Store, run_id: int, metric: str, *, limit: int = 40, offset: int = 0) -> Heatmap:
    """A page of the run's sessions x its metrics, in the order of ``metric`` (lowest first; sessions it
    failed or did not apply to last). Read from the scores index: a page costs its rows, not the run's."""
    run = _check(store, run_id, metric)
    shown, total = store.runs.in_order(run_id, metric, limit=limit, offset=offset)
    cells = store.runs.values_of(run_id, shown)
    scales = {m: _observed_scale(store, run_id, m) for m in run.metrics}
    values = [[cells.get((pk, m)) for m in run.metrics] for pk in shown]
    scaled = [
        [None if v is None else _placed(v, scales[m]) for v, m in zip(row, run.metrics, strict=True)] for row in values
    ]
    refs = store.sessions.links(shown)
    assistants = store.sessions.assistants_of(shown)
    neutral = [not math.isfinite(metric_scale(m)[1]) for m in run.metrics]
    return Heatmap(
        run_id, list(run.metrics), [(pk, refs[pk]) for pk in shown], values, scaled, int(total), neutral,
        [assistants.get(pk) for pk in shown],
    )  # fmt: skip


def _observed_scale(store: Store, run_id: int, metric: str) -> tuple[float, float]:
    """The metric's scale; an open end (counts) closed where the run's values end."""
    low, high = metric_scale(metric)
    if math.isfinite(low) and math.isfinite(high):
        return (low, high)
    seen = store.runs.value_range(run_id, metric)
    lo = low if math.isfinite(low) else (seen[0] if seen[0] is not None else 0.0)
    hi = high if math.isfinite(high) else (seen[1] if seen[1] is not None else 1.0)
    return (float(lo), float(hi) if hi > lo else float(lo) + 1.0)


def _placed(value: float, scale: tuple[float, float]) -> float:
    low, high = scale
    if high <= low:
        return 0.0
    return min(1.0, max(0.0, (value - low) / (high - low)))


def review_progress(store: Store, dataset: str) -> ReviewProgress:
    """Reviewers' status changes on ``dataset`` by day and by reviewer, and the statuses now."""
    rows = store.sessions.status_changes(dataset)
    days = sorted({r[0] for r in rows})
    reviewers = sorted({r[1] for r in rows})
    by_day = {s: [0] * len(days) for s in STATUSES}
    by_reviewer = {s: [0] * len(reviewers) for s in STATUSES}
    day_at = {d: i for i, d in enumerate(days)}
    who_at = {r: i for i, r in enumerate(reviewers)}
    for day, author, new, count in rows:
        status = _json_text(new)
        if status not in by_day:
            continue
        by_day[status][day_at[day]] += count
        by_reviewer[status][who_at[author]] += count
    current = store.sessions.facets(dataset).statuses
    return ReviewProgress(days, by_day, reviewers, by_reviewer, {s: int(current.get(s, 0)) for s in STATUSES})


def _json_text(raw: str | None) -> str | None:
    """An edit's stored value (JSON) as the status it names."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, str) else None
