"""Shards: one deterministic share of a dataset scored by any job runner, and shards merged into one run.

``score_shard`` scores shard ``I`` of ``N``: the sessions whose stored key hashes to ``I`` (``shard_of``: stable
across runs, machines and Python versions), read from the store, scored as one process scores them
(``evalcore.partition``), written to a shard file. It writes nothing to the store: the judge's cache travels
with the shard (read from the store before a call, each new answer written into the file), and the shard takes
its share of a total judge concurrency (``judge_share``), so that N shards together make at most that many
calls at a time.

``import_scores`` stores the rows of shard files (or of any engine's ``score_partition`` rows) under one run of
the dataset, found again by its work (``job_of``: dataset, metrics, settings, selection, judge model), so that a
shard imported twice, or a failed shard run again and imported, stores nothing twice: a score's unique key
(run, session, turn, metric) takes the row again. The run is "done" once every session has its scores.

A shard file is JSON Lines: a header (``{"kind": "shard", ...}``), one ``{"kind": "score", ...}`` line per row
(``evalcore.partition.ROW_COLUMNS``), one ``{"kind": "judge_cache", ...}`` line per new judge answer, and an
end line (``{"kind": "end", ...}``) without which the file is refused as cut short. A file of bare rows (what a
Spark job writes) is read too, its metrics given by the caller.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import UsageError
from evalcore.partition import ROW_COLUMNS, judged_rows, keyed_metrics, row_of
from evalcore.runspec import SpecLike
from evalcore.store.queries import SessionFilter
from evalcore.store.records import now
from evalcore.store.runs import Run

if TYPE_CHECKING:
    from evalcore.judge import CachedCall, JudgeConfig
    from evalcore.metrics import Metric
    from evalcore.store import Store

__all__ = [
    "ImportReport",
    "ShardReport",
    "import_scores",
    "job_of",
    "judge_share",
    "parse_shard",
    "score_shard",
    "shard_of",
]

FORMAT = 1
#: Sessions read from the store, and scored, at a time.
BATCH = 500
#: Rows stored in one transaction by ``import_scores``.
WRITE_BATCH = 5000
_STATUSES = ("ok", "error", "not_applicable")
_TEXT_OR_NONE = ("reason", "error", "sub", "warnings")
_NUMBER_OR_NONE = ("value", "cost", "latency_ms")
_INT_OR_NONE = ("calls", "cached", "input_tokens", "output_tokens")

Progress = Callable[[int, int], None]


def shard_of(key: str, shards: int) -> int:
    """The shard (0 to ``shards - 1``) of the session stored under ``key``: from the SHA-256 of the key, the same
    on every machine and in every run."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % shards


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (shard I of N, counted from 0) as ``(I, N)``."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise UsageError(f"a shard is I/N (shard I of N, from 0), got {text!r}") from None
    if not sep or n < 1 or not 0 <= i < n or n > 1_000_000:
        raise UsageError(f"a shard is I/N with 0 <= I < N (shard I of N, from 0; N at most 1000000), got {text!r}")
    return i, n


