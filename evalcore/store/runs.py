"""Metric runs and their scores in the store, and the judge's answer cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from evalcore.errors import NotFoundError
from evalcore.judge.client import CachedCall
from evalcore.judge.redact import public_url
from evalcore.metrics.base import MetricResult
from evalcore.store.records import now
from evalcore.store.store import Store

__all__ = ["Run", "Runs", "ScoreRow", "SessionScore", "StoreJudgeCache"]


@dataclass(frozen=True)
class Run:
    """One scoring run over a dataset."""

    id: int
    dataset: str
    metrics: list[str]
    params: dict[str, Any]
    judge_model: str | None
    status: str
    started_at: str
    finished_at: str | None
    n_items: int
    n_done: int
    n_failed: int
    n_not_applicable: int


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


class Runs:
    """Runs and scores of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def db(self) -> Database:
        """The calling thread's connection."""
        return self.store.db

    def create(
        self,
        dataset: str,
        metrics: list[str],
        params: dict[str, Any],
        *,
        judge_model: str | None = None,
        judge_base_url: str | None = None,
        n_items: int = 0,
    ) -> Run:
        """Start a run of ``metrics`` (their keys) on ``dataset``."""
        dataset_id = self.store.dataset_id(dataset)
        if judge_base_url is not None:  # a URL's credentials (user:pass@, ?api-key=) are never stored
            judge_base_url = public_url(judge_base_url)
        with self.store.write() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (dataset_id, metrics, params, judge_model, judge_base_url, status, started_at, "
                "n_items) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                [dataset_id, json.dumps(metrics), json.dumps(params), judge_model, judge_base_url, now(), n_items],
            )
            run_id = int(cursor.lastrowid or 0)
        return self.get(run_id)

    def get(self, run_id: int) -> Run:
        """The run ``run_id``."""
        if not -(2**63) <= run_id < 2**63:  # beyond SQLite's integers: no such run
            raise NotFoundError(f"no run #{run_id}")
        row = self.db.execute(
            "SELECT r.id, d.name, r.metrics, r.params, r.judge_model, r.status, r.started_at, r.finished_at, "
            "r.n_items, r.n_done, r.n_failed, r.n_not_applicable FROM runs r "
            "JOIN datasets d ON d.id = r.dataset_id WHERE r.id = ?",
            [run_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no run #{run_id}")
        return Run(row[0], row[1], json.loads(row[2]), json.loads(row[3]), *row[4:])

    def recent(self, dataset: str | None = None) -> list[Run]:
        """Every run (of ``dataset``), newest first."""
        sql = "SELECT r.id FROM runs r JOIN datasets d ON d.id = r.dataset_id"
        args: list[Any] = []
        if dataset is not None:
            sql += " WHERE d.name = ?"
            args.append(dataset)
        return [self.get(r[0]) for r in self.db.execute(sql + " ORDER BY r.id DESC", args)]

    def resumable(
        self, dataset: str, metrics: list[str], params: dict[str, Any], judge_model: str | None
    ) -> Run | None:
        """The latest unfinished run of the same metrics, settings and judge on ``dataset``."""
        for run in self.recent(dataset):
            if (
                run.status == "running"
                and run.metrics == metrics
                and run.params == params
                and run.judge_model == judge_model
            ):
                return run
        return None

    def done_sessions(self, run_id: int, metrics: list[str]) -> set[int]:
        """Sessions for which every metric of the run already has its session score."""
        marks = ",".join("?" * len(metrics))
        rows = self.db.execute(
            f"SELECT session_pk FROM scores WHERE run_id = ? AND turn = -1 AND metric IN ({marks}) "
            "GROUP BY session_pk HAVING count(DISTINCT metric) = ?",
            [run_id, *metrics, len(metrics)],
        )
        return {r[0] for r in rows}

    def write(self, run_id: int, scored: list[tuple[int, str, MetricResult]]) -> None:
        """Store results: ``(session_pk, metric key, result)``; a result stored again replaces the old one."""
        stamp = now()
        rows = []
        for pk, key, r in scored:
            u = r.usage
            rows.append((
                run_id, pk, -1 if r.turn is None else r.turn, key, r.status, r.value, r.reason or r.not_applicable,
                r.error, json.dumps(r.sub) if r.sub else None, json.dumps(r.warnings) if r.warnings else None,
                u.calls if u else None, u.cached if u else None, u.input_tokens if u else None,
                u.output_tokens if u else None, u.cost if u else None, u.latency_ms if u else None, stamp,
            ))  # fmt: skip
        with self.store.write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO scores (run_id, session_pk, turn, metric, status, value, reason, error, sub, "
                "warnings, calls, cached, input_tokens, output_tokens, cost, latency_ms, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def set_items(self, run_id: int, n_items: int) -> Run:
        """Record how many (session, metric) items the run covers."""
        with self.store.write() as conn:
            conn.execute("UPDATE runs SET n_items = ? WHERE id = ?", [n_items, run_id])
        return self.get(run_id)

    def finish(self, run_id: int, status: str = "done") -> Run:
        """Mark the run finished, with its counts of session scores (counted once, here)."""
        with self.store.write() as conn:
            counts = dict(
                conn.execute(
                    "SELECT status, count(*) FROM scores WHERE run_id = ? AND turn = -1 GROUP BY status", [run_id]
                ).fetchall()
            )
            conn.execute(
                "UPDATE runs SET status = ?, finished_at = ?, n_done = ?, n_failed = ?, n_not_applicable = ? "
                "WHERE id = ?",
                [status, now(), counts.get("ok", 0), counts.get("error", 0), counts.get("not_applicable", 0), run_id],
            )
        return self.get(run_id)

    def scores(self, run_id: int, *, turns: bool = False) -> Iterator[ScoreRow]:
        """The run's scores in session order (session-level only unless ``turns``)."""
        sql = (
            "SELECT sc.session_pk, s.session_id, s.position, sc.metric, sc.turn, sc.status, sc.value, sc.reason, "
            "sc.error, sc.sub, sc.warnings, sc.input_tokens, sc.output_tokens, sc.cost "
            "FROM scores sc JOIN sessions s ON s.id = sc.session_pk WHERE sc.run_id = ?"
        )
        if not turns:
            sql += " AND sc.turn = -1"
        for r in self.db.execute(sql + " ORDER BY sc.session_pk, sc.metric, sc.turn", [run_id]):
            yield ScoreRow(
                r[0], r[1], r[2], r[3], None if r[4] == -1 else r[4], r[5], r[6], r[7], r[8],
                json.loads(r[9]) if r[9] else {}, json.loads(r[10]) if r[10] else [], r[11], r[12], r[13],
            )  # fmt: skip

    def session_values(self, run_id: int) -> list[tuple[str, str, float | None, int]]:
        """``(metric, status, value, has warnings)`` of every session-level score of the run."""
        return self.db.execute(
            "SELECT metric, status, value, warnings IS NOT NULL FROM scores WHERE run_id = ? AND turn = -1", [run_id]
        ).fetchall()

    def for_session(self, session_pk: int, *, turns: bool = True) -> list[SessionScore]:
        """Every score of the session, from every run, newest run first (session score before its turns)."""
        sql = (
            "SELECT sc.run_id, r.started_at, sc.metric, sc.turn, sc.status, sc.value, sc.reason, sc.error, "
            "r.judge_model, sc.input_tokens, sc.output_tokens, sc.cost FROM scores sc JOIN runs r ON r.id = sc.run_id "
            "WHERE sc.session_pk = ?"
        )
        if not turns:
            sql += " AND sc.turn = -1"
        rows = self.db.execute(sql + " ORDER BY sc.run_id DESC, sc.metric, sc.turn", [session_pk]).fetchall()
        judged = {r[2] for r in rows if r[9] is not None or r[11] is not None}
        return [
            SessionScore(
                r[0], r[1], r[2], None if r[3] == -1 else r[3], r[4], r[5], r[6], r[7],
                r[8] if r[2] in judged else None, r[9], r[10], r[11],
            )
            for r in rows
        ]  # fmt: skip

    def latest_values(self, session_pks: list[int]) -> dict[int, dict[str, float | None]]:
        """For each session, its latest session-level value of each metric (from the newest run that scored it)."""
        latest: dict[int, dict[str, float | None]] = {pk: {} for pk in session_pks}
        for start in range(0, len(session_pks), 500):
            chunk = session_pks[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for pk, metric, value in self.db.execute(
                f"SELECT session_pk, metric, value FROM scores WHERE session_pk IN ({marks}) AND turn = -1 "
                "ORDER BY run_id",
                chunk,
            ):
                latest[pk][metric] = value  # later runs overwrite earlier ones
        return latest

    def metrics_of(self, dataset: str) -> list[str]:
        """The metrics any run of ``dataset`` has scored, sorted."""
        rows = self.db.execute(
            "SELECT r.metrics FROM runs r JOIN datasets d ON d.id = r.dataset_id WHERE d.name = ?", [dataset]
        )
        return sorted({metric for (metrics,) in rows for metric in json.loads(metrics)})


class StoreJudgeCache:
    """The judge cache kept in the store's ``judge_cache`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> CachedCall | None:
        row = self.store.db.execute(
            "SELECT key, model, request, response, input_tokens, output_tokens FROM judge_cache WHERE key = ?", [key]
        ).fetchone()
        if row is None:
            return None
        return CachedCall(row[0], row[1], json.loads(row[2]), row[3], row[4] or 0, row[5] or 0)

    def put(self, call: CachedCall) -> None:
        with self.store.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO judge_cache (key, model, request, response, input_tokens, output_tokens, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [call.key, call.model, json.dumps(call.request, ensure_ascii=False), call.response,
                 call.input_tokens, call.output_tokens, now()],
            )  # fmt: skip
