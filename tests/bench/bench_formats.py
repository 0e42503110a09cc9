"""Benchmark: evalcore converting a ragas file against ragas merely loading it.

Run with ``make bench`` or ``.venv/bin/python tests/bench/bench_formats.py`` (about a minute).

- Builds a 20,000-session ragas JSONL file in a temporary directory by cycling through the 300
  real ``EvaluationDataset.to_jsonl`` lines of ``tests/data/ragas_reference``, each made
  distinct by adding its index to the first human message (still a valid ragas file: ragas
  loads it below and must count every session).
- Times ``evalcore.convert_file`` in this process: ragas -> evalcore (the target), ragas -> ragas
  and ragas -> openai, each with the workers ``evalcore convert`` uses by default (the CPUs, at most 4:
  ``evalcore._infra.workers.default_workers``), and ragas -> evalcore in this process alone (``--workers 1``).
- Times ragas' own ``EvaluationDataset.from_jsonl`` on the same file in the separate
  ``.bench/ragas-venv`` (made by ``tests/bench/setup_ragas_env.sh``, run here when it is missing),
  measured inside that process around the call only: no interpreter start-up, no import.
- Each time is the best of 3 repetitions.
- Peak memory: converts 20,000 and 100,000 sessions, each in a fresh process, and compares the
  peak of the Python heap during the conversion (tracemalloc): streaming keeps it flat. The
  process' RSS is shown too.

Target: evalcore's ragas -> evalcore conversion, as ``evalcore convert`` runs it, is at least 3x faster
than ragas loading the same file. The exit code is 0 whether the target is met or not (this is a
benchmark, not a test); it is 1 only when the benchmark cannot run at all.
"""

from __future__ import annotations

import filecmp
import gc
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import RAGAS_LOAD, RAGAS_PYTHON, REFERENCE, build_ragas_file, ensure_ragas_env, run_script

import evalcore
from evalcore._infra.workers import default_workers

SESSIONS = 20_000
MEMORY_SESSIONS = (20_000, 100_000)
REPEAT = 3
TARGET = 3.0  # ragas load time / evalcore convert time
WORKERS = default_workers()
# (target format, workers); the first one is the target operation
CONVERSIONS = (("evalcore", WORKERS), ("evalcore", 1), ("ragas", WORKERS), ("openai", WORKERS))

# Run by this python in a fresh process: the peak memory of one conversion.
EVALCORE_MEMORY = """
import sys, tracemalloc
import evalcore
from evalcore._infra.workers import default_workers

after_import = rss_kb("VmRSS")
tracemalloc.start()
report = evalcore.convert_file(sys.argv[1], sys.argv[2], to=sys.argv[3])
heap_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
result(sessions=report.sessions, errors=report.errors, heap_peak=heap_peak, rss_after_import_kb=after_import,
       rss_peak_kb=rss_kb("VmHWM"))
"""


def time_ragas(src: Path) -> dict[str, Any]:
    """ragas' from_jsonl timings, measured in the ragas venv; checks it read every session."""
    result = run_script(RAGAS_PYTHON, RAGAS_LOAD, str(src), str(REPEAT), RAGAS_DO_NOT_TRACK="true")
    if result["samples"] != SESSIONS or not result["multi_turn"]:
        raise SystemExit(f"bench: ragas read {result['samples']} samples, not {SESSIONS} multi-turn ones")
    return result


def time_evalcore(src: Path, dst: Path, to: str, workers: int) -> float:
    """Best of ``REPEAT`` in-process conversions; checks every session was written."""
    times = []
    for _ in range(REPEAT):
        gc.collect()
        start = time.perf_counter()
        report = evalcore.convert_file(src, dst, to=to, workers=workers)
        times.append(time.perf_counter() - start)
        if report.sessions != SESSIONS or report.errors:
            raise SystemExit(f"bench: ragas -> {to} wrote {report.sessions} sessions, {report.errors} errors")
    return min(times)


def measure_memory(tmp: Path, sessions: int) -> dict[str, Any]:
    """Peak memory of converting ``sessions`` ragas -> evalcore in a fresh process."""
    src, dst = tmp / f"mem-{sessions}.ragas.jsonl", tmp / f"mem-{sessions}.evalcore.jsonl"
    size = build_ragas_file(src, sessions)
    result = run_script(sys.executable, EVALCORE_MEMORY, str(src), str(dst), "evalcore")
    if result["sessions"] != sessions or result["errors"]:
        raise SystemExit(f"bench: converted {result['sessions']} of {sessions} sessions, {result['errors']} errors")
    src.unlink()
    dst.unlink()
    return {
        "sessions": sessions,
        "mb": size / 1e6,
        "heap_mb": result["heap_peak"] / 1e6,
        "rss_import_mb": result["rss_after_import_kb"] / 1024,
        "rss_peak_mb": result["rss_peak_kb"] / 1024,
    }


