"""Benchmark: the SQLite store at 20,000 and 100,000 sessions, against ragas merely loading the same files.

Run with ``.venv/bin/python tests/bench/bench_store.py`` (about 2-3 minutes on 2 CPUs).

- Builds ragas JSONL files of 20,000 and 100,000 sessions in a temporary directory as
  ``bench_formats.py`` does (the 300 real ragas lines of ``tests/data/ragas_reference`` cycled,
  each made distinct), and adds one word to every human message, drawn (seeded) from 2,000
  generated words by a Zipf law, so that full-text search meets common and rare words alike.
- Import: ``evalcore.store.import_file`` of each file into a fresh temporary SQLite file, best of
  3 (20,000) or 2 (100,000); then re-imports of the 20,000 file into its store (all unchanged).
  Beside it, ragas' ``EvaluationDataset.from_jsonl`` on the same file in the separate
  ``.bench/ragas-venv`` (made by ``tests/bench/setup_ragas_env.sh`` when missing), timed inside
  that process around the call only. ragas holds the whole dataset in memory: it loads the
  100,000 file only when its 20,000 run predicts at most 60 s a load and the memory to spare.
- Browse the 100,000-session store: statuses, assistants and tags are set up by direct SQL (ragas
  rows have no assistant and no tags) and 200 statuses through ``Store.set_status``; then one page
  of 50 sessions for several filters and sorts, deep pages, and full-text searches, each the
  median of 20 runs after one untimed run. Every page's match count, length and order are checked
  against what the generator and the set-up wrote.
- Export the 20,000-session dataset with ``export_dataset`` to ragas (must equal the imported file
  byte for byte) and to evalcore, best of 3.

Targets: import at least 2x faster than ragas only loads the file; every page or search under
100 ms. The exit code is 0 whether the targets are met or not (this is a benchmark, not a test);
it is 1 only when the benchmark cannot run at all.
"""

from __future__ import annotations

import filecmp
import gc
import json
import os
import platform
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from _common import RAGAS_LOAD, RAGAS_PYTHON, REFERENCE, build_ragas_file, ensure_ragas_env, run_script

import evalcore
from evalcore.exporting import export_dataset
from evalcore.importing import import_file
from evalcore.store import Store, open_store
from evalcore.store.queries import Page, SessionFilter

SMALL, LARGE = 20_000, 100_000
REPEAT = 3  # best of, for everything at 20,000 sessions
LARGE_REPEAT = 2  # best of, for imports of 100,000 sessions
QUERY_RUNS = 20  # median of, for pages and searches
IMPORT_TARGET = 2.0  # ragas load time / evalcore import time
QUERY_TARGET_MS = 100.0
RAGAS_LARGE_LIMIT = 60.0  # seconds one ragas load of 100,000 sessions may take
RAGAS_START = 60.0  # seconds allowed for the ragas process to start and import ragas
VOCABULARY = 2_000
API_STATUSES = 200  # sessions whose status is set through Store.set_status
DATASET = "bench"
SEED = 20_240_601
ASSISTANTS = {"support-bot": 40, "billing-bot": 25, "travel-agent": 20, "food-agent": 10, "beta-agent": 5}
STATUS_WEIGHTS = {"todo": 60, "in_progress": 10, "approved": 15, "rejected": 5, "flagged": 10}
TAG_SHARE = {"billing": 0.20, "escalated": 0.05, "vip": 0.01}


# -- the files ------------------------------------------------------------------------------


def make_vocabulary(size: int, seed: int) -> list[str]:
    """``size`` distinct made-up words (three syllables) in none of the reference lines, most common first."""
    taken = set(re.findall(r"\w+", REFERENCE.read_text(encoding="utf-8").lower()))
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        word = "".join(rng.choice(syllables) for _ in range(3))
        if word not in taken:
            words[word] = None
    return list(words)


class Words:
    """``words(i, n)`` for ``build_ragas_file``: ``n`` Zipf-distributed words; remembers each session's words."""

    def __init__(self, vocabulary: list[str], seed: int) -> None:
        self.vocabulary = vocabulary
        self.cum_weights = list(accumulate(1 / rank for rank in range(1, len(vocabulary) + 1)))
        self.rng = random.Random(seed)
        self.held: list[frozenset[str]] = []  # session i -> its words

    def __call__(self, i: int, n: int) -> list[str]:
        assert i == len(self.held), "sessions come in order"
        picks = self.rng.choices(self.vocabulary, cum_weights=self.cum_weights, k=n)
        self.held.append(frozenset(picks))
        return picks

    def sessions_with(self, *words: str) -> set[int]:
        """The sessions holding every one of ``words``."""
        return {i for i, held in enumerate(self.held) if held.issuperset(words)}

    def rare(self, sessions: int = 5) -> str:
        """A word held by about ``sessions`` sessions."""
        counts = Counter(word for held in self.held for word in held)
        return min(counts, key=lambda w: (abs(counts[w] - sessions), w))


