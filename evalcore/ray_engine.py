"""Ray as the scoring engine: a run's sessions scored as Ray tasks, each one ``score_partition`` of a partition.

``score_dataset_ray`` is ``evalcore.scoring.score_dataset`` with the scoring done by Ray tasks on a running cluster
(``address``, or the one this process is connected to) or a local one: the same run (found again and resumed as
any run is), the same rows. This process reads the sessions left from the store, a partition at a time, sends
each to a task (the sessions, the metrics and the judge's settings travel with it: the workers need evalcore, not
the store), and stores each partition's rows as it comes back, with the run's live counts, in one transaction.

A worker killed mid-task: Ray runs the task again (``max_retries``), and only its one answer is stored. A score
stored again takes its row anyway (the scores' unique key), so a partition is never stored twice, even across a
resume. ``should_stop`` is asked as partitions finish (and every half second): what came back is stored, the
tasks still running are cancelled and the run is marked "cancelled"; running it again goes on with it.

Partitions in flight are bounded (memory stays flat): two per CPU of the cluster for deterministic metrics; for
judged ones one per CPU, each with its share of the judge's concurrency (``evalcore.shards.judge_share``), so the
cluster makes at most that many judge calls at a time. The workers answer from a cache of their own partition's
calls; the answers they got are written back into the store's judge cache here.

Ray is the optional extra ``evalcore[ray]``: only this module imports it, and only when called.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import UsageError, WorkerError
from evalcore.partition import _WIDTH, keyed_metrics, score_partition
from evalcore.runspec import SpecLike
from evalcore.scoring import _COUNTED, RunReport, _plan, summarize_run, write_scores_jsonl
from evalcore.shards import _stored_row, judge_share
from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.judge import CachedCall, JudgeConfig
    from evalcore.metrics import Metric
    from evalcore.store import Store
    from evalcore.store.queries import SessionFilter
    from evalcore.store.runs import Run

__all__ = ["TASK_NAME", "RayRunReport", "score_dataset_ray"]

#: The Ray task's name (and its worker's process title while it runs: ``ray::evalcore_score_partition``).
TASK_NAME = "evalcore_score_partition"
#: The most sessions in a partition; fewer when the dataset is small (four partitions a CPU at least).
PARTITION_MAX = 1000
#: Seconds between two questions to ``should_stop`` while no partition finishes.
POLL_SECONDS = 0.5

Progress = Callable[[int, int], None]


@dataclass
class RayRunReport(RunReport):
    """What a run scored by Ray did: a ``RunReport`` and its partitions."""

    partitions: int = 0  # the partitions scored and stored by this call
    cpus: int = 0  # the cluster's CPUs when the run started


def _task(
    items: list[dict[str, Any]], metrics: list[Metric], judge: JudgeConfig | None
) -> tuple[list[dict[str, Any]], list[CachedCall]]:
    """On a worker: a partition's rows, and the judge answers it got (for the store's cache)."""
    if judge is None:
        return score_partition(items, metrics), []
    from evalcore.judge.client import MemoryCache

    cache = MemoryCache()
    rows = score_partition(items, metrics, judge=judge, cache=cache)
    return rows, list(cache.calls.values())


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'evalcore[ray]'") from None
    return ray


def score_dataset_ray(
    store: Store,
    dataset: str,
    specs: Sequence[SpecLike],
    *,
    address: str | None = None,
    judge: JudgeConfig | None = None,
    concurrency: int | None = None,
    filters: SessionFilter | None = None,
    resume: bool = True,
    output: str | os.PathLike[str] | None = None,
    on_progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_start: Callable[[Run], None] | None = None,
    run_id: int | None = None,
    allow_other_endpoint: bool = False,
    partition_size: int | None = None,
    max_retries: int = 3,
) -> RayRunReport:
    """Score ``dataset`` (the sessions ``filters`` match) with ``specs`` as Ray tasks; see the module doc and
    ``evalcore.scoring.score_dataset`` for the other arguments, which mean the same.

    ``address``: the cluster's (``ray.init(address=...)``: ``"auto"``, ``"ray://host:10001"``...). Without it, the
    cluster this process is connected to, else ``$RAY_ADDRESS``'s, else a local one started for this run and
    stopped after it. ``partition_size``: sessions a task scores (default: a quarter of a CPU's share, at most
    ``PARTITION_MAX``; for a judge, at least twice the task's share of the judge calls). ``max_retries``: times a
    task whose worker died is run again before the run fails (``WorkerError``, what was stored kept, the run
    resumable)."""
    keyed = keyed_metrics(specs)
    metrics = [m for _, m in keyed]
    judged = [key for key, m in keyed if m.uses_judge]
    if judged and judge is None:
        raise UsageError(
            f"{', '.join(judged)} need a judge model: set EVALCORE_JUDGE_MODEL (and EVALCORE_BASE_URL) "
            "or pass --judge-model"
        )
    if partition_size is not None and partition_size < 1:
        raise UsageError(f"a partition holds at least one session, got {partition_size}")
    total_calls = (concurrency or judge.concurrency) if judge is not None else 0
    use = judge if judged else None
    ray = _ray()
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"cannot reach the Ray cluster at {address or 'the local machine'}: {exc}") from None
        started = True
    try:
        plan = _plan(
            store, dataset, metrics, filters, resume, use, run_id=run_id, allow_other_endpoint=allow_other_endpoint
        )
        if on_start is not None:
            on_start(plan.run)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        report = RayRunReport(plan.run, plan.resumed, plan.total, plan.skipped, cpus=cpus)
        try:
            stopped = _drive(ray, store, dataset, filters, plan, report, use, total_calls, on_progress,
                             should_stop, partition_size, max_retries)  # fmt: skip
        except Exception as exc:
            failure = WorkerError(f"a Ray task failed: {exc}") if _is_ray_error(ray, exc) else exc
            with suppress(Exception):  # (the database itself failed: the run resumes later)
                store.runs.finish(plan.run.id, "failed", error=f"{type(failure).__name__}: {failure}"[:2000])
            if failure is exc:
                raise
            raise failure from None
    finally:
        if started:
            ray.shutdown()
    report.run = store.runs.finish(plan.run.id, "cancelled" if stopped else "done")
    report.cancelled = stopped
    report.summaries = summarize_run(store, plan.run.id)
    if output is not None:
        write_scores_jsonl(store, plan.run.id, output)
        report.output = str(output)
    return report


def _is_ray_error(ray: Any, exc: Exception) -> bool:
    return isinstance(exc, ray.exceptions.RayError) and not isinstance(exc, ray.exceptions.RayTaskError)


def _drive(
    ray: Any,
    store: Store,
    dataset: str,
    filters: SessionFilter | None,
    plan: Any,
    report: RayRunReport,
    judge: JudgeConfig | None,
    total_calls: int,
    on_progress: Progress | None,
    should_stop: Callable[[], bool] | None,
    partition_size: int | None,
    max_retries: int,
) -> bool:
    """Send the plan's sessions to Ray a partition at a time and store what comes back; True when stopped."""
    todo: list[int] = plan.todo
    cpus = report.cpus
    width = min(cpus, total_calls) if judge is not None else 2 * cpus
    size = partition_size or max(1, min(PARTITION_MAX, math.ceil(len(todo) / (4 * cpus))))
    if judge is not None and partition_size is None:  # enough sessions for a task's share of the judge calls
        size = max(size, _WIDTH * math.ceil(total_calls / width))
    parts = [todo[start : start + size] for start in range(0, len(todo), size)]
    width = max(1, min(width, len(parts)))
    remote = ray.remote(_task).options(name=TASK_NAME, max_retries=max_retries, retry_exceptions=False)
    metrics_ref = ray.put(plan.metrics)
    key_of: dict[int, str] = dict(store.sessions.iter_keyed(dataset, filters))
    runs = store.runs
    completed = plan.skipped
    if on_progress:
        on_progress(completed, plan.total)
    in_flight: dict[Any, tuple[int, list[int]]] = {}  # a task's answer: its slot and its sessions
    free = list(range(width))
    ahead = iter(parts)

    def submit() -> bool:
        pks = next(ahead, None)
        if pks is None:
            return False
        slot = free.pop()
        share = None
        if judge is not None:
            share = dataclasses.replace(judge, concurrency=judge_share(total_calls, slot, width))
        items = [{"key": key_of[pk], "session": session} for pk, session in runs.sessions(pks)]
        in_flight[remote.remote(items, metrics_ref, share)] = (slot, pks)
        return True

    try:
        while free and submit():
            pass
        while in_flight:
            done, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL_SECONDS)
            for ref in done:
                slot, pks = in_flight.pop(ref)
                free.append(slot)
                rows, calls = ray.get(ref)
                _store(store, plan.run.id, pks, key_of, rows, calls)
                report.judge_requests += len(calls)
                report.partitions += 1
                completed += len(pks)
                if on_progress:
                    on_progress(completed, plan.total)
            if should_stop is not None and should_stop():
                return True
            while free and submit():
                pass
        return False
    finally:
        for ref in in_flight:  # stopped, or failed: the tasks still running end without their answers stored
            ray.cancel(ref, force=True)


def _store(
    store: Store, run_id: int, pks: list[int], key_of: dict[int, str], rows: list[dict[str, Any]],
    calls: list[CachedCall],
) -> None:  # fmt: skip
    """A partition's rows stored in one transaction, with the run's counts; then the judge answers it got."""
    pk_of = {key_of[pk]: pk for pk in pks}
    stamp = now()
    stored = []
    counts = [0, 0, 0]
    for row in rows:
        stored.append(_stored_row(run_id, pk_of[row["key"]], row, stamp))
        if row["turn"] == -1:
            counts[_COUNTED[row["status"]]] += 1
    store.runs.write_rows(stored, (counts[0], counts[1], counts[2]))
    if calls:
        from evalcore.judge import StoreJudgeCache

        cache = StoreJudgeCache(store)
        for call in calls:
            cache.put(call)
