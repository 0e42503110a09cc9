"""Scoring runs: metrics over a dataset of the store, every score saved under its run.

A run is resumable: started again with the same metrics, settings, filters and judge, it skips the
sessions already scored (and the judge's cache answers any call made before, for free). Failures
are data: a failed item keeps its error and the run goes on.

The engine has three parts: a plan (which run, which sessions are left, which metrics), a sink
(buffers results, saves them every few thousand or every two seconds with the run's live counts,
reports progress), and two paths that feed the sink: deterministic metrics scored in a plain loop,
and judged ones with a bounded number of sessions in flight. ``should_stop`` is asked between
sessions; when it says stop, what was scored is saved and the run is marked "cancelled" (resumable).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import json
import multiprocessing
import os
import time
from collections import defaultdict, deque
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from evalcore._infra.gcpause import paused_gc
from evalcore._infra.workers import can_fork, fork_pool, worker_failures
from evalcore.errors import UsageError
from evalcore.judge import JudgeConfig
from evalcore.metrics import Metric, MetricResult, create_metric
from evalcore.metrics.aggregate import Summary, summarize_counts
from evalcore.metrics.aggregate import prepare as prepare_summary
from evalcore.metrics.calls import SessionCalls
from evalcore.partition import score_partition, score_row
from evalcore.resuming import pick_run
from evalcore.runspec import MetricSpec, SpecLike
from evalcore.schema import Session
from evalcore.store import Store, open_store
from evalcore.store.engine import connections_open
from evalcore.store.jsontext import loads
from evalcore.store.queries import SessionFilter
from evalcore.store.records import now
from evalcore.store.runs import Run, RunProgress, Runs

if TYPE_CHECKING:
    from evalcore.judge import Judge

__all__ = [
    "RunProgress",
    "RunReport",
    "resume_target",
    "run_progress",
    "save_results",
    "score_partition",
    "score_dataset",
    "score_row",
    "score_sessions",
    "session_calls",
    "summarize_run",
    "write_scores_jsonl",
]

Progress = Callable[[int, int], None]
T = TypeVar("T")

#: The sink saves its buffer once it holds this many results, or once this many seconds have passed.
FLUSH_RESULTS = 10_000
FLUSH_SECONDS = 2.0
#: Sessions read from the store at a time (memory stays flat in the number of sessions).
BATCH = 500
#: Where a status is counted in a run's (ok, failed, not applicable) counts.
_COUNTED = {"ok": 0, "error": 1, "not_applicable": 2}
#: Fewer sessions than this are scored in this process even when worker processes are asked for.
PARALLEL_MIN = 4 * BATCH
#: The most sessions a worker process scores, and saves in one transaction, at a time. Each transaction of
#: the store is made durable (an fsync), and the scores' indexes make its pages scattered: on 40,000 scores,
#: 40 transactions cost twice the time of 8.
WORKER_BATCH_MAX = 5000


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
    cancelled: bool = False  # stopped by ``should_stop``: resumable later


def _metrics(specs: Sequence[SpecLike]) -> list[Metric]:
    metrics = [s.metric() if isinstance(s, MetricSpec) else create_metric(s) for s in specs]
    if not metrics:
        raise UsageError("name at least one metric")
    keys = [m.key() for m in metrics]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise UsageError(f"metric given twice: {', '.join(twice)}")
    return metrics


def run_progress(store: Store, run_id: int) -> RunProgress:
    """How far run ``run_id`` is, read from the store: counts saved so far and the items in all.

    Readable from any thread or process while the run goes (the counts move at each save of the sink).
    """
    return store.runs.progress(run_id)


def save_results(store: Store, run_id: int, scored: list[tuple[int, str, MetricResult]]) -> None:
    """Store results of run ``run_id``: ``(session_pk, metric key, result)``; a result stored again replaces the
    old one. The run's live counts are left alone."""
    stamp = now()
    store.runs.write_rows([score_row(run_id, pk, key, r, stamp) for pk, key, r in scored])


def session_calls(runs: Runs, pks: list[int]) -> list[tuple[int, SessionCalls]]:
    """The tool calls of the sessions under ``pks`` (``(pk, calls)`` in that order, missing ones left out), as
    ``SessionCalls.of`` gives them for ``Runs.sessions``' sessions, read without building the sessions' models:
    what a run whose every metric ``reads_calls`` scores. A session with edits is read through
    ``Store.get_many``."""
    return runs.read_unedited(
        pks, lambda data: SessionCalls.from_json(loads(data)), lambda stored: SessionCalls.of(stored.session)
    )  # (loads: exact for NaN and big integers)


