"""Benchmark: evalcore scoring against ragas' own evaluate(), and the judge's concurrency.

Run with ``.venv/bin/python tests/bench/bench_metrics.py`` (about two minutes on 2 CPUs).

Deterministic scoring, ``tool_call_accuracy`` and ``tool_call_f1``:

- Builds a 20,000-session ragas JSONL file as ``bench_formats.py`` does (the 300 real ragas lines
  of ``tests/data/ragas_reference`` cycled, each made distinct).
- Times ``evalcore.scoring.score_sessions`` over those sessions in memory (no store), best of 5:
  the counterpart of ragas' ``evaluate()``, which scores an in-memory dataset into an in-memory
  result. Measured as ragas is: a fresh process reads the file, then the call alone is timed.
- Times ragas 0.4.3's ``evaluate(dataset, metrics=[ToolCallAccuracy(), ToolCallF1()],
  show_progress=False, raise_exceptions=True)`` on the first 2,000 lines of the same file (ragas
  is slow; its rate does not depend on the size) in the separate ``.bench/ragas-venv`` (made by
  ``tests/bench/setup_ragas_env.sh`` when missing), timed inside that process around the call
  only, best of 5. These metrics are not LLM metrics: the script checks that neither is a
  ``MetricWithLLM``/``MetricWithEmbeddings``, so ``evaluate`` builds no LLM and no embeddings
  (nothing is passed for them); analytics are off (``RAGAS_DO_NOT_TRACK=true``) and
  ``OPENAI_API_KEY`` is set to a dummy value in that process, so no real key could be used. ragas'
  per-sample "Length mismatch" ``UserWarning``s are silenced there, which only makes ragas
  faster. For scale, ragas' metrics are also timed called directly (``multi_turn_ascore`` in a
  loop, no ``evaluate``). ragas' scores of the 2,000 samples are checked equal to evalcore's
  scores of the same sessions in the timed run.
- For scale, imports the file into a temporary SQLite store (``evalcore.store.import_file``) and
  times ``evalcore.scoring.score_dataset`` on it, best of 5, each a new run (``resume=False``):
  reading the sessions from the store (both metrics read only tool calls: their calls, taken from
  the stored JSON without building the sessions' models), scoring, writing every score,
  summarising. Then one more, instrumented, run shows where that time goes.
- The whole command as a person runs it: ``evalcore score --dataset bench --metrics
  tool_call_accuracy,tool_call_f1 --db bench.db --new-run`` (the console script next to this
  Python), 3 runs, each timed from process start to exit (interpreter start, imports, opening the
  store, reading, scoring on its default worker processes, writing, summarising, printing), against
  ragas' ``EvaluationDataset.from_jsonl`` + ``evaluate`` timed inside ragas' process (its imports
  excluded, which favours ragas), best of 5. The ratio is of the median run. evalcore's bytecode is
  compiled before (``compileall``), as pip compiles an installed package. Its peak resident
  memory (``/usr/bin/time``) at 20,000 sessions and at 2,000 shows it flat in the number of sessions.

Judge throughput: ``relevance_to_query`` (one session-level judge call per session) on 48 of those
sessions against ``tests/openai_server.FakeOpenAI(latency=0.2)``, a real HTTP server on the
loopback, at concurrency 1 and 16 (``score_dataset(..., judge=JudgeConfig(...), concurrency=N)``).
Each measurement uses a fresh store (so a new run and an empty judge cache), imported before the
clock starts; best of 2 (concurrency 1) or 3 (16). 48 sessions because 48 is a multiple of 16:
with 40, three waves of 16 cap the ratio at 40/3 = 13.3x by arithmetic alone.

Targets: the whole ``evalcore score`` command at least 20x ragas' load + evaluate (goal 40x);
``score_sessions`` (in memory, as ``evaluate`` is) at least 50x ragas' ``evaluate``
(sessions per second), with ``score_dataset`` through the store shown for scale; judge calls per
second at concurrency 16 at least 12x concurrency 1. The exit code is 0 whether the targets are
met or not (this is a benchmark, not a test); it is 1 only when the benchmark cannot run at all.
"""

from __future__ import annotations

import compileall
import gc
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import RAGAS_PYTHON, REFERENCE, ROOT, build_ragas_file, ensure_ragas_env, run_script

