"""Imports and scoring runs on a worker thread, their progress in the store's jobs table.

The app starts them and returns at once: a click elsewhere does not abandon the work, and
any tab (or the CLI) sees how far it has come through ``Jobs``. Each worker opens its own
connection to the database. Errors become the job's error, never an exception in the app.
"""

from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evalcore.errors import EvalcoreError
from evalcore.scoring import score_dataset
from evalcore.store import ImportReport, Store, import_stream
from evalcore.store.jobs import Job, Jobs

__all__ = ["import_report", "start_import", "start_scoring", "wait_for"]

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


def _start(db_path: str, job_id: int, work: Callable[[Store, _Reporter], dict[str, Any]]) -> int:
    def run() -> None:
        try:
            store = Store(db_path)
        except EvalcoreError as exc:  # the database went away: nowhere to report but the log
            log.error("job #%d could not open %s: %s", job_id, db_path, exc)
            return
        jobs = Jobs(store)
        try:
            result = work(store, _Reporter(jobs, job_id))
        except EvalcoreError as exc:
            jobs.fail(job_id, str(exc))
        except Exception as exc:  # the job records it; the details go to the server's log
            log.exception("job #%d failed", job_id)
            jobs.fail(job_id, f"unexpected error ({type(exc).__name__}): {exc}")
        else:
            jobs.finish(job_id, result)
        finally:
            store.close()

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
    store: Store, data: bytes, name: str, dataset: str, *, fmt: str | None = None, author: str | None = None
) -> int:
    """Import the bytes of an uploaded file called ``name`` into ``dataset`` on a worker thread; returns the job id."""
    label = f"import {Path(name).name or 'upload'}"
    job_id = Jobs(store).create("import", dataset, label, author=author, total=len(data), unit="bytes")

    def work(worker: Store, report: _Reporter) -> dict[str, Any]:
        result = import_stream(worker, io.BytesIO(data), name, dataset, fmt=fmt, size=len(data), on_progress=report)
        return import_report(result)

    return _start(store.path, job_id, work)


def start_scoring(
    store: Store, dataset: str, metrics: list[str], *, author: str | None = None, new_run: bool = False
) -> int:
    """Score ``dataset`` with ``metrics`` (deterministic ones, or judges configured from the environment)
    on a worker thread; returns the job id."""
    label = "score " + ", ".join(metrics)
    job_id = Jobs(store).create("score", dataset, label, author=author, unit="items")

    def work(worker: Store, report: _Reporter) -> dict[str, Any]:
        result = score_dataset(worker, dataset, list(metrics), resume=not new_run, on_progress=report)
        return {
            "run": result.run.id,
            "sessions": result.sessions,
            "skipped": result.skipped,
            "summaries": [s.describe() for s in result.summaries],
        }

    return _start(store.path, job_id, work)


def wait_for(store: Store, job_id: int, timeout: float = 60.0) -> Job:
    """The job once it has ended (or after ``timeout`` seconds, as it is then)."""
    thread = _threads.get(job_id)
    if thread is not None:
        thread.join(timeout)
    return Jobs(store).get(job_id)
