"""Every Dashboard chart's data as a CSV file: the numbers the chart draws, one row per bar, point or cell, headed
as the chart's table would be (``evalcore.views.table``'s labels). A page puts a download button under each chart."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalcore.agreement import Agreement
from evalcore.views.dashboard import Comparison, Distribution, Group, Heatmap, ReviewProgress
from evalcore.views.table import column, labels, records
from evalcore.views.usage import Trend

__all__ = [
    "assistant_csv",
    "confusion_csv",
    "differences_csv",
    "heatmap_csv",
    "histogram_csv",
    "paired_csv",
    "progress_csv",
    "rows_csv",
    "trend_csv",
]


def rows_csv(rows: Sequence[Any]) -> str:
    """Table rows (frozen dataclasses) as CSV text, headed by each column's label; no rows: an empty string."""
    if not rows:
        return ""
    heads = labels(type(rows[0]), rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(heads), lineterminator="\n")
    writer.writerow(heads)
    for record in records(rows):
        writer.writerow({k: "" if v is None else v for k, v in record.items()})
    return out.getvalue()


@dataclass(frozen=True)
class _BinRow:
    low: float
    high: float
    bar: str
    sessions: int


def histogram_csv(d: Distribution) -> str:
    return rows_csv([_BinRow(b.low, b.high, b.label, b.count) for b in d.bins])


@dataclass(frozen=True)
class _GroupRow:
    assistant: str
    mean: float | None
    ci_low: float | None = column("95% low")
    ci_high: float | None = column("95% high")
    sessions: int = 0
    failed: int = 0
    not_applicable: int = column("not applicable", default=0)


def assistant_csv(groups: list[Group]) -> str:
    return rows_csv(
        [
            _GroupRow(
                g.label,
                g.summary.mean,
                g.summary.ci_low,
                g.summary.ci_high,
                g.summary.count,
                g.summary.failed,
                g.summary.not_applicable,
            )  # fmt: skip
            for g in groups
        ]
    )


@dataclass(frozen=True)
class _PointRow:
    a: float
    b: float
    sessions: int


def paired_csv(c: Comparison) -> str:
    """The comparison's points: run A's value, run B's, how many sessions (headed by the runs)."""
    text = rows_csv([_PointRow(a, b, n) for a, b, n in c.points])
    head, _, rest = text.partition("\n")
    return f"run #{c.run_a},run #{c.run_b},sessions\n{rest}" if text else ""


@dataclass(frozen=True)
class _DiffRow:
    difference: float
    sessions: int


def differences_csv(c: Comparison) -> str:
    return rows_csv([_DiffRow(d, n) for d, n in c.spread])


@dataclass(frozen=True)
class _CellRow:
    session: str
    assistant: str
    metric: str
    value: float | None


def heatmap_csv(h: Heatmap) -> str:
    """The page of the heatmap shown, one row per (session, metric) cell."""
    return rows_csv(
        [
            _CellRow(label, (h.assistants[i] if h.assistants else None) or "", m, h.values[i][j])
            for i, label in enumerate(h.row_labels)
            for j, m in enumerate(h.metrics)
        ]
    )


@dataclass(frozen=True)
class _ProgressRow:
    by: str
    status: str
    changes: int


def progress_csv(p: ReviewProgress, *, by_reviewer: bool) -> str:
    """Statuses set per day (or per reviewer), one row per day (reviewer) and status."""
    names, counts = (p.reviewers, p.by_reviewer) if by_reviewer else (p.days, p.by_day)
    text = rows_csv([_ProgressRow(n, s, counts[s][i]) for i, n in enumerate(names) for s in counts if counts[s][i]])
    return text.replace("by,", "reviewer," if by_reviewer else "day,", 1)


@dataclass(frozen=True)
class _ConfusionRow:
    judge: str
    reviewers: str
    sessions: int


def confusion_csv(a: Agreement) -> str:
    names = ["fail", "pass"] if a.kind == "binary" else [str(c) for c in a.categories]
    return rows_csv(
        [_ConfusionRow(names[i], names[j], n) for i, row in enumerate(a.confusion) for j, n in enumerate(row)]
    )


@dataclass(frozen=True)
class _TrendRow:
    run: str
    assistant: str
    mean: float | None
    ci_low: float | None = column("95% low")
    ci_high: float | None = column("95% high")
    sessions: int = 0


def trend_csv(t: Trend) -> str:
    return rows_csv(
        [
            _TrendRow(run, who, t.means[who][i], t.low[who][i], t.high[who][i], t.counts[who][i])
            for i, run in enumerate(t.runs)
            for who in t.means
            if t.counts[who][i]
        ]
    )
