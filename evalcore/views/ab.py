"""A/B by task: two assistants (or two runs over different sessions) matched by the task each session answers.

A side is a run's scores, optionally only the sessions of one assistant. Each session's task is the task id its
file kept (``metadata.<format>.task_id``, as τ-bench keeps it), else its first user message (whitespace folded).
Several sessions of one task on a side (τ-bench's trials) count as their mean. Per metric the two sides' task
means are paired: how many tasks are higher in B (improved), lower (regressed) or equal, and the paired mean
difference B − A with its percentile bootstrap interval (``summarize_counts``, as every interval of the Dashboard).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from evalcore.errors import UsageError
from evalcore.metrics.aggregate import Summary, summarize_counts
from evalcore.schema import Session
from evalcore.store.runs import Run
from evalcore.store.store import Store
from evalcore.views.dashboard import metric_scale
from evalcore.views.review.tables import session_label
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = [
    "ABMetric",
    "ABPair",
    "ABRow",
    "PairRow",
    "Side",
    "ab_metrics",
    "ab_pairs",
    "ab_rows",
    "pair_rows",
    "side_caption",
    "task_of",
]

#: Differences this small are no change (floating-point noise of means over trials).
_SAME = 1e-9


@dataclass(frozen=True)
class Side:
    """One side of an A/B comparison: run ``run_id``'s scores, of ``assistant``'s sessions only when given."""

    run_id: int
    assistant: str | None = None

    @property
    def label(self) -> str:
        """``run #3 · gpt-4o`` (plain text)."""
        return f"run #{self.run_id}" + (f" · {visible(self.assistant)}" if self.assistant is not None else "")


@dataclass(frozen=True)
class ABStart:
    """Where the A/B section's choices start: indexes into the runs and into the assistants' choices (0 is every
    assistant, 1 the first assistant...)."""

    a_run: int
    a_who: int
    b_run: int
    b_who: int


def ab_start(runs: Sequence[Run], assistants: int) -> ABStart:
    """Two assistants on the first run; with one assistant, the two newest runs that scored a metric in common (the
    older as A: improved means higher in the newer); else one side twice (``same_side`` says there is nothing to
    compare)."""
    if assistants > 1:
        return ABStart(0, 1, 0, 2)
    newest_first = sorted(range(len(runs)), key=lambda i: -runs[i].id)
    for n, newer in enumerate(newest_first):
        for older in newest_first[n + 1 :]:
            if set(runs[newer].metrics) & set(runs[older].metrics):
                return ABStart(older, 0, newer, 0)
    return ABStart(0, 0, 0, 0)


def same_side(a: Side, b: Side, assistants: dict[str, int], total: int) -> bool:
    """Whether sides ``a`` and ``b`` are the same run's scores of the same sessions: every assistant is the one
    there is when one assistant answered every session (``assistants``: each one's sessions; ``total``: the
    dataset's)."""
    alone = next(iter(assistants)) if len(assistants) == 1 and sum(assistants.values()) == total else None

    def whose(side: Side) -> str | None:
        return alone if side.assistant is None else side.assistant

    return a.run_id == b.run_id and whose(a) == whose(b)


@dataclass(frozen=True)
class ABPair:
    """One task answered on both sides: its mean value on each side and the first session of each (to open)."""

    task: str
    a: float
    b: float
    a_pk: int
    b_pk: int
    a_ref: str
    b_ref: str
    a_sessions: int = 1
    b_sessions: int = 1

    @property
    def difference(self) -> float:
        return self.b - self.a


@dataclass(frozen=True)
class ABMetric:
    """One metric compared task by task: counts of tasks improved (higher in B), regressed and unchanged, the
    paired difference B − A with its interval, and the tasks only one side answered. ``neutral``: an open scale (a
    count: tokens, seconds, turns), where higher is not better — improved then only means higher."""

    metric: str
    pairs: int
    improved: int
    regressed: int
    unchanged: int
    mean_a: float | None
    mean_b: float | None
    difference: Summary
    only_a: int
    only_b: int
    neutral: bool = False


def task_of(session: Session) -> str | None:
    """The task a session answers: ``task <id>`` from a ``task_id`` its file kept (in its metadata, or one level
    down: ``metadata.tau_bench.task_id``), else its first user message with whitespace folded; ``None`` without
    either."""
    found = _task_id(session.metadata)
    if found is not None:
        return f"task {found}"
    for message in session.messages:
        if message.role == "user":
            text = " ".join(message.text.split())
            if text:
                return text
    return None


def _task_id(metadata: dict[str, object]) -> str | None:
    for holder in [metadata, *(v for v in metadata.values() if isinstance(v, dict))]:
        value = holder.get("task_id")
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def _side(store: Store, side: Side, metric: str, known: dict[int, str | None]) -> dict[str, list[tuple[int, float]]]:
    """The side's scored sessions of ``metric`` by task: ``task -> [(pk, value)]`` in session order (``known``: the
    tasks of sessions read before, added to)."""
    run = store.runs.get(side.run_id)
    if metric not in run.metrics:
        raise UsageError(f"run #{run.id} did not score {metric!r}; it scored {', '.join(run.metrics)}")
    values = {
        pk: value
        for pk, status, value in store.runs.session_values(run.id, metric)
        if status == "ok" and value is not None and math.isfinite(value)
    }
    if side.assistant is not None:
        owners = store.sessions.assistants_of(sorted(values))
        values = {pk: v for pk, v in values.items() if owners.get(pk) == side.assistant}
    known.update((pk, task_of(session)) for pk, session in store.runs.sessions(sorted(set(values) - set(known))))
    tasks: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for pk in sorted(values):
        task = known.get(pk)
        if task is not None:
            tasks[task].append((pk, values[pk]))
    return tasks