# -- the plan ---------------------------------------------------------------------------------


@dataclass
class _Plan:
    """What a run scores: its row, its metrics, the sessions left to score and how many it has in all."""

    run: Run
    resumed: bool
    metrics: list[Metric]
    todo: list[int]
    total: int  # sessions the run covers

    @property
    def skipped(self) -> int:
        return self.total - len(self.todo)

    @property
    def keyed(self) -> list[tuple[str, Metric]]:
        return [(m.key(), m) for m in self.metrics]  # a key is computed once, not once per result


def _params(metrics: list[Metric]) -> dict[str, Any]:
    """The run's ``params``: each key's ``{"name": ..., **parameters}``."""
    return {m.key(): {"name": m.name, **m.params()} for m in metrics}


def _plan(
    store: Store,
    dataset: str,
    metrics: list[Metric],
    filters: SessionFilter | None,
    resume: bool,
    judge: JudgeConfig | None,
    *,
    run_id: int | None = None,
    allow_other_endpoint: bool = False,
) -> _Plan:
    keys = [m.key() for m in metrics]
    params = _params(metrics)
    runs = store.runs
    run = None
    if resume or run_id is not None:  # (before reading the sessions: a refusal costs nothing)
        run = pick_run(
            store, dataset, keys, params, judge, filters, run_id=run_id, allow_other_endpoint=allow_other_endpoint
        )
    pks = list(store.sessions.iter_pks(dataset, filters))
    items = len(pks) * len(keys)
    resumed = run is not None
    if run is None:
        model, url = (judge.model, judge.public_url) if judge is not None else (None, None)
        run = runs.create(dataset, keys, params, judge_model=model, judge_base_url=url, n_items=items, filters=filters)
        return _Plan(run, False, metrics, pks, len(pks))
    if run.n_items != items:
        runs.set_items(run.id, items)  # the dataset grew (or shrank) since
    run = runs.recount(run.id, status="running")  # a cancelled or failed run goes on; its counts start true
    done = runs.done_sessions(run.id, keys)
    return _Plan(run, resumed, metrics, [pk for pk in pks if pk not in done], len(pks))


# -- the sink ---------------------------------------------------------------------------------


class _Sink:
    """Takes each session's results; saves them in batches with the run's live counts; reports progress.

    Results become table rows at once (the result objects do not pile up); a save happens every
    ``FLUSH_RESULTS`` results or ``FLUSH_SECONDS`` seconds, so a hard kill loses little and a reader
    of the run sees its counts move.
    """

    def __init__(self, runs: Runs, plan: _Plan, on_progress: Progress | None) -> None:
        self.runs = runs
        self.run_id = plan.run.id
        self.total = plan.total
        self.completed = plan.skipped
        self.on_progress = on_progress
        self.rows: list[tuple[Any, ...]] = []
        self.counts = [0, 0, 0]  # ok, failed, not applicable session-level results not yet saved
        self.stamp = now()
        self.saved = time.monotonic()
        if on_progress:
            on_progress(self.completed, self.total)

    def add(self, pk: int, results: list[tuple[str, MetricResult]]) -> None:
        """One session's results, every metric's (per-turn results and the session's)."""
        run_id, stamp, rows, counts = self.run_id, self.stamp, self.rows, self.counts
        for key, r in results:
            rows.append(score_row(run_id, pk, key, r, stamp))
            if r.turn is None:
                counts[_COUNTED[r.status]] += 1
        self.completed += 1
        if len(rows) >= FLUSH_RESULTS or time.monotonic() - self.saved > FLUSH_SECONDS:
            self.flush()
        if self.on_progress:
            self.on_progress(self.completed, self.total)

    def add_saved(self, sessions: int) -> None:
        """``sessions`` more sessions scored and saved (with their counts) by a worker process."""
        self.completed += sessions
        if self.on_progress:
            self.on_progress(self.completed, self.total)

    def flush(self) -> None:
        """Save what is buffered, with the counts it adds to the run."""
        if self.rows:
            self.runs.write_rows(self.rows, (self.counts[0], self.counts[1], self.counts[2]))
            self.rows = []
            self.counts = [0, 0, 0]
        self.stamp = now()
        self.saved = time.monotonic()


