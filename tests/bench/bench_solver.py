"""Benchmark: the multi-turn solver's concurrency and its own overhead per model call.

Run with ``.venv/bin/python tests/bench/bench_solver.py`` (about 15 seconds).

- Concurrency: the seed's clarification task (``sample_data/tasks/clarification.yaml``) on 50 samples (the six
  capital questions of ``clarification.jsonl``, cycled), against ``tests/solver_server.ScriptedOpenAI`` with
  200 ms latency per answer, served from a process of its own (so that the server's work does not share this
  process's interpreter lock), through the real ``evalcore.model.ModelClient`` over HTTP on 127.0.0.1; at
  concurrency 1 and 10, wall time of ``evalcore.solver.solve``. Target: at least 8x faster at 10.
- Overhead: the same 50 samples through ``solve`` with a model that answers at once in this process (no HTTP),
  so that what is measured is the solver alone (templates, builders, termination, the conversation, results);
  divided by the model calls made. Target: under 1 ms a call.

The exit code is 0 whether the targets are met or not (this is a benchmark, not a test).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from solver_server import JUDGE, clarify  # noqa: E402

from evalcore.model import Completion, ModelClient, ModelConfig  # noqa: E402
from evalcore.solver import load_samples, load_task, solve  # noqa: E402

TASK = ROOT / "sample_data" / "tasks" / "clarification.yaml"
SAMPLES = ROOT / "sample_data" / "tasks" / "clarification.jsonl"
N = 50
LATENCY = 0.2
CONCURRENCY = (1, 10)
SPEEDUP_TARGET = 8.0
OVERHEAD_TARGET_MS = 1.0

# Run in a process of its own: the scripted server, printing its URL, serving until stdin closes.
SERVER = f"""
import sys
sys.path.insert(0, {str(ROOT / "tests")!r})
from solver_server import ScriptedOpenAI, clarify
with ScriptedOpenAI(clarify, latency={LATENCY}) as server:
    print(server.url, flush=True)
    sys.stdin.read()
"""


class InstantModel:
    """A model that answers at once, in this process: the clarification script, no HTTP."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, messages: list[dict[str, Any]], *, model: str | None = None) -> Completion:
        self.calls += 1
        return Completion(clarify(model or "eval-model", messages), model or "eval-model", 10, 2, None, 0.0)


def timed_http(url: str, concurrency: int) -> float:
    task = load_task(TASK, {"judge_model": JUDGE})
    samples = (load_samples(SAMPLES) * N)[:N]
    config = ModelConfig(model="eval-model", base_url=url, api_key="sk-bench", concurrency=concurrency)

    async def go() -> float:
        async with ModelClient(config) as client:
            start = time.perf_counter()
            results = await solve(task, samples, client, default_model="eval-model", concurrency=concurrency)
            seconds = time.perf_counter() - start
        failed = [r.error for r in results if not r.ok]
        if failed:
            raise SystemExit(f"bench: {len(failed)} samples failed: {failed[0]}")
        return seconds

    return asyncio.run(go())


def overhead_ms() -> tuple[float, int]:
    task = load_task(TASK, {"judge_model": JUDGE})
    samples = (load_samples(SAMPLES) * N)[:N]
    best = float("inf")
    calls = 0
    for _ in range(5):
        model = InstantModel()
        start = time.perf_counter()
        asyncio.run(solve(task, samples, model, default_model="eval-model", concurrency=10))
        best = min(best, time.perf_counter() - start)
        calls = model.calls
    return best * 1000 / calls, calls


def main() -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if not url:
            raise SystemExit("bench: the scripted server did not start")
        times = {c: timed_http(url, c) for c in CONCURRENCY}
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)
    per_call, calls = overhead_ms()
    speedup = times[1] / times[10]
    head = f"evalcore solver benchmark | Python {sys.version.split()[0]} | {N} samples, {LATENCY * 1000:.0f} ms a call"
    print(head + "\n")
    print(f"{'concurrency':>11}  {'seconds':>8}  {'samples/s':>9}  vs c=1")
    for c in CONCURRENCY:
        print(f"{c:>11}  {times[c]:8.3f}  {N / times[c]:9.1f}  {times[1] / times[c]:5.2f}x")
    print(f"\nsolver overhead: {per_call * 1000:.1f} µs per model call ({calls} calls, model answering at once)")
    print(f"\n{'target':<40}{'measured':>10}{'needed':>10}  result")
    ok = "PASS" if speedup >= SPEEDUP_TARGET else "FAIL"
    print(f"{'concurrency 10 vs 1 (wall time)':<40}{speedup:9.2f}x{SPEEDUP_TARGET:9.0f}x  {ok}")
    ok = "PASS" if per_call < OVERHEAD_TARGET_MS else "FAIL"
    print(f"{'solver overhead per model call':<40}{per_call:8.3f}ms{OVERHEAD_TARGET_MS:8.0f}ms  {ok}")


if __name__ == "__main__":
    main()