@dataclass
class BenchFile:
    sessions: int
    path: Path
    mb: float
    words: Words


def build(tmp: Path, sessions: int, vocabulary: list[str]) -> BenchFile:
    words = Words(vocabulary, SEED + sessions)
    path = tmp / f"sessions-{sessions}.ragas.jsonl"
    size = build_ragas_file(path, sessions, words)
    return BenchFile(sessions, path, size / 1e6, words)


# -- import ---------------------------------------------------------------------------------


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def db_mb(path: Path) -> float:
    return sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists()) / 1e6


def time_import(tmp: Path, src: BenchFile, repeat: int) -> tuple[float, Path]:
    """Best of ``repeat`` imports, each into a fresh store; returns it and the last store's path."""
    times: list[float] = []
    db = tmp / "none.db"
    for rep in range(repeat):
        remove_db(db)
        db = tmp / f"store-{src.sessions}-{rep}.db"
        with open_store(db) as store:
            gc.collect()
            start = time.perf_counter()
            report = import_file(store, src.path, DATASET)
            times.append(time.perf_counter() - start)
        if (report.new, report.updated, report.unchanged, report.failed) != (src.sessions, 0, 0, 0):
            raise SystemExit(f"bench: importing {src.sessions} sessions into a new store gave {report}")
    return min(times), db


def time_reimport(db: Path, src: BenchFile) -> float:
    """Best of ``REPEAT`` imports of the file already in the store."""
    times = []
    with open_store(db) as store:
        for _ in range(REPEAT):
            gc.collect()
            start = time.perf_counter()
            report = import_file(store, src.path, DATASET)
            times.append(time.perf_counter() - start)
            if (report.new, report.updated, report.unchanged, report.failed) != (0, 0, src.sessions, 0):
                raise SystemExit(f"bench: re-importing {src.sessions} unchanged sessions gave {report}")
    return min(times)


def time_ragas(src: BenchFile, repeat: int, timeout: float | None = None) -> dict[str, Any]:
    """ragas' from_jsonl timings, measured in the ragas venv; checks it read every session."""
    result = run_script(
        RAGAS_PYTHON, RAGAS_LOAD, str(src.path), str(repeat), timeout=timeout, RAGAS_DO_NOT_TRACK="true"
    )
    if result["samples"] != src.sessions or not result["multi_turn"]:
        raise SystemExit(f"bench: ragas read {result['samples']} samples, not {src.sessions} multi-turn ones")
    return result


