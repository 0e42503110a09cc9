"""What the app's Datasets page shows, computed: the table of datasets and an import's report."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from evalcore.formats.json_problems import plain_json_problem
from evalcore.samples import sample_files
from evalcore.store import Store
from evalcore.store.jobs import Job
from evalcore.views.table import column
from evalcore.views.text import code_span, plural, visible

__all__ = [
    "DatasetRow",
    "ImportOutcome",
    "ProblemRow",
    "SampleCard",
    "dataset_rows",
    "import_outcome",
    "latest_import",
    "sample_card",
]


@dataclass(frozen=True)
class DatasetRow:
    """One dataset in the Datasets page's table."""

    dataset: str
    sessions: int
    formats: str
    todo: int  # todo and in progress
    approved: int
    rejected: int
    flagged: int
    reviewed: float  # the share reviewed, 0 to 1
    with_truth: int = column("ground truth")
    last_import: str = column("last import")
    source: str = column("from")


def dataset_rows(store: Store, samples: Collection[str] = ()) -> list[DatasetRow]:
    """One row per dataset: size, source formats, review progress and last import (names as shown: invisible or
    reordering characters written as escapes). The datasets the user made come first, the one imported last at
    the top; then the sample datasets (``samples``: their names), by name."""
    overviews = store.datasets.overviews()  # by name
    sample = frozenset(samples)
    mine = sorted((o for o in overviews if o.name not in sample), key=lambda o: o.last_import_at or "", reverse=True)
    return [
        DatasetRow(
            visible(o.name),
            o.sessions,
            ", ".join(o.formats),
            o.statuses.get("todo", 0) + o.statuses.get("in_progress", 0),
            o.statuses.get("approved", 0),
            o.statuses.get("rejected", 0),
            o.statuses.get("flagged", 0),
            o.progress,
            o.with_truth,
            (o.last_import_at or "")[:16].replace("T", " "),
            visible(o.last_import_source or ""),
        )  # fmt: skip
        for o in [*mine, *(o for o in overviews if o.name in sample)]
    ]


@dataclass(frozen=True)
class ProblemRow:
    """One problem of an import, by line."""

    line: int | None
    level: str | None
    problem: str | None


@dataclass(frozen=True)
class ImportOutcome:
    """An import job as a reviewer reads it: counts, and every problem by line."""

    job: Job
    counts: dict[str, int] = field(default_factory=dict)
    format: str | None = None
    problems: list[ProblemRow] = field(default_factory=list)

    @property
    def headline(self) -> str:
        """One sentence: what went in, and what did not."""
        if self.job.status == "failed":
            return f"{self.job.label} failed: {self.job.error}"
        if self.job.status == "running":
            return f"{self.job.label}: {self.job.fraction:.0%}"
        c = self.counts
        stored = c.get("new", 0) + c.get("updated", 0) + c.get("unchanged", 0)
        parts = [f"{plural(stored, 'session')} stored ({c.get('new', 0):,} new, {c.get('updated', 0):,} updated, "
                 f"{c.get('unchanged', 0):,} unchanged)"]  # fmt: skip
        if c.get("failed"):
            parts.append(f"{plural(c['failed'], 'record')} with errors skipped")
        if c.get("warnings"):
            parts.append(plural(c["warnings"], "warning"))
        fmt = f" as {self.format}" if self.format else ""
        return f"{self.job.label}{fmt}: " + "; ".join(parts) + "."


def import_outcome(job: Job) -> ImportOutcome:
    """The outcome of an import job (its counts are empty while it runs)."""
    result = job.result or {}
    counts = {k: int(result.get(k) or 0) for k in ("new", "updated", "unchanged", "failed", "warnings")}
    problems = [
        ProblemRow(p.get("line"), p.get("level"), plain_json_problem(p.get("message"), p.get("line")))
        for p in result.get("problems") or []
    ]
    return ImportOutcome(job, counts, result.get("format"), problems)


def latest_import(store: Store, dataset: str) -> ImportOutcome | None:
    """The dataset's latest import job, if it had one."""
    for job in store.jobs.recent(dataset, limit=10):
        if job.kind == "import":
            return import_outcome(job)
    return None


@dataclass(frozen=True)
class SampleCard:
    """The Datasets page's card of sample data: how many sample files there are in ``folder`` (the button loads
    them; with none there is nothing to load)."""

    files: int
    folder: str

    @property
    def can_load(self) -> bool:
        return self.files > 0

    @property
    def caption(self) -> str:
        """Markdown: what loading the samples brings, or why there is nothing to load."""
        if self.files:
            return (
                f"{plural(self.files, 'small file')}, at least one per format evalcore reads, each in a `sample-…` "
                "dataset, scored."
            )
        return (
            f"No sample data here: the folder {code_span(visible(self.folder))} has no `.json` or `.jsonl` file "
            "(the environment variable `EVALCORE_SAMPLE_DATA` names the folder; else `sample_data/` beside the app)."
        )


def sample_card(folder: str | Path) -> SampleCard:
    """The sample card for ``folder`` (missing or empty: no files)."""
    return SampleCard(len(sample_files(folder)), str(folder))
