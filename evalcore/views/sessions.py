"""The rows of the app's sessions table: one page of a dataset, with each metric's latest score."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from evalcore.errors import UsageError
from evalcore.store import Store
from evalcore.store.queries import Page, SessionFilter
from evalcore.views.review.tables import session_label
from evalcore.views.table import column, spread
from evalcore.views.text import visible

__all__ = ["SessionRow", "SessionsTable", "page_filter", "sessions_table"]

_TRUTH = {"any": None, "present": True, "missing": False}


@dataclass(frozen=True)
class SessionRow:
    """One session in the Sessions page's table: its review state, what it holds, and its latest scores."""

    status: str
    id: str
    assistant: str
    first_question: str
    turns: int
    tool_calls: int
    tags: str
    ground_truth: bool
    score: float | None = column("score", default=None)  # the sort's run's score, when sorted by one
    scores: dict[str, float | None] = spread(default_factory=dict)  # the latest value of each metric
    last_edit_by: str = ""
    updated: str = ""


@dataclass(frozen=True)
class SessionsTable:
    """A page of sessions as table rows, the metric columns they have, and how many match in all."""

    total: int
    rows: list[SessionRow]
    metrics: list[str] = field(default_factory=list)
    pks: list[int] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    scored: bool = False  # the rows carry the sort's score

    @property
    def columns(self) -> list[str]:
        """The columns worth showing, in order (the scores before the tags: a page 1400 px wide shows them without
        scrolling the table sideways): an assistant, tags or "last edit by" column that is empty on every row is
        left out, and the score unless the page is sorted by one."""
        if not self.rows:
            return []
        shown = ["status", "id"]
        shown += [name for name in ("assistant",) if any(row.assistant for row in self.rows)]
        shown += ["first_question", "turns", "tool_calls", "ground_truth", *(["score"] if self.scored else [])]
        shown += self.metrics
        shown += [name for name in ("tags",) if any(row.tags for row in self.rows)]
        shown += [name for name in ("last_edit_by",) if any(row.last_edit_by for row in self.rows)]
        return [*shown, "updated"]

    @property
    def number_formats(self) -> dict[str, str]:
        """Each score column's format (``score`` and each metric): whole numbers (counts: turns, tool calls,
        tokens) as integers, ``%d``; any other as ``%.2f``."""
        columns = {
            "score": [row.score for row in self.rows],
            **{m: [row.scores.get(m) for row in self.rows] for m in self.metrics},
        }
        return {name: "%d" if _whole(values) else "%.2f" for name, values in columns.items()}


def _whole(values: list[float | None]) -> bool:
    """Every number among ``values`` (at least one) is a whole one."""
    numbers = [v for v in values if v is not None and math.isfinite(v)]
    return bool(numbers) and all(float(v).is_integer() for v in numbers)


def no_match(f: SessionFilter) -> str:
    """What the Sessions page says when ``f`` matches no session: what was asked, and what to change."""
    if not f.as_dict():
        return "This dataset has no session yet: import some on the Datasets page."
    if f.search_alone:
        unticked = "" if f.search_system_prompt else " (the system prompt is searched only when ticked)"
        return f"No session has every word of “{f.search}”{unticked}. Try fewer words, or word* for a word's beginning."
    if f.searching:
        return (
            f"No session matches the search “{f.search}” and the filters together: clear a filter or change the words."
        )
    return "No session matches these filters: clear one of them to see more."


def page_filter(
    *,
    status: list[str] | None = None,
    tags: list[str] | None = None,
    assistant: str | None = None,
    search: str | None = None,
    search_system_prompt: bool = False,
    truth: str = "any",
    run_id: int | None = None,
    metric: str | None = None,
    min_score: float | None = None,
    max_score: float | None = None,
) -> SessionFilter:
    """The filter the Sessions and Export pages' widgets describe: ``assistant`` "any" or empty and blank
    ``search`` do not filter (``search_system_prompt``: look in the system prompt too, with a search only); ``truth``
    is "any", "present" or "missing"; a score range needs a run and a metric."""
    if truth not in _TRUTH:
        raise UsageError(f"unknown ground truth choice {truth!r}; use one of {', '.join(_TRUTH)}")
    if (min_score is not None or max_score is not None) and (run_id is None or metric is None):
        raise UsageError("a score range needs a run and a metric")
    return SessionFilter(
        status=list(status or []),
        tags=list(tags or []),
        assistant=None if assistant in (None, "", "any") else assistant,
        search=(search or "").strip() or None,
        search_system_prompt=bool(search_system_prompt and (search or "").strip()),
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
    page: Page = store.sessions.browse(dataset, filters, sort=sort, descending=descending, limit=limit, offset=offset)
    runs = store.runs
    metrics = runs.metrics_of(dataset)
    latest = runs.latest_values([item.pk for item in page.items]) if metrics else {}
    rows = []
    for item in page.items:
        scores = latest.get(item.pk, {})
        rows.append(
            SessionRow(
                item.status, session_label(item.link), visible(item.assistant_id or ""), item.title, item.n_turns,
                item.n_tool_calls, ", ".join(visible(tag) for tag in item.tags), item.has_truth, item.score,
                {metric: scores.get(metric) for metric in metrics}, visible(item.updated_by or ""),
                (item.updated_at or "")[:16].replace("T", " "),
            )
        )  # fmt: skip
    return SessionsTable(
        page.total, rows, metrics, [item.pk for item in page.items], [item.link for item in page.items],
        scored=sort == "score",
    )  # fmt: skip
