"""Benchmark: the store on both engines, SQLite and PostgreSQL, at 20,000 and 100,000 sessions, with SQLite as it
was before the two engines (commit 2be55bc) measured in the same run, and ragas merely loading the same files.

Run with ``.venv/bin/python tests/bench/bench_store.py`` (about 12-20 minutes on 2 CPUs; ``--quick`` runs every
step on 2,000 and 10,000 sessions, to try the script, not to read its figures).

Three configurations, each measured in processes of its own (``tests/bench/store_probe.py``, which speaks both
store APIs and checks it imported the evalcore it was given):

- SQLite before: evalcore at commit 2be55bc (``git archive`` into a temporary folder), on a SQLite file;
- SQLite now: the working tree's evalcore (copied at the start, so that edits made while the benchmark runs
  do not reach it), on a SQLite file;
- PostgreSQL now: the same code on a database of a throwaway PostgreSQL cluster (``tests/pgcluster.py``: unix
  socket, ``fsync=off``, ``shared_buffers=2GB`` as a team's server is given memory (``SERVER``), the server's
  default settings otherwise), started here and stopped at the end.

Each code folder is compiled first (as pip compiles an installed package) and goes first on ``sys.path`` (and
in ``PYTHONPATH``, for the processes evalcore starts). The configurations take turns at every repetition (before,
now, PostgreSQL, before, now, ...), so that the machine's noise (2 shared CPUs) falls on all alike.

- Builds ragas JSONL files of 20,000 and 100,000 sessions in a temporary directory as ``bench_formats.py`` does
  (the 300 real ragas lines of ``tests/data/ragas_reference`` cycled, each made distinct), and adds one word to
  every human message, drawn (seeded) from 2,000 generated words by a Zipf law, so that full-text search meets
  common and rare words alike.
- Import: ``import_file`` of each file into a new database, best of 3 (20,000) or 2 (100,000); then re-imports
  of the 20,000 file into its database (all unchanged), best of 3. Beside it, ragas'
  ``EvaluationDataset.from_jsonl`` on the same file in the separate ``.bench/ragas-venv`` (made by
  ``tests/bench/setup_ragas_env.sh`` when missing), timed inside that process around the call only. ragas holds
  the whole dataset in memory: it loads the 100,000 file only when its 20,000 run predicts at most 60 s a load
  and the memory to spare.
- Export the 20,000-session dataset with ``export_dataset`` to ragas (must equal the imported file byte for
  byte) and to evalcore, best of 3.
- ``evalcore score --dataset bench --metrics tool_call_accuracy,tool_call_f1 --db DB --new-run`` on the 20,000
  sessions, the whole command from process start to exit (``python -c`` running ``evalcore.cli.entry()`` with
  the configuration's code first on ``sys.path``, the same launcher for every configuration), median of 3; with
  the CPU seconds it used (user + system, its workers included, PostgreSQL's server not), which the machine's
  other work disturbs less than the wall time.
- The Sessions page at 100,000 sessions: statuses, assistants and tags set up by direct SQL (ragas rows have no
  assistant and no tags; the same values on every engine) and 200 statuses through ``set_status``; on
  PostgreSQL then ``VACUUM ANALYZE`` (what autovacuum does soon after), so that every run plans on the same
  statistics. Then one page of 50 sessions (``browse``) for several filters and sorts, deep pages, and full-text
  searches: the median of 20 runs, taken in 4 rounds of 5 in turns with the other configurations (a round: a
  fresh process runs every page once untimed, then 5 passes over all of them). Every page's match count, length
  and order are checked against what the generator and the set-up wrote. Beside them, PostgreSQL's round trip
  alone (``SELECT 1``, 1,000 times on a psycopg connection: the floor under any page of a client-server database).
- 20 simulated reviewers at once on the 100,000 sessions: 20 processes, each with a store of its own, started
  together once all are connected, each for 25 s repeatedly opening one of the first 20 pages of one of four
  views (``browse``, 50 rows), reading one of its sessions (``store.sessions.get``) and saving a change to its
  reference (``save(pk, {"reference": ...}, base_version=..., author=...)``), reading it again and saving again
  on ``ConflictError``; no pause between steps. p50, p95 and max of every page, read and save (each save
  attempt, a refused one included). For scale, the same 20 starting a round every second (so that the machine
  is not kept busy by the simulation itself: a person pauses far longer), and one reviewer alone. Each of these
  three runs goes through the configurations in turns, as everything else does.

Targets: SQLite import at least 2x faster than ragas only loads the file; every page or search under 100 ms on
both engines; SQLite now no more than 5% slower than before at every figure (import, re-import, export, the
score command, every page: now / before <= 1.05; a page no more than 0.1 ms slower passes too, a difference 20
runs on a shared machine cannot tell); PostgreSQL within 1.5x of SQLite now at every page and search; with 20
reviewers at once and no pause on PostgreSQL, the p95 save under 50 ms. PostgreSQL's import, export and score
command, and the reviewers on SQLite, are shown without a target. The exit code is 0 whether the targets are
met or not (this is a benchmark, not a test); it is 1 only when the benchmark cannot run at all.
"""

from __future__ import annotations

import argparse
import compileall
import filecmp
import json
import os
import platform
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

from _common import MARK, RAGAS_LOAD, RAGAS_PYTHON, REFERENCE, ROOT, build_ragas_file, ensure_ragas_env, run_script

import evalcore

sys.path.insert(0, str(ROOT / "tests"))
from pgcluster import Cluster

