"""Metric runs and their scores in the store (``store.runs``): runs' lives and counts, scores written in bulk and
read back for summaries, the Sessions and Review pages, the Dashboard's figures and exports."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from evalcore._infra.gcpause import paused_gc
from evalcore.errors import NotFoundError
from evalcore.schema import Session, Status
from evalcore.store.jsontext import loads
from evalcore.store.outcomes import IMPORTED, is_imported
from evalcore.store.queries import SessionFilter
from evalcore.store.records import RunStatus, StoredSession, now, run_status

if TYPE_CHECKING:
    from evalcore.store.engine import Conn, Engine
    from evalcore.store.store import Store

__all__ = ["RESUMABLE", "SHARD_JOB", "Run", "RunProgress", "Runs", "ScoreRow", "SessionScore"]

#: Where runs written before the filters had a column of their own kept them: a key of ``params``.
_OLD_FILTERS_KEY = "__filters__"
#: Where a run that merges shards (``evalcore.shards``) keeps the work its shards name: a key of ``params``.
SHARD_JOB = "__shard_job__"
#: Statuses of a run that may be resumed (a "done" run is complete).
RESUMABLE = ("running", "cancelled", "failed")
_FILTER_FIELDS = {f.name for f in fields(SessionFilter)}
T = TypeVar("T")
_SHORT = 9  # the length of a score row without sub-scores, warnings or judge usage
_READABLE = ("data", "data, status, tags")  # what ``Runs.read_unedited`` reads of a session
_SCORE_COLUMNS = (
    "run_id", "session_pk", "turn", "metric", "status", "value", "reason", "error", "sub", "warnings", "calls",
    "cached", "input_tokens", "output_tokens", "cost", "latency_ms", "created_at",
)  # fmt: skip


def _upsert(columns: Sequence[str]) -> str:
    """An insert of score rows that replaces a row stored before under the same key, wholly (the columns a short
    row leaves out are set to NULL, as a new row has them)."""
    key = ("run_id", "session_pk", "turn", "metric")
    sets = [f"{c} = excluded.{c}" for c in columns if c not in key]
    sets += [f"{c} = NULL" for c in _SCORE_COLUMNS if c not in columns]
    return (
        f"INSERT INTO scores ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT (run_id, session_pk, turn, metric) DO UPDATE SET {', '.join(sets)}"
    )


_UPSERT_SHORT = _upsert((*_SCORE_COLUMNS[:8], "created_at"))
_UPSERT_FULL = _upsert(_SCORE_COLUMNS)


def filters_of(data: dict[str, Any] | None) -> SessionFilter:
    """A stored filter (``SessionFilter.as_dict``) read back; fields it does not know are left out."""
    if not data:
        return SessionFilter()
    return SessionFilter(**{k: v for k, v in data.items() if k in _FILTER_FIELDS})


class _Counts:
    """What a run and its live progress both tell: how many items of how many have a result."""

    n_items: int
    n_done: int
    n_failed: int
    n_not_applicable: int

    @property
    def items_done(self) -> int:
        """Items with a session-level result so far: scored, failed or not applicable."""
        return self.n_done + self.n_failed + self.n_not_applicable

    @property
    def fraction(self) -> float:
        """How far the run is, from 0 to 1."""
        return min(1.0, self.items_done / self.n_items) if self.n_items else 1.0


@dataclass(frozen=True)
class Run(_Counts):
    """One scoring run over a dataset. Its counts are live: the scorer updates them as it saves scores."""

    id: int
    dataset: str
    metrics: list[str]  # the metrics' keys, in the order given
    params: dict[str, Any]  # {key: {"name": ..., **parameters}}
    judge_model: str | None
    status: RunStatus
    started_at: str
    finished_at: str | None
    n_items: int  # (session, metric) items the run covers
    n_done: int  # ...scored so far
    n_failed: int  # ...failed so far
    n_not_applicable: int  # ...not applicable so far
    filter_data: dict[str, Any] | None = None  # the selection scored, as stored (``filters`` reads it typed)
    judge_base_url: str | None = None
    updated_at: str | None = None  # when the scorer last saved progress
    error: str | None = None  # why a failed run failed
    created_by: str | None = None  # who started it
    imported: bool = False  # the dataset's imported run: the scores that came with its data (``store.outcomes``)
    shard_job: str | None = None  # a run merging shards: the work they name (``evalcore.shards.job_of``)

    @property
    def label(self) -> str:
        """The run as a choice in a list: ``#3 · 2026-11-23 12:04 · turn_count, tool_call_count · done``; the
        imported run: ``#1 · 2026-11-23 12:00 · reward · imported with the data``."""
        state = "imported with the data" if self.imported else self.status
        return f"#{self.id} · {self.started_at[:16].replace('T', ' ')} · {', '.join(self.metrics)} · {state}"

    @property
    def filters(self) -> SessionFilter:
        """The sessions the run scores (an empty filter: the whole dataset)."""
        return filters_of(self.filter_data)

    @property
    def resumable(self) -> bool:
        """Whether scoring again with the same metrics, filters and judge goes on with this run."""
        return self.status in RESUMABLE

    def same_work(
        self, metrics: list[str], params: dict[str, Any], filters: dict[str, Any], judge_model: str | None
    ) -> bool:
        """Whether the run scores ``metrics`` with ``params`` on the sessions ``filters`` (``SessionFilter.as_dict``)
        match, with the judge model ``judge_model``."""
        return (
            self.metrics == metrics
            and self.params == params
            and (self.filter_data or {}) == filters
            and self.judge_model == judge_model
        )


