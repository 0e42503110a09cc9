"""What the benchmarks share: the reference data, the ragas venv, scripts run in a fresh process, test files.

Not a benchmark itself; ``bench_formats.py`` and ``bench_store.py`` import it (they run as scripts,
so this directory is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "data" / "ragas_reference" / "ragas_samples.jsonl"
SETUP = ROOT / "tests" / "bench" / "setup_ragas_env.sh"
RAGAS_VENV = ROOT / ".bench" / "ragas-venv"
RAGAS_PYTHON = RAGAS_VENV / "bin" / "python"

MARK = "BENCH_RESULT "

# Put before every script run in a subprocess: how it hands back its result, and its memory in kB,
# "VmRSS" (now) or "VmHWM" (peak), from /proc (ru_maxrss is no use: a child starts with its
# parent's peak on Linux).
PRELUDE = f"""
import json

def result(**values):
    print({MARK!r} + json.dumps(values))

def rss_kb(field):
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))
    except OSError:  # not Linux: the peak so far (kB on Linux, bytes on macOS)
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

# Run by the ragas venv's python: imports first, then times from_jsonl alone.
RAGAS_LOAD = """
import gc, sys, time
import ragas
from ragas import EvaluationDataset

path, repeat = sys.argv[1], int(sys.argv[2])
before = rss_kb("VmRSS")
times = []
for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    dataset = EvaluationDataset.from_jsonl(path)
    times.append(time.perf_counter() - start)
    samples, multi_turn = len(dataset), dataset.is_multi_turn()
    del dataset
result(times=times, samples=samples, multi_turn=multi_turn, rss_growth_kb=rss_kb("VmHWM") - before,
       version=ragas.__version__)
"""


def run_script(python: Path | str, script: str, *args: str, timeout: float | None = None, **env: str) -> dict[str, Any]:
    """Run ``script`` in a fresh ``python``; return the result it printed.

    Raises ``subprocess.TimeoutExpired`` (the child is killed) after ``timeout`` seconds.
    """
    command = [str(python), "-c", PRELUDE + script, *args]
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env}, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {python} failed:\n{proc.stderr[-3000:]}")
    for line in reversed(proc.stdout.splitlines()):  # libraries may print other lines
        if line.startswith(MARK):
            values: dict[str, Any] = json.loads(line[len(MARK) :])
            return values
    raise SystemExit(f"bench: {python} printed no result:\n{proc.stdout[-3000:]}")


def build_ragas_file(path: Path, sessions: int, words: Callable[[int, int], list[str]] | None = None) -> int:
    """Write ``sessions`` distinct ragas lines cycled from the reference file; return its size in bytes.

    Each line is made distinct by `` (session i)`` added to its first human message. ``words(i, n)``,
    when given, returns one word for each of session ``i``'s ``n`` human messages, added to it as
    `` about WORD``.
    """
    rows = [json.loads(line) for line in REFERENCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    seen: set[int] = set()
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for i in range(sessions):
            row = rows[i % len(rows)]
            humans = [m for m in row["user_input"] if m["type"] == "human"]
            originals = [m["content"] for m in humans]
            humans[0]["content"] = f"{originals[0]} (session {i})"
            if words is not None:
                for message, word in zip(humans, words(i, len(humans)), strict=True):
                    message["content"] += f" about {word}"
            line = json.dumps(row, ensure_ascii=False)  # exactly as EvaluationDataset.to_jsonl writes a row
            for message, original in zip(humans, originals, strict=True):
                message["content"] = original
            seen.add(hash(line))
            out.write(line + "\n")
    if len(seen) != sessions:
        raise SystemExit(f"bench: the generated lines are not all distinct ({len(seen)} of {sessions})")
    return path.stat().st_size


def ensure_ragas_env() -> str | None:
    """Make the ragas venv if it is missing; return why it is unusable, or None."""
    if RAGAS_PYTHON.exists() and (RAGAS_VENV / ".installed").exists():
        return None
    setup = SETUP.relative_to(ROOT)
    print(f"ragas env missing: running {setup} (one-off, about a minute)...", flush=True)
    if subprocess.run(["bash", str(SETUP)], cwd=ROOT).returncode != 0:
        return f"{setup} failed; run it by hand from {ROOT}, then rerun the benchmark"
    return None