def print_speed(
    evalcore_times: dict[tuple[str, int], float], ragas: dict[str, Any] | None, problem: str | None
) -> None:
    def row(operation: str, seconds: float, ratio: str, verdict: str = "") -> None:
        print(f"{operation:<48} {seconds:>8.3f} {SESSIONS / seconds:>12,.0f} {ratio:>18}  {verdict}".rstrip())

    print(f"{'operation':<48} {'seconds':>8} {'sessions/s':>12} {'ragas load / this':>18}  vs target {TARGET:g}x")
    ragas_seconds = min(ragas["times"]) if ragas else 0.0
    if ragas:
        row(f"ragas {ragas['version']} EvaluationDataset.from_jsonl", ragas_seconds, "(baseline)")
    for (to, workers), seconds in evalcore_times.items():
        ratio = ragas_seconds / seconds
        name = f"evalcore convert ragas -> {to}, {_processes(workers)}"
        if ragas:
            verdict = ("PASS" if ratio >= TARGET else "FAIL") if (to, workers) == CONVERSIONS[0] else "(not the target)"
            row(name, seconds, f"{ratio:.2f}x", verdict)
        else:
            row(name, seconds, "n/a")

    target = CONVERSIONS[0]
    print(
        f"\nTarget: evalcore convert (ragas -> {target[0]}, {_processes(target[1])}: the command's default here) at "
        f"least {TARGET:g}x faster than ragas merely loads the file."
    )
    if ragas:
        ratio = ragas_seconds / evalcore_times[target]
        print(
            f"Result: {'PASS' if ratio >= TARGET else 'FAIL'} ({ratio:.2f}x: "
            f"{evalcore_times[target]:.3f}s against ragas' {ragas_seconds:.3f}s)"
        )
    else:
        print(f"Result: NOT MEASURED ({problem})")


def _processes(workers: int) -> str:
    return "1 process" if workers == 1 else f"{workers} workers"


def print_memory(memory: list[dict[str, Any]], ragas: dict[str, Any] | None) -> None:
    print("\nPeak memory of evalcore convert ragas -> evalcore in one process (a fresh one each; start = after import)")
    print(f"{'sessions':>10} {'file MB':>9} {'peak Python heap MB':>20} {'RSS at start MB':>16} {'peak RSS MB':>12}")
    for m in memory:
        print(
            f"{m['sessions']:>10,} {m['mb']:>9.1f} {m['heap_mb']:>20.2f} {m['rss_import_mb']:>16.1f}"
            f" {m['rss_peak_mb']:>12.1f}"
        )
    small, large = memory[0], memory[-1]
    ratio = large["heap_mb"] / small["heap_mb"]
    print(
        f"{large['sessions'] / small['sessions']:g}x the sessions ({large['mb'] / small['mb']:.1f}x the data) -> "
        f"{ratio:.2f}x the peak heap (target < 2x): {'PASS, constant memory' if ratio < 2 else 'FAIL, memory grows'}"
    )
    if ragas:
        print(
            f"(for scale: ragas from_jsonl of {SESSIONS:,} sessions grows its RSS by "
            f"{ragas['rss_growth_kb'] / 1024:.0f} MB: it holds the whole dataset)"
        )


def main() -> int:
    if not REFERENCE.is_file():
        print(f"bench: reference data missing: {REFERENCE}", file=sys.stderr)
        return 1
    problem = ensure_ragas_env()
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as name:
        tmp = Path(name)
        src = tmp / "sessions.ragas.jsonl"
        size = build_ragas_file(src, SESSIONS)
        print(
            f"evalcore {evalcore.__version__} format benchmark | Python {platform.python_version()} | "
            f"{os.cpu_count()} CPUs | {SESSIONS:,} ragas sessions ({size / 1e6:.1f} MB) | best of {REPEAT}\n",
            flush=True,
        )
        ragas = time_ragas(src) if problem is None else None
        evalcore_times = {(to, n): time_evalcore(src, tmp / f"out.{to}.jsonl", to, n) for to, n in CONVERSIONS}
        identical = filecmp.cmp(src, tmp / "out.ragas.jsonl", shallow=False)
        memory = [measure_memory(tmp, n) for n in MEMORY_SESSIONS]

    print_speed(evalcore_times, ragas, problem)
    print(f"ragas -> ragas output byte-identical to its input: {'yes' if identical else 'NO'}")
    print_memory(memory, ragas)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