@dataclass(frozen=True)
class RunProgress(_Counts):
    """How far a run is, read from the store while it runs (from any thread or process)."""

    run_id: int
    status: RunStatus
    n_items: int
    n_done: int
    n_failed: int
    n_not_applicable: int
    updated_at: str | None
    error: str | None = None


@dataclass(frozen=True)
class ScoreRow:
    """A stored score with the session it belongs to."""

    session_pk: int
    session_id: str | None
    position: int | None
    metric: str
    turn: int | None
    status: str
    value: float | None
    reason: str | None
    error: str | None
    sub: dict[str, float]
    warnings: list[str]
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    assistant_id: str | None = None  # the session's assistant


@dataclass(frozen=True)
class SessionScore:
    """One score of one session in one run, with what the run says about how it was made."""

    run_id: int
    run_started_at: str
    metric: str
    turn: int | None
    status: str
    value: float | None
    reason: str | None
    error: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    imported: bool = False  # it came with the data (the dataset's imported run)


class ScoreReads:
    """What the Dashboard and the judge-agreement figures read of a run's session-level scores (``store.runs``)."""

    _engine: Engine

    def session_values(self, run_id: int, metric: str) -> list[tuple[int, str, float | None]]:
        """``(session pk, status, value)`` of every session score of ``metric`` in the run (an index-only read)."""
        with self._engine.read() as conn:
            return conn.execute(
                "SELECT session_pk, status, value FROM scores WHERE run_id = ? AND metric = ? AND turn = -1",
                [run_id, metric],
            ).fetchall()

    def value_counts(self, run_id: int, metric: str) -> list[tuple[float, int]]:
        """How many sessions have each value of ``metric`` in the run (scored ones)."""
        with self._engine.read() as conn:
            return conn.execute(
                "SELECT value, count(*) FROM scores WHERE run_id = ? AND metric = ? AND turn = -1 AND status = 'ok' "
                "AND value IS NOT NULL GROUP BY value",
                [run_id, metric],
            ).fetchall()

    def status_counts(self, run_id: int, metric: str) -> dict[str, int]:
        """How many session scores of ``metric`` in the run have each status."""
        with self._engine.read() as conn:
            return dict(
                conn.execute(
                    "SELECT status, count(*) FROM scores WHERE run_id = ? AND metric = ? AND turn = -1 GROUP BY status",
                    [run_id, metric],
                ).fetchall()
            )

    def has_scores(self, run_id: int, metric: str) -> bool:
        """Whether the run has any session score of ``metric``."""
        with self._engine.read() as conn:
            found = conn.execute(
                "SELECT 1 FROM scores WHERE run_id = ? AND metric = ? AND turn = -1 LIMIT 1", [run_id, metric]
            ).fetchone()
        return found is not None

    def value_range(self, run_id: int, metric: str) -> tuple[float | None, float | None]:
        """The smallest and largest value of ``metric`` the run scored (None, None when it scored none)."""
        with self._engine.read() as conn:
            low, high = conn.execute(
                "SELECT min(value), max(value) FROM scores WHERE run_id = ? AND metric = ? AND turn = -1 "
                "AND status = 'ok'",
                [run_id, metric],
            ).fetchone()
        return low, high

    def paired(
        self, run_a: int, run_b: int, metric: str, a: float, b: float, *, limit: int = 50
    ) -> list[tuple[int, float, float]]:
        """``(session pk, value in run_a, value in run_b)`` of the sessions both runs scored ``metric`` at ``a`` and
        ``b`` (rounded to 0.01), in session order."""
        with self._engine.read() as conn:
            return conn.execute(
                "SELECT x.session_pk, x.value, y.value FROM scores x JOIN scores y ON y.run_id = ? "
                "AND y.session_pk = x.session_pk AND y.turn = -1 AND y.metric = x.metric AND y.status = 'ok' "
                "WHERE x.run_id = ? AND x.metric = ? AND x.turn = -1 AND x.status = 'ok' "
                "AND round(CAST(x.value AS NUMERIC), 2) = ? AND round(CAST(y.value AS NUMERIC), 2) = ? "
                "ORDER BY x.session_pk LIMIT ?",
                [run_b, run_a, metric, round(a, 2), round(b, 2), limit],
            ).fetchall()

    def in_order(self, run_id: int, metric: str, *, limit: int, offset: int) -> tuple[list[int], int]:
        """A page of the run's sessions in the order of ``metric`` (lowest first; those it failed or did not apply
        to last), and how many it has in all. Read from the scores index: a page costs its rows."""
        where = "FROM scores WHERE run_id = ? AND metric = ? AND turn = -1"
        with self._engine.read() as conn:
            ok = conn.execute(f"SELECT count(*) {where} AND status = 'ok'", [run_id, metric]).fetchone()[0]
            total = conn.execute(f"SELECT count(*) {where}", [run_id, metric]).fetchone()[0]
            shown = [
                r[0]
                for r in conn.execute(
                    f"SELECT session_pk {where} AND status = 'ok' ORDER BY value NULLS FIRST, session_pk "
                    "LIMIT ? OFFSET ?",
                    [run_id, metric, limit, offset],
                )
            ]
            if len(shown) < limit:
                shown += [
                    r[0]
                    for r in conn.execute(
                        f"SELECT session_pk {where} AND status != 'ok' ORDER BY session_pk LIMIT ? OFFSET ?",
                        [run_id, metric, limit - len(shown), max(0, offset - int(ok))],
                    )
                ]
        return shown, int(total)

    def values_of(self, run_id: int, pks: list[int]) -> dict[tuple[int, str], float | None]:
        """Every session-level value the run gave the sessions ``pks``, by (session, metric)."""
        cells: dict[tuple[int, str], float | None] = {}
        if not pks:
            return cells
        with self._engine.read() as conn:
            for start in range(0, len(pks), 500):
                chunk = pks[start : start + 500]
                for pk, name, value in conn.execute(
                    f"SELECT session_pk, metric, value FROM scores WHERE run_id = ? AND turn = -1 "
                    f"AND session_pk IN ({','.join('?' * len(chunk))})",
                    [run_id, *chunk],
                ):
                    cells[(pk, name)] = value
        return cells

    def error_counts(self, run_id: int) -> list[tuple[str | None, int]]:
        """``(error, how many)`` of the run's failed session-level items, one pair per distinct error text."""
        with self._engine.read() as conn:
            return [
                (error, int(n))
                for error, n in conn.execute(
                    "SELECT error, count(*) FROM scores WHERE run_id = ? AND turn = -1 AND status = 'error' "
                    "GROUP BY error",
                    [run_id],
                ).fetchall()
            ]

    def judge_spend(self, run_ids: list[int]) -> dict[int, tuple[int | None, float | None]]:
        """Each run's judge calls and cost, summed over its judged session scores (``idx_scores_judged``)."""
        if not run_ids:
            return {}
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT run_id, sum(calls), sum(cost) FROM scores WHERE run_id IN ({','.join('?' * len(run_ids))}) "
                "AND turn = -1 AND (calls IS NOT NULL OR cost IS NOT NULL) GROUP BY run_id",
                run_ids,
            ).fetchall()
        return {run_id: (calls, cost) for run_id, calls, cost in rows}

    def mark(self, dataset_id: int) -> tuple[Any, ...]:
        """What changes when a run of the dataset is made: its newest run and how many it has."""
        with self._engine.read() as conn:
            return tuple(
                conn.execute("SELECT max(id), count(*) FROM runs WHERE dataset_id = ?", [dataset_id]).fetchone()
            )


