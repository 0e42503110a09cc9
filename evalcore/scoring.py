"""Scoring runs: metrics over a dataset of the store, every score saved under its run.

A run is resumable: started again with the same metrics, settings and judge, it skips the
sessions already scored (and the judge's cache answers any call made before, for free).
Failures are data: a failed item keeps its error and the run goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from evalcore.errors import UsageError
from evalcore.gcpause import paused_gc
from evalcore.judge import Judge, JudgeConfig
from evalcore.metrics import Metric, MetricResult, create_metric
from evalcore.metrics.aggregate import Summary, summarize
from evalcore.schema import Session
from evalcore.store import Store
from evalcore.store.queries import SessionFilter, iter_pks
from evalcore.store.records import StoredSession
from evalcore.store.runs import Run, Runs, StoreJudgeCache

__all__ = ["RunReport", "score_dataset", "score_sessions", "summarize_run", "write_scores_jsonl"]

Progress = Callable[[int, int], None]
T = TypeVar("T")


@dataclass
class RunReport:
    """What a scoring run did, and the dataset-level summary of each metric."""

    run: Run
    resumed: bool
    sessions: int
    skipped: int
    summaries: list[Summary] = field(default_factory=list)
    judge_requests: int = 0
    output: str | None = None


def _metrics(specs: list[str | dict[str, Any] | Metric]) -> list[Metric]:
    metrics = [create_metric(s) for s in specs]
    if not metrics:
        raise UsageError("name at least one metric")
    keys = [m.key() for m in metrics]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise UsageError(f"metric given twice: {', '.join(twice)}")
    return metrics


def score_dataset(
    store: Store,
    dataset: str,
    specs: list[str | dict[str, Any] | Metric],
    *,
    judge: JudgeConfig | None = None,
    concurrency: int | None = None,
    filters: SessionFilter | None = None,
    resume: bool = True,
    output: str | os.PathLike[str] | None = None,
    on_progress: Progress | None = None,
) -> RunReport:
    """Score ``dataset`` with ``specs`` (names, ``name:key=value`` or metric objects); see the module doc."""
    metrics = _metrics(specs)
    keys = [m.key() for m in metrics]
    params: dict[str, Any] = {m.key(): {"name": m.name, **m.params()} for m in metrics}
    if filters is not None and filters.as_dict():
        params["__filters__"] = filters.as_dict()  # a run resumes only over the same selection
    judged = [m.key() for m in metrics if m.uses_judge]
    if judged and judge is None:
        raise UsageError(
            f"{', '.join(judged)} need a judge model: set EVALCORE_JUDGE_MODEL (and EVALCORE_BASE_URL) "
            "or pass --judge-model"
        )
    if judge is not None and concurrency:
        judge = dataclasses.replace(judge, concurrency=concurrency)  # the caller's config stays as it was
    judge_model = judge.model if judged and judge else None
    runs = Runs(store)
    pks = list(iter_pks(store, dataset, filters))
    run = runs.resumable(dataset, keys, params, judge_model) if resume else None
    resumed = run is not None
    if run is None:
        run = runs.create(
            dataset,
            keys,
            params,
            judge_model=judge_model,
            judge_base_url=judge.public_url if judged and judge else None,  # never its credentials
            n_items=len(pks) * len(keys),
        )
    elif run.n_items != len(pks) * len(keys):
        run = runs.set_items(run.id, len(pks) * len(keys))  # the dataset grew (or shrank) since
    done = runs.done_sessions(run.id, keys)
    todo = [pk for pk in pks if pk not in done]
    client = Judge(judge, StoreJudgeCache(store)) if judged and judge else None
    width = max(1, (concurrency or (judge.concurrency if judge else 1)) * 2)
    _run(_score_all(store, runs, run.id, todo, metrics, client, width, len(pks) - len(todo), len(pks), on_progress))
    finished = runs.finish(run.id)
    report = RunReport(
        finished,
        resumed,
        len(pks),
        len(pks) - len(todo),
        summarize_run(store, run.id),
        client.requests if client else 0,
    )
    if output is not None:
        write_scores_jsonl(store, run.id, output)
        report.output = str(output)
    return report


async def _score_all(
    store: Store,
    runs: Runs,
    run_id: int,
    todo: list[int],
    metrics: list[Metric],
    judge: Judge | None,
    width: int,
    already: int,
    total: int,
    on_progress: Progress | None,
) -> None:
    pending: list[tuple[int, str, MetricResult]] = []
    completed = already
    flushed = time.monotonic()
    if on_progress:
        on_progress(completed, total)

    def collect(stored: StoredSession, results: list[tuple[str, MetricResult]]) -> None:
        nonlocal completed
        pending.extend((stored.pk, key, r) for key, r in results)
        completed += 1
        # Saved often enough that a hard kill loses little: every 2,000 results or 2 seconds.
        if len(pending) >= 2000 or time.monotonic() - flushed > 2.0:
            flush()
        if on_progress:
            on_progress(completed, total)

    def flush() -> None:
        nonlocal flushed
        if pending:
            runs.write(run_id, pending)
            pending.clear()
        flushed = time.monotonic()

    in_flight: set[asyncio.Task[tuple[StoredSession, list[tuple[str, MetricResult]]]]] = set()
    keyed = [(m.key(), m) for m in metrics]  # a key is computed once, not once per result
    try:
        for start in range(0, len(todo), 500):
            sessions = store.get_many(todo[start : start + 500])
            if judge is None:  # deterministic only: no tasks, no event-loop overhead per item
                with paused_gc():
                    for stored in sessions:
                        collect(stored, [(key, r) for key, m in keyed for r in m.evaluate(stored.session)])
                continue
            for stored in sessions:
                in_flight.add(asyncio.create_task(_score_one(stored, metrics, judge)))
                if len(in_flight) >= width:
                    finished, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for task in finished:
                        collect(*task.result())
            if in_flight:
                finished, in_flight = await asyncio.wait(in_flight)
                for task in finished:
                    collect(*task.result())
    finally:
        for task in in_flight:  # stopped early: let the calls in flight end before closing the client
            task.cancel()
        await asyncio.gather(*in_flight, return_exceptions=True)
        flush()
        if judge is not None:
            await judge.aclose()


async def _score_one(
    stored: StoredSession, metrics: list[Metric], judge: Judge
) -> tuple[StoredSession, list[tuple[str, MetricResult]]]:
    keyed = await _evaluate(stored.session, metrics, judge)
    return stored, [(key, result) for key, results in keyed.items() for result in results]


def score_sessions(
    sessions: list[Session],
    specs: list[str | dict[str, Any] | Metric],
    *,
    judge: JudgeConfig | None = None,
) -> list[dict[str, list[MetricResult]]]:
    """Score sessions held in memory (no store, nothing saved): for each session, each metric's
    results keyed by the metric's key (per-turn results first, the session's last)."""
    metrics = _metrics(specs)
    judged = [m.key() for m in metrics if m.uses_judge]
    if judged and judge is None:
        raise UsageError(f"{', '.join(judged)} need a judge model (a JudgeConfig)")
    if not judged:
        keyed = [(m.key(), m) for m in metrics]
        with paused_gc():
            return [{key: metric.evaluate(session) for key, metric in keyed} for session in sessions]

    async def run() -> list[dict[str, list[MetricResult]]]:
        assert judge is not None
        async with Judge(judge) as client:
            scored = await asyncio.gather(*(_evaluate(s, metrics, client) for s in sessions))
        return list(scored)

    return _run(run())


def _run(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end, also from code that already runs an event loop (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # a loop of its own, on a thread
        return pool.submit(asyncio.run, work).result()


async def _evaluate(session: Session, metrics: list[Metric], judge: Judge) -> dict[str, list[MetricResult]]:
    """Every metric's results for one session, keyed by the metric's key (metrics one after another)."""
    return {m.key(): await m.evaluate_async(session, judge) for m in metrics}


def summarize_run(store: Store, run_id: int) -> list[Summary]:
    """Each metric of the run over the dataset: count, mean and interval, failed, not applicable."""
    runs = Runs(store)
    run = runs.get(run_id)
    values: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for metric, status, value, warned in runs.session_values(run_id):
        if status == "ok" and value is not None:
            values[metric].append(value)
        counts[metric][status] += 1
        counts[metric]["warnings"] += warned
    return [
        summarize(
            key,
            values[key],
            failed=counts[key]["error"],
            not_applicable=counts[key]["not_applicable"],
            warnings=counts[key]["warnings"],
        )
        for key in run.metrics
    ]


def write_scores_jsonl(store: Store, run_id: int, path: str | os.PathLike[str]) -> int:
    """One line per (session, metric): session_id, position, metric, value, reason, error.

    The file appears whole or not at all, as every output does (see :mod:`evalcore.outputs`).
    """
    from evalcore.outputs import atomic_output

    count = 0
    with atomic_output(path) as out:
        for row in Runs(store).scores(run_id):
            line: dict[str, Any] = {
                "session_id": row.session_id,
                "position": row.position,
                "metric": row.metric,
                "value": row.value,
                "reason": row.reason,
                "error": row.error,
            }
            if row.sub:
                line["parts"] = row.sub
            if row.status == "not_applicable":
                line["not_applicable"] = True
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
    return count
