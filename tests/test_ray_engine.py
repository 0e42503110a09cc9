"""Ray as the scoring engine: ``score_dataset_ray`` and ``evalcore score --engine ray`` on a real local Ray cluster
(2 CPUs, loopback only, started once for this module and shut down after it), a real SQLite store, the τ-bench data
and a real loopback OpenAI-protocol server for the judge.

The scores export byte for byte as one process's do; a worker SIGKILLed mid-task is retried by Ray and every item
is scored once; a cancelled run is resumed. No process of the cluster outlives the module.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from dbutil import as_user, query
from openai_server import FakeOpenAI

from evalcore.cli import main
from evalcore.exporting import scores_jsonl
from evalcore.importing import import_file
from evalcore.judge import JudgeConfig
from evalcore.ray_engine import TASK_NAME, score_dataset_ray  # (Ray is in the dev extras: these tests run in CI)
from evalcore.scoring import score_dataset
from evalcore.store import Store, open_store

DETERMINISTIC = ["tool_call_count", "turn_count", "tool_call_accuracy", "token_usage"]
JUDGED = ["relevance_to_query", "turn_count"]


def _children(pid: int) -> set[int]:
    """Every process descended from ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _title(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (not zombies)."""
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.add(pid)
    return alive


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster of 2 CPUs on loopback; after the module, none of its processes is left running."""
    before = _children(os.getpid())  # (this test process's own helpers: a multiprocessing resource tracker...)
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        yield
    finally:
        started = {
            pid for pid in _children(os.getpid()) - before if "multiprocessing.resource_tracker" not in _title(pid)
        }
        ray.shutdown()
        deadline = time.monotonic() + 20
        while _alive(started) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(started), [(pid, _title(pid)) for pid in _alive(started)]


@pytest.fixture
def tau(tmp_path: Path, tau_bench_file: Path, cluster: None) -> Iterator[Store]:
    with open_store(tmp_path / "store.db") as opened:
        store = as_user(opened, "ann")
        assert import_file(store, tau_bench_file, "tau", workers=1).failed == 0
        yield store


def _once(store: Store, run_id: int, sessions: int, metrics: int) -> None:
    """Every session has exactly one session score of each metric in the run, and the run is done with them all."""
    sql = "SELECT count(*), count(DISTINCT session_pk || '/' || metric) FROM scores WHERE run_id = ? AND turn = -1"
    counts = query(store, sql, [run_id])
    assert counts == [(sessions * metrics, sessions * metrics)]
    run = store.runs.get(run_id)
    assert run.status == "done" and run.n_items == sessions * metrics


def test_ray_scores_export_as_one_process_on_tau_bench(tau: Store) -> None:
    one = score_dataset(tau, "tau", DETERMINISTIC).run
    expected = scores_jsonl(tau, one.id)
    seen: list[tuple[int, int]] = []
    report = score_dataset_ray(tau, "tau", DETERMINISTIC, partition_size=7, on_progress=lambda *p: seen.append(p))
    assert report.partitions == 6 and report.cpus == 2 and not report.resumed
    assert scores_jsonl(tau, report.run.id) == expected
    assert seen[0] == (0, 40) and seen[-1] == (40, 40) and len(seen) == 7
    _once(tau, report.run.id, 40, len(DETERMINISTIC))
    ran = report.run
    assert (ran.n_done, ran.n_failed, ran.n_not_applicable) == (one.n_done, one.n_failed, one.n_not_applicable)


def test_ray_scores_twenty_thousand_sessions_as_one_process(tmp_path: Path, cluster: None) -> None:
    from test_shards import _generated

    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(_generated(i)) + "\n" for i in range(20_000)))
    with open_store(tmp_path / "many.db") as opened:
        store = as_user(opened, "ann")
        assert import_file(store, source, "many").new == 20_000
        specs = ["tool_call_count", "turn_count", "tool_call_accuracy"]
        expected = scores_jsonl(store, score_dataset(store, "many", specs, workers=1).run.id)
        assert expected.count(b"\n") == 60_000 and b'"not_applicable": true' in expected
        report = score_dataset_ray(store, "many", specs)
        assert scores_jsonl(store, report.run.id) == expected
        _once(store, report.run.id, 20_000, len(specs))


