"""Imports, scoring runs and solver runs on a worker thread, their progress in the store's jobs table.

The app starts them and returns at once: a click elsewhere does not abandon the work, and
any tab (or the CLI) sees how far it has come through ``Jobs``. Each worker opens its own
connection to the database. Errors become the job's error, never an exception in the app.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evalcore.errors import EvalcoreError, UsageError
from evalcore.importing import ImportReport, import_stream
from evalcore.judge import JudgeConfig
from evalcore.model import ModelConfig
from evalcore.resuming import OtherEndpointError, run_judge
from evalcore.runspec import MetricSpec, SpecLike, run_specs
from evalcore.scoring import resume_target, score_dataset
from evalcore.solver import Task
from evalcore.solver.dataset import solve_into, task_name
from evalcore.store import Store, open_store
from evalcore.store.jobs import Job, Jobs
from evalcore.store.queries import SessionFilter
from evalcore.store.runs import Run

__all__ = [
    "cancel",
    "cancel_requested",
    "import_report",
    "job_run",
    "resume_run",
    "start_import",
    "start_scoring",
    "start_solving",
    "wait_for",
]

log = logging.getLogger(__name__)

_REPORT_EVERY = 0.25  # seconds between progress writes
_threads: dict[int, threading.Thread] = {}


class _Reporter:
    """Writes progress to the job, at most every ``_REPORT_EVERY`` seconds."""

    def __init__(self, jobs: Jobs, job_id: int) -> None:
        self.jobs = jobs
        self.job_id = job_id
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        moment = time.monotonic()
        if moment - self.last >= _REPORT_EVERY or done >= total:
            self.last = moment
            self.jobs.progress(self.job_id, done, total)


def _start(store: Store, job_id: int, work: Callable[[Store, _Reporter], dict[str, Any]]) -> int:
    """Run ``work`` on a thread of its own with a store of its own, used by the same user as ``store``."""
    url, user = store.url, store.user

    def run() -> None:
        try:
            opened = open_store(url)
        except EvalcoreError as exc:  # the database went away: nowhere to report but the log
            log.error("job #%d could not open %s: %s", job_id, store.where, exc)
            return
        worker = opened.as_user(user)
        jobs = worker.jobs
        try:
            result = work(worker, _Reporter(jobs, job_id))
        except _Cancelled as exc:
            jobs.cancelled(job_id, str(exc), exc.result)
        except EvalcoreError as exc:
            jobs.fail(job_id, str(exc))
        except Exception as exc:  # the job records it; the details go to the server's log
            log.exception("job #%d failed", job_id)
            jobs.fail(job_id, f"unexpected error ({type(exc).__name__}): {exc}")
        else:
            jobs.finish(job_id, result)
        finally:
            opened.close()

    thread = threading.Thread(target=run, name=f"evalcore-job-{job_id}", daemon=True)
    _threads[job_id] = thread
    thread.start()
    return job_id


def import_report(report: ImportReport) -> dict[str, Any]:
    """An import's report as a job's result (JSON)."""
    data = asdict(report)
    data["problems"] = [
        {"line": p.line, "level": p.level, "message": p.message, "file": p.path} for p in report.problems
    ]
    return data


def start_import(
    store: Store, data: bytes, name: str, dataset: str, *, fmt: str | None = None, assistant: str | None = None
) -> int:
    """Import the bytes of an uploaded file called ``name`` into ``dataset`` on a worker thread; returns the job id.
    ``assistant``, when given, is every imported session's assistant (see ``import_stream``)."""
    label = f"import {Path(name).name or 'upload'}"
    job_id = store.jobs.create("import", dataset, label, total=len(data), unit="bytes")

    def work(worker: Store, report: _Reporter) -> dict[str, Any]:
        result = import_stream(
            worker, io.BytesIO(data), name, dataset, fmt=fmt, size=len(data), on_progress=report, assistant=assistant
        )
        return import_report(result)

    return _start(store, job_id, work)


#: Seconds between two looks at a job's cancel flag (a look is one small query).
_CANCEL_EVERY = 0.2


def cancel(store: Store, job_id: int) -> None:
    """Ask job ``job_id`` to stop. A scoring job's worker sees the request between two sessions, saves what it
    scored and marks its run ``cancelled`` (resume it to go on); a solver job's stops within a second, even in the
    middle of a sample (a template or a model's answer): the samples not finished are left for a later run (run it
    again to go on). The job ends ``cancelled``. Any tab or process may ask."""
    store.jobs.request_cancel(job_id)


def cancel_requested(store: Store, job_id: int) -> bool:
    """Whether someone asked job ``job_id`` to stop."""
    return store.jobs.cancel_requested(job_id) is not None


def job_run(store: Store, job_id: int) -> int | None:
    """The run a scoring job works on (``None`` until it has one, or for an import)."""
    return store.jobs.get(job_id).run_id


class _StopFlag:
    """``should_stop`` for the scorer: the job's cancel flag, looked at every ``_CANCEL_EVERY`` seconds."""

    def __init__(self, store: Store, job_id: int) -> None:
        self.store = store
        self.job_id = job_id
        self.last = 0.0
        self.stop = False

    def __call__(self) -> bool:
        moment = time.monotonic()
        if not self.stop and moment - self.last >= _CANCEL_EVERY:
            self.last = moment
            self.stop = cancel_requested(self.store, self.job_id)
        return self.stop