def judge_share(total: int, index: int, shards: int) -> int:
    """Shard ``index``'s part of ``total`` judge calls in flight: ``total`` divided between the ``shards`` (the
    first ones take one more of what does not divide), at least 1."""
    return max(1, total // shards + (1 if index < total % shards else 0))


def job_of(dataset: str, metrics: list[str], params: dict[str, Any], filters: dict[str, Any], model: str | None) -> str:
    """What names the run shards of the same work are merged into: their dataset, metrics, settings, selection
    and judge model (not the judge's endpoint: shards may call several servers of one model)."""
    work = json.dumps([dataset, metrics, params, filters, model], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(work.encode("utf-8")).hexdigest()[:32]


# -- scoring a shard --------------------------------------------------------------------------


@dataclass
class ShardReport:
    """What ``score_shard`` did."""

    shard: int
    shards: int
    sessions: int  # the shard's sessions
    of: int  # the sessions of the selection, all shards
    rows: int
    judge_cached: int = 0  # new judge answers written into the file for the store's cache
    concurrency: int | None = None  # this shard's judge calls in flight at most
    output: str = ""


class _TravellingCache:
    """A judge cache for a shard: answers from the store's cache (read only), new answers kept here to be written
    into the shard file (``import_scores`` writes them back)."""

    def __init__(self, store: Store) -> None:
        from evalcore.judge import StoreJudgeCache

        self.stored = StoreJudgeCache(store)
        self.new: dict[str, CachedCall] = {}

    def get(self, key: str) -> CachedCall | None:
        return self.new.get(key) or self.stored.get(key)

    def put(self, call: CachedCall) -> None:
        self.new.setdefault(call.key, call)


def score_shard(
    store: Store,
    dataset: str,
    specs: Sequence[SpecLike],
    shard: tuple[int, int],
    output: str | os.PathLike[str],
    *,
    judge: JudgeConfig | None = None,
    concurrency: int | None = None,
    filters: SessionFilter | None = None,
    on_progress: Progress | None = None,
) -> ShardReport:
    """Score shard ``shard`` (``(I, N)``) of ``dataset`` (the sessions ``filters`` match) with ``specs`` into the
    shard file ``output``; see the module doc. ``concurrency`` (else the judge's) is the total of all N shards'
    judge calls in flight. Nothing is written to the store."""
    import dataclasses

    from evalcore._infra.outputs import atomic_output
    from evalcore.scoring import _results  # the one-process run's reading and scoring of a batch

    index, count = shard
    keyed = keyed_metrics(specs)
    judged = [key for key, m in keyed if m.uses_judge]
    if judged and judge is None:
        raise UsageError(
            f"{', '.join(judged)} need a judge model: set EVALCORE_JUDGE_MODEL (and EVALCORE_BASE_URL) "
            "or pass --judge-model"
        )
    use = None
    if judged and judge is not None:
        use = dataclasses.replace(judge, concurrency=judge_share(concurrency or judge.concurrency, index, count))
    store.refuse_as_output(output)
    selection = list(store.sessions.iter_keyed(dataset, filters))
    mine = [(pk, key) for pk, key in selection if shard_of(key, count) == index]
    key_of = dict(mine)
    report = ShardReport(index, count, len(mine), len(selection), 0, concurrency=use.concurrency if use else None)
    header = {
        "kind": "shard", "format": FORMAT, "dataset": dataset, "shard": index, "shards": count,
        "metrics": [key for key, _ in keyed], "params": {key: {"name": m.name, **m.params()} for key, m in keyed},
        "filters": (filters or SessionFilter()).as_dict(), "judge_model": use.model if use else None,
        "judge_base_url": use.public_url if use else None, "concurrency": report.concurrency,
        "sessions": len(mine),
    }  # fmt: skip
    cache = _TravellingCache(store) if use is not None else None
    if on_progress:
        on_progress(0, len(mine))
    with atomic_output(output) as out:
        out.write(_line(header))
        pks = [pk for pk, _ in mine]
        for start in range(0, len(pks), BATCH):
            chunk = pks[start : start + BATCH]
            if use is None:
                rows: Iterator[dict[str, Any]] | list[dict[str, Any]] = (
                    row_of(key_of[pk], metric_key, r) for pk, results in _results(store.runs, keyed, chunk)
                    for metric_key, r in results
                )  # fmt: skip
            else:
                from evalcore.partition import _run

                items = [(key_of[pk], session) for pk, session in store.runs.sessions(chunk)]
                rows = _run(judged_rows(items, keyed, use, cache))
            for row in rows:
                out.write(_line({"kind": "score", **row}))
                report.rows += 1
            if on_progress:
                on_progress(min(start + BATCH, len(pks)), len(pks))
        if cache is not None:
            for call in cache.new.values():
                out.write(_line({"kind": "judge_cache", **_call_json(call)}))
            report.judge_cached = len(cache.new)
        out.write(_line({"kind": "end", "sessions": len(mine), "rows": report.rows}))
    report.output = str(output)
    return report


def _call_json(call: CachedCall) -> dict[str, Any]:
    return {
        "key": call.key, "model": call.model, "request": call.request, "response": call.response,
        "input_tokens": call.input_tokens, "output_tokens": call.output_tokens,
    }  # fmt: skip


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


# -- merging shards ---------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What ``import_scores`` did."""

    run: Run
    created: bool  # the run is new (else the shards' earlier run took the rows again)
    files: int
    rows: int
    sessions: int  # the run's sessions (the selection)
    scored: int  # ...with every metric's score
    judge_cached: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.scored == self.sessions


@dataclass
class _Work:
    dataset: str
    metrics: list[str]
    params: dict[str, Any]
    filters: dict[str, Any]
    judge_model: str | None
    judge_base_url: str | None

    def same(self, other: _Work) -> bool:
        return (self.dataset, self.metrics, self.params, self.filters, self.judge_model) == (
            other.dataset, other.metrics, other.params, other.filters, other.judge_model,
        )  # fmt: skip


def _given_work(dataset: str, specs: Sequence[SpecLike], judge_model: str | None) -> _Work:
    keyed: list[tuple[str, Metric]] = keyed_metrics(specs)
    judged = any(m.uses_judge for _, m in keyed)
    return _Work(
        dataset, [key for key, _ in keyed], {key: {"name": m.name, **m.params()} for key, m in keyed}, {},
        judge_model if judged else None, None,
    )  # fmt: skip


def _header_work(header: dict[str, Any], where: str) -> _Work:
    try:
        work = _Work(
            header["dataset"], list(header["metrics"]), dict(header["params"]), dict(header["filters"] or {}),
            header["judge_model"], header.get("judge_base_url"),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"{where}: the shard header is not one evalcore wrote") from None
    if header.get("format") != FORMAT:
        raise UsageError(f"{where}: a shard file of format {header.get('format')!r}; this evalcore reads {FORMAT}")
    return work


def _header(path: Path) -> dict[str, Any] | None:
    """The header of a shard file, or None for a file of bare rows."""
    with path.open(encoding="utf-8") as handle:
        first = handle.readline()
    try:
        record = json.loads(first) if first.strip() else None
    except ValueError:
        return None
    return record if isinstance(record, dict) and record.get("kind") == "shard" else None


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every record of a file with its line number (a line that is no JSON object: ``{"kind": "bad"}``)."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                yield number, {"kind": "bad", "what": "not JSON"}
                continue
            yield number, value if isinstance(value, dict) else {"kind": "bad", "what": "not a JSON object"}


def _checked_row(record: dict[str, Any], metrics: set[str]) -> str | None:
    """What is wrong with a score row, or None."""
    for column in ROW_COLUMNS:
        if column not in record:
            return f"no {column!r}"
    if not isinstance(record["key"], str) or not record["key"]:
        return "its key is not text"
    if record["metric"] not in metrics:
        return f"metric {record['metric']!r} is not one of the run's ({', '.join(sorted(metrics))})"
    if record["status"] not in _STATUSES:
        return f"status {record['status']!r} is not one of {', '.join(_STATUSES)}"
    turn = record["turn"]
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < -1:
        return f"turn {turn!r} is not -1 (the session) or a turn's index"
    for column in _TEXT_OR_NONE:
        if not isinstance(record[column], str | None):
            return f"{column!r} is not text"
    for column in _NUMBER_OR_NONE:
        value = record[column]
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
            return f"{column!r} is not a number"
    for column in _INT_OR_NONE:
        value = record[column]
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return f"{column!r} is not a whole number"
    return None


def _stored_row(run_id: int, pk: int, record: dict[str, Any], stamp: str) -> tuple[Any, ...]:
    """A row as ``evalcore.scoring.score_row`` makes it (short when it has no sub-scores, warnings or usage)."""
    head = (run_id, pk, record["turn"], record["metric"], record["status"], record["value"], record["reason"],
            record["error"])  # fmt: skip
    rest = tuple(record[c] for c in ROW_COLUMNS[7:])
    if all(v is None for v in rest):
        return (*head, stamp)
    return (*head, *rest, stamp)


def import_scores(
    store: Store,
    files: Sequence[str | os.PathLike[str]],
    dataset: str,
    *,
    specs: Sequence[SpecLike] = (),
    judge_model: str | None = None,
    new_run: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Store the rows of ``files`` (shard files, or files of bare rows scored with ``specs``) under one run of
    ``dataset``; see the module doc. ``new_run``: a new run, even where the shards' earlier one exists.

    Every file is checked before anything is stored: a header of other work than the others' (or than ``specs``),
    or of another dataset, or a shard file cut short, is a ``UsageError``. A row of a session the dataset does not
    hold, or one that is not a score row, is a problem (named by file and line) and left out."""
    paths = [Path(f) for f in files]
    if not paths:
        raise UsageError("name at least one file of scores")
    work = _work_of_files(paths, dataset, _given_work(dataset, specs, judge_model) if specs else None)
    filters = SessionFilter(**work.filters) if work.filters else None
    runs = store.runs
    job = job_of(work.dataset, work.metrics, work.params, work.filters, work.judge_model)
    pks = list(store.sessions.iter_pks(dataset, filters))
    items = len(pks) * len(work.metrics)
    run = None if new_run else next((r for r in runs.recent(dataset) if r.shard_job == job), None)
    created = run is None
    if run is None:
        run = runs.create(
            dataset, work.metrics, work.params, judge_model=work.judge_model, judge_base_url=work.judge_base_url,
            n_items=items, filters=filters, shard_job=job,
        )  # fmt: skip
    elif run.n_items != items:
        runs.set_items(run.id, items)
    report = ImportReport(run, created, len(paths), 0, len(pks), 0)
    for path in paths:
        _import_file(store, run.id, path, set(work.metrics), report, on_progress)
    report.scored = len(set(pks) & runs.done_sessions(run.id, work.metrics))
    if report.complete:
        report.run = runs.finish(run.id, "done")
    else:
        report.run = runs.recount(run.id, status="running")  # the other shards' rows are still to come
    return report


def _work_of_files(paths: list[Path], dataset: str, given: _Work | None) -> _Work:
    """The work the files' rows are of, every file checked against the others (and ``given``)."""
    work = given
    for path in paths:
        header = _header(path)
        if header is None:
            if given is None:
                raise UsageError(f"{path}: a file of bare score rows: name its metrics (--metrics or --metric)")
            continue
        found = _header_work(header, str(path))
        if found.dataset != dataset:
            raise UsageError(f"{path}: the shard of dataset {found.dataset!r}, not {dataset!r}")
        if work is not None and not found.same(work):
            raise UsageError(
                f"{path}: the shard of other work (metrics, settings, selection or judge model) than "
                f"{'the metrics given' if work is given else paths[0]}"
            )
        work = work or found
        ended = False
        for _, record in _records(path):
            ended = record.get("kind") == "end"
        if not ended:
            raise UsageError(f"{path}: the shard file has no end line: cut short (run the shard again)")
    if work is None:  # (every file bare and no metrics given: refused above)
        raise UsageError("name the metrics of the scores (--metrics or --metric)")
    return work


def _import_file(
    store: Store,
    run_id: int,
    path: Path,
    metrics: set[str],
    report: ImportReport,
    on_progress: Callable[[int], None] | None,
) -> None:
    """Store one file's rows (``WRITE_BATCH`` a transaction) and judge answers; its problems into ``report``."""
    from evalcore.judge import CachedCall, StoreJudgeCache

    cache = StoreJudgeCache(store)
    dataset = report.run.dataset
    batch: list[tuple[int, dict[str, Any]]] = []
    for number, record in _records(path):
        kind = record.get("kind", "score")
        if kind == "score":
            wrong = _checked_row(record, metrics)
            if wrong is not None:
                report.problems.append(f"{path}:{number}: {wrong}")
                continue
            batch.append((number, record))
            if len(batch) >= WRITE_BATCH:
                report.rows += _store_rows(store, run_id, dataset, path, batch, report.problems)
                batch = []
                if on_progress:
                    on_progress(report.rows)
        elif kind == "judge_cache":
            try:
                cache.put(CachedCall(record["key"], record["model"], record["request"], record["response"],
                                     record["input_tokens"], record["output_tokens"]))  # fmt: skip
                report.judge_cached += 1
            except (KeyError, TypeError, ValueError):
                report.problems.append(f"{path}:{number}: not a judge answer evalcore wrote")
        elif kind == "bad":
            report.problems.append(f"{path}:{number}: {record['what']}")
        elif kind not in ("end", "shard"):
            report.problems.append(f"{path}:{number}: a line of kind {kind!r}, unknown")
    if batch:
        report.rows += _store_rows(store, run_id, dataset, path, batch, report.problems)
    if on_progress:
        on_progress(report.rows)


def _store_rows(
    store: Store, run_id: int, dataset: str, path: Path, batch: list[tuple[int, dict[str, Any]]], problems: list[str]
) -> int:
    """Store a batch of checked rows (one transaction); rows of sessions the dataset lacks are problems."""
    pk_of = store.sessions.pks_of_keys(dataset, [record["key"] for _, record in batch])
    stamp = now()
    rows = []
    for number, record in batch:
        pk = pk_of.get(record["key"])
        if pk is None:
            problems.append(f"{path}:{number}: no session of {dataset!r} is stored under key {record['key']!r}")
        else:
            rows.append(_stored_row(run_id, pk, record, stamp))
    store.runs.write_rows(rows)
    return len(rows)