import evalcore
import evalcore.scoring
from evalcore.importing import import_file
from evalcore.judge import JudgeConfig
from evalcore.metrics import Metric
from evalcore.scoring import score_dataset
from evalcore.store import Store, open_store
from evalcore.store.runs import Runs

sys.path.insert(0, str(ROOT / "tests"))
from openai_server import FakeOpenAI

SESSIONS = 20_000
RAGAS_SAMPLES = 2_000
REPEAT = 5
METRICS = ("tool_call_accuracy", "tool_call_f1")
SCORE_TARGET = 50.0  # evalcore score_sessions sessions/s / ragas evaluate samples/s
COMMAND_TARGET = 20.0  # the whole evalcore score command's sessions/s / ragas load + evaluate samples/s (goal 40)
COMMAND_REPEAT = 3
EVALCORE = Path(sys.executable).parent / "evalcore"  # the console script a person runs

JUDGE_SESSIONS = 48
JUDGE_METRIC = "relevance_to_query"
LATENCY = 0.2
CONCURRENCY = (1, 16)
JUDGE_REPEAT = {1: 2, 16: 3}
JUDGE_TARGET = 12.0  # calls/s at concurrency 16 / calls/s at concurrency 1
RAGAS_TIMEOUT = 300.0

# Run by the ragas venv's python: imports first, then times evaluate() alone.
RAGAS_EVALUATE = """
import asyncio, gc, sys, time, warnings
warnings.simplefilter("ignore")  # "Length mismatch" per sample, deprecations: silenced, only faster
import ragas
from ragas import EvaluationDataset, evaluate
from ragas.metrics import ToolCallAccuracy, ToolCallF1
from ragas.metrics.base import MetricWithEmbeddings, MetricWithLLM

path, repeat = sys.argv[1], int(sys.argv[2])
load_times = []
for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    dataset = EvaluationDataset.from_jsonl(path)
    load_times.append(time.perf_counter() - start)
metrics = [ToolCallAccuracy(), ToolCallF1()]
llm_metrics = [type(m).__name__ for m in metrics if isinstance(m, (MetricWithLLM, MetricWithEmbeddings))]
times = []
for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    out = evaluate(dataset, metrics=metrics, show_progress=False, raise_exceptions=True)
    times.append(time.perf_counter() - start)
scores = [[row["tool_call_accuracy"], row["tool_call_f1"]] for row in out.scores]


async def direct():
    return [[await m.multi_turn_ascore(sample) for m in metrics] for sample in dataset.samples]


direct_times = []
for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    direct_scores = asyncio.run(direct())
    direct_times.append(time.perf_counter() - start)
result(times=times, load_times=load_times, direct_times=direct_times, samples=len(dataset),
       multi_turn=dataset.is_multi_turn(),
       scores=scores, direct_agrees=direct_scores == scores, llm_metrics=llm_metrics, version=ragas.__version__)
"""


# Run by evalcore's python, the counterpart of RAGAS_EVALUATE: a fresh process reads the file,
# then score_sessions alone is timed. The scores of the first sessions come back for comparison.
EVALCORE_SCORE = """
import gc, sys, time
from evalcore import read_path
from evalcore.scoring import score_sessions

path, repeat, metrics, keep = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4])
with read_path(path) as results:
    sessions = [r.session for r in results if r.session is not None]
times = []
for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    scored = score_sessions(sessions, metrics)
    times.append(time.perf_counter() - start)
    assert len(scored) == len(sessions)
scores = [[s[m][-1].value for m in metrics] for s in scored[:keep]]
result(times=times, sessions=len(sessions), scores=scores)
"""


def rate(items: int, seconds: float) -> str:
    return f"{items / seconds:>14,.0f}"


# -- deterministic scoring --------------------------------------------------------------------


def time_ragas(src: Path) -> dict[str, Any]:
    env = {"RAGAS_DO_NOT_TRACK": "true", "OPENAI_API_KEY": "sk-dummy-bench-no-network"}
    result = run_script(RAGAS_PYTHON, RAGAS_EVALUATE, str(src), str(REPEAT), timeout=RAGAS_TIMEOUT, **env)
    if result["samples"] != RAGAS_SAMPLES or not result["multi_turn"]:
        raise SystemExit(f"bench: ragas read {result['samples']} samples, not {RAGAS_SAMPLES} multi-turn ones")
    if result["llm_metrics"]:
        raise SystemExit(f"bench: ragas wants an LLM or embeddings for {result['llm_metrics']}")
    return result