def test_judged_ray_run_exports_as_one_process_and_fills_the_judge_cache(tau: Store) -> None:
    with FakeOpenAI() as server:
        config = JudgeConfig(model="m", base_url=server.url, api_key="k", concurrency=4)
        one = score_dataset(tau, "tau", JUDGED, judge=config)
        expected = scores_jsonl(tau, one.run.id)
        cached = query(tau, "SELECT count(*) FROM judge_cache")
        query(tau, "DELETE FROM judge_cache")
        asked = len(server.requests)
        report = score_dataset_ray(tau, "tau", JUDGED, judge=config, resume=False, partition_size=10)
        assert len(server.requests) == 2 * asked  # the workers called the judge for every session
    assert report.partitions == 4
    assert scores_jsonl(tau, report.run.id) == expected
    assert query(tau, "SELECT count(*) FROM judge_cache") == cached  # the workers' answers, in the store's cache
    assert report.run.judge_model == "m" and report.run.judge_base_url == server.url
    _once(tau, report.run.id, 40, len(JUDGED))


def _kill_a_task_worker(killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first worker process of this test's cluster seen running a scoring task."""
    me = os.getpid()
    while not stop.is_set():
        for pid in _alive(_children(me)):
            if _title(pid).startswith(f"ray::{TASK_NAME}"):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        time.sleep(0.05)


def test_a_worker_killed_mid_task_is_retried_and_every_item_is_scored_once(tau: Store) -> None:
    with FakeOpenAI(latency=0.05) as server:
        config = JudgeConfig(model="m", base_url=server.url, api_key="k", concurrency=2)
        expected = scores_jsonl(tau, score_dataset(tau, "tau", JUDGED, judge=config).run.id)
        killed: list[int] = []
        stop = threading.Event()
        killer = threading.Thread(target=_kill_a_task_worker, args=(killed, stop))
        killer.start()
        try:
            report = score_dataset_ray(tau, "tau", JUDGED, judge=config, resume=False, partition_size=10)
        finally:
            stop.set()
            killer.join()
    assert len(killed) == 1  # a worker died mid-task: its partition was run again by Ray
    assert report.partitions == 4
    assert scores_jsonl(tau, report.run.id) == expected
    _once(tau, report.run.id, 40, len(JUDGED))
    run = report.run
    assert (run.n_done + run.n_failed + run.n_not_applicable) == 40 * len(JUDGED)


def test_a_cancelled_ray_run_is_resumed(tau: Store) -> None:
    expected = scores_jsonl(tau, score_dataset(tau, "tau", DETERMINISTIC).run.id)
    progress: list[int] = []
    first = score_dataset_ray(
        tau, "tau", DETERMINISTIC, resume=False, partition_size=5,
        on_progress=lambda done, total: progress.append(done), should_stop=lambda: progress[-1] > 0,
    )  # fmt: skip
    assert first.cancelled and first.run.status == "cancelled"
    assert 0 < first.partitions < 8
    stored = query(tau, "SELECT count(DISTINCT session_pk) FROM scores WHERE run_id = ?", [first.run.id])[0][0]
    assert stored == 5 * first.partitions
    again = score_dataset_ray(tau, "tau", DETERMINISTIC, partition_size=5)
    assert again.resumed and again.run.id == first.run.id and again.skipped == stored
    assert again.partitions == 8 - first.partitions and not again.cancelled
    assert scores_jsonl(tau, again.run.id) == expected
    _once(tau, again.run.id, 40, len(DETERMINISTIC))


def test_score_engine_ray_on_the_command_line(tau: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = scores_jsonl(tau, score_dataset(tau, "tau", DETERMINISTIC).run.id)
    db = str(tmp_path / "store.db")
    code = main(["score", "--dataset", "tau", "--metrics", ",".join(DETERMINISTIC), "--engine", "ray", "--db", db])
    assert code == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "on Ray (2 CPUs" in err and "40 sessions" in err
    latest = tau.runs.recent("tau")[0]
    assert scores_jsonl(tau, latest.id) == expected


def test_ray_options_given_wrong_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "empty.db")
    base = ["score", "--dataset", "tau", "--metrics", "turn_count", "--db", db]
    assert main([*base, "--ray-address", "127.0.0.1:6379"]) == 2
    assert "--ray-address is for --engine ray" in capsys.readouterr().err
    assert main([*base, "--engine", "ray", "--shard", "0/2", "--output", str(tmp_path / "s.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--shard scores one shard here" in err and "Traceback" not in err