class Runs(ScoreReads):
    """Runs and scores of one store (``store.runs``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine: Engine = store._engine

    def create(
        self,
        dataset: str,
        metrics: list[str],
        params: dict[str, Any],
        *,
        judge_model: str | None = None,
        judge_base_url: str | None = None,
        n_items: int = 0,
        filters: SessionFilter | None = None,
        shard_job: str | None = None,
    ) -> Run:
        """Start a run of ``metrics`` (their keys) on ``dataset`` (the sessions ``filters`` match).

        ``params``: each key's ``{"name": ..., **parameters}``. ``judge_base_url`` is stored as given: the caller
        strips its credentials first (``JudgeConfig.public_url``). ``shard_job``: the run merges the shards of
        this work (``evalcore.shards``)."""
        self._store.require("score", "score a dataset")
        dataset_id = self._store.datasets.id_of(dataset)
        params = {k: v for k, v in params.items() if k not in (_OLD_FILTERS_KEY, SHARD_JOB)}
        if shard_job is not None:
            params[SHARD_JOB] = shard_job
        chosen = filters.as_dict() if filters is not None else {}
        stamp = now()
        with self._engine.write() as conn:
            author, author_id = self._store.author(conn)
            run_id = conn.execute(
                "INSERT INTO runs (dataset_id, metrics, params, judge_model, judge_base_url, status, started_at, "
                "n_items, filters, updated_at, created_by, created_by_id) "
                "VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?) RETURNING id",
                [dataset_id, json.dumps(metrics), json.dumps(params), judge_model, judge_base_url, stamp, n_items,
                 json.dumps(chosen) if chosen else None, stamp, author, author_id],
            ).fetchone()[0]  # fmt: skip
        return self.get(run_id)

    def get(self, run_id: int) -> Run:
        """The run ``run_id``."""
        if not -(2**63) <= run_id < 2**63:  # beyond SQLite's integers: no such run
            raise NotFoundError(f"no run #{run_id}")
        with self._engine.read() as conn:
            row = conn.execute(f"{self._SELECT} WHERE r.id = ?", [run_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no run #{run_id}")
        return _run(row)

    _SELECT = (
        "SELECT r.id, d.name, r.metrics, r.params, r.judge_model, r.status, r.started_at, r.finished_at, "
        "r.n_items, r.n_done, r.n_failed, r.n_not_applicable, r.filters, r.judge_base_url, r.updated_at, r.error, "
        "r.created_by FROM runs r JOIN datasets d ON d.id = r.dataset_id"
    )

    def progress(self, run_id: int) -> RunProgress:
        """How far run ``run_id`` is, as last saved by its scorer (cheap: one row)."""
        if not -(2**63) <= run_id < 2**63:
            raise NotFoundError(f"no run #{run_id}")
        with self._engine.read() as conn:
            row = conn.execute(
                "SELECT id, status, n_items, n_done, n_failed, n_not_applicable, updated_at, error FROM runs "
                "WHERE id = ?",
                [run_id],
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no run #{run_id}")
        return RunProgress(row[0], run_status(row[1]), *row[2:])

    def recent(self, dataset: str | None = None, *, limit: int | None = None) -> list[Run]:
        """Every run (of ``dataset``), newest first (the ``limit`` newest, when given)."""
        sql = self._SELECT
        args: list[Any] = []
        if dataset is not None:
            sql += " WHERE d.name = ?"
            args.append(dataset)
        sql += " ORDER BY r.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self._engine.read() as conn:
            return [_run(row) for row in conn.execute(sql, args).fetchall()]

    def resumable(
        self,
        dataset: str,
        metrics: list[str],
        params: dict[str, Any],
        judge_model: str | None,
        filters: SessionFilter | None = None,
    ) -> Run | None:
        """The latest unfinished (running, cancelled or failed) run of the same metrics, settings, filters
        and judge model on ``dataset`` (whatever its endpoint: ``evalcore.resuming`` decides where it goes on)."""
        return next(iter(self.unfinished(dataset, metrics, params, judge_model, filters)), None)

    def unfinished(
        self,
        dataset: str,
        metrics: list[str],
        params: dict[str, Any],
        judge_model: str | None,
        filters: SessionFilter | None = None,
    ) -> list[Run]:
        """Every unfinished run of the same metrics, settings, filters and judge model on ``dataset``, newest
        first."""
        params = {k: v for k, v in params.items() if k != _OLD_FILTERS_KEY}
        chosen = filters.as_dict() if filters is not None else {}
        return [
            run for run in self.recent(dataset) if run.resumable and run.same_work(metrics, params, chosen, judge_model)
        ]

    def set_judge_endpoint(self, run_id: int, judge_base_url: str) -> Run:
        """Record that run ``run_id`` calls its judge at ``judge_base_url`` from now on (stored as given: the caller
        strips its credentials first): a run resumed on another endpoint, confirmed by its user."""
        self._store.require("score", "score a dataset")
        with self._engine.write() as conn:
            conn.execute("UPDATE runs SET judge_base_url = ? WHERE id = ?", [judge_base_url, run_id])
        return self.get(run_id)

    def sessions(self, pks: list[int]) -> list[tuple[int, Session]]:
        """The sessions under ``pks`` as a scorer reads them: ``(pk, session)`` in that order, missing ones
        left out, with reviewers' edits, status and tags applied (as ``Store.get_many`` gives them).

        Reads only what scoring needs; a session with edits is read through ``Store.get_many``.
        """
        return self.read_unedited(pks, _session_of, lambda stored: stored.session, columns="data, status, tags")

    def read_unedited(
        self,
        pks: list[int],
        of_row: Callable[..., T],
        of_stored: Callable[[StoredSession], T],
        *,
        columns: str = "data",
    ) -> list[tuple[int, T]]:
        """``(pk, what)`` for each session of ``pks`` found, in that order: ``of_row(*values)`` of a session no
        reviewer edited, from its stored ``columns`` (``"data"``: its JSON; ``"data, status, tags"``), read 500
        at a time; ``of_stored`` of the one ``Store.get_many`` gives for the others. A scorer's fast path: what it
        needs from the stored JSON, without building models it does not need."""
        if columns not in _READABLE:
            raise ValueError(f"read_unedited reads {' or '.join(_READABLE)}, not {columns!r}")
        found: dict[int, T] = {}
        edited: list[int] = []
        with paused_gc(), self._engine.read() as conn:  # (millions of new objects, no cycles: no collector)
            for start in range(0, len(pks), 500):
                chunk = pks[start : start + 500]
                rows = conn.execute(
                    f"SELECT id, n_edits, {columns} FROM sessions WHERE id IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for pk, n_edits, *values in rows:
                    if n_edits:
                        edited.append(pk)
                    else:
                        found[pk] = of_row(*values)
        if edited:
            found.update((stored.pk, of_stored(stored)) for stored in self._store.sessions.get_many(edited))
        return [(pk, found[pk]) for pk in pks if pk in found]

    def done_sessions(self, run_id: int, metrics: list[str]) -> set[int]:
        """Sessions for which every metric of the run already has its session score."""
        marks = ",".join("?" * len(metrics))
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT session_pk FROM scores WHERE run_id = ? AND turn = -1 AND metric IN ({marks}) "
                "GROUP BY session_pk HAVING count(DISTINCT metric) = ?",
                [run_id, *metrics, len(metrics)],
            )
            return {r[0] for r in rows}

    def write_rows(
        self, rows: Sequence[tuple[Any, ...]], counts: tuple[int, int, int] | None = None, *, check: bool = False
    ) -> None:
        """Store prepared score rows (``evalcore.scoring.score_row``) in one transaction; with ``counts`` (ok,
        failed, not applicable session-level items they add), add those to the run's live counts in the same one.

        ``check``: first check, in that transaction, that the rows' run and sessions still exist, and leave out the
        database's own checks of each row (a scoring worker's batches): one lookup a session, where SQLite's own
        check costs two a row (2.3 us of the 12 a score row costs). A dataset deleted meanwhile is a
        ``NotFoundError``.

        A row stored again (the same run, session, turn and metric) replaces the old one wholly."""
        short = [row for row in rows if len(row) == _SHORT]
        full = [row for row in rows if len(row) != _SHORT] if len(short) != len(rows) else []
        self._store.require("score", "store scores")
        checks = self._engine.references_checked_by_caller() if check else nullcontext()
        with checks, self._engine.write() as conn:
            if check and rows:
                self._check_parents(conn, rows)
            if short:  # fewer columns to bind: the others are set to NULL
                conn.executemany(_UPSERT_SHORT, short)
            if full:
                conn.executemany(_UPSERT_FULL, full)
            if counts is not None and rows:
                conn.execute(
                    "UPDATE runs SET n_done = n_done + ?, n_failed = n_failed + ?, "
                    "n_not_applicable = n_not_applicable + ?, updated_at = ? WHERE id = ?",
                    [*counts, now(), rows[0][0]],
                )

    def _check_parents(self, conn: Conn, rows: Sequence[tuple[Any, ...]]) -> None:
        run_id, pks = rows[0][0], sorted({row[1] for row in rows})
        ids, args = self._engine.id_set(pks)
        found = conn.execute(
            f"SELECT (SELECT count(*) FROM runs WHERE id = ?), (SELECT count(*) FROM sessions WHERE id IN {ids})",
            [run_id, *args],
        ).fetchone()
        if tuple(found) != (1, len(pks)):
            raise NotFoundError(
                f"run #{run_id} or sessions it scored were deleted while it ran (their dataset deleted?)"
            )

    def set_items(self, run_id: int, n_items: int) -> Run:
        """Record how many (session, metric) items the run covers."""
        self._store.require("score", "score a dataset")
        with self._engine.write() as conn:
            conn.execute("UPDATE runs SET n_items = ? WHERE id = ?", [n_items, run_id])
        return self.get(run_id)

    def recount(self, run_id: int, *, status: RunStatus | None = None) -> Run:
        """Count the run's session-level results again from its scores (its status set to ``status`` if given):
        what a resumed run starts from."""
        self._store.require("score", "score a dataset")
        with self._engine.write() as conn:
            counts = _counts(conn, run_id)
            conn.execute(
                "UPDATE runs SET status = coalesce(?, status), finished_at = NULL, error = NULL, n_done = ?, "
                "n_failed = ?, n_not_applicable = ?, updated_at = ? WHERE id = ?",
                [status, *counts, now(), run_id],
            )
        return self.get(run_id)

    def finish(self, run_id: int, status: RunStatus = "done", *, error: str | None = None) -> Run:
        """Mark the run ended (done, cancelled or failed with ``error``), its counts recounted from its scores."""
        status = run_status(status)
        self._store.require("score", "score a dataset")
        with self._engine.write() as conn:
            counts = _counts(conn, run_id)
            stamp = now()
            conn.execute(
                "UPDATE runs SET status = ?, finished_at = ?, updated_at = ?, error = ?, n_done = ?, n_failed = ?, "
                "n_not_applicable = ? WHERE id = ?",
                [status, stamp, stamp, error, *counts, run_id],
            )
        return self.get(run_id)

    def summary_counts(self, run_id: int) -> tuple[list[tuple[str, str, float | None, int]], dict[str, int]]:
        """``(metric, status, value, how many)`` of the run's session-level scores, grouped, and how many of each
        metric's have warnings: what a summary needs, read from two indexes without one row per session."""
        # Grouped as idx_scores_run orders them: ``turn + 0`` keeps SQLite from taking ``turn = -1`` for a
        # constraint on the index, which makes it sort the run's scores again (four times slower).
        with self._engine.read() as conn:
            grouped = conn.execute(
                "SELECT metric, status, value, count(*) FROM scores "
                "WHERE run_id = ? AND turn + 0 = -1 GROUP BY metric, turn, status, value",
                [run_id],
            ).fetchall()
            warned = conn.execute(
                "SELECT metric, count(*) FROM scores WHERE run_id = ? AND turn = -1 AND warnings IS NOT NULL "
                "GROUP BY metric",
                [run_id],
            ).fetchall()
        return grouped, dict(warned)

    def scores(self, run_id: int, *, turns: bool = False) -> Iterator[ScoreRow]:
        """The run's scores in session order (session-level only unless ``turns``)."""
        sql = (
            "SELECT sc.session_pk, s.session_id, s.position, sc.metric, sc.turn, sc.status, sc.value, sc.reason, "
            "sc.error, sc.sub, sc.warnings, sc.input_tokens, sc.output_tokens, sc.cost, s.assistant_id "
            "FROM scores sc JOIN sessions s ON s.id = sc.session_pk WHERE sc.run_id = ?"
        )
        if not turns:
            sql += " AND sc.turn = -1"
        with self._engine.read() as conn:
            rows = conn.execute(sql + " ORDER BY sc.session_pk, sc.metric, sc.turn", [run_id])
            for r in rows:
                yield ScoreRow(
                    r[0], r[1], r[2], r[3], None if r[4] == -1 else r[4], r[5], r[6], r[7], r[8],
                    json.loads(r[9]) if r[9] else {}, json.loads(r[10]) if r[10] else [], r[11], r[12], r[13], r[14],
                )  # fmt: skip

    def keyed_rows(self, run_id: int) -> Iterator[tuple[Any, ...]]:
        """Every score of the run as stored, its session named by its stored key: ``(key, turn, metric, status,
        value, reason, error, sub, warnings, calls, cached, input_tokens, output_tokens, cost, latency_ms)``
        (``evalcore.partition.ROW_COLUMNS``), ordered by key, metric and turn."""
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT s.key, {', '.join('sc.' + c for c in _SCORE_COLUMNS[2:16])} FROM scores sc "
                "JOIN sessions s ON s.id = sc.session_pk WHERE sc.run_id = ? ORDER BY s.key, sc.metric, sc.turn",
                [run_id],
            )
            yield from (tuple(row) for row in rows)

    def for_session(self, session_pk: int, *, turns: bool = True) -> list[SessionScore]:
        """Every score of the session, from every run, newest run first (session score before its turns)."""
        sql = (
            "SELECT sc.run_id, r.started_at, sc.metric, sc.turn, sc.status, sc.value, sc.reason, sc.error, "
            "r.judge_model, sc.input_tokens, sc.output_tokens, sc.cost, r.params FROM scores sc "
            "JOIN runs r ON r.id = sc.run_id "
            "WHERE sc.run_id IN (SELECT id FROM runs WHERE dataset_id = "
            "(SELECT dataset_id FROM sessions WHERE id = ?)) AND sc.session_pk = ?"  # by the unique index: run, session
        )
        if not turns:
            sql += " AND sc.turn = -1"
        with self._engine.read() as conn:
            rows = conn.execute(
                sql + " ORDER BY sc.run_id DESC, sc.metric, sc.turn", [session_pk, session_pk]
            ).fetchall()
        judged = {r[2] for r in rows if r[9] is not None or r[11] is not None}
        return [
            SessionScore(
                r[0], r[1], r[2], None if r[3] == -1 else r[3], r[4], r[5], r[6], r[7],
                r[8] if r[2] in judged else None, r[9], r[10], r[11], is_imported(r[12]),
            )
            for r in rows
        ]  # fmt: skip

    def latest_values(self, session_pks: list[int]) -> dict[int, dict[str, float | None]]:
        """For each session, its latest session-level value of each metric (from the newest run that scored it)."""
        latest: dict[int, dict[str, float | None]] = {pk: {} for pk in session_pks}
        with self._engine.read() as conn:
            self._latest(conn, session_pks, latest)
        return latest

    @staticmethod
    def _latest(conn: Conn, session_pks: list[int], latest: dict[int, dict[str, float | None]]) -> None:
        for start in range(0, len(session_pks), 500):
            chunk = session_pks[start : start + 500]
            marks = ",".join("?" * len(chunk))
            # Each session with each run of its dataset, then its score by the unique index: CROSS JOIN keeps that
            # order (SQLite would rather scan a run's covering index whole: 34 ms to 1 ms for 50 sessions).
            for pk, metric, value in conn.execute(
                "SELECT sc.session_pk, sc.metric, sc.value FROM sessions s CROSS JOIN runs r CROSS JOIN scores sc "
                f"WHERE s.id IN ({marks}) AND r.dataset_id = s.dataset_id AND sc.run_id = r.id "
                "AND sc.session_pk = s.id AND sc.turn = -1 ORDER BY r.id",
                chunk,
            ):
                latest[pk][metric] = value  # later runs overwrite earlier ones

    def metrics_of(self, dataset: str) -> list[str]:
        """The metrics any run of ``dataset`` has scored, sorted."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT r.metrics FROM runs r JOIN datasets d ON d.id = r.dataset_id WHERE d.name = ?", [dataset]
            ).fetchall()
        return sorted({metric for (metrics,) in rows for metric in json.loads(metrics)})


def _session_of(data: str, status: Status, tags: str) -> Session:
    """A stored session no reviewer edited, with its status and tags columns (which rule)."""
    try:
        session = Session.model_validate_json(data)  # pydantic's own JSON parser: one pass, no dict in between
    except ValueError:  # what pydantic's parser refuses (a big integer, say): as Store.get reads it
        session = Session.model_validate(loads(data))
    if session.status != status:  # (a model's assignment costs: only when they differ)
        session.status = status
    if tags != "[]" or session.tags:
        session.tags = json.loads(tags)
    return session


def _counts(conn: Any, run_id: int) -> tuple[int, int, int]:
    """(ok, failed, not applicable) session-level results of the run."""
    counts: dict[str, int] = defaultdict(int)
    # Grouped in idx_scores_run's order and summed here: grouping by status alone makes SQLite sort the run's
    # scores (13 ms to 8 ms on 40,000); ``turn + 0`` as in ``summary_counts``.
    for status, n in conn.execute(
        "SELECT status, count(*) FROM scores WHERE run_id = ? AND turn + 0 = -1 GROUP BY metric, turn, status",
        [run_id],
    ).fetchall():
        counts[status] += n
    return counts["ok"], counts["error"], counts["not_applicable"]


def _run(row: tuple[Any, ...]) -> Run:
    params: dict[str, Any] = json.loads(row[3])
    filter_data = json.loads(row[12]) if row[12] else params.get(_OLD_FILTERS_KEY) or None
    params.pop(_OLD_FILTERS_KEY, None)  # an older database kept the filters among the parameters
    imported = params.pop(IMPORTED, None) is True
    job = params.pop(SHARD_JOB, None)
    return Run(
        row[0], row[1], json.loads(row[2]), params, row[4], run_status(row[5]), row[6], row[7], row[8], row[9],
        row[10], row[11], filter_data, row[13], row[14], row[15], row[16], imported,
        job if isinstance(job, str) else None,
    )  # fmt: skip