def check_scores(report: Any) -> None:
    summaries = {s.metric: s for s in report.summaries}
    for key in METRICS:
        s = summaries[key]
        if (s.count, s.failed, s.not_applicable) != (SESSIONS, 0, 0):
            raise SystemExit(f"bench: {key}: {s.count} scored, {s.failed} failed, {s.not_applicable} not applicable")


def time_score_dataset(store: Store) -> float:
    """Best of ``REPEAT`` runs of ``score_dataset``, each a new run; checks every session was scored."""
    times = []
    for _ in range(REPEAT):
        gc.collect()
        start = time.perf_counter()
        report = score_dataset(store, "bench", list(METRICS), resume=False)
        times.append(time.perf_counter() - start)
        check_scores(report)
    return min(times)


# The steps of one instrumented run, in the order printed; an indented one is part of the one above.
STEPS = (
    "read the sessions' calls (scoring.session_calls)",
    "score (Metric.evaluate_calls)",
    "write scores (Runs.write_rows)",
    "summarise the run (summarize_run)",
)


@contextmanager
def timed(owner: Any, name: str, totals: dict[str, float], label: str) -> Iterator[None]:
    """Add the time spent in ``owner.name`` to ``totals[label]`` while inside."""
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - start

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


def breakdown(store: Store) -> tuple[float, dict[str, float]]:
    """One more ``score_dataset`` run with its main steps timed: where the time goes."""
    totals: dict[str, float] = defaultdict(float)
    with (
        timed(
            evalcore.scoring, "session_calls", totals, STEPS[0]
        ),  # (tool-call metrics read only calls: no models built)
        timed(Metric, "evaluate_calls", totals, STEPS[1]),
        timed(Runs, "write_rows", totals, STEPS[2]),
        timed(evalcore.scoring, "summarize_run", totals, STEPS[3]),
    ):
        gc.collect()
        start = time.perf_counter()
        report = score_dataset(store, "bench", list(METRICS), resume=False)
        total = time.perf_counter() - start
    check_scores(report)
    return total, dict(totals)


