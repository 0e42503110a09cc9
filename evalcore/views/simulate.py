"""What the Simulate page shows: the tasks to pick from, a task read and checked (every problem listed), its
outline, its samples, the endpoint, and a solver job's progress. The page only renders these."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalcore import config
from evalcore.identity import identity_key
from evalcore.model import ModelConfig
from evalcore.model.config import endpoint_from_env
from evalcore.model.redact import public_url
from evalcore.solver import ChatMessage, Generate, GenerateMessage, LoadTrace, Loop, Task, TaskError, parse_task
from evalcore.solver.dataset import sample_session_id
from evalcore.solver.samples import place_samples
from evalcore.solver.task import PLACEHOLDER
from evalcore.store.jobs import Job
from evalcore.store.store import Store
from evalcore.views.outcome import Failure, ending, failures, failures_text

__all__ = [
    "EndpointView",
    "SamplesView",
    "SolveProgress",
    "TaskView",
    "configured",
    "default_model",
    "endpoint_view",
    "first_link",
    "latest_solve_job",
    "outline",
    "read_samples_file",
    "read_samples_text",
    "read_task_file",
    "read_task_text",
    "sample_files_beside",
    "solve_progress",
    "task_files",
]

#: Where the page looks for task files besides the sample data's ``tasks/`` folder.
#: Sample rows the page previews.
PREVIEW_ROWS = 5


def task_files(sample_folder: Path) -> list[Path]:
    """The task files to pick from: ``$EVALCORE_TASKS`` (a folder), else the sample data's ``tasks/``."""
    folder = Path(config.tasks_folder() or sample_folder / "tasks")
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def sample_files_beside(task: Path) -> list[Path]:
    """The sample files in a task's folder (JSONL, JSON, CSV), those named like the task first."""
    if not task.parent.is_dir():
        return []
    files = [p for p in task.parent.iterdir() if p.suffix in (".jsonl", ".json", ".csv") and p.is_file()]
    stem = task.stem.split("_")[0]
    return sorted(files, key=lambda p: (not p.stem.startswith(stem), p.name))


def config_label(key: str) -> str:
    """The field for a task's ``<< config.KEY >>`` value, labelled in words: ``judge_model`` -> ``Judge model``."""
    words = re.sub(r"[_.\-]+", " ", key).strip()
    return (words[:1].upper() + words[1:]) if words else key


@dataclass(frozen=True)
class TaskView:
    """A task file read: the task (``None`` when it has problems), every problem, and what the run needs."""

    name: str
    task: Task | None
    problems: list[str] = field(default_factory=list)

    @property
    def config_keys(self) -> list[str]:
        """The ``<< config.KEY >>`` values a run must give."""
        return sorted(self.task.config_keys) if self.task is not None else []


@lru_cache(maxsize=16)  # the page runs again on every click: a task (its templates compiled) is read once
def read_task_text(text: str, name: str) -> TaskView:
    """A task file's text (an upload or a file of the folder) read as typed, with every problem."""
    try:
        return TaskView(name, parse_task(text, source=name))
    except TaskError as exc:
        return TaskView(name, None, list(exc.problems) or [str(exc)])


def read_task_file(path: Path) -> TaskView:
    """A task file of the folder, read as typed."""
    return read_task_text(path.read_text(encoding="utf-8", errors="replace"), path.name)


def configured(view: TaskView, values: dict[str, str]) -> tuple[Task | None, list[str]]:
    """The task with its config filled from ``values`` (blank ones count as missing), or the problems."""
    assert view.task is not None
    given = {k: v for k, v in values.items() if v.strip()}
    try:
        return view.task.configure(given), []
    except TaskError as exc:
        return None, list(exc.problems) or [str(exc)]


def outline(task: Task) -> list[tuple[int, str]]:
    """The task's builders, one line each with its depth (a loop's nested ones one deeper), as a person reads them."""
    return _outline(task.builders, 0)


def _model_named(model: str) -> str:
    """A model as the outline says it: one a field of the form gives (``<< config.judge_model >>``) by that field."""
    given = PLACEHOLDER.fullmatch(model.strip())
    return f"the model in “{config_label(given.group(1))}”" if given else model


def _outline(builders: list[Any], depth: int) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    for builder in builders:
        until = f", until it says {builder.terminate_if.includes!r}" if getattr(builder, "terminate_if", None) else ""
        if isinstance(builder, ChatMessage):
            text = builder.content.strip().splitlines()[0] if builder.content.strip() else ""
            lines.append((depth, f"{builder.role} message: {text[:80]}{'…' if len(text) > 80 else ''}{until}"))
        elif isinstance(builder, Generate):
            lines.append((depth, f"the model under evaluation answers{until}"))
        elif isinstance(builder, GenerateMessage):
            lines.append((depth, f"{_model_named(builder.model)} answers as {builder.output_role}{until}"))
        elif isinstance(builder, Loop):
            then = "error" if builder.fails_at_max() else "go on"
            lines.append((depth, f"loop, at most {builder.max_iterations} times (then {then}):"))
            lines += _outline(builder.message_builders, depth + 1)
        elif isinstance(builder, LoadTrace):
            lines.append((depth, f"the recorded conversation in the sample's {builder.trace_column!r}"))
    return lines