PROBE = Path(__file__).resolve().parent / "store_probe.py"
BASELINE = "2be55bc"  # the store before the two engines (issue 19's starting point)
SMALL, LARGE = 20_000, 100_000
REPEAT = 3  # best of, for everything at 20,000 sessions
LARGE_REPEAT = 2  # best of, for imports of 100,000 sessions
QUERY_RUNS = 20  # median of, for pages and searches...
QUERY_ROUNDS = 4  # ...taken in this many rounds, in turns with the other configurations
COMMAND_REPEAT = 3  # median of, for the evalcore score command
METRICS = ("tool_call_accuracy", "tool_call_f1")
IMPORT_TARGET = 2.0  # ragas load time / evalcore import time
QUERY_TARGET_MS = 100.0
COST_TARGET = 1.05  # SQLite now / SQLite before, at most
PG_TARGET = 1.5  # PostgreSQL page / SQLite page, at most
ROUNDTRIPS = 1000  # PostgreSQL's SELECT 1, timed: the floor under any page
COST_FLOOR_MS = 0.1  # a page this much slower than before or less passes (what 20 runs cannot tell apart)
REVIEWERS = 20
REVIEW_SECONDS = 25.0
ALONE_SECONDS = 8.0  # one reviewer alone, for scale
REVIEW_PAGES = 20  # a reviewer opens one of the first pages of a view
PACE = 1.0  # seconds from one round of a paced reviewer to the next (for scale)
SAVE_TARGET_MS = 50.0  # p95 of a save with REVIEWERS at once, on PostgreSQL
RAGAS_LARGE_LIMIT = 60.0  # seconds one ragas load of 100,000 sessions may take
RAGAS_START = 60.0  # seconds allowed for the ragas process to start and import ragas
PROBE_TIMEOUT = 1800.0
VOCABULARY = 2_000
API_STATUSES = 200  # sessions whose status is set through set_status
DATASET = "bench"
SEED = 20_240_601
ASSISTANTS = {"support-bot": 40, "billing-bot": 25, "travel-agent": 20, "food-agent": 10, "beta-agent": 5}
STATUS_WEIGHTS = {"todo": 60, "in_progress": 10, "approved": 15, "rejected": 5, "flagged": 10}
TAG_SHARE = {"billing": 0.20, "escalated": 0.05, "vip": 0.01}
# What a reviewer opens: filters, sort, descending (the Sessions page's usual views).
REVIEW_VIEWS: tuple[tuple[dict[str, Any], str, bool], ...] = (
    ({}, "order", False),
    ({"status": ["todo"]}, "order", False),
    ({}, "turns", True),
    ({"assistant": "support-bot"}, "updated", True),
)


@dataclass
class Plan:
    """The sizes of one run (``--quick`` makes them small)."""

    small: int = SMALL
    large: int = LARGE
    review_seconds: float = REVIEW_SECONDS
    alone_seconds: float = ALONE_SECONDS


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


# -- the configurations ---------------------------------------------------------------------


@dataclass
class Config:
    """One evalcore (a code folder) on one engine."""

    key: str  # "before", "now", "postgres"
    label: str
    code: Path
    engine: str  # "sqlite" or "postgresql"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.code)}


