"""Scoring a partition of sessions with no store: plain session JSON in, plain score rows out.

What any engine runs on its workers (a shard of ``evalcore score --shard``, a Spark ``mapPartitions``, a Ray
task): ``score_partition`` holds no store, no connection and no global state, and its rows are dicts of plain
values (picklable, one Arrow column each), the same rows a one-process run stores (``evalcore.scoring``), with
the session's stored key in place of its row id. ``evalcore import-scores`` stores them under one run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from evalcore._infra.gcpause import paused_gc
from evalcore.errors import UsageError
from evalcore.identity import identity_key
from evalcore.metrics import Metric, MetricResult, create_metric
from evalcore.metrics.calls import SessionCalls
from evalcore.runspec import MetricSpec, SpecLike
from evalcore.schema import SCHEMA_VERSION, Session
from evalcore.store.jsontext import loads

if TYPE_CHECKING:
    from evalcore.judge import Judge, JudgeCache, JudgeConfig

__all__ = ["ROW_COLUMNS", "keyed_metrics", "partition_rows", "row_of", "score_partition", "score_row", "session_key"]

T = TypeVar("T")
#: The columns of a partition's score row, in order: the session's stored key, then a stored score's columns.
ROW_COLUMNS = (
    "key", "turn", "metric", "status", "value", "reason", "error", "sub", "warnings", "calls", "cached",
    "input_tokens", "output_tokens", "cost", "latency_ms",
)  # fmt: skip
_SHORT = 9  # a ``score_row`` without sub-scores, warnings or judge usage
#: Judged sessions in flight at a time, per allowed judge call (memory stays flat).
_WIDTH = 2


def score_row(run_id: int, pk: int, key: str, r: MetricResult, stamp: str) -> tuple[Any, ...]:
    """A result as a row of the ``scores`` table (``Runs.write_rows``)."""
    u = r.usage
    if u is None and not r.sub and not r.warnings:  # the common case of deterministic metrics: a short row
        return (run_id, pk, -1 if r.turn is None else r.turn, key, r.status, r.value, r.reason or r.not_applicable,
                r.error, stamp)  # fmt: skip
    return (
        run_id, pk, -1 if r.turn is None else r.turn, key, r.status, r.value, r.reason or r.not_applicable,
        r.error, _json_text(r.sub) if r.sub else None, _json_text(r.warnings) if r.warnings else None,
        u.calls if u else None, u.cached if u else None, u.input_tokens if u else None,
        u.output_tokens if u else None, u.cost if u else None, u.latency_ms if u else None, stamp,
    )  # fmt: skip


def _json_text(value: Any) -> str:
    """``json.dumps(value)`` as JSON text, read back the same (``json.loads``), at orjson's speed: the stdlib
    writes what orjson cannot (NaN and infinities, which orjson writes as null; integers beyond 64 bits)."""
    try:
        text = orjson.dumps(value)
    except TypeError:
        return json.dumps(value)
    return json.dumps(value) if b"null" in text else text.decode()


def row_of(session_key: str, metric_key: str, r: MetricResult) -> dict[str, Any]:
    """One result of one session as a partition's row (``ROW_COLUMNS``): what ``score_row`` stores, with the
    session's key for its row id and no run or time stamp."""
    stored = score_row(0, 0, metric_key, r, "")
    values = stored[2:8] + (None,) * 8 if len(stored) == _SHORT else stored[2:16]
    return dict(zip(ROW_COLUMNS, (session_key, *values), strict=True))


def keyed_metrics(specs: Sequence[SpecLike]) -> list[tuple[str, Metric]]:
    """Each metric of ``specs`` with its key, in order; none, or one given twice, is a ``UsageError``."""
    metrics = [s.metric() if isinstance(s, MetricSpec) else create_metric(s) for s in specs]
    if not metrics:
        raise UsageError("name at least one metric")
    keys = [m.key() for m in metrics]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise UsageError(f"metric given twice: {', '.join(twice)}")
    return list(zip(keys, metrics, strict=True))


def session_key(data: Mapping[str, Any], where: str = "") -> str:
    """The stored key of a session given as its JSON (``evalcore.identity.identity_key``): from its
    ``session_id`` and ``assistant_id``. A session without a ``session_id`` is known by its place in the file it
    was imported from, which its JSON does not tell: give it as ``{"key": ..., "session": ...}``."""
    session_id = data.get("session_id")
    if not isinstance(session_id, str):
        raise UsageError(
            f'{where or "a session"} has no session_id: give it with its stored key, as {{"key": ..., "session": ...}}'
        )
    assistant = data.get("assistant_id")
    return identity_key(session_id, assistant if isinstance(assistant, str) else None, "", None)


