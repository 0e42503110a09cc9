"""Benchmark: evalcore converting a ragas file against ragas merely loading it.

Run with ``make bench`` or ``.venv/bin/python tests/bench/bench_formats.py`` (about a minute).

- Builds a 20,000-session ragas JSONL file in a temporary directory by cycling through the 300
  real ``EvaluationDataset.to_jsonl`` lines of ``../shared/data/ragas_reference``, each made
  distinct by adding its index to the first human message (still a valid ragas file: ragas
  loads it below and must count every session).
- Times ``evalcore.convert_file`` in this process: ragas -> evalcore (the target), ragas -> ragas
  and ragas -> openai.
- Times ragas' own ``EvaluationDataset.from_jsonl`` on the same file in the separate
  ``.bench/ragas-venv`` (made by ``tests/bench/setup_ragas_env.sh``, run here when it is missing),
  measured inside that process around the call only: no interpreter start-up, no import.
- Each time is the best of 3 repetitions.
- Peak memory: converts 20,000 and 100,000 sessions, each in a fresh process, and compares the
  peak of the Python heap during the conversion (tracemalloc): streaming keeps it flat. The
  process' peak RSS is shown too, but importing evalcore (pydantic, orjson) dominates it.

Target: evalcore's ragas -> evalcore conversion is at least 3x faster than ragas loading the same
file. The exit code is 0 whether the target is met or not (this is a benchmark, not a test); it is
1 only when the benchmark cannot run at all.
"""

from __future__ import annotations

import filecmp
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import evalcore

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT.parent / "shared" / "data" / "ragas_reference" / "ragas_samples.jsonl"
SETUP = ROOT / "tests" / "bench" / "setup_ragas_env.sh"
RAGAS_VENV = ROOT / ".bench" / "ragas-venv"
RAGAS_PYTHON = RAGAS_VENV / "bin" / "python"

SESSIONS = 20_000
MEMORY_SESSIONS = (20_000, 100_000)
REPEAT = 3
TARGET = 3.0  # ragas load time / evalcore convert time
TARGETS = ("evalcore", "ragas", "openai")  # the first one is the target operation
MARK = "BENCH_RESULT "

# Run by the ragas venv's python: imports first, then times from_jsonl alone.
RAGAS_LOAD = f"""
import gc, json, resource, sys, time
import ragas
from ragas import EvaluationDataset

path, repeat = sys.argv[1], int(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    dataset = EvaluationDataset.from_jsonl(path)
    times.append(time.perf_counter() - start)
    samples, multi_turn = len(dataset), dataset.is_multi_turn()
    del dataset
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print({MARK!r} + json.dumps({{"times": times, "samples": samples, "multi_turn": multi_turn,
      "rss_growth_kb": peak - before, "version": ragas.__version__}}))
"""

# Run by this python in a fresh process: the peak memory of one conversion, as the peak of the
# Python heap during it (tracemalloc, exact) and the process' peak RSS (coarse: import dominates).
EVALCORE_MEMORY = f"""
import json, resource, sys, tracemalloc
import evalcore

after_import = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tracemalloc.start()
report = evalcore.convert_file(sys.argv[1], sys.argv[2], to=sys.argv[3])
heap_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print({MARK!r} + json.dumps({{"sessions": report.sessions, "errors": report.errors, "heap_peak": heap_peak,
      "rss_after_import_kb": after_import, "rss_peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""


def build_ragas_file(path: Path, sessions: int) -> int:
    """Write ``sessions`` distinct ragas lines cycled from the reference file; return its size in bytes."""
    rows = [json.loads(line) for line in REFERENCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    seen: set[int] = set()
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for i in range(sessions):
            row = rows[i % len(rows)]
            first = next(m for m in row["user_input"] if m["type"] == "human")
            original = first["content"]
            first["content"] = f"{original} (session {i})"
            line = json.dumps(row, ensure_ascii=False)  # exactly as EvaluationDataset.to_jsonl writes a row
            first["content"] = original
            seen.add(hash(line))
            out.write(line + "\n")
    if len(seen) != sessions:
        raise SystemExit(f"bench: the generated lines are not all distinct ({len(seen)} of {sessions})")
    return path.stat().st_size


def last_result(stdout: str) -> dict[str, Any]:
    """The JSON a subprocess printed after ``MARK`` (libraries may print other lines)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            result: dict[str, Any] = json.loads(line[len(MARK) :])
            return result
    raise RuntimeError("no result printed")


def time_evalcore(src: Path, dst: Path, to: str) -> float:
    """Best of ``REPEAT`` in-process conversions; checks every session was written."""
    times = []
    for _ in range(REPEAT):
        gc.collect()
        start = time.perf_counter()
        report = evalcore.convert_file(src, dst, to=to)
        times.append(time.perf_counter() - start)
        if report.sessions != SESSIONS or report.errors:
            raise SystemExit(f"bench: ragas -> {to} wrote {report.sessions} sessions, {report.errors} errors")
    return min(times)