def mem_available_kb() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            return next(int(line.split()[1]) for line in meminfo if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return None


def time_ragas_large(src: BenchFile, small: dict[str, Any], small_sessions: int) -> tuple[dict[str, Any] | None, str]:
    """ragas on the large file when it should fit; else None and why not."""
    scale = src.sessions / small_sessions
    estimate = min(small["times"]) * scale * 1.2
    if estimate > RAGAS_LARGE_LIMIT:
        return None, f"skipped: its 20k load predicts {estimate:.0f} s > {RAGAS_LARGE_LIMIT:.0f} s"
    memory = small["rss_growth_kb"] * scale * 1.5
    available = mem_available_kb()
    if available is not None and memory > 0.8 * available:
        return None, f"skipped: would need ~{memory / 1024**2:.1f} GB, {available / 1024**2:.1f} GB available"
    try:
        timeout = RAGAS_START + LARGE_REPEAT * RAGAS_LARGE_LIMIT
        return time_ragas(src, LARGE_REPEAT, timeout), ""
    except subprocess.TimeoutExpired:
        return None, f"skipped: killed after {timeout:.0f} s (over {RAGAS_LARGE_LIMIT:.0f} s a load)"
    except SystemExit as exc:  # ragas failed (out of memory?): the rest still runs
        return None, f"failed: {str(exc.code)[-200:]}"


# -- browse ---------------------------------------------------------------------------------


@dataclass
class Review:
    """What the set-up gave each session (index = position in the file)."""

    status: list[str]
    assistant: list[str]
    tags: list[list[str]]
    set_status_ms: list[float] = field(default_factory=list)
    sql_seconds: float = 0.0


def set_up_review(store: Store, sessions: int) -> Review:
    """Statuses, assistants and tags for every session by SQL; then some statuses through the API."""
    rng = random.Random(SEED)
    status = rng.choices(list(STATUS_WEIGHTS), weights=list(STATUS_WEIGHTS.values()), k=sessions)
    assistant = rng.choices(list(ASSISTANTS), weights=list(ASSISTANTS.values()), k=sessions)
    tags = [[t for t, share in TAG_SHARE.items() if rng.random() < share] for _ in range(sessions)]
    pks = store.sessions.pks(DATASET)
    if len(pks) != sessions:
        raise SystemExit(f"bench: the store holds {len(pks)} sessions, not {sessions}")
    start = time.perf_counter()
    with store.write() as conn:
        conn.executemany(
            "UPDATE sessions SET status = ?, assistant_id = ?, tags = ? WHERE id = ?",
            [(status[i], assistant[i], json.dumps(tags[i]), pk) for i, pk in enumerate(pks)],
        )
        conn.executemany(
            "INSERT INTO session_tags (session_pk, tag) VALUES (?, ?)",
            [(pk, tag) for i, pk in enumerate(pks) for tag in tags[i]],
        )
    review = Review(status, assistant, tags, sql_seconds=time.perf_counter() - start)
    for i in range(0, sessions, sessions // API_STATUSES):
        pk = pks[i]
        version = store.sessions.get(pk).version
        new = "flagged" if status[i] == "approved" else "approved"
        start = time.perf_counter()
        store.sessions.set_status(pk, new, base_version=version, author="bench")
        review.set_status_ms.append((time.perf_counter() - start) * 1000)
        status[i] = new
    return review


@dataclass
class Query:
    label: str
    filters: SessionFilter
    expected: int  # matching sessions
    sort: str = "order"
    descending: bool = False
    offset: int = 0


def queries(src: BenchFile, review: Review) -> Iterator[Query]:
    n = src.sessions
    every = range(n)
    deep = n // 2
    two = ["approved", "flagged"]
    yield Query("no filter, import order", SessionFilter(), n)
    yield Query(f"no filter, import order, offset {deep:,}", SessionFilter(), n, offset=deep)
    yield Query("no filter, turns desc", SessionFilter(), n, "turns", True)
    yield Query(f"no filter, turns desc, offset {deep:,}", SessionFilter(), n, "turns", True, deep)
    yield Query("no filter, status desc", SessionFilter(), n, "status", True)
    yield Query(
        "status approved|flagged, turns desc",
        SessionFilter(status=two),
        sum(review.status[i] in two for i in every),
        "turns",
        True,
    )
    yield Query(
        "status todo, updated desc",
        SessionFilter(status=["todo"]),
        review.status.count("todo"),
        "updated",
        True,
    )
    yield Query(
        "tag escalated, import order", SessionFilter(tags=["escalated"]), sum("escalated" in t for t in review.tags)
    )
    yield Query(
        "tags billing+escalated, tool calls desc",
        SessionFilter(tags=["billing", "escalated"]),
        sum({"billing", "escalated"} <= set(t) for t in review.tags),
        "tool_calls",
        True,
    )
    yield Query(
        "assistant beta-agent, turns desc",
        SessionFilter(assistant="beta-agent"),
        review.assistant.count("beta-agent"),
        "turns",
        True,
    )
    vocabulary, words = src.words.vocabulary, src.words
    rare, common, pair = words.rare(), vocabulary[0], vocabulary[1:3]
    for label, text in (("rare word", rare), ("common word", common), ("two words", " ".join(pair))):
        held = words.sessions_with(*text.split())
        yield Query(f"search {label} {text!r} ({len(held) / n:.2%})", SessionFilter(search=text), len(held))
    yield Query("search 'session' (in every session)", SessionFilter(search="session"), n)
    held = words.sessions_with(common)
    yield Query(
        f"search {common!r} + status approved|flagged, turns desc",
        SessionFilter(status=two, search=common),
        sum(review.status[i] in two for i in held),
        "turns",
        True,
    )


_SORT_KEYS: dict[str, Callable[[Any], Any]] = {
    "order": lambda s: s.pk,
    "status": lambda s: s.status,
    "turns": lambda s: s.n_turns,
    "tool_calls": lambda s: s.n_tool_calls,
    "updated": lambda s: s.updated_at,
}


def check_page(query: Query, page: Page) -> str:
    """What is wrong with the page, or ''."""
    rows = max(0, min(50, query.expected - query.offset))
    if page.total != query.expected or len(page.items) != rows:
        return f"WRONG: {page.total:,} matches, {len(page.items)} rows; expected {query.expected:,}, {rows}"
    key = _SORT_KEYS[query.sort]
    order = [(key(s), s.pk) for s in page.items]  # ties follow the sort's direction too
    if order != sorted(order, reverse=query.descending):
        return "WRONG: not in order"
    if query.filters.status and any(s.status not in query.filters.status for s in page.items):
        return "WRONG: a status outside the filter"
    return ""


@dataclass
class Timed:
    query: Query
    median_ms: float
    max_ms: float
    problem: str


def time_query(store: Store, query: Query) -> Timed:
    def run() -> Page:
        return store.sessions.browse(
            DATASET, query.filters, sort=query.sort, descending=query.descending, limit=50, offset=query.offset
        )

    problem = check_page(query, run())
    times = []
    for _ in range(QUERY_RUNS):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return Timed(query, statistics.median(times), max(times), problem)


# -- export ---------------------------------------------------------------------------------


def time_export(db: Path, dst: Path, to: str, sessions: int) -> float:
    times = []
    with open_store(db) as store:
        for _ in range(REPEAT):
            gc.collect()
            start = time.perf_counter()
            report = export_dataset(store, DATASET, dst, to)
            times.append(time.perf_counter() - start)
            if report.count != sessions:
                raise SystemExit(f"bench: export to {to} wrote {report.count} of {sessions} sessions")
    return min(times)


# -- printing -------------------------------------------------------------------------------


class Verdicts:
    def __init__(self) -> None:
        self.passed: list[str] = []
        self.failed: list[str] = []
        self.unmeasured: list[str] = []

    def __call__(self, what: str, ok: bool | None) -> str:
        if ok is None:
            self.unmeasured.append(what)
            return "NOT MEASURED"
        (self.passed if ok else self.failed).append(what)
        return "PASS" if ok else "FAIL"


def load_average() -> str:
    """The 1-minute load average: other work on the machine skews every figure."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def progress(message: str) -> None:
    print(f"  ... {message}", file=sys.stderr, flush=True)


def print_imports(
    files: dict[int, BenchFile],
    evalcore_times: dict[int, float],
    reimport: float,
    ragas: dict[int, dict[str, Any] | None],
    why_not: dict[int, str],
    dbs: dict[int, float],
    verdict: Verdicts,
) -> None:
    print(f"Import (best of {REPEAT} at {SMALL:,}, of {LARGE_REPEAT} at {LARGE:,}; each import into a new SQLite file)")
    print(f"{'operation':<50} {'seconds':>8} {'sessions/s':>11} {'ragas/this':>10}  target >= {IMPORT_TARGET:g}x")

    def row(label: str, seconds: float, sessions: int, ratio: str = "", verdict_: str = "") -> None:
        print(f"{label:<50} {seconds:>8.3f} {sessions / seconds:>11,.0f} {ratio:>10}  {verdict_}".rstrip())

    for n, src in files.items():
        result = ragas.get(n)
        base = min(result["times"]) if result else None
        if result:
            row(f"ragas {result['version']} from_jsonl {n:,} ({src.mb:.0f} MB)", base or 0, n, "(baseline)")
        else:
            print(f"{f'ragas from_jsonl {n:,} ({src.mb:.0f} MB)':<50} {why_not.get(n, 'not measured')}")
        seconds = evalcore_times[n]
        ratio = base / seconds if base else None
        row(
            f"evalcore import_file {n:,} -> {dbs[n]:.0f} MB store",
            seconds,
            n,
            f"{ratio:.2f}x" if ratio else "n/a",
            verdict(f"import {n:,} vs ragas", None if ratio is None else ratio >= IMPORT_TARGET),
        )
        if n == SMALL:
            ratio = base / reimport if base else None
            row(
                f"evalcore re-import {n:,} (all unchanged)",
                reimport,
                n,
                f"{ratio:.2f}x" if ratio else "n/a",
                "(no target)",
            )
    for n, result in ragas.items():
        if result:
            print(f"(ragas' RSS grew by {result['rss_growth_kb'] / 1024:,.0f} MB loading {n:,} sessions)")


def print_browse(timed: list[Timed], review: Review, sessions: int, verdict: Verdicts) -> None:
    print(
        f"\nBrowse {sessions:,} sessions: one page of 50 (median of {QUERY_RUNS} runs, ms); set-up by SQL "
        f"{review.sql_seconds:.1f} s (statuses, assistants, tags) + {len(review.set_status_ms)} Store.set_status"
    )
    print(f"{'page':<58} {'median':>7} {'max':>7} {'matches':>8}  target < {QUERY_TARGET_MS:g} ms")
    for t in timed:
        ok = t.median_ms < QUERY_TARGET_MS and not t.problem
        mark = verdict(t.query.label, ok)
        line = f"{t.query.label:<58} {t.median_ms:>7.1f} {t.max_ms:>7.1f} {t.query.expected:>8,}  {mark} {t.problem}"
        print(line.rstrip())
    ms = review.set_status_ms
    print(
        f"{'Store.set_status, one session (for scale)':<58} {statistics.median(ms):>7.1f} {max(ms):>7.1f} "
        f"{len(ms):>8,}  (no target)"
    )


def print_exports(exports: dict[str, tuple[float, float]], sessions: int, identical: bool) -> None:
    print(f"\nExport {sessions:,} sessions with export_dataset (best of {REPEAT})")
    print(f"{'operation':<50} {'seconds':>8} {'sessions/s':>11} {'file MB':>10}")
    for to, (seconds, mb) in exports.items():
        print(f"{f'export -> {to}':<50} {seconds:>8.3f} {sessions / seconds:>11,.0f} {mb:>10.1f}  (no target)")
    print(f"export -> ragas byte-identical to the imported file: {'yes' if identical else 'NO'}")


# -- main -----------------------------------------------------------------------------------


def main() -> int:
    if not REFERENCE.is_file():
        print(f"bench: reference data missing: {REFERENCE}", file=sys.stderr)
        return 1
    began = time.perf_counter()
    problem = ensure_ragas_env()
    verdict = Verdicts()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-store-") as name:
        tmp = Path(name)
        vocabulary = make_vocabulary(VOCABULARY, SEED)
        files = {n: build(tmp, n, vocabulary) for n in (SMALL, LARGE)}
        print(
            f"evalcore {evalcore.__version__} store benchmark | Python {platform.python_version()} | "
            f"SQLite {sqlite3.sqlite_version} | {os.cpu_count()} CPUs | load average {load_average()}\n"
            f"files: {SMALL:,} sessions ({files[SMALL].mb:.1f} MB), {LARGE:,} sessions ({files[LARGE].mb:.1f} MB); "
            f"ragas lines cycled, one of {VOCABULARY:,} made-up words (Zipf) per human message\n",
            flush=True,
        )

        ragas: dict[int, dict[str, Any] | None] = {}
        why_not: dict[int, str] = {}
        if problem is None:
            progress(f"ragas from_jsonl {SMALL:,}")
            ragas[SMALL] = time_ragas(files[SMALL], REPEAT)
            progress(f"ragas from_jsonl {LARGE:,}")
            ragas[LARGE], why_not[LARGE] = time_ragas_large(files[LARGE], ragas[SMALL], SMALL)
        else:
            why_not = {SMALL: f"not measured: {problem}", LARGE: f"not measured: {problem}"}

        progress("evalcore import")
        evalcore_times, dbs, db_sizes = {}, {}, {}
        for n, repeat in ((SMALL, REPEAT), (LARGE, LARGE_REPEAT)):
            evalcore_times[n], dbs[n] = time_import(tmp, files[n], repeat)
            db_sizes[n] = db_mb(dbs[n])
        reimport = time_reimport(dbs[SMALL], files[SMALL])

        progress("browse")
        with open_store(dbs[LARGE]) as store:
            review = set_up_review(store, LARGE)
            timed = [time_query(store, q) for q in queries(files[LARGE], review)]
        remove_db(dbs[LARGE])

        progress("export")
        exports = {}
        for to in ("ragas", "evalcore"):
            dst = tmp / f"export.{to}.jsonl"
            exports[to] = (time_export(dbs[SMALL], dst, to, SMALL), dst.stat().st_size / 1e6)
        identical = filecmp.cmp(files[SMALL].path, tmp / "export.ragas.jsonl", shallow=False)

    print_imports(files, evalcore_times, reimport, ragas, why_not, db_sizes, verdict)
    print_browse(timed, review, LARGE, verdict)
    print_exports(exports, SMALL, identical)
    total = len(verdict.passed) + len(verdict.failed)
    print(
        f"\nTargets: import >= {IMPORT_TARGET:g}x faster than ragas loads the file; every page or search "
        f"< {QUERY_TARGET_MS:g} ms.\nResult: {len(verdict.passed)} of {total} PASS"
        + (f"; FAIL: {' | '.join(verdict.failed)}" if verdict.failed else "")
        + (f"; not measured: {' | '.join(verdict.unmeasured)}" if verdict.unmeasured else "")
        + f" (benchmark ran {time.perf_counter() - began:.0f} s; load average now {load_average()})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