def _mean(items: list[tuple[int, float]]) -> float:
    return math.fsum(v for _, v in items) / len(items)


def ab_pairs(
    store: Store, a: Side, b: Side, metric: str, *, known: dict[int, str | None] | None = None
) -> tuple[list[ABPair], int, int]:
    """The tasks both sides answered, paired on ``metric``, worst first (the largest drop B − A first, then by
    task); and how many tasks only A and only B answered. ``known``: sessions' tasks already read (added to)."""
    known = {} if known is None else known
    left, right = _side(store, a, metric, known), _side(store, b, metric, known)
    shared = sorted(set(left) & set(right))
    refs = store.sessions.links([pk for t in shared for pk in (left[t][0][0], right[t][0][0])])
    pairs = [
        ABPair(
            t,
            _mean(left[t]),
            _mean(right[t]),
            left[t][0][0],
            right[t][0][0],
            refs[left[t][0][0]],
            refs[right[t][0][0]],
            len(left[t]),
            len(right[t]),
        )  # fmt: skip
        for t in shared
    ]
    pairs.sort(key=lambda p: (p.difference, p.task))
    return pairs, len(set(left) - set(right)), len(set(right) - set(left))


def _summarised(metric: str, pairs: list[ABPair], only_a: int, only_b: int) -> ABMetric:
    diffs: dict[float, int] = defaultdict(int)
    for p in pairs:
        diffs[round(p.difference, 9)] += 1
    improved = sum(1 for p in pairs if p.difference > _SAME)
    regressed = sum(1 for p in pairs if p.difference < -_SAME)
    return ABMetric(
        metric=metric,
        pairs=len(pairs),
        improved=improved,
        regressed=regressed,
        unchanged=len(pairs) - improved - regressed,
        mean_a=math.fsum(p.a for p in pairs) / len(pairs) if pairs else None,
        mean_b=math.fsum(p.b for p in pairs) / len(pairs) if pairs else None,
        difference=summarize_counts(f"{metric} (B - A)", list(diffs.items())),
        only_a=only_a,
        only_b=only_b,
        neutral=not math.isfinite(metric_scale(metric)[1]),
    )


def ab_metrics(store: Store, a: Side, b: Side, metrics: list[str] | None = None) -> list[ABMetric]:
    """Every metric both runs scored (or ``metrics``), compared task by task (see ``ABMetric``)."""
    if metrics is None:
        theirs = store.runs.get(b.run_id).metrics
        metrics = [m for m in store.runs.get(a.run_id).metrics if m in theirs]
    result = []
    known: dict[int, str | None] = {}  # each session read once, whatever the metrics
    for metric in metrics:
        pairs, only_a, only_b = ab_pairs(store, a, b, metric, known=known)
        result.append(_summarised(metric, pairs, only_a, only_b))
    return result


@dataclass(frozen=True)
class ABRow:
    """A metric's A/B figures as a table row."""

    metric: str
    tasks: int = column("tasks paired")
    improved: int = column("improved")
    regressed: int = column("regressed")
    unchanged: int = column("unchanged")
    mean_a: float | None = column("mean A")
    mean_b: float | None = column("mean B")
    difference: float | None = column("B − A")
    interval: str = column("95% interval")


def ab_rows(found: list[ABMetric]) -> list[ABRow]:
    """The metrics compared, as table rows (a count's "improved" is only "higher": its name says so)."""
    rows = []
    for m in found:
        d = m.difference
        interval = "—" if d.ci_low is None or d.ci_high is None else f"{d.ci_low:+.3f} to {d.ci_high:+.3f}"
        name = visible(m.metric) + (" (higher is not better)" if m.neutral else "")
        rows.append(ABRow(name, m.pairs, m.improved, m.regressed, m.unchanged, m.mean_a, m.mean_b, d.mean, interval))
    return rows


def side_caption(store: Store, pk: int) -> str:
    """A session of a pair in a line: its assistant and its latest score of each metric (plain text)."""
    stored = store.sessions.get(pk)
    scores = store.runs.latest_values([pk]).get(pk, {})
    said = [f"{visible(m)} {v:.3g}" for m, v in scores.items() if v is not None]
    who = visible(stored.session.assistant_id or "no assistant id")
    return " · ".join([who, *said])


@dataclass(frozen=True)
class PairRow:
    """A task's pair as a table row: the two sessions, their values, the change."""

    task: str
    session_a: str = column("session A")
    a: float = column("A")
    session_b: str = column("session B")
    b: float = column("B")
    change: float = column("B − A")


def pair_rows(pairs: list[ABPair], *, limit: int | None = None) -> list[PairRow]:
    """The pairs as table rows (a task's text cut to 100 characters; ``(+2 more)`` when a side had trials)."""

    def named(ref: str, n: int) -> str:
        return session_label(ref) + (f" (+{n - 1} more)" if n > 1 else "")

    return [
        PairRow(
            visible(p.task if len(p.task) <= 100 else p.task[:99] + "…"),
            named(p.a_ref, p.a_sessions),
            p.a,
            named(p.b_ref, p.b_sessions),
            p.b,
            p.difference,
        )  # fmt: skip
        for p in pairs[:limit]
    ]