def ensure_ragas_env() -> str | None:
    """Make the ragas venv if it is missing; return why it is unusable, or None."""
    if RAGAS_PYTHON.exists() and (RAGAS_VENV / ".installed").exists():
        return None
    print(f"ragas env missing: running {SETUP.relative_to(ROOT)} (one-off, a minute or two)...", flush=True)
    if subprocess.run(["bash", str(SETUP)], cwd=ROOT).returncode != 0:
        return f"{SETUP.relative_to(ROOT)} failed; run it by hand from {ROOT} and rerun the benchmark"
    return None


def time_ragas(src: Path) -> dict[str, Any]:
    """ragas' from_jsonl timings, measured in the ragas venv."""
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}
    proc = subprocess.run(
        [str(RAGAS_PYTHON), "-c", RAGAS_LOAD, str(src), str(REPEAT)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench: ragas failed to load the file:\n{proc.stderr[-3000:]}")
    result = last_result(proc.stdout)
    if result["samples"] != SESSIONS or not result["multi_turn"]:
        raise SystemExit(f"bench: ragas read {result['samples']} samples, not {SESSIONS} multi-turn ones")
    return result


def measure_memory(tmp: Path, sessions: int) -> dict[str, Any]:
    """Peak RSS growth of converting ``sessions`` ragas -> evalcore in a fresh process."""
    src, dst = tmp / f"mem-{sessions}.ragas.jsonl", tmp / f"mem-{sessions}.evalcore.jsonl"
    size = build_ragas_file(src, sessions)
    proc = subprocess.run(
        [sys.executable, "-c", EVALCORE_MEMORY, str(src), str(dst), "evalcore"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench: evalcore conversion failed:\n{proc.stderr[-3000:]}")
    result = last_result(proc.stdout)
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


def row(operation: str, seconds: float, ratio: str, verdict: str = "") -> str:
    return f"{operation:<42} {seconds:>8.3f} {SESSIONS / seconds:>12,.0f} {ratio:>16}  {verdict}"


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

        ragas: dict[str, Any] | None = None
        if problem is None:
            ragas = time_ragas(src)
        evalcore_times = {to: time_evalcore(src, tmp / f"out.{to}.jsonl", to) for to in TARGETS}
        identical = filecmp.cmp(src, tmp / "out.ragas.jsonl", shallow=False)
        memory = [measure_memory(tmp, n) for n in MEMORY_SESSIONS]

    print(f"{'operation':<42} {'seconds':>8} {'sessions/s':>12} {'ragas / evalcore':>16}  target >= {TARGET:g}x")
    ragas_seconds = min(ragas["times"]) if ragas else None
    if ragas and ragas_seconds:
        print(row(f"ragas {ragas['version']} EvaluationDataset.from_jsonl", ragas_seconds, "(baseline)"))
    verdicts = {}
    for to, seconds in evalcore_times.items():
        if ragas_seconds:
            ratio = ragas_seconds / seconds
            verdicts[to] = ("PASS" if ratio >= TARGET else "FAIL", ratio)
            print(row(f"evalcore convert ragas -> {to}", seconds, f"{ratio:.2f}x", verdicts[to][0]))
        else:
            print(row(f"evalcore convert ragas -> {to}", seconds, "n/a"))
    print(f"\nragas -> ragas output byte-identical to its input: {'yes' if identical else 'NO'}")

    print("\nTarget: evalcore convert (ragas -> evalcore) at least 3x faster than ragas merely loads the same file.")
    if ragas_seconds:
        verdict, ratio = verdicts[TARGETS[0]]
        print(f"Result: {verdict} ({ratio:.2f}x: {evalcore_times[TARGETS[0]]:.3f}s against {ragas_seconds:.3f}s)")
    else:
        print(f"Result: NOT MEASURED ({problem})")

    print("\nPeak memory of evalcore convert ragas -> evalcore (a fresh process each)")
    print(f"{'sessions':>10} {'file MB':>9} {'peak Python heap MB':>20} {'RSS after import MB':>19} {'peak RSS MB':>12}")
    for m in memory:
        print(
            f"{m['sessions']:>10,} {m['mb']:>9.1f} {m['heap_mb']:>20.2f} {m['rss_import_mb']:>19.1f}"
            f" {m['rss_peak_mb']:>12.1f}"
        )
    small, large = memory
    data_ratio = large["mb"] / small["mb"]
    memory_ratio = large["heap_mb"] / small["heap_mb"]
    flat = memory_ratio < 2.0
    print(
        f"{large['sessions'] // small['sessions']}x the sessions ({data_ratio:.1f}x the data) -> "
        f"{memory_ratio:.2f}x the peak heap: {'PASS, constant memory (streams)' if flat else 'FAIL, memory grows'}"
        " [target: < 2x; proportional would be 5x]"
    )
    if ragas:
        print(
            f"(for scale: ragas from_jsonl of {SESSIONS:,} sessions grows peak RSS by "
            f"{ragas['rss_growth_kb'] / 1024:.0f} MB, as it holds the whole dataset)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
