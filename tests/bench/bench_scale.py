"""Benchmark: scoring on one process against shards merged, and a judge run's throughput against its concurrency.

Run with ``.venv/bin/python tests/bench/bench_scale.py`` (about two minutes on 2 CPUs).

Deterministic, ``tool_call_accuracy``, ``tool_call_f1`` and ``turn_count`` on 20,000 generated sessions in a
temporary SQLite store:

- one process: ``evalcore score --workers 1`` as a person runs it, timed from process start to exit;
- N shards (N = 2, 4): ``evalcore score --shard I/N --output ...`` started together as N processes (on 2 CPUs),
  timed from the first start to the last exit, then ``evalcore import-scores`` of the N files, timed alone. The
  start-up of a shard (interpreter, imports, reading the selection's keys) is the time of an empty shard's
  command: ``--shard`` of a filter-free dataset of one session.
- Ray (when installed): ``evalcore score --engine ray`` with a local cluster of the machine's CPUs started by the
  command and stopped after it, timed from process start to exit; its start-up is the same command on the dataset
  of one session. And ``score_dataset_ray`` in this process on a cluster already running (``ray.init`` once):
  what a run costs on a cluster that is up, without the cluster's start-up.

Judge: ``relevance_to_query`` (one judge call a session) on 96 sessions against ``tests/openai_server.FakeOpenAI``
with 200 ms latency on the loopback, as 2 shards started together, at a total concurrency of 2, 8 and 32: the
throughput follows the concurrency allowed (a session in 0.2 s per call in flight), which is what a cluster of
shards against a real endpoint does, up to the endpoint's own limit. The same on Ray (a running local cluster), the
total concurrency divided between the tasks in flight.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from openai_server import FakeOpenAI  # noqa: E402

EVALCORE = str(Path(sys.executable).parent / "evalcore")
SPECS = "tool_call_accuracy,tool_call_f1,turn_count"


def generated(i: int) -> dict[str, object]:
    tools = [{"name": f"tool{(i + k) % 5}", "args": {"n": (i * k) % 7}} for k in range(i % 4)]
    return {
        "schema_version": 1,
        "session_id": f"g{i}",
        "messages": [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": "" if tools else "a", **({"tool_calls": tools} if tools else {})},
            {"role": "user", "content": "thanks"},
            {"role": "assistant", "content": f"welcome {i}"},
        ],
        "reference_tool_calls": tools[: i % 3],
    }


def run(*args: str, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run([EVALCORE, *args], check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def together(commands: list[list[str]]) -> float:
    start = time.perf_counter()
    procs = [subprocess.Popen([EVALCORE, *c], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in commands]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            raise SystemExit(err.decode())
    return time.perf_counter() - start


def deterministic(folder: Path) -> None:
    db = str(folder / "scale.db")
    source = folder / "many.jsonl"
    source.write_text("".join(json.dumps(generated(i)) + "\n" for i in range(20_000)))
    run("import", str(source), "--dataset", "many", "--db", db)
    one_file = folder / "one.jsonl"
    one_file.write_text(json.dumps(generated(0)) + "\n")
    run("import", str(one_file), "--dataset", "one", "--db", db)
    empty = f"score --dataset one --metrics {SPECS} --shard 0/1 --output {folder / 'e.jsonl'} --db {db}".split()
    startup = min(run(*empty) for _ in range(3))
    print(f"start-up of a shard (one session): {startup:.2f} s")
    one = min(run("score", "--dataset", "many", "--metrics", SPECS, "--workers", "1", "--new-run", "--db", db)
              for _ in range(3))  # fmt: skip
    print(f"one process (--workers 1), 20,000 sessions: {one:.2f} s ({one / 20_000 * 1e6:.0f} us a session)")
    two = min(run("score", "--dataset", "many", "--metrics", SPECS, "--workers", "2", "--new-run", "--db", db)
              for _ in range(3))  # fmt: skip
    print(f"one command, 2 worker processes: {two:.2f} s")
    for n in (2, 4):
        files = [str(folder / f"s-{n}-{i}.jsonl") for i in range(n)]
        commands = [
            f"score --dataset many --metrics {SPECS} --shard {i}/{n} --output {f} --db {db}".split()
            for i, f in enumerate(files)
        ]
        scored = min(together(commands) for _ in range(3))
        merged = run("import-scores", *files, "--dataset", "many", "--new-run", "--db", db)
        print(
            f"{n} shards together: {scored:.2f} s scoring, {merged:.2f} s import-scores, {scored + merged:.2f} s in "
            f"all ({(scored + merged) / 20_000 * 1e6:.0f} us a session)"
        )
    on_ray(db)


def on_ray(db: str) -> None:
    try:
        import ray
    except ImportError:
        print("Ray: not installed (pip install 'evalcore[ray]')")
        return
    from evalcore.ray_engine import score_dataset_ray
    from evalcore.store import open_store

    startup = run("score", "--dataset", "one", "--metrics", SPECS, "--engine", "ray", "--new-run", "--db", db)
    print(f"Ray, start-up of a command with its local cluster (one session): {startup:.2f} s")
    took = run("score", "--dataset", "many", "--metrics", SPECS, "--engine", "ray", "--new-run", "--db", db)
    print(f"Ray, one command with its local cluster, 20,000 sessions: {took:.2f} s ({took / 20_000 * 1e6:.0f} us a "
          f"session with the start-up, {(took - startup) / 20_000 * 1e6:.0f} without)")  # fmt: skip
    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        with open_store(db) as store:
            best = min(_timed(lambda: score_dataset_ray(store, "many", SPECS.split(","), resume=False))
                       for _ in range(3))  # fmt: skip
        print(f"Ray, a cluster already up, 20,000 sessions: {best:.2f} s ({best / 20_000 * 1e6:.0f} us a session)")
    finally:
        ray.shutdown()


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def judged(folder: Path) -> None:
    db = str(folder / "judge.db")
    source = folder / "judge.jsonl"
    source.write_text("".join(json.dumps(generated(i)) + "\n" for i in range(96)))
    run("import", str(source), "--dataset", "j", "--db", db)
    with FakeOpenAI(latency=0.2) as server:
        for total in (2, 8, 32):
            files = [str(folder / f"j-{total}-{i}.jsonl") for i in range(2)]
            # (a judge model of its own per round: the store's cache answers none of its calls)
            took = together(
                [
                    f"score --dataset j --metrics relevance_to_query --shard {i}/2 --output {f} --judge-model m{total} "
                    f"--base-url {server.url} --api-key k --concurrency {total} --db {db}".split()
                    for i, f in enumerate(files)
                ]
            )
            print(
                f"judge, 200 ms a call, 2 shards, total concurrency {total}: {took:.2f} s for 96 sessions, "
                f"{96 / took:.1f} sessions/s (at most {total / 0.2:.0f}/s)"
            )
        judged_on_ray(db, server.url)


def judged_on_ray(db: str, url: str) -> None:
    try:
        import ray
    except ImportError:
        return
    from evalcore.judge import JudgeConfig
    from evalcore.ray_engine import score_dataset_ray
    from evalcore.store import open_store

    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        with open_store(db) as store:
            for total in (2, 8, 32):
                config = JudgeConfig(model=f"r{total}", base_url=url, api_key="k", concurrency=total)
                took = _timed(lambda c=config: score_dataset_ray(store, "j", ["relevance_to_query"], judge=c))
                print(
                    f"judge on Ray (a cluster up), 200 ms a call, total concurrency {total}: {took:.2f} s for 96 "
                    f"sessions, {96 / took:.1f} sessions/s (at most {total / 0.2:.0f}/s)"
                )
    finally:
        ray.shutdown()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        deterministic(Path(folder))
        judged(Path(folder))


if __name__ == "__main__":
    main()