@dataclass(frozen=True)
class SamplesView:
    """Samples read: the good rows, a problem for each bad one, the first rows to show."""

    rows: list[dict[str, Any]]
    problems: list[str]
    places: list[int] = field(default_factory=list)  # each row's place in its file (bad lines count)

    @property
    def preview(self) -> list[dict[str, Any]]:
        return [{k: _cell(v) for k, v in row.items()} for row in self.rows[:PREVIEW_ROWS]]


def _cell(value: Any) -> Any:
    """A sample's value as a table cell: text as it is, anything else as short JSON-ish text."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    text = str(value)
    return text if len(text) <= 200 else text[:200] + "…"


def read_samples_file(path: Path) -> SamplesView:
    """A samples file beside the task."""
    return read_samples_text(path.read_text(encoding="utf-8-sig", errors="replace"), path.name)


def first_link(task: Task, samples: SamplesView, model: str) -> str:
    """The link (``evalcore.identity``) of the first sample's session once ``model`` has solved it."""
    return identity_key(sample_session_id(task, samples.places[0], samples.rows[0]), model, "", None)


@lru_cache(maxsize=16)  # (as tasks: read once, not on every click; nothing changes what it gives)
def read_samples_text(text: str, name: str) -> SamplesView:
    """A samples file's text (JSONL, JSON, or CSV when ``name`` ends in ``.csv``)."""
    placed, problems = place_samples(text, name)
    return SamplesView([row for _, row in placed], problems, [n for n, _ in placed])


@dataclass(frozen=True)
class EndpointView:
    """The endpoint the models are reached at, as may be shown (never the key)."""

    url: str
    has_key: bool

    def config(self, model: str, concurrency: int, base_url: str | None = None) -> ModelConfig:
        """The client's config for a run of ``model`` (the key read from the environment, on this side only) at
        ``base_url`` as the form shows it: the environment's own endpoint (its credentials kept) when it is the one
        shown, or left blank."""
        typed = (base_url or "").strip()
        chosen = None if not typed or public_url(typed) == self.url else typed
        return ModelConfig.for_models(model, base_url=chosen, concurrency=concurrency)


def endpoint_view() -> EndpointView:
    """``EVALCORE_BASE_URL`` (credentials left out) and whether a key is set."""
    url, key = endpoint_from_env()
    return EndpointView(public_url(url), bool(key))


def default_model() -> str:
    """The model the form starts with: ``$EVALCORE_MODEL``, else nothing."""
    return config.model()


@dataclass(frozen=True)
class SolveProgress:
    """A solver job as the page shows it."""

    status: str  # running | done | partial | failed | cancelled | stalled
    fraction: float
    message: str
    summary: str | None
    errors: list[str]
    active: bool  # the job still runs (a stalled one too: it may be slow), so the page keeps following it
    failures: tuple[Failure, ...] = ()
    sessions: int = 0  # the sessions the run left in its dataset (new, updated, or solved before and skipped)

    @property
    def has_sessions(self) -> bool:
        """Whether there is anything to open in Review, score or compare (a run cancelled before its first sample
        left nothing)."""
        return self.sessions > 0

    @property
    def failures_line(self) -> str:
        """``Failures: 6 × HTTP 500 from the model`` (empty when no sample failed)."""
        return f"Failures: {failures_text(list(self.failures))}" if self.failures else ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def solve_progress(job: Job) -> SolveProgress:
    """How far solver job ``job`` has come, and what it did: a finished job where samples failed is "partial", or
    "failed" when none was solved; its samples' errors grouped by reason."""
    result = job.result or {}
    summary = result.get("summary") if isinstance(result.get("summary"), str) else None
    errors = [str(e) for e in result.get("errors") or []]
    # Each error is "<session id>: <what went wrong>": grouped by what went wrong.
    found = tuple(failures(((e.partition(": ")[2] or e, 1) for e in errors), "the model"))
    solved, failed = _count(result.get("solved")), _count(result.get("failed"))
    made = sum(_count(result.get(k)) for k in ("new", "updated", "skipped"))
    if job.status == "done" and failed:
        if ending(solved, failed) == "failed":
            message = f"Failed: all {failed:,} samples failed, none was solved"
        else:
            message = f"Partly failed: {failed:,} of {solved + failed:,} samples failed"
        return SolveProgress(ending(solved, failed), 1.0, message, summary, errors, False, found, made)
    if job.status == "running" and job.stalled:
        status = "stalled"
        message = (
            f"{job.done:,} of {job.total:,} samples; none has finished for minutes: a slow model, or the server "
            "was restarted (then run it again: the solved samples are skipped)"
        )
    elif job.status == "running":
        status, message = "running", f"Solving: {job.done:,} of {job.total:,} samples"
    elif job.status == "done":
        status, message = "done", f"Done: {job.total:,} samples"
    elif job.status == "cancelled":
        status, message = "cancelled", f"Cancelled after {job.done:,} of {job.total:,} samples; run it again to go on"
    else:
        status, message = "failed", f"Failed: {job.error}"
    fraction = job.fraction if job.total else 0.0
    return SolveProgress(status, fraction, message, summary, errors, job.status == "running", found, made)


def latest_solve_job(store: Store, dataset: str | None = None) -> Job | None:
    """The latest solver job (of ``dataset``, when given), running or not."""
    return next((job for job in store.jobs.recent(dataset, limit=50) if job.kind == "solve"), None)
