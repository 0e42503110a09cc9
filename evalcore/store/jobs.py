"""Long work (imports, scoring runs) as jobs whose progress lives in the store.

A job is written by whoever does the work and read by anyone: another browser tab, another
page, the CLI. A job whose worker stopped without a word (the server was killed) is failed as soon
as it is read, when its process ran on this machine and is gone (each job keeps which process runs
it); one from another machine is seen as stalled once it has not reported for a while.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import NotFoundError
from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["STALLED_AFTER", "Job", "Jobs"]

#: A running job that has not reported for this long is taken to have stopped.
STALLED_AFTER = timedelta(minutes=2)

_COLUMNS = (
    "id, kind, dataset, label, author, status, done, total, unit, result, error, started_at, updated_at, finished_at, "
    "run_id, cancel_by, owner"
)


@dataclass(frozen=True)
class Job:
    """One import, scoring run or solver run done in the background, as last reported."""

    id: int
    kind: str  # "import", "score" or "solve"
    dataset: str
    label: str
    author: str | None
    status: str  # "running", "done", "failed" or "cancelled" (stopped on request: ``cancel_by`` asked)
    done: int
    total: int
    unit: str
    result: dict[str, Any] | None
    error: str | None
    started_at: str
    updated_at: str
    finished_at: str | None
    run_id: int | None = None  # the run a scoring job works on, once it has one
    cancel_by: str | None = None  # who asked the job to stop, if anyone has
    owner: str | None = None  # the process that runs it: "host:pid:start" (``this_process``)

    @property
    def fraction(self) -> float:
        """How much is done, from 0 to 1."""
        if self.status == "done":
            return 1.0
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0

    @property
    def stalled(self) -> bool:
        """A running job that has not reported for ``STALLED_AFTER``."""
        if self.status != "running":
            return False
        return datetime.fromisoformat(now()) - datetime.fromisoformat(self.updated_at) > STALLED_AFTER

    @property
    def active(self) -> bool:
        """Still running (and not stalled)."""
        return self.status == "running" and not self.stalled


class Jobs:
    """The jobs of one store (``store.jobs``)."""

    def __init__(self, store: Store) -> None:
        self._engine = store._engine

    def create(self, kind: str, dataset: str, label: str, *, author: str | None, total: int = 0, unit: str) -> int:
        """Record a job that starts now; returns its id."""
        stamp = now()
        with self._engine.write() as conn:
            return int(
                conn.execute(
                    "INSERT INTO jobs (kind, dataset, label, author, status, total, unit, started_at, updated_at, "
                    "owner) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?) RETURNING id",
                    [kind, dataset, label, author, total, unit, stamp, stamp, this_process()],
                ).fetchone()[0]
            )

    def progress(self, job_id: int, done: int, total: int) -> None:
        """Report how far the job has come."""
        with self._engine.write() as conn:
            conn.execute(
                "UPDATE jobs SET done = ?, total = ?, updated_at = ? WHERE id = ?", [done, total, now(), job_id]
            )

    def finish(self, job_id: int, result: dict[str, Any]) -> None:
        """The job ended well, with ``result``."""
        stamp = now()
        with self._engine.write() as conn:
            conn.execute(
                "UPDATE jobs SET status = 'done', done = CASE WHEN done > total THEN done ELSE total END, result = ?, "
                "updated_at = ?, "
                "finished_at = ? WHERE id = ?",
                [json.dumps(result), stamp, stamp, job_id],
            )

    def fail(self, job_id: int, error: str, result: dict[str, Any] | None = None) -> None:
        """The job stopped on ``error`` (what it did until then in ``result``)."""
        self._stop(job_id, "failed", error, result)

    def cancelled(self, job_id: int, message: str, result: dict[str, Any] | None = None) -> None:
        """The job stopped because it was asked to (``request_cancel``): ``message`` says so, ``result`` what it
        did until then."""
        self._stop(job_id, "cancelled", message, result)

    def _stop(self, job_id: int, status: str, error: str, result: dict[str, Any] | None) -> None:
        stamp = now()
        with self._engine.write() as conn:
            conn.execute(
                "UPDATE jobs SET status = ?, error = ?, result = ?, updated_at = ?, finished_at = ? WHERE id = ?",
                [status, error, json.dumps(result) if result is not None else None, stamp, stamp, job_id],
            )

    def set_run(self, job_id: int, run_id: int) -> None:
        """Record the run a scoring job works on."""
        with self._engine.write() as conn:
            conn.execute("UPDATE jobs SET run_id = ? WHERE id = ?", [run_id, job_id])

    def request_cancel(self, job_id: int, author: str) -> None:
        """Ask the job to stop (its worker looks: ``cancel_requested``)."""
        with self._engine.write() as conn:
            if conn.execute("UPDATE jobs SET cancel_by = ? WHERE id = ?", [author, job_id]).rowcount == 0:
                raise NotFoundError(f"no job #{job_id}")

    def cancel_requested(self, job_id: int) -> str | None:
        """Who asked job ``job_id`` to stop, if anyone has (one small query: a worker asks often)."""
        with self._engine.read() as conn:
            row = conn.execute("SELECT cancel_by FROM jobs WHERE id = ?", [job_id]).fetchone()
        return None if row is None else row[0]

    def get(self, job_id: int) -> Job:
        """The job ``job_id``."""
        with self._engine.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", [job_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no job #{job_id}")
        return self._settled(_job(row))

    def recent(self, dataset: str | None = None, *, limit: int = 20) -> list[Job]:
        """The latest jobs (of ``dataset``), newest first."""
        sql = f"SELECT {_COLUMNS} FROM jobs"
        args: list[Any] = []
        if dataset is not None:
            sql += " WHERE dataset = ?"
            args.append(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(sql + " ORDER BY id DESC LIMIT ?", [*args, limit]).fetchall()
        return [self._settled(_job(r)) for r in rows]

    def active(self, dataset: str | None = None) -> list[Job]:
        """The jobs still running (of ``dataset``), newest first."""
        sql = f"SELECT {_COLUMNS} FROM jobs WHERE status = 'running'"
        args: list[Any] = []
        if dataset is not None:
            sql += " AND dataset = ?"
            args.append(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(sql + " ORDER BY id DESC", args).fetchall()
        return [job for job in (self._settled(_job(r)) for r in rows) if job.active]

    def _settled(self, job: Job) -> Job:
        """``job``, failed now if it is running and the process that runs it, on this machine, is gone."""
        if job.status != "running" or not _gone(job.owner):
            return job
        pid = (job.owner or "").split(":")[-2]
        error = f"stopped: the process running it (pid {pid}) ended before it finished (killed?); run it again"
        stamp = now()
        with self._engine.write() as conn:
            conn.execute(
                "UPDATE jobs SET status = 'failed', error = ?, updated_at = ?, finished_at = ? "
                "WHERE id = ? AND status = 'running'",
                [error, stamp, stamp, job.id],
            )
        return replace(job, status="failed", error=error, updated_at=stamp, finished_at=stamp)


def _job(row: tuple[Any, ...]) -> Job:
    (job_id, kind, dataset, label, author, status, done, total, unit, result, error, started, updated, finished,
     run_id, cancel_by, owner) = row  # fmt: skip
    return Job(
        job_id, kind, dataset, label, author, status, done, total, unit, json.loads(result) if result else None,
        error, started, updated, finished, run_id, cancel_by, owner,
    )  # fmt: skip


def _started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from /proc), or "" where that cannot be read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def this_process() -> str:
    """This process, as a job's owner: its machine, its pid and when it started (a pid is reused, not that)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid())}"


def _gone(owner: str | None) -> bool:
    """Whether ``owner`` ran on this machine and is no longer running."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine's: it may run still (``Job.stalled`` tells)
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process of that pid: alive
        pass
    if started and _started(pid) not in ("", started):
        return True  # the pid was taken by another process since
    return Path(f"/proc/{pid}/stat").exists() and _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