# -- the two paths ----------------------------------------------------------------------------


def _score_deterministic(
    store: Store, plan: _Plan, sink: _Sink, should_stop: Callable[[], bool] | None, workers: int = 1
) -> bool:
    """Score every session left with deterministic metrics, a batch at a time; True when stopped early."""
    if workers > 1 and len(plan.todo) >= PARALLEL_MIN and can_fork():
        store.before_fork()  # no connection crosses the fork: each worker opens its own
        if connections_open(store.identity) == 0:  # (another store of this process has it open: score here instead)
            return _score_in_processes(store, plan, sink, should_stop, workers)
    for pk, results in _results(store.runs, plan.keyed, plan.todo):
        if should_stop is not None and should_stop():
            return True
        sink.add(pk, results)
    return False


def _results(
    runs: Runs, keyed: list[tuple[str, Metric]], pks: list[int]
) -> Iterator[tuple[int, list[tuple[str, MetricResult]]]]:
    """Each session of ``pks`` with every metric's results, read ``BATCH`` sessions at a time (memory stays flat):
    from the sessions' tool calls alone (``session_calls``) when every metric reads only those, else from
    the sessions."""
    calls_only = all(metric.reads_calls for _, metric in keyed)
    for start in range(0, len(pks), BATCH):
        chunk = pks[start : start + BATCH]
        with paused_gc():
            if calls_only:
                for pk, calls in session_calls(runs, chunk):
                    yield pk, [(key, r) for key, metric in keyed for r in metric.evaluate_calls(calls)]
            else:
                for pk, session in runs.sessions(chunk):
                    yield pk, [(key, r) for key, metric in keyed for r in metric.evaluate(session)]


# Set in each worker process of ``_score_in_processes`` (forked: inherited, never pickled).
_worker: tuple[Store, list[tuple[str, Metric]], int, Any] | None = None