class Databases:
    """New databases for the configurations: SQLite files in the temporary folder, databases of the cluster."""

    def __init__(self, tmp: Path, cluster: Cluster | None) -> None:
        self.tmp = tmp
        self.cluster = cluster
        self._n = 0

    def new(self, config: Config) -> str:
        self._n += 1
        if config.engine == "postgresql":
            assert self.cluster is not None
            return str(self.cluster.url(self.cluster.new_database_name()))
        path = self.tmp / f"{config.key}-{self._n}.db"
        remove_db(path)
        return str(path)

    def drop(self, url: str) -> None:
        if url.startswith("postgresql://"):
            assert self.cluster is not None
            self.cluster.admin(f"DROP DATABASE {url.split('@/')[1].split('?')[0]}")
        else:
            remove_db(Path(url))


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def extract_baseline(folder: Path) -> Path:
    """evalcore at ``BASELINE``, extracted into ``folder`` (read-only git: ``git archive``)."""
    folder.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", BASELINE, "evalcore"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def snapshot_now(folder: Path) -> Path:
    """The working tree's evalcore, copied (uncommitted changes included)."""
    shutil.copytree(ROOT / "evalcore", folder / "evalcore", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def describe_now() -> str:
    """The commit the working tree is on, and whether its evalcore has uncommitted changes."""
    git = ["git", "--no-optional-locks", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run([*git, "status", "--porcelain", "--", "evalcore"], capture_output=True, text=True)
    n = len(changed.stdout.splitlines())
    return f"{head or '?'}" + (f" + {n} uncommitted file(s) in evalcore/" if n else " (clean)")


def check_code(config: Config) -> None:
    """Make sure a process of ``config`` (and one evalcore starts, ``python -m``) imports its evalcore."""
    proc = subprocess.run(
        [sys.executable, "-c", "import evalcore; print(evalcore.__file__)"],
        capture_output=True, text=True, cwd=config.code, env=config.env,
    )  # fmt: skip
    found = Path(proc.stdout.strip()).resolve()
    if not found.is_relative_to(config.code.resolve()):
        raise SystemExit(f"bench: {config.label} imports evalcore from {found or proc.stderr}, not {config.code}")


def probe(config: Config, url: str, action: str, timeout: float = PROBE_TIMEOUT, **args: Any) -> dict[str, Any]:
    """Run one measurement in a fresh process of ``config`` (``store_probe.py``); its result."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as holder:
        json.dump(args, holder)
    try:
        command = [sys.executable, str(PROBE), str(config.code), url, action, f"@{holder.name}"]
        proc = subprocess.run(command, capture_output=True, text=True, cwd=config.code, env=config.env, timeout=timeout)
    finally:
        os.unlink(holder.name)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {config.label}: {action} failed:\n{proc.stderr[-3000:]}")
    return parse_result(proc.stdout, f"{config.label}: {action}")


def parse_result(stdout: str, what: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            values: dict[str, Any] = json.loads(line[len(MARK) :])
            return values
    raise SystemExit(f"bench: {what} printed no result:\n{stdout[-3000:]}")


def load_average() -> str:
    """The 1-minute load average: other work on the machine skews every figure."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "n/a"


def progress(message: str) -> None:
    print(f"  ... {message} (load average {load_average()})", file=sys.stderr, flush=True)


# -- import, re-import ----------------------------------------------------------------------


@dataclass
class Imports:
    """Each import's (wall seconds, CPU seconds) per configuration and step; the databases kept for what follows."""

    runs: dict[str, dict[str, list[tuple[float, float]]]] = field(default_factory=dict)  # config -> step -> runs
    mb: dict[str, dict[int, float]] = field(default_factory=dict)
    dbs: dict[str, dict[int, str]] = field(default_factory=dict)
    load: dict[str, str] = field(default_factory=dict)  # step -> load average at its start

    def add(self, config: Config, step: str, result: dict[str, Any]) -> None:
        self.runs.setdefault(config.key, {}).setdefault(step, []).append((result["seconds"], result["cpu"]))

    def best(self, key: str, step: str) -> tuple[float, float] | None:
        """The best wall time of ``step``, and the least CPU time."""
        runs = self.runs.get(key, {}).get(step)
        return (min(r[0] for r in runs), min(r[1] for r in runs)) if runs else None


def time_imports(configs: list[Config], dbs: Databases, src: BenchFile, repeat: int, imports: Imports) -> None:
    """``repeat`` imports of ``src`` per configuration, in turns, each into a new database; the last one kept."""
    n = src.sessions
    imports.load[f"import {n:,}"] = load_average()
    for rep in range(repeat):
        for config in configs:
            url = dbs.new(config)
            result = probe(config, url, "import", file=str(src.path), dataset=DATASET)
            if result["counts"] != [n, 0, 0, 0]:
                raise SystemExit(f"bench: {config.label}: importing {n} sessions gave {result['counts']}")
            imports.add(config, f"import {n:,}", result)
            imports.mb.setdefault(config.key, {})[n] = result["mb"]
            previous = imports.dbs.setdefault(config.key, {}).get(n)
            if previous is not None:
                dbs.drop(previous)
            imports.dbs[config.key][n] = url
        progress(f"import {n:,}: round {rep + 1} of {repeat} done")


def time_reimports(configs: list[Config], src: BenchFile, imports: Imports) -> None:
    n = src.sessions
    imports.load[f"re-import {n:,}"] = load_average()
    for _ in range(REPEAT):
        for config in configs:
            result = probe(config, imports.dbs[config.key][n], "import", file=str(src.path), dataset=DATASET)
            if result["counts"] != [0, 0, n, 0]:
                raise SystemExit(f"bench: {config.label}: re-importing {n} unchanged sessions gave {result['counts']}")
            imports.add(config, f"re-import {n:,}", result)


def time_ragas(src: BenchFile, repeat: int, timeout: float | None = None) -> dict[str, Any]:
    """ragas' from_jsonl timings, measured in the ragas venv; checks it read every session."""
    result = run_script(
        RAGAS_PYTHON, RAGAS_LOAD, str(src.path), str(repeat), timeout=timeout, RAGAS_DO_NOT_TRACK="true"
    )
    if result["samples"] != src.sessions or not result["multi_turn"]:
        raise SystemExit(f"bench: ragas read {result['samples']} samples, not {src.sessions} multi-turn ones")
    return dict(result)


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


# -- export, the score command --------------------------------------------------------------


@dataclass
class Exports:
    seconds: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # config -> format -> runs
    mb: dict[str, float] = field(default_factory=dict)  # format -> file size
    identical: dict[str, bool] = field(default_factory=dict)  # config -> ragas export == the imported file
    load: str = ""


def time_exports(configs: list[Config], tmp: Path, src: BenchFile, imports: Imports) -> Exports:
    exports = Exports(load=load_average())
    for _ in range(REPEAT):
        for config in configs:
            out = tmp / f"export-{config.key}"
            out.mkdir(exist_ok=True)
            result = probe(config, imports.dbs[config.key][src.sessions], "export", dataset=DATASET, out=str(out))
            for to, r in result.items():
                if r["count"] != src.sessions:
                    raise SystemExit(f"bench: {config.label}: export to {to} wrote {r['count']} of {src.sessions}")
                exports.seconds.setdefault(config.key, {}).setdefault(to, []).append(r["seconds"])
                exports.mb[to] = r["bytes"] / 1e6
            exports.identical[config.key] = filecmp.cmp(src.path, out / "export.ragas.jsonl", shallow=False)
    return exports


# Runs ``evalcore.cli.entry()`` as the console script does, on the code folder given first.
LAUNCH = """
import sys
sys.path.insert(0, sys.argv[1])
sys.meta_path[:] = [f for f in sys.meta_path if not (getattr(f, "__module__", "") or "").startswith("__editable")]
sys.argv = ["evalcore", *sys.argv[2:]]
from evalcore.cli import entry
entry()
"""


def run_score(config: Config, url: str, sessions: int) -> tuple[float, float]:
    """One ``evalcore score ... --new-run`` in a fresh process: wall seconds from start to exit, and the CPU
    seconds (user + system) of the command and of the worker processes it waited for."""
    command = [sys.executable, "-c", LAUNCH, str(config.code), "score", "--dataset", DATASET]
    command += ["--metrics", ",".join(METRICS), "--db", url, "--new-run"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=config.code, env=config.env, timeout=900)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if proc.returncode != 0:
        raise SystemExit(f"bench: {config.label}: evalcore score failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if f"{sessions} sessions of {DATASET!r}" not in proc.stderr or f"n={sessions}" not in proc.stdout:
        raise SystemExit(f"bench: {config.label}: evalcore score did not score {sessions}:\n{proc.stdout}{proc.stderr}")
    return seconds, cpu


@dataclass
class Scores:
    seconds: dict[str, list[float]] = field(default_factory=dict)  # config -> wall seconds of each run
    cpu: dict[str, list[float]] = field(default_factory=dict)  # config -> CPU seconds of each run
    load: str = ""


def time_scores(configs: list[Config], imports: Imports, sessions: int) -> Scores:
    scores = Scores(load=load_average())
    for _ in range(COMMAND_REPEAT):
        for config in configs:
            seconds, cpu = run_score(config, imports.dbs[config.key][sessions], sessions)
            scores.seconds.setdefault(config.key, []).append(seconds)
            scores.cpu.setdefault(config.key, []).append(cpu)
    return scores


# -- browse ---------------------------------------------------------------------------------


@dataclass
class Review:
    """What the set-up gives each session (index = position in the file), the same on every engine."""

    initial: list[str]  # statuses written by SQL
    assistant: list[str]
    tags: list[list[str]]
    new_status: dict[str, str]  # position -> the status then set through the API
    status: list[str]  # statuses in the end


def make_review(sessions: int) -> Review:
    rng = random.Random(SEED)
    initial = rng.choices(list(STATUS_WEIGHTS), weights=list(STATUS_WEIGHTS.values()), k=sessions)
    assistant = rng.choices(list(ASSISTANTS), weights=list(ASSISTANTS.values()), k=sessions)
    tags = [[t for t, share in TAG_SHARE.items() if rng.random() < share] for _ in range(sessions)]
    new_status = {}
    for i in range(0, sessions, sessions // API_STATUSES):
        new_status[str(i)] = "flagged" if initial[i] == "approved" else "approved"
    status = list(initial)
    for at, new in new_status.items():
        status[int(at)] = new
    return Review(initial, assistant, tags, new_status, status)


@dataclass
class Query:
    label: str
    filters: dict[str, Any]
    expected: int  # matching sessions
    sort: str = "order"
    descending: bool = False
    offset: int = 0

    def args(self) -> dict[str, Any]:
        return {"filters": self.filters, "sort": self.sort, "descending": self.descending, "offset": self.offset}


def queries(src: BenchFile, review: Review) -> Iterator[Query]:
    n = src.sessions
    every = range(n)
    deep = n // 2
    two = ["approved", "flagged"]
    yield Query("no filter, import order", {}, n)
    yield Query(f"no filter, import order, offset {deep:,}", {}, n, offset=deep)
    yield Query("no filter, turns desc", {}, n, "turns", True)
    yield Query(f"no filter, turns desc, offset {deep:,}", {}, n, "turns", True, deep)
    yield Query("no filter, status desc", {}, n, "status", True)
    yield Query(
        "status approved|flagged, turns desc",
        {"status": two},
        sum(review.status[i] in two for i in every),
        "turns",
        True,
    )
    yield Query("status todo, updated desc", {"status": ["todo"]}, review.status.count("todo"), "updated", True)
    yield Query("tag escalated, import order", {"tags": ["escalated"]}, sum("escalated" in t for t in review.tags))
    yield Query(
        "tags billing+escalated, tool calls desc",
        {"tags": ["billing", "escalated"]},
        sum({"billing", "escalated"} <= set(t) for t in review.tags),
        "tool_calls",
        True,
    )
    yield Query(
        "assistant beta-agent, turns desc",
        {"assistant": "beta-agent"},
        review.assistant.count("beta-agent"),
        "turns",
        True,
    )
    vocabulary, words = src.words.vocabulary, src.words
    rare, common, pair = words.rare(), vocabulary[0], vocabulary[1:3]
    for label, text in (("rare word", rare), ("common word", common), ("two words", " ".join(pair))):
        held = words.sessions_with(*text.split())
        yield Query(f"search {label} {text!r} ({len(held) / n:.2%})", {"search": text}, len(held))
    yield Query("search 'session' (in every session)", {"search": "session"}, n)
    held = words.sessions_with(common)
    yield Query(
        f"search {common!r} + status approved|flagged, turns desc",
        {"status": two, "search": common},
        sum(review.status[i] in two for i in held),
        "turns",
        True,
    )


# A page's items as the probe returns them: [pk, status, n_turns, n_tool_calls, updated_at].
_SORT_AT = {"order": 0, "status": 1, "turns": 2, "tool_calls": 3, "updated": 4}


def check_page(query: Query, total: int, items: list[list[Any]]) -> str:
    """What is wrong with the page, or ''."""
    rows = max(0, min(50, query.expected - query.offset))
    if total != query.expected or len(items) != rows:
        return f"WRONG: {total:,} matches, {len(items)} rows; expected {query.expected:,}, {rows}"
    at = _SORT_AT[query.sort]
    order = [(s[at], s[0]) for s in items]  # ties follow the sort's direction too
    if order != sorted(order, reverse=query.descending):
        return "WRONG: not in order"
    if query.filters.get("status") and any(s[1] not in query.filters["status"] for s in items):
        return "WRONG: a status outside the filter"
    return ""


@dataclass
class Browse:
    queries: list[Query]
    times: dict[str, list[list[float]]] = field(default_factory=dict)  # config -> query -> runs (ms)
    problems: dict[str, list[str]] = field(default_factory=dict)  # config -> query -> what is wrong
    setup: dict[str, dict[str, Any]] = field(default_factory=dict)  # config -> the set-up's result
    load: str = ""
    roundtrip: dict[str, Any] | None = None  # PostgreSQL's SELECT 1 (median_ms, least_ms)

    def median(self, key: str, i: int) -> float:
        return statistics.median(self.times[key][i])


def time_browse(configs: list[Config], src: BenchFile, review: Review, imports: Imports) -> Browse:
    n = src.sessions
    qs = list(queries(src, review))
    browse = Browse(qs)
    setup_args = {"status": review.initial, "assistant": review.assistant, "tags": review.tags}
    for config in configs:
        browse.setup[config.key] = probe(
            config,
            imports.dbs[config.key][n],
            "setup",
            dataset=DATASET,
            review=setup_args,
            every=n // API_STATUSES,
            new_status=review.new_status,
        )
    progress("browse: set up")
    browse.load = load_average()
    for config in configs:
        if config.key == "postgres":
            browse.roundtrip = probe(config, imports.dbs[config.key][n], "roundtrip", runs=ROUNDTRIPS)
    for _ in range(QUERY_ROUNDS):
        for config in configs:
            result = probe(
                config,
                imports.dbs[config.key][n],
                "browse",
                dataset=DATASET,
                queries=[q.args() for q in qs],
                runs=QUERY_RUNS // QUERY_ROUNDS,
            )
            times = browse.times.setdefault(config.key, [[] for _ in qs])
            problems = browse.problems.setdefault(config.key, ["" for _ in qs])
            for i, (q, r) in enumerate(zip(qs, result["queries"], strict=True)):
                times[i] += r["times"]
                problems[i] = problems[i] or check_page(q, r["total"], r["items"])
    return browse


# -- reviewers ------------------------------------------------------------------------------


@dataclass
class Reviewers:
    """The latencies (ms) of every reviewer's pages, reads and saves, pooled."""

    reviewers: int
    pace: float  # seconds between a reviewer's rounds (0: no pause)
    seconds: float  # the longest reviewer's run
    page_ms: list[float]
    get_ms: list[float]
    save_ms: list[float]
    conflicts: int
    saved: int
    load: str


def simulate(config: Config, url: str, reviewers: int, seconds: float, tmp: Path, pace: float = 0.0) -> Reviewers:
    """``reviewers`` processes of ``config`` at once, started together once every one is connected."""
    load = load_average()
    args = {"dataset": DATASET, "views": REVIEW_VIEWS, "pages": REVIEW_PAGES, "seconds": seconds, "pace": pace}
    procs: list[subprocess.Popen[str]] = []
    errors: list[IO[str]] = []
    try:
        for i in range(reviewers):
            one = json.dumps({**args, "index": i, "seed": SEED + i})
            errors.append(open(tmp / f"reviewer-{config.key}-{i}.err", "w+", encoding="utf-8"))  # noqa: SIM115
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(PROBE), str(config.code), url, "reviewer", one],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errors[-1],
                    text=True,
                    cwd=config.code,
                    env=config.env,
                )  # fmt: skip
            )
        for proc, err in zip(procs, errors, strict=True):
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "READY":
                err.seek(0)
                raise SystemExit(f"bench: {config.label}: a reviewer did not start:\n{err.read()[-3000:]}")
        for proc in procs:  # all at once
            assert proc.stdin is not None
            proc.stdin.write("GO\n")
            proc.stdin.flush()
        results = []
        for proc, err in zip(procs, errors, strict=True):
            out, _ = proc.communicate(timeout=seconds + 120)
            if proc.returncode != 0:
                err.seek(0)
                raise SystemExit(f"bench: {config.label}: a reviewer failed:\n{err.read()[-3000:]}")
            results.append(parse_result(out, f"{config.label}: reviewer"))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for err in errors:
            err.close()
    return Reviewers(
        reviewers,
        pace,
        max(r["seconds"] for r in results),
        [ms for r in results for ms in r["page_ms"]],
        [ms for r in results for ms in r["get_ms"]],
        [ms for r in results for ms in r["save_ms"]],
        sum(r["conflicts"] for r in results),
        sum(r["saved"] for r in results),
        load,
    )


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


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


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def shown(value: float | None, spec: str = ".2f", suffix: str = "x") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def print_imports(
    configs: list[Config],
    files: dict[int, BenchFile],
    imports: Imports,
    ragas: dict[int, dict[str, Any] | None],
    why_not: dict[int, str],
    verdict: Verdicts,
) -> None:
    sizes = sorted(files)
    loads = ", ".join(f"{step} {load}" for step, load in imports.load.items())
    print(
        f"Import (best of {REPEAT} at {sizes[0]:,}, of {LARGE_REPEAT} at {sizes[1]:,}; each into a new database; "
        f"the configurations in turns; load average at the start of each: {loads}); CPU: the least user + system "
        f"seconds of the importing process and its reader (PostgreSQL's server not counted)"
    )
    print(
        f"{'operation':<56} {'seconds':>8} {'sessions/s':>10} {'CPU s':>6} {'ragas/this':>10} {'now/before':>10} "
        f"{'CPU':>6} {'PG/SQLite':>9}  targets: >= {IMPORT_TARGET:g}x ragas (SQLite now); now/before <= {COST_TARGET:g}"
    )

    def row(label: str, seconds: float, n: int, cpu: float | None, *cells: str) -> None:
        line = f"{label:<56} {seconds:>8.3f} {n / seconds:>10,.0f} {shown(cpu, '.2f', ''):>6} {cells[0]:>10} "
        print(f"{line}{cells[1]:>10} {cells[2]:>6} {cells[3]:>9}  {cells[4]}".rstrip())

    for n in sizes:
        result = ragas.get(n)
        base = min(result["times"]) if result else None
        if result:
            row(f"ragas {result['version']} from_jsonl {n:,} ({files[n].mb:.0f} MB)", base or 0, n, None, *[""] * 5)
        else:
            print(f"{f'ragas from_jsonl {n:,} ({files[n].mb:.0f} MB)':<56} {why_not.get(n, 'not measured')}")
        steps = [f"import {n:,}"] + ([f"re-import {n:,}"] if n == sizes[0] else [])
        for step in steps:
            for config in configs:
                best = imports.best(config.key, step)
                if best is None:
                    continue
                seconds, cpu = best
                before, now = imports.best("before", step), imports.best("now", step)
                vs_ragas = ratio(base, seconds)
                cost = cpu_cost = pg = None
                marks = "(no target)"
                if config.key == "now" and before is not None:
                    cost, cpu_cost = seconds / before[0], cpu / before[1]
                    marks = verdict(f"SQLite {step} now/before", cost <= COST_TARGET)
                    if step.startswith("import"):
                        ok = None if vs_ragas is None else vs_ragas >= IMPORT_TARGET
                        marks = f"{verdict(f'SQLite {step} vs ragas', ok)} ragas; {marks} now/before"
                elif config.key == "postgres" and now is not None:
                    pg = seconds / now[0]
                elif config.key == "before":
                    marks = ""
                what = f"-> {imports.mb[config.key][n]:.0f} MB" if step.startswith("import") else "(all unchanged)"
                label = f"{config.label}: {step} {what}"
                row(label, seconds, n, cpu, shown(vs_ragas), shown(cost), shown(cpu_cost), shown(pg), marks)
    for n, result in ragas.items():
        if result:
            print(f"(ragas' RSS grew by {result['rss_growth_kb'] / 1024:,.0f} MB loading {n:,} sessions)")


def print_exports(configs: list[Config], exports: Exports, sessions: int, verdict: Verdicts) -> None:
    print(
        f"\nExport {sessions:,} sessions with export_dataset (best of {REPEAT}, seconds; load average {exports.load})"
    )
    print(
        f"{'operation':<24} {'file MB':>8} "
        + " ".join(f"{c.label:>16}" for c in configs)
        + f" {'now/before':>10} {'PG/SQLite':>9}  target: now/before <= {COST_TARGET:g}"
    )
    for to, mb in exports.mb.items():
        best = {c.key: min(exports.seconds[c.key][to]) for c in configs}
        cost = ratio(best.get("now"), best.get("before"))
        pg = ratio(best.get("postgres"), best.get("now"))
        mark = verdict(f"SQLite export -> {to} now/before", None if cost is None else cost <= COST_TARGET)
        cells = " ".join(f"{best[c.key]:>16.3f}" for c in configs)
        print(f"{f'export -> {to}':<24} {mb:>8.1f} {cells} {shown(cost):>10} {shown(pg):>9}  {mark}")
    same = ", ".join(f"{c.label} {'yes' if exports.identical[c.key] else 'NO'}" for c in configs)
    print(f"export -> ragas byte-identical to the imported file: {same}")


def print_scores(configs: list[Config], scores: Scores, sessions: int, verdict: Verdicts) -> None:
    print(
        f"\nevalcore score --metrics {','.join(METRICS)} on {sessions:,} sessions, the whole command (process "
        f"start to exit, median of {COMMAND_REPEAT}, the configurations in turns; load average {scores.load}); "
        f"CPU: user + system seconds of the command and its workers (PostgreSQL's server not counted), for telling "
        f"the machine's noise from the code's"
    )
    print(
        f"{'configuration':<30} {'runs (s)':<20} {'median':>8} {'CPU s':>7} {'now/before':>10} {'CPU':>6} "
        f"{'PG/SQLite':>9}  target: now/before <= {COST_TARGET:g}"
    )
    medians = {key: statistics.median(runs) for key, runs in scores.seconds.items()}
    cpus = {key: statistics.median(runs) for key, runs in scores.cpu.items()}
    for config in configs:
        median = medians[config.key]
        cost = cpu_cost = pg = None
        mark = "(no target)"
        if config.key == "now":
            cost, cpu_cost = ratio(median, medians.get("before")), ratio(cpus["now"], cpus.get("before"))
            mark = verdict("score command now/before", None if cost is None else cost <= COST_TARGET)
        elif config.key == "postgres":
            pg = ratio(median, medians.get("now"))
        runs = ", ".join(f"{t:.2f}" for t in scores.seconds[config.key])
        line = f"{config.label:<30} {runs:<20} {median:>8.3f} {cpus[config.key]:>7.2f} {shown(cost):>10} "
        print(f"{line}{shown(cpu_cost):>6} {shown(pg):>9}  {mark}")


def print_browse(configs: list[Config], browse: Browse, sessions: int, verdict: Verdicts) -> None:
    keys = [c.key for c in configs]
    setup = browse.setup.get("now") or next(iter(browse.setup.values()))
    print(
        f"\nBrowse {sessions:,} sessions: one page of 50 (median of {QUERY_RUNS} runs in {QUERY_ROUNDS} rounds, the "
        f"configurations in turns, ms; load average {browse.load}); set-up by SQL {setup['sql_seconds']:.1f} s "
        f"(statuses, assistants, tags) + {len(setup['set_status_ms'])} set_status"
        + (
            f"; PostgreSQL: VACUUM ANALYZE {browse.setup['postgres']['vacuum_seconds']:.1f} s"
            if "postgres" in keys
            else ""
        )
    )
    print(
        f"{'page':<56} {'matches':>8} {'before':>7} {'SQLite':>7} {'now/bef':>7} {'PgSQL':>7} {'PG/SQL':>7}  "
        f"targets: now/before <= {COST_TARGET:g} (or + {COST_FLOOR_MS:g} ms) | PG <= {PG_TARGET:g}x SQLite | "
        f"< {QUERY_TARGET_MS:g} ms"
    )
    sums = dict.fromkeys(keys, 0.0)
    for i, q in enumerate(browse.queries):
        median = {key: browse.median(key, i) for key in keys}
        for key in keys:
            sums[key] += median[key]
        cost = ratio(median.get("now"), median.get("before"))
        pg = ratio(median.get("postgres"), median.get("now"))
        problem = " ".join(f"{key}: {browse.problems[key][i]}" for key in keys if browse.problems[key][i])
        marks = [
            verdict(
                f"page now/before: {q.label}",
                None if cost is None else within_cost(median["now"], median["before"]) and not problem,
            ),
            verdict(f"page PG/SQLite: {q.label}", None if pg is None else pg <= PG_TARGET and not problem),
            verdict(
                f"page < {QUERY_TARGET_MS:g} ms: {q.label}",
                all(median[k] < QUERY_TARGET_MS for k in keys if k != "before") and not problem,
            ),
        ]
        line = f"{q.label:<56} {q.expected:>8,} {cell(median, 'before')} {cell(median, 'now')} {shown(cost):>7} "
        line += f"{cell(median, 'postgres')} {shown(pg):>7}  "
        print(f"{line}{' | '.join(marks)} {problem}".rstrip())
    cost = ratio(sums.get("now"), sums.get("before"))
    pg = ratio(sums.get("postgres"), sums.get("now"))
    line = f"{'all the pages above, their medians summed':<56} {'':>8} {cell(sums, 'before')} {cell(sums, 'now')} "
    print(f"{line}{shown(cost):>7} {cell(sums, 'postgres')} {shown(pg):>7}  (for scale)")
    ms = {key: statistics.median(browse.setup[key]["set_status_ms"]) for key in keys}
    label = "set_status, one session (median; for scale)"
    count = len(browse.setup[keys[0]]["set_status_ms"])
    cost, pg = ratio(ms.get("now"), ms.get("before")), ratio(ms.get("postgres"), ms.get("now"))
    line = f"{label:<56} {count:>8,} {cell(ms, 'before')} {cell(ms, 'now')} {shown(cost):>7} "
    print(f"{line}{cell(ms, 'postgres')} {shown(pg):>7}  (no target)")
    if browse.roundtrip is not None and "now" in keys:
        fastest = min(range(len(browse.queries)), key=lambda i: browse.median("now", i))
        print(
            f"PostgreSQL's round trip alone (SELECT 1 on a connection of its own, psycopg, median of {ROUNDTRIPS:,}; "
            f"least {browse.roundtrip['least_ms']:.3f}): {browse.roundtrip['median_ms']:.3f} ms, the floor under any "
            f"page; SQLite's fastest page ({browse.queries[fastest].label}) {browse.median('now', fastest):.2f} ms, "
            f"{PG_TARGET:g}x of it {PG_TARGET * browse.median('now', fastest):.2f} ms"
        )


def within_cost(now: float, before: float) -> bool:
    """Whether a page of SQLite now costs at most ``COST_TARGET`` times before's, or ``COST_FLOOR_MS`` more."""
    return now <= COST_TARGET * before or now - before <= COST_FLOOR_MS


def cell(values: dict[str, float], key: str) -> str:
    if key not in values:
        return f"{'-':>7}"
    return f"{values[key]:>7.2f}" if values[key] < 10 else f"{values[key]:>7.1f}"


def print_reviewers(configs: list[Config], runs: dict[str, list[Reviewers]], sessions: int, verdict: Verdicts) -> None:
    views = "; ".join(
        f"{', '.join(f'{k} {v}' for k, v in f.items()) or 'no filter'}, {s}{' desc' if d else ''}"
        for f, s, d in REVIEW_VIEWS
    )
    print(
        f"\nSimulated reviewers on {sessions:,} sessions, each a process with a store of its own, all started at "
        f"once: a page of 50 (one of the first {REVIEW_PAGES} pages of: {views}), a read of one of its sessions "
        f"(get), a save of its reference (save; read and saved again on ConflictError); in a loop with no pause, "
        f"or (for scale) a round every {PACE:g} s; latencies in ms, every save attempt counted"
    )
    print(
        f"{'configuration: reviewers (pace, time)':<48} {'operation':<14} {'count':>7} {'per s':>7} {'p50':>7} "
        f"{'p95':>7} {'max':>8}  target: p95 save < {SAVE_TARGET_MS:g} ms, {REVIEWERS} with no pause, PostgreSQL"
    )
    order = {"postgres": 0, "now": 1, "before": 2}
    for config in sorted(configs, key=lambda c: order[c.key]):
        for r in runs[config.key]:
            pace = f"every {r.pace:g} s" if r.pace else "no pause"
            label = f"{config.label}: {r.reviewers} ({pace}, {r.seconds:.0f} s)"
            for op, values in (("page (browse)", r.page_ms), ("read (get)", r.get_ms), ("save", r.save_ms)):
                p95 = percentile(values, 95)
                mark = ""
                if op == "save" and r.reviewers == REVIEWERS and not r.pace:
                    what = f"p95 save, {r.reviewers} reviewers with no pause, PostgreSQL"
                    mark = verdict(what, p95 < SAVE_TARGET_MS) if config.key == "postgres" else "(no target)"
                line = (
                    f"{label:<48} {op:<14} {len(values):>7,} {len(values) / r.seconds:>7.1f} "
                    f"{statistics.median(values):>7.1f} {p95:>7.1f} {max(values):>8.1f}  {mark}"
                )
                print(line.rstrip())
                label = ""
            print(f"{'':<48} saved {r.saved:,}, conflicts {r.conflicts:,}; load average {r.load} at the start")


# -- main -----------------------------------------------------------------------------------


#: The PostgreSQL server's settings beyond the throwaway cluster's: the memory a team's server gives it (PostgreSQL's
#: default ``shared_buffers`` is 128 MB, less than the 100,000-session table, so that a search's count read it from
#: the operating system's cache a block at a time; the usual advice is a quarter of the machine's memory).
SERVER = {"shared_buffers": "2GB"}


def start_cluster() -> tuple[Cluster | None, str]:
    try:
        return Cluster(SERVER), ""
    except (RuntimeError, OSError, subprocess.SubprocessError, KeyError) as exc:
        return None, f"{type(exc).__name__}: {str(exc)[-300:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 10,000 sessions: to try the script")
    options = parser.parse_args()
    plan = Plan(2_000, 10_000, 5.0, 3.0) if options.quick else Plan()
    if not REFERENCE.is_file():
        print(f"bench: reference data missing: {REFERENCE}", file=sys.stderr)
        return 1
    began = time.perf_counter()
    problem = ensure_ragas_env()
    verdict = Verdicts()
    cluster, no_cluster = start_cluster()
    try:
        with tempfile.TemporaryDirectory(prefix="evalcore-bench-store-") as name:
            tmp = Path(name)
            before = Config("before", f"SQLite before ({BASELINE})", extract_baseline(tmp / "before"), "sqlite")
            now = Config("now", "SQLite now", snapshot_now(tmp / "now"), "sqlite")
            now_is = describe_now()  # (what was copied)
            configs = [before, now]
            if cluster is not None:
                configs.append(Config("postgres", "PostgreSQL now", now.code, "postgresql"))
            for config in configs[:2]:
                compileall.compile_dir(config.code / "evalcore", quiet=1)
                check_code(config)
            pg_version = ""
            if cluster is not None:
                pg_version = (
                    f"PostgreSQL {cluster.bin.parent.name} (throwaway cluster, unix socket, fsync=off, "
                    + ", ".join(f"{name}={value}" for name, value in SERVER.items())
                    + ")"
                )
            vocabulary = make_vocabulary(VOCABULARY, SEED)
            files = {n: build(tmp, n, vocabulary) for n in (plan.small, plan.large)}
            print(
                f"evalcore {evalcore.__version__} store benchmark | now: {now_is} | before: {BASELINE} | "
                f"Python {platform.python_version()} | SQLite {sqlite3.sqlite_version} | "
                f"{pg_version or f'PostgreSQL not measured: {no_cluster}'} | {os.cpu_count()} CPUs | "
                f"load average {load_average()}\n"
                f"files: {plan.small:,} sessions ({files[plan.small].mb:.1f} MB), {plan.large:,} sessions "
                f"({files[plan.large].mb:.1f} MB); ragas lines cycled, one of {VOCABULARY:,} made-up words (Zipf) per "
                f"human message\n"
                + (
                    "PostgreSQL runs with fsync=off (as tests/pgcluster.py starts it): its commits do not wait for the "
                    "disk, where SQLite's do (synchronous=FULL)\n"
                    if cluster is not None
                    else ""
                ),
                flush=True,
            )
            dbs = Databases(tmp, cluster)

            ragas: dict[int, dict[str, Any] | None] = {}
            why_not: dict[int, str] = {}
            if problem is None:
                progress(f"ragas from_jsonl {plan.small:,}")
                ragas[plan.small] = time_ragas(files[plan.small], REPEAT)
                progress(f"ragas from_jsonl {plan.large:,}")
                small = ragas[plan.small]
                assert small is not None
                ragas[plan.large], why_not[plan.large] = time_ragas_large(files[plan.large], small, plan.small)
            else:
                why_not = {plan.small: f"not measured: {problem}", plan.large: f"not measured: {problem}"}

            imports = Imports()
            progress(f"import {plan.small:,}")
            time_imports(configs, dbs, files[plan.small], REPEAT, imports)
            progress(f"re-import {plan.small:,}")
            time_reimports(configs, files[plan.small], imports)
            progress("export")
            exports = time_exports(configs, tmp, files[plan.small], imports)
            progress("evalcore score")
            scores = time_scores(configs, imports, plan.small)
            for config in configs:
                dbs.drop(imports.dbs[config.key].pop(plan.small))
            progress(f"import {plan.large:,}")
            time_imports(configs, dbs, files[plan.large], LARGE_REPEAT, imports)
            progress("browse")
            review = make_review(plan.large)
            browse = time_browse(configs, files[plan.large], review, imports)
            reviewers: dict[str, list[Reviewers]] = {}
            runs = ((REVIEWERS, plan.review_seconds, 0.0), (REVIEWERS, plan.review_seconds, PACE))
            for n, seconds, pace in (*runs, (1, plan.alone_seconds, 0.0)):
                for config in configs:  # (in turns: the disk's and the CPUs' other work falls on all alike)
                    progress(f"reviewers: {config.label}, {n} ({f'every {pace:g} s' if pace else 'no pause'})")
                    url = imports.dbs[config.key][plan.large]
                    reviewers.setdefault(config.key, []).append(simulate(config, url, n, seconds, tmp, pace))
    finally:
        if cluster is not None:
            cluster.stop()

    print_imports(configs, files, imports, ragas, why_not, verdict)
    print_exports(configs, exports, plan.small, verdict)
    print_scores(configs, scores, plan.small, verdict)
    print_browse(configs, browse, plan.large, verdict)
    print_reviewers(configs, reviewers, plan.large, verdict)
    total = len(verdict.passed) + len(verdict.failed)
    print(
        f"\nTargets: SQLite import >= {IMPORT_TARGET:g}x faster than ragas loads the file; every page or search "
        f"< {QUERY_TARGET_MS:g} ms on both engines; SQLite now <= {COST_TARGET:g}x SQLite before at every figure; "
        f"PostgreSQL <= {PG_TARGET:g}x SQLite at every page and search; p95 save < {SAVE_TARGET_MS:g} ms with "
        f"{REVIEWERS} reviewers at once and no pause on PostgreSQL.\nResult: {len(verdict.passed)} of {total} PASS"
        + (f"; FAIL: {' | '.join(verdict.failed)}" if verdict.failed else "")
        + (f"; not measured: {' | '.join(verdict.unmeasured)}" if verdict.unmeasured else "")
        + f" (benchmark ran {time.perf_counter() - began:.0f} s; load average now {load_average()})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
