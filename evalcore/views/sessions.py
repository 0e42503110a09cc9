"""The rows of the app's sessions table: one page of a dataset, with each metric's latest score."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalcore.errors import UsageError
from evalcore.store import Store
from evalcore.store.queries import Page, SessionFilter, browse
from evalcore.store.runs import Runs
from evalcore.views.review.tables import session_label

__all__ = ["SessionsTable", "page_filter", "sessions_table"]

_TRUTH = {"any": None, "present": True, "missing": False}


@dataclass(frozen=True)
class SessionsTable:
    """A page of sessions as table rows, the metric columns they have, and how many match in all."""

    total: int
    rows: list[dict[str, Any]]
    metrics: list[str] = field(default_factory=list)
    pks: list[int] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)

    @property
    def columns(self) -> list[str]:
        """The columns worth showing: an assistant or tags column that is empty on every row is left out."""
        if not self.rows:
            return []
        optional = ("assistant", "tags", "last edit by")
        return [c for c in self.rows[0] if c not in optional or any(row[c] for row in self.rows)]


def page_filter(
    *,
    status: list[str] | None = None,
    tags: list[str] | None = None,
    assistant: str | None = None,
    search: str | None = None,
    truth: str = "any",
    run_id: int | None = None,
    metric: str | None = None,
    min_score: float | None = None,
    max_score: float | None = None,
) -> SessionFilter:
    """The filter the Sessions and Export pages' widgets describe: ``assistant`` "any" or empty and blank
    ``search`` do not filter; ``truth`` is "any", "present" or "missing"; a score range needs a run and a metric."""
    if truth not in _TRUTH:
        raise UsageError(f"unknown ground truth choice {truth!r}; use one of {', '.join(_TRUTH)}")
    if (min_score is not None or max_score is not None) and (run_id is None or metric is None):
        raise UsageError("a score range needs a run and a metric")
    return SessionFilter(
        status=list(status or []),
        tags=list(tags or []),
        assistant=None if assistant in (None, "", "any") else assistant,
        search=(search or "").strip() or None,
        has_truth=_TRUTH[truth],
        run_id=run_id,
        metric=metric,
        min_score=min_score,
        max_score=max_score,
    )


def sessions_table(
    store: Store,
    dataset: str,
    filters: SessionFilter | None = None,
    *,
    sort: str = "order",
    descending: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> SessionsTable:
    """One page of ``dataset``'s sessions as rows: status, id, assistant, first question, turns, tool
    calls, tags, whether it has ground truth, the latest score of each metric, and who changed it last."""
    page: Page = browse(store, dataset, filters, sort=sort, descending=descending, limit=limit, offset=offset)
    runs = Runs(store)
    metrics = runs.metrics_of(dataset)
    latest = runs.latest_values([item.pk for item in page.items]) if metrics else {}
    rows = []
    for item in page.items:
        row: dict[str, Any] = {
            "status": item.status,
            "id": session_label(item.link),
            "assistant": item.assistant_id or "",
            "first question": item.title,
            "turns": item.n_turns,
            "tool calls": item.n_tool_calls,
            "tags": ", ".join(item.tags),
            "ground truth": item.has_truth,
        }
        if item.score is not None:
            row["score"] = item.score
        scores = latest.get(item.pk, {})
        for metric in metrics:
            row[metric] = scores.get(metric)
        row["last edit by"] = item.updated_by or ""
        row["updated"] = (item.updated_at or "")[:16].replace("T", " ")
        rows.append(row)
    return SessionsTable(
        page.total, rows, metrics, [item.pk for item in page.items], [item.link for item in page.items]
    )