def _keyed_json(sessions: Iterable[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each session of ``sessions`` (its JSON as a dict or text, a ``Session``, or ``{"key": k, "session": s}``)
    with its key, as JSON (a dict)."""
    for index, item in enumerate(sessions):
        where = f"session #{index} of the partition"
        key: str | None = None
        if isinstance(item, Mapping) and "session" in item and "key" in item and "messages" not in item:
            key, item = item["key"], item["session"]
            if not isinstance(key, str):
                raise UsageError(f"{where}: its key must be text, got {type(key).__name__}")
        if isinstance(item, Session):
            data = item.model_dump(mode="json")
        elif isinstance(item, str | bytes):
            data = loads(item)  # (exact for NaN and big integers, as the store reads its JSON)
        elif isinstance(item, Mapping):
            data = dict(item)
        else:
            raise UsageError(f"{where}: a session is its JSON (a dict or text), got {type(item).__name__}")
        if not isinstance(data, dict):
            raise UsageError(f"{where}: a session is a JSON object, got {type(data).__name__}")
        if "schema_version" in data:  # a line of ``evalcore export --to evalcore``
            version = data.pop("schema_version")
            if not isinstance(version, int) or version > SCHEMA_VERSION:
                raise UsageError(f"{where}: schema_version {version!r} is not one this evalcore reads")
        yield key if key is not None else session_key(data, where), data


def partition_rows(
    items: Iterable[tuple[str, Session | SessionCalls]], keyed: list[tuple[str, Metric]]
) -> Iterator[dict[str, Any]]:
    """The rows of deterministic ``keyed`` metrics over ``(key, session)`` items (a session's ``SessionCalls``
    when every metric ``reads_calls``)."""
    for key, session in items:
        if isinstance(session, SessionCalls):
            for metric_key, metric in keyed:
                for r in metric.evaluate_calls(session):
                    yield row_of(key, metric_key, r)
        else:
            for metric_key, metric in keyed:
                for r in metric.evaluate(session):
                    yield row_of(key, metric_key, r)


def _session(data: dict[str, Any]) -> Session:
    return Session.model_validate(data)


def score_partition(
    sessions: Iterable[Any],
    metrics: Sequence[SpecLike],
    *,
    judge: JudgeConfig | None = None,
    cache: JudgeCache | None = None,
) -> list[dict[str, Any]]:
    """Score ``sessions`` with ``metrics``; the score rows (``ROW_COLUMNS``), each session's in metric order.

    ``sessions``: each a session's JSON (a dict or text, as ``evalcore export --to evalcore`` writes it; keyed by
    its ``session_id`` and ``assistant_id``), a ``Session``, or ``{"key": stored key, "session": its JSON}``.
    ``metrics``: names, ``name:key=value`` strings, dicts, metric objects or ``MetricSpec``. ``judge`` is needed
    by judge metrics, which make at most ``judge.concurrency`` calls at a time; ``cache`` (a ``JudgeCache``, by
    default one in memory) answers a call made before. Failures are rows (status ``error``), as in a run.

    Pure: no store, no global state; the rows are plain values, picklable, for any engine's workers.
    """
    keyed = keyed_metrics(metrics)
    judged = [key for key, m in keyed if m.uses_judge]
    if judged and judge is None:
        raise UsageError(f"{', '.join(judged)} need a judge model (a JudgeConfig)")
    with paused_gc():
        given = list(_keyed_json(sessions))
        if not judged:
            calls_only = all(m.reads_calls for _, m in keyed)
            read: Callable[[dict[str, Any]], Session | SessionCalls] = (
                SessionCalls.from_json if calls_only else _session
            )
            return list(partition_rows(((key, read(data)) for key, data in given), keyed))
    assert judge is not None
    return _run(judged_rows([(key, _session(data)) for key, data in given], keyed, judge, cache))


async def judged_rows(
    items: list[tuple[str, Session]], keyed: list[tuple[str, Metric]], config: JudgeConfig, cache: JudgeCache | None
) -> list[dict[str, Any]]:
    """The rows of ``keyed`` metrics (some judged) over ``items``, with at most ``config.concurrency`` judge calls
    at a time and ``2 x`` that many sessions in flight; in the order of ``items``."""
    import asyncio

    from evalcore.judge import Judge

    async def one(client: Judge, key: str, session: Session) -> list[dict[str, Any]]:
        return [row_of(key, metric_key, r) for metric_key, m in keyed for r in await m.evaluate_async(session, client)]

    width = max(1, config.concurrency) * _WIDTH
    gate = asyncio.Semaphore(width)

    async def gated(client: Judge, key: str, session: Session) -> list[dict[str, Any]]:
        async with gate:
            return await one(client, key, session)

    async with Judge(config, cache) as client:
        scored = await asyncio.gather(*(gated(client, key, session) for key, session in items))
    return [row for rows in scored for row in rows]


def _run(work: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end, also from code that already runs an event loop (a notebook, a Ray actor)."""
    import asyncio
    import concurrent.futures

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # a loop of its own, on a thread
        return pool.submit(asyncio.run, work).result()