class _Cancelled(EvalcoreError):
    """The job stopped because it was asked to; ``result`` says what it did until then."""

    def __init__(self, message: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.result = result


def _key(spec: SpecLike) -> str:
    """A metric spec's key, for the job's label (a name as given stays as given: the job reports a bad one)."""
    return spec if isinstance(spec, str) else MetricSpec.of(spec).key


def start_scoring(
    store: Store,
    dataset: str,
    metrics: Sequence[SpecLike],
    *,
    judge: JudgeConfig | None = None,
    filters: SessionFilter | None = None,
    new_run: bool = False,
    run_id: int | None = None,
    allow_other_endpoint: bool = False,
) -> int:
    """Score ``dataset`` with ``metrics`` (names, ``name:key=value``, ``{"name", "params"}``, metric
    objects or specs) on a worker thread; returns the job id.

    Judge metrics need ``judge`` (its key stays in memory, on the worker: never stored). The latest
    unfinished run of the same metrics, selection and judge is resumed unless ``new_run`` (``run_id``: that run).
    One whose judge was called at another endpoint is refused here, before any job starts
    (``evalcore.resuming.OtherEndpointError``), unless ``allow_other_endpoint``. The job's
    progress counts sessions; the run's row counts its items as they are scored (``job_run``).
    ``cancel`` stops it between two sessions.
    """
    specs = list(metrics)
    names = [_key(s) for s in specs]
    if (not new_run or run_id is not None) and not allow_other_endpoint:
        try:
            resume_target(store, dataset, specs, judge=judge, filters=filters, run_id=run_id)
        except OtherEndpointError:
            raise
        except EvalcoreError:  # (no such dataset, a bad metric...: the job says so, as it always has)
            pass
    label = "score " + ", ".join(names)
    job_id = store.jobs.create("score", dataset, label, unit="items")

    def work(worker: Store, report: _Reporter) -> dict[str, Any]:
        def started(run: Run) -> None:
            worker.jobs.set_run(job_id, run.id)

        result = score_dataset(
            worker,
            dataset,
            specs,
            judge=judge,
            filters=filters,
            resume=not new_run,
            on_progress=report,
            should_stop=_StopFlag(worker, job_id),
            on_start=started,
            run_id=run_id,
            allow_other_endpoint=allow_other_endpoint,
        )
        outcome = {
            "run": result.run.id,
            "sessions": result.sessions,
            "skipped": result.skipped,
            "summaries": [s.describe() for s in result.summaries],
            "judge_requests": result.judge_requests,
            "cancelled": result.cancelled,
        }
        if result.cancelled:
            raise _Cancelled(f"cancelled by {worker.jobs.cancel_requested(job_id)}", outcome)
        return outcome

    return _start(store, job_id, work)


def resume_run(
    store: Store, run_id: int, *, judge: JudgeConfig | None = None, allow_other_endpoint: bool = False
) -> int:
    """Go on with run ``run_id`` (cancelled, failed, or stopped with the server) on a worker thread:
    the same metrics, parameters and selection, the same judge model at the same endpoint; the sessions it scored
    are skipped. Returns the job id.

    The key and the call options come from ``judge`` (else the environment). ``judge``'s endpoint is used only
    with ``allow_other_endpoint`` (the run then records it as its own); without it the run's own endpoint is called,
    whatever ``judge`` names (see ``evalcore.resuming.run_judge``)."""
    run = store.runs.get(run_id)
    if not run.resumable:
        raise UsageError(f"run #{run_id} is finished: there is nothing to resume")
    config = run_judge(run, judge, allow_other_endpoint=allow_other_endpoint)
    return start_scoring(
        store,
        run.dataset,
        run_specs(run),
        judge=config,
        filters=run.filters,
        run_id=run_id,
        allow_other_endpoint=allow_other_endpoint,
    )


def start_solving(
    store: Store,
    task: Task,
    samples: Sequence[dict[str, Any]],
    dataset: str,
    config: ModelConfig,
    *,
    concurrency: int = 4,
    places: Sequence[int] | None = None,
) -> int:
    """Solve ``samples`` with ``task`` against ``config.model`` into ``dataset`` on a worker thread (see
    ``evalcore.solver.dataset.solve_into``); returns the job id. Its key stays in memory, on the worker.
    ``cancel`` stops it within a second (in the middle of a sample too): the samples not finished (those in flight
    included) are left for a later run, which skips the ones stored."""
    label = f"solve {task_name(task)} with {config.model}"
    job_id = store.jobs.create("solve", dataset, label, total=len(samples), unit="samples")

    def work(worker: Store, report: _Reporter) -> dict[str, Any]:
        stop = _StopFlag(worker, job_id)
        result = solve_into(
            worker,
            task,
            samples,
            dataset,
            config,
            concurrency=concurrency,
            places=places,
            on_progress=report,
            should_stop=stop,
        )
        outcome = asdict(result) | {"summary": result.describe()}
        if stop.stop:
            raise _Cancelled(f"cancelled by {worker.jobs.cancel_requested(job_id)}", outcome)
        return outcome

    return _start(store, job_id, work)


def wait_for(store: Store, job_id: int, timeout: float = 60.0) -> Job:
    """The job once it has ended (or after ``timeout`` seconds, as it is then)."""
    thread = _threads.get(job_id)
    if thread is not None:
        thread.join(timeout)
    return store.jobs.get(job_id)