@dataclass
class Command:
    """The whole ``evalcore score`` command, as a person runs it: wall time from start to exit, peak memory."""

    seconds: list[float]  # each run, in order
    peak_kb: dict[int, int]  # sessions -> peak resident memory of the command (kB; 0: not measured)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def run_command(db: Path, dataset: str, sessions: int) -> tuple[float, int]:
    """One ``evalcore score ... --new-run`` in a fresh process: (wall seconds, peak RSS in kB or 0)."""
    command = [str(EVALCORE), "score", "--dataset", dataset, "--metrics", ",".join(METRICS), "--db", str(db)]
    command.append("--new-run")
    timer = ["/usr/bin/time", "-f", "BENCH_PEAK_KB %M"] if Path("/usr/bin/time").exists() else []
    start = time.perf_counter()
    proc = subprocess.run([*timer, *command], capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(command)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if f"{sessions} sessions of {dataset!r}" not in proc.stderr or f"n={sessions}" not in proc.stdout:
        raise SystemExit(f"bench: evalcore score did not score {sessions} sessions:\n{proc.stdout}\n{proc.stderr}")
    peak = [int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("BENCH_PEAK_KB ")]
    return seconds, peak[0] if peak else 0


def time_command(db: Path, small_db: Path) -> Command:
    """``COMMAND_REPEAT`` runs of the whole command on ``SESSIONS`` sessions, each a new run; peak memory
    at ``SESSIONS`` and at ``RAGAS_SAMPLES`` sessions (flat: it does not grow with the sessions)."""
    # evalcore's bytecode compiled first, as pip compiles an installed package: a checkout run with
    # PYTHONDONTWRITEBYTECODE would otherwise compile every changed module again in each command.
    compileall.compile_dir(Path(evalcore.__file__).parent, quiet=1)
    times, peaks = [], []
    for _ in range(COMMAND_REPEAT):
        seconds, peak = run_command(db, "bench", SESSIONS)
        times.append(seconds)
        peaks.append(peak)
    _, small_peak = run_command(small_db, "head", RAGAS_SAMPLES)
    return Command(times, {SESSIONS: max(peaks), RAGAS_SAMPLES: small_peak})


def time_in_memory(src: Path) -> dict[str, Any]:
    """Best of ``REPEAT`` calls of ``score_sessions`` over the file's sessions, read into a fresh
    process as ragas' samples are: sessions in memory to results in memory, as ragas' ``evaluate()``
    goes from an ``EvaluationDataset`` to an ``EvaluationResult``."""
    result = run_script(sys.executable, EVALCORE_SCORE, str(src), str(REPEAT), ",".join(METRICS), str(RAGAS_SAMPLES))
    if result["sessions"] != SESSIONS:
        raise SystemExit(f"bench: score_sessions scored {result['sessions']} of {SESSIONS} sessions")
    return result


@dataclass
class Deterministic:
    import_seconds: float
    score_seconds: float
    memory_seconds: float
    breakdown_total: float
    breakdown: dict[str, float]
    ragas: dict[str, Any] | None
    agree: int
    command: Command


def deterministic(tmp: Path, problem: str | None) -> Deterministic:
    src = tmp / "sessions.ragas.jsonl"
    build_ragas_file(src, SESSIONS)
    head = tmp / "head.ragas.jsonl"
    with open(src, encoding="utf-8") as full, open(head, "w", encoding="utf-8", newline="\n") as out:
        for _, line in zip(range(RAGAS_SAMPLES), full, strict=False):
            out.write(line)
    ragas = time_ragas(head) if problem is None else None
    memory = time_in_memory(src)
    memory_seconds = min(memory["times"])
    agree = 0
    if ragas:  # ragas' scores of its samples against evalcore's of the same sessions, value by value
        pairs = zip(memory["scores"], ragas["scores"], strict=True)
        agree = sum(a == b for ours, theirs in pairs for a, b in zip(ours, theirs, strict=True))

    with open_store(tmp / "bench.db") as store:
        start = time.perf_counter()
        imported = import_file(store, src, "bench")
        import_seconds = time.perf_counter() - start
        if imported.new != SESSIONS or imported.failed:
            raise SystemExit(f"bench: imported {imported.new} of {SESSIONS} sessions, {imported.failed} failed")
        score_seconds = time_score_dataset(store)
        breakdown_total, steps = breakdown(store)
    with open_store(tmp / "head.db") as small:
        import_file(small, head, "head")
    command = time_command(tmp / "bench.db", tmp / "head.db")
    return Deterministic(import_seconds, score_seconds, memory_seconds, breakdown_total, steps, ragas, agree, command)


# -- the judge --------------------------------------------------------------------------------


@dataclass
class JudgeRun:
    seconds: float
    served: int  # calls the server answered
    sent: int  # HTTP requests the judge sent (retries included)


def judge_once(server: FakeOpenAI, src: Path, db: Path, concurrency: int) -> JudgeRun:
    with open_store(db) as store:  # fresh: a new run, an empty judge cache
        import_file(store, src, "judge")
        config = JudgeConfig(model="bench-judge", base_url=server.url, api_key="bench", concurrency=concurrency)
        before = len(server.requests)
        gc.collect()
        start = time.perf_counter()
        report = score_dataset(store, "judge", [JUDGE_METRIC], judge=config, concurrency=concurrency)
        seconds = time.perf_counter() - start
    (summary,) = report.summaries
    if (summary.count, summary.failed) != (JUDGE_SESSIONS, 0):
        raise SystemExit(f"bench: judge scored {summary.count} of {JUDGE_SESSIONS}, {summary.failed} failed")
    return JudgeRun(seconds, len(server.requests) - before, report.judge_requests)


def judge(tmp: Path) -> dict[int, JudgeRun]:
    src = tmp / "judge.ragas.jsonl"
    build_ragas_file(src, JUDGE_SESSIONS)
    server = FakeOpenAI(latency=LATENCY)
    best: dict[int, JudgeRun] = {}
    with server:
        for concurrency in CONCURRENCY:
            for rep in range(JUDGE_REPEAT[concurrency]):
                db = tmp / f"judge-{concurrency}-{rep}.db"
                run = judge_once(server, src, db, concurrency)
                if run.served != JUDGE_SESSIONS:
                    raise SystemExit(f"bench: the server answered {run.served} calls for {JUDGE_SESSIONS} sessions")
                if concurrency not in best or run.seconds < best[concurrency].seconds:
                    best[concurrency] = run
    return best


# -- report -----------------------------------------------------------------------------------


def verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio >= target else "FAIL"


def print_deterministic(d: Deterministic, problem: str | None) -> float | None:
    items = SESSIONS * len(METRICS)
    print(f"Deterministic scoring: {' + '.join(METRICS)} (best of {REPEAT})")
    print(f"{'operation':<58} {'sessions':>8} {'seconds':>8} {'sessions/s':>14} {'metric-items/s':>14} {'vs ragas':>9}")
    ragas_rate = None
    if d.ragas:
        n = d.ragas["samples"]
        seconds = min(d.ragas["times"])
        ragas_rate = n / seconds
        name = f"ragas {d.ragas['version']} evaluate(ToolCallAccuracy, ToolCallF1)"
        print(f"{name:<58} {n:>8,} {seconds:>8.3f} {rate(n, seconds)} {rate(n * 2, seconds)} {'1.00x':>9}")
        direct = min(d.ragas["direct_times"])
        name = "  (for scale: ragas multi_turn_ascore in a loop, no evaluate)"
        speedup = f"{n / direct / ragas_rate:.2f}x"
        print(f"{name:<58} {n:>8,} {direct:>8.3f} {rate(n, direct)} {rate(n * 2, direct)} {speedup:>9}")

    def row(name: str, seconds: float, note: str = "") -> None:
        ratio = f"{SESSIONS / seconds / ragas_rate:.2f}x" if ragas_rate else "n/a"
        line = f"{name:<58} {SESSIONS:>8,} {seconds:>8.3f} {rate(SESSIONS, seconds)} {rate(items, seconds)} {ratio:>9}"
        print(f"{line}  {note}".rstrip())

    print(f"{'evalcore import_file into the store (not part of scoring)':<58} {SESSIONS:>8,} {d.import_seconds:>8.3f}")
    row("evalcore score_sessions (in memory, like evaluate())", d.memory_seconds, "<- the target")
    row("evalcore score_dataset (store -> scores saved in the store)", d.score_seconds, "(for scale)")
    if d.ragas:
        total = RAGAS_SAMPLES * len(METRICS)
        print(f"ragas' scores of its {RAGAS_SAMPLES:,} samples equal evalcore's: {d.agree:,} of {total:,}", end="")
        print("" if d.ragas["direct_agrees"] else " (ragas' direct calls disagree with its evaluate!)")
    else:
        print(f"ragas: NOT MEASURED ({problem})")

    print_command(d)
    print(f"\nWhere one score_dataset run's {d.breakdown_total:.3f} s go (an extra, instrumented run):")
    accounted = 0.0
    for label in STEPS:
        seconds = d.breakdown.get(label, 0.0)
        if not label.startswith(" "):
            accounted += seconds
        print(f"  {label:<46} {seconds:>7.3f} s  {100 * seconds / d.breakdown_total:>5.1f}%")
    rest = d.breakdown_total - accounted
    share = 100 * rest / d.breakdown_total
    print(f"  {'the rest (run bookkeeping, metric keys, loop)':<46} {rest:>7.3f} s  {share:>5.1f}%")
    return SESSIONS / d.memory_seconds / ragas_rate if ragas_rate else None


def ragas_load_evaluate(ragas: dict[str, Any]) -> float:
    """ragas' best load + evaluate time (each repeat's load and evaluate summed; imports excluded)."""
    return min(a + b for a, b in zip(ragas["load_times"], ragas["times"], strict=True))


def print_command(d: Deterministic) -> float | None:
    """The whole command against ragas' load + evaluate; returns the ratio of the median run."""
    c = d.command
    runs = ", ".join(f"{t:.2f}" for t in c.seconds)
    print(f"\nThe whole command, as a person runs it: evalcore score --metrics {','.join(METRICS)} on {SESSIONS:,}")
    print(f"sessions in the store (wall time from start to exit, {len(c.seconds)} runs: {runs} s)")
    print(f"{'operation':<66} {'sessions':>8} {'seconds':>8} {'sessions/s':>11} {'vs ragas':>9}")
    ratio = None
    if d.ragas:
        n = d.ragas["samples"]
        seconds = ragas_load_evaluate(d.ragas)
        base = n / seconds
        name = f"ragas {d.ragas['version']} from_jsonl + evaluate (in its process, imports excluded)"
        print(f"{name:<66} {n:>8,} {seconds:>8.3f} {base:>11,.0f} {'1.00x':>9}")
        ratio = SESSIONS / c.median / base
        best = SESSIONS / min(c.seconds) / base
        print(f"{'evalcore score: the median run (process start to exit)':<66} {SESSIONS:>8,} {c.median:>8.3f} "
              f"{SESSIONS / c.median:>11,.0f} {ratio:>8.2f}x")  # fmt: skip
        print(f"{'evalcore score: the best run':<66} {SESSIONS:>8,} {min(c.seconds):>8.3f} "
              f"{SESSIONS / min(c.seconds):>11,.0f} {best:>8.2f}x")  # fmt: skip
    else:
        print(f"{'evalcore score: the median run':<66} {SESSIONS:>8,} {c.median:>8.3f} {SESSIONS / c.median:>11,.0f}")
    if all(c.peak_kb.values()):
        peaks = ", ".join(f"{kb / 1024:.0f} MB at {n:,} sessions" for n, kb in sorted(c.peak_kb.items()))
        print(f"peak memory of the command (resident, /usr/bin/time): {peaks}")
    return ratio


def print_judge(results: dict[str, dict[int, JudgeRun]]) -> dict[str, float]:
    best = f"best of {JUDGE_REPEAT[1]} / {JUDGE_REPEAT[16]}"
    print(f"\nJudge throughput: {JUDGE_METRIC} on {JUDGE_SESSIONS} sessions, FakeOpenAI latency {LATENCY} s ({best})")
    print(f"{'server':<40} {'concurrency':>11} {'seconds':>8} {'calls':>6} {'sent':>5} {'calls/s':>8} {'vs c=1':>7}")
    ratios = {}
    for server, runs in results.items():
        base = runs[1].served / runs[1].seconds
        for concurrency, run in runs.items():
            calls_per_s = run.served / run.seconds
            print(
                f"{server:<40} {concurrency:>11} {run.seconds:>8.3f} {run.served:>6} {run.sent:>5} {calls_per_s:>8.2f}"
                f" {calls_per_s / base:>6.2f}x"
            )
        ratios[server] = (runs[16].served / runs[16].seconds) / base
    print("(calls: answered by the server; sent: HTTP requests the judge made, retries included)")
    return ratios


def main() -> int:
    if not REFERENCE.is_file():
        print(f"bench: reference data missing: {REFERENCE}", file=sys.stderr)
        return 1
    problem = ensure_ragas_env()
    print(
        f"evalcore {evalcore.__version__} metrics benchmark | Python {platform.python_version()} | "
        f"{os.cpu_count()} CPUs | {SESSIONS:,} ragas sessions (ragas: the first {RAGAS_SAMPLES:,})\n",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as name:
        tmp = Path(name)
        d = deterministic(tmp, problem)
        score_ratio = print_deterministic(d, problem)
        sys.stdout.flush()
        judged = {"FakeOpenAI on 127.0.0.1": judge(tmp)}
        ratios = print_judge(judged)

    command_ratio = (
        SESSIONS / d.command.median / (d.ragas["samples"] / ragas_load_evaluate(d.ragas)) if d.ragas else None
    )
    targets: list[tuple[str, float | None, float]] = [
        ("evalcore score command (median) sessions/s vs ragas load + evaluate", command_ratio, COMMAND_TARGET),
        ("score_sessions sessions/s vs ragas evaluate()", score_ratio, SCORE_TARGET),
        *((f"judge calls/s c=16 vs c=1, {server}", ratio, JUDGE_TARGET) for server, ratio in ratios.items()),
    ]
    print(f"\n{'target':<70} {'measured':>9} {'needed':>8}  result")
    for label, ratio, target in targets:
        shown = f"{ratio:.2f}x" if ratio is not None else "n/a"
        outcome = verdict(ratio, target) if ratio is not None else "NOT MEASURED"
        print(f"{label:<70} {shown:>9} {f'>= {target:g}x':>8}  {outcome}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
