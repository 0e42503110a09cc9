"""Solving a task into a dataset of the store: each sample's conversation becomes a session to review and score.

A sample's session is ``<task>-<n>`` (the sample's ``id`` when it has one) answered by the model under
evaluation (its ``assistant_id``): two models' runs of one task are two sets of sessions in one dataset, side
by side on the Dashboard (``evalcore.identity``). A session holds the conversation, the sample's ``target``
as its reference answer, the sample's fields (``metadata["sample"]``), the run (``metadata["solver"]``: the
task, its hash, the models, tokens, cost, latency, every call) and, for a sample that failed, its error
(``metadata["error"]``, shown on Review) with the conversation so far. A sample already solved by the same
task (hash: its text and config), model and sample (its fields) is skipped; one that failed, or whose
sample changed, is solved again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from evalcore.importing import store_sessions
from evalcore.model import ModelClient, ModelConfig
from evalcore.schema import Provenance, Session
from evalcore.solver.run import SampleResult, StopRequested, sample_key, solve
from evalcore.solver.task import Task
from evalcore.store import Store
from evalcore.store.queries import SessionFilter

__all__ = ["SolveReport", "sample_session_id", "solve_into"]

#: Results stored together (a run of many samples saves as it goes; a kill loses at most this many).
FLUSH = 20


@dataclass
class SolveReport:
    """What a solve did: samples solved, failed and skipped, sessions stored, tokens and cost."""

    dataset: str
    model: str
    task: str
    samples: int = 0
    solved: int = 0
    failed: int = 0
    skipped: int = 0
    new: int = 0
    updated: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0
    errors: list[str] = field(default_factory=list)  # one line per failed sample

    def describe(self) -> str:
        """One line a person reads."""
        cost = f", ${self.cost:.4f}" if self.cost else ""
        head = f"{self.samples} samples of {self.task} with {self.model} -> dataset {self.dataset!r}"
        counts = f"{self.solved} solved, {self.failed} failed, {self.skipped} already solved"
        stored = f"{self.new} new sessions, {self.updated} updated"
        tokens = f"{self.input_tokens:,} input and {self.output_tokens:,} output tokens{cost}"
        return f"{head}: {counts}; {stored}; {tokens}"


def task_name(task: Task) -> str:
    """The name a task's sessions carry: its file's name without the extension."""
    return PurePath(task.source).stem or "task"


def sample_session_id(task: Task, index: int, sample: dict[str, Any]) -> str:
    """The ``session_id`` of the sample at ``index`` (0-based): its own ``id``, else ``<task>-<n>``."""
    own = sample.get("id")
    return str(own) if isinstance(own, str | int) and not isinstance(own, bool) else f"{task_name(task)}-{index + 1}"


def solve_into(
    store: Store,
    task: Task,
    samples: Sequence[dict[str, Any]],
    dataset: str,
    config: ModelConfig,
    *,
    concurrency: int = 4,
    places: Sequence[int] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SolveReport:
    """Solve ``samples`` with ``task`` against ``config.model`` (the model under evaluation; ``model_key``s name
    others on the same endpoint), storing each sample's session in ``dataset`` as it finishes.

    ``places`` are the samples' places in their file (``evalcore.solver.samples.place_samples``; default: their
    order here), which name their sessions: a sample keeps its session when a bad line before it is mended.
    ``on_progress(done, total)`` counts samples (skipped ones are done at once); ``should_stop()`` is asked as
    each finishes (True: the run stops there; the samples not finished, those in flight included, are left for
    a later run, which skips the ones stored).
    """
    report = SolveReport(dataset=dataset, model=config.model, task=task_name(task), samples=len(samples))
    where = list(places) if places is not None else list(range(len(samples)))
    ids = [sample_session_id(task, n, s) for n, s in zip(where, samples, strict=True)]
    task_hash = task.hash()
    solved = _solved(store, dataset, config.model)
    first: dict[str, int] = {}
    todo = []
    for i, sid in enumerate(ids):
        if first.setdefault(sid, i) != i:  # two samples, one session: the later is left out, and said
            report.failed += 1
            report.errors.append(
                f"{sid}: the id of sample {where[i] + 1} is sample {where[first[sid]] + 1}'s too; left out"
            )
        elif solved.get(sid) != sample_key(task_hash, config.model, samples[i]):  # new, changed, or failed
            todo.append(i)
    report.skipped = len(samples) - len(todo) - report.failed
    if on_progress:
        on_progress(report.skipped + report.failed, len(samples))
    if todo:
        work = _Work(samples, ids, where, todo)
        asyncio.run(_solve(store, task, work, config, concurrency, report, on_progress, should_stop))
    return report


@dataclass
class _Work:
    """The samples, their session ids and places, and the indexes of those to solve."""

    samples: Sequence[dict[str, Any]]
    ids: list[str]
    places: list[int]
    todo: list[int]


async def _solve(
    store: Store,
    task: Task,
    work: _Work,
    config: ModelConfig,
    concurrency: int,
    report: SolveReport,
    on_progress: Callable[[int, int], None] | None,
    should_stop: Callable[[], bool] | None,
) -> None:
    pending: list[Session] = []
    source = PurePath(task.source).name

    def flush() -> None:
        stored = store_sessions(store, pending, report.dataset, source)
        report.new += stored.new
        report.updated += stored.updated
        report.errors += [p.message for p in stored.problems]
        pending.clear()

    class _Stop(Exception):
        pass

    def done(n: int, result: SampleResult) -> None:
        index = work.todo[n]
        pending.append(_session(result, work.ids[index], config.model, task, work.places[index]))
        _count(report, result, work.ids[index])
        if len(pending) >= FLUSH:
            flush()
        if on_progress:
            on_progress(report.skipped + report.solved + report.failed, report.samples)
        if should_stop is not None and should_stop():
            raise _Stop

    client = ModelClient(config)
    try:
        await solve(
            task,
            [work.samples[i] for i in work.todo],
            client,
            default_model=config.model,
            concurrency=concurrency,
            on_result=done,
            should_stop=should_stop,
        )
    except (_Stop, StopRequested):
        pass
    finally:
        await client.aclose()
        if pending:
            flush()


def _count(report: SolveReport, result: SampleResult, session_id: str) -> None:
    if result.ok:
        report.solved += 1
    else:
        report.failed += 1
        report.errors.append(f"{session_id}: {result.error}")
    report.input_tokens += result.input_tokens or 0
    report.output_tokens += result.output_tokens or 0
    cost = result.cost
    report.cost = None if report.cost is None or (cost is None and result.calls) else report.cost + (cost or 0.0)


def _session(result: SampleResult, session_id: str, model: str, task: Task, index: int) -> Session:
    session = result.session()
    session.session_id = session_id
    session.assistant_id = model
    # The sample's place: the Sessions page lists them in the samples' order, whatever order they finished in.
    session.provenance = Provenance(source=PurePath(task.source).name, format="solver", position=index)
    session.metadata["solver"]["task"] = task_name(task)
    session.metadata["solver"]["sample_key"] = sample_key(result.task_hash, model, result.sample)
    if result.error is not None:
        session.metadata["error"] = {"type": "SolveError", "message": result.error}
    return session


def _solved(store: Store, dataset: str, model: str) -> dict[str, str]:
    """The sessions of ``dataset`` solved by ``model`` without an error: their ids, each with the ``sample_key`` it
    was solved for (the task's hash, the model, the sample: a changed task, config or sample is solved again)."""
    if dataset not in store.datasets.names():
        return {}
    done = {}
    for sid, solver in store.sessions.metadata_of(dataset, "solver", SessionFilter(assistant=model)):
        if isinstance(solver, dict) and not solver.get("error") and sid and isinstance(solver.get("sample_key"), str):
            done[sid] = solver["sample_key"]
    return done