def _score_in_processes(
    store: Store, plan: _Plan, sink: _Sink, should_stop: Callable[[], bool] | None, workers: int
) -> bool:
    """The deterministic path on ``workers`` forked processes: each reads, scores and saves batches of sessions
    (with the run's live counts), one worker writing at a time; this process hands out the batches, at most
    two per worker in flight (memory stays flat), and reports progress. Asks ``should_stop`` between batches.

    The workers save what they score themselves: this process would otherwise spend as long taking their
    rows and writing them as a worker spends scoring (on two CPUs, the time of the whole run)."""
    batches = _worker_batches(plan.todo, workers)
    lock = multiprocessing.get_context("fork").Lock()
    pool = fork_pool(workers, _start_worker, (store.url, store.busy_timeout, plan.keyed, plan.run.id, lock))
    pending: deque[concurrent.futures.Future[int]] = deque()
    try:
        with worker_failures():  # a worker killed: WorkerError, the run failed with what was saved kept
            ahead = iter(batches)
            for batch in itertools.islice(ahead, 2 * workers):
                pending.append(pool.submit(_score_batch, batch))
            prepare_summary()  # while the workers score, not after them
            while pending:
                sink.add_saved(pending.popleft().result())
                if should_stop is not None and should_stop():
                    return True
                for batch in itertools.islice(ahead, 1):
                    pending.append(pool.submit(_score_batch, batch))
            return False
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _worker_batches(todo: list[int], workers: int) -> list[list[int]]:
    """``todo`` cut into the batches the workers take in turn: each half a worker's share of what is left
    (guided scheduling), from ``WORKER_BATCH_MAX`` down to ``BATCH`` sessions. Big batches first (each is one
    transaction), small ones last: the workers end together, not one idle while the other scores a big last
    batch."""
    batches = []
    start = 0
    while start < len(todo):
        left = len(todo) - start
        size = min(WORKER_BATCH_MAX, max(BATCH, left // (2 * workers)))
        if left - size < BATCH:  # no crumb of a batch at the end
            size = left
        batches.append(todo[start : start + size])
        start += size
    return batches


def _start_worker(url: str, busy_timeout: float, keyed: list[tuple[str, Metric]], run_id: int, lock: Any) -> None:
    """A worker's start (after ``evalcore._infra.workers.start_worker``): its own connection."""
    global _worker
    _worker = (open_store(url, busy_timeout=busy_timeout), keyed, run_id, lock)


def _score_batch(pks: list[int]) -> int:
    """In a worker: score the sessions ``pks`` and save their scores with the (ok, failed, n/a) session-level
    counts they add to the run, in one transaction; the number of sessions scored."""
    assert _worker is not None
    store, keyed, run_id, lock = _worker
    stamp = now()
    rows: list[tuple[Any, ...]] = []
    counts = [0, 0, 0]
    runs = store.runs
    scored = 0
    for pk, results in _results(runs, keyed, pks):  # only the rows are kept
        scored += 1
        for key, r in results:
            rows.append(score_row(run_id, pk, key, r, stamp))
            if r.turn is None:
                counts[_COUNTED[r.status]] += 1
    with lock:  # the workers take turns (waiting here costs nothing; SQLite's busy wait sleeps in steps)
        runs.write_rows(rows, (counts[0], counts[1], counts[2]), check=True)
    return scored


async def _score_judged(
    store: Store, plan: _Plan, sink: _Sink, judge: Judge, width: int, should_stop: Callable[[], bool] | None
) -> bool:
    """Score every session left with the judge, at most ``width`` sessions in flight; True when stopped early."""
    import asyncio

    runs = store.runs
    in_flight: set[asyncio.Task[tuple[int, list[tuple[str, MetricResult]]]]] = set()

    def collect(done: set[asyncio.Task[tuple[int, list[tuple[str, MetricResult]]]]]) -> None:
        for task in done:
            sink.add(*task.result())

    try:
        for start in range(0, len(plan.todo), BATCH):
            for pk, session in runs.sessions(plan.todo[start : start + BATCH]):
                if should_stop is not None and should_stop():
                    return True
                in_flight.add(asyncio.create_task(_score_one(pk, session, plan.metrics, judge)))
                if len(in_flight) >= width:
                    finished, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    collect(finished)
        while in_flight:
            finished, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
            collect(finished)
            if in_flight and should_stop is not None and should_stop():
                return True
        return False
    finally:
        for task in in_flight:  # stopped early: the calls in flight end before the client closes
            task.cancel()
        await asyncio.gather(*in_flight, return_exceptions=True)
        await judge.aclose()


# -- the run ----------------------------------------------------------------------------------


def score_dataset(
    store: Store,
    dataset: str,
    specs: Sequence[SpecLike],
    *,
    judge: JudgeConfig | None = None,
    concurrency: int | None = None,
    filters: SessionFilter | None = None,
    resume: bool = True,
    output: str | os.PathLike[str] | None = None,
    on_progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_start: Callable[[Run], None] | None = None,
    workers: int = 1,
    run_id: int | None = None,
    allow_other_endpoint: bool = False,
) -> RunReport:
    """Score ``dataset`` (the sessions ``filters`` match) with ``specs``; see the module doc.

    ``specs``: names, ``name:key=value`` strings, dicts, metric objects or ``MetricSpec``. ``judge``
    is needed by judge metrics. ``on_progress(sessions done, sessions in all)`` is called as sessions
    are scored; ``should_stop()`` is asked between sessions (True: save, mark the run "cancelled",
    return); ``on_start(run)`` is called once the run exists, before any scoring. An error marks the
    run "failed" (with the error) and is raised; either way, running it again resumes it.

    With ``resume``, the unfinished run of the same metrics, settings, selection and judge model goes on (``run_id``:
    that run, whatever ``resume`` says); one whose judge was called at another endpoint than ``judge``'s is refused
    (``evalcore.resuming.OtherEndpointError``, nothing sent, nothing changed) unless ``allow_other_endpoint``.
    """
    metrics = _metrics(specs)
    judged = [m.key() for m in metrics if m.uses_judge]
    if judged and judge is None:
        raise UsageError(
            f"{', '.join(judged)} need a judge model: set EVALCORE_JUDGE_MODEL (and EVALCORE_BASE_URL) "
            "or pass --judge-model"
        )
    if judge is not None and concurrency:
        judge = dataclasses.replace(judge, concurrency=concurrency)  # the caller's config stays as it was
    use = judge if judged else None
    plan = _plan(
        store, dataset, metrics, filters, resume, use, run_id=run_id, allow_other_endpoint=allow_other_endpoint
    )
    runs = store.runs
    if on_start is not None:
        on_start(plan.run)
    client: Judge | None = None
    if use is not None:
        from evalcore.judge import Judge, StoreJudgeCache  # (asyncio and the model client: only for a judge)

        client = Judge(use, StoreJudgeCache(store))
    sink = _Sink(runs, plan, on_progress)
    try:
        if client is None:
            stopped = _score_deterministic(store, plan, sink, should_stop, workers)
        else:
            width = max(1, (concurrency or client.config.concurrency) * 2)
            stopped = _run(_score_judged(store, plan, sink, client, width, should_stop))
        sink.flush()
    except Exception as exc:
        _save_then_fail(runs, sink, plan.run.id, exc)
        raise
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): what was scored is kept, the run stays "running"
        sink.flush()
        raise
    finished = runs.finish(plan.run.id, "cancelled" if stopped else "done")
    report = RunReport(
        finished,
        plan.resumed,
        plan.total,
        plan.skipped,
        summarize_run(store, plan.run.id),
        client.requests if client else 0,
        cancelled=stopped,
    )
    if output is not None:
        write_scores_jsonl(store, plan.run.id, output)
        report.output = str(output)
    return report


def resume_target(
    store: Store,
    dataset: str,
    specs: Sequence[SpecLike],
    *,
    judge: JudgeConfig | None = None,
    filters: SessionFilter | None = None,
    run_id: int | None = None,
) -> Run | None:
    """The unfinished run ``score_dataset`` with these arguments (and ``resume``) would go on with, or ``None``; a
    run whose judge was called at another endpoint than ``judge``'s is ``OtherEndpointError``. Changes nothing: what
    a caller checks before starting a scoring elsewhere (a worker thread)."""
    metrics = _metrics(specs)
    use = judge if any(m.uses_judge for m in metrics) else None
    return pick_run(store, dataset, [m.key() for m in metrics], _params(metrics), use, filters, run_id=run_id)


def _save_then_fail(runs: Runs, sink: _Sink, run_id: int, exc: Exception) -> None:
    """Keep what was scored and mark the run failed; a database that fails again leaves it as it is."""
    with suppress(Exception):  # the database itself failed: the buffer is lost, the run resumes later
        sink.flush()
    with suppress(Exception):
        runs.finish(run_id, "failed", error=f"{type(exc).__name__}: {exc}"[:2000])


async def _score_one(
    pk: int, session: Session, metrics: list[Metric], judge: Judge
) -> tuple[int, list[tuple[str, MetricResult]]]:
    keyed = await _evaluate(session, metrics, judge)
    return pk, [(key, result) for key, results in keyed.items() for result in results]


def score_sessions(
    sessions: list[Session],
    specs: Sequence[SpecLike],
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

    import asyncio

    from evalcore.judge import Judge

    async def run() -> list[dict[str, list[MetricResult]]]:
        assert judge is not None
        async with Judge(judge) as client:
            scored = await asyncio.gather(*(_evaluate(s, metrics, client) for s in sessions))
        return list(scored)

    return _run(run())


def _run(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end, also from code that already runs an event loop (a notebook)."""
    import asyncio

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
    runs = store.runs
    run = runs.get(run_id)
    values: dict[str, list[tuple[float, int]]] = defaultdict(list)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    grouped, warned = runs.summary_counts(run_id)  # grouped by value in SQL
    for metric, status, value, n in grouped:
        if status == "ok" and value is not None:
            values[metric].append((value, n))
        counts[metric][status] += n
    return [
        summarize_counts(
            key,
            values[key],
            failed=counts[key]["error"],
            not_applicable=counts[key]["not_applicable"],
            warnings=warned.get(key, 0),
        )
        for key in run.metrics
    ]


def write_scores_jsonl(store: Store, run_id: int, path: str | os.PathLike[str]) -> int:
    """One line per (session, metric): session_id, position, metric, value, reason, error.

    The file appears whole or not at all, as every output does (see :mod:`evalcore._infra.outputs`).
    """
    from evalcore._infra.outputs import atomic_output
    from evalcore.exporting import score_records

    store.refuse_as_output(path)
    count = 0
    with atomic_output(path) as out:
        for record in score_records(store, run_id):  # the same records the Export page downloads
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
