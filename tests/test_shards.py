"""Shards: ``score --shard I/N`` scores one share of a dataset into a file, ``import-scores`` merges the files into
one run, idempotently, and the run's scores export byte for byte as one process's do.

Real stores on both engines (SQLite file and a throwaway PostgreSQL), the τ-bench data and a generated 20,000-session
set, a real loopback OpenAI-protocol server for the judge, the real command line for the commands.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, query
from openai_server import FakeOpenAI

from evalcore.cli import main
from evalcore.errors import UsageError
from evalcore.exporting import export_dataset, scores_jsonl
from evalcore.importing import import_file
from evalcore.judge import JudgeConfig
from evalcore.partition import ROW_COLUMNS
from evalcore.scoring import score_dataset, score_partition
from evalcore.shards import import_scores, judge_share, parse_shard, score_shard, shard_of
from evalcore.store import Store, open_store

DETERMINISTIC = ["tool_call_count", "turn_count", "tool_call_accuracy", "token_usage"]
JUDGED = ["relevance_to_query", "turn_count"]


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as opened:
        yield as_user(opened, "ann")


@pytest.fixture
def tau(store: Store, tau_bench_file: Path) -> Store:
    assert import_file(store, tau_bench_file, "tau", workers=1).failed == 0
    return store


def shards(store: Store, dataset: str, specs: list[str], n: int, folder: Path, **options: Any) -> list[Path]:
    """Every shard of ``n`` scored into its own file."""
    files = []
    for i in range(n):
        path = folder / f"scores-{n}-{i}.jsonl"
        score_shard(store, dataset, specs, (i, n), path, **options)
        files.append(path)
    return files


def score_count(store: Store, run_id: int) -> int:
    return int(query(store, "SELECT count(*) FROM scores WHERE run_id = ?", [run_id])[0][0])


def test_a_shard_is_a_stable_share_by_stored_key() -> None:
    # Pinned: a shard's sessions never move between releases, machines or runs (SHA-256 of the key).
    assert [shard_of("id:task-0", n) for n in (1, 3, 7)] == [0, 2, 1]
    keys = [f"id:s{i}" for i in range(7000)]
    counts = [sum(1 for k in keys if shard_of(k, 7) == i) for i in range(7)]
    assert sum(counts) == 7000 and min(counts) > 900  # every session in one shard, the shares near even
    assert parse_shard("2/7") == (2, 7)
    for bad in ("7/7", "-1/3", "1", "a/b", "0/0"):
        with pytest.raises(UsageError, match="I/N"):
            parse_shard(bad)
    assert [judge_share(8, i, 3) for i in range(3)] == [3, 3, 2]  # divided, not multiplied
    assert [judge_share(2, i, 4) for i in range(4)] == [1, 1, 1, 1]  # (at least one each)


def test_shards_merged_export_as_one_process_on_tau_bench(tau: Store, tmp_path: Path) -> None:
    one = score_dataset(tau, "tau", DETERMINISTIC).run
    expected = scores_jsonl(tau, one.id)
    assert expected.count(b"\n") == 40 * len(DETERMINISTIC)
    for n in (1, 3, 7):
        files = shards(tau, "tau", DETERMINISTIC, n, tmp_path)
        headers = [json.loads(f.read_text().splitlines()[0]) for f in files]
        assert sum(h["sessions"] for h in headers) == 40 and all(h["shards"] == n for h in headers)
        report = import_scores(tau, files, "tau", new_run=True)
        assert report.created and report.complete and report.run.status == "done" and not report.problems
        assert report.run.items_done == report.run.n_items == 40 * len(DETERMINISTIC)
        assert scores_jsonl(tau, report.run.id) == expected, n
    assert query(tau, "SELECT count(*) FROM judge_cache") == [(0,)]


def test_judged_shards_carry_the_judge_cache_and_export_as_one_process(tau: Store, tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        config = JudgeConfig(model="m", base_url=server.url, api_key="k", concurrency=4)
        files = shards(tau, "tau", JUDGED, 3, tmp_path, judge=config)
        calls = len(server.requests)
        assert calls >= 40  # the store's cache was empty: every call made
        assert query(tau, "SELECT count(*) FROM judge_cache") == [(0,)]  # a shard writes nothing to the store
        merged = import_scores(tau, files, "tau")
        assert merged.judge_cached == calls  # every answer travelled back in the files
        assert query(tau, "SELECT count(*) FROM judge_cache") == [(calls,)]
        one = score_dataset(tau, "tau", JUDGED, judge=config)
        assert len(server.requests) == calls and one.judge_requests == 0  # answered from the merged cache
        expected = scores_jsonl(tau, one.run.id)
        assert scores_jsonl(tau, merged.run.id) == expected
        assert b'"metric": "relevance_to_query"' in expected
        for n in (1, 7):  # read before: the store's cache answers every shard's calls
            files = shards(tau, "tau", JUDGED, n, tmp_path, judge=config)
            report = import_scores(tau, files, "tau", new_run=True)
            assert len(server.requests) == calls and report.judge_cached == 0
            assert scores_jsonl(tau, report.run.id) == expected, n
    assert merged.run.judge_model == "m" and merged.run.judge_base_url == server.url


class _Peak(FakeOpenAI):
    """FakeOpenAI that records the most requests it answered at once."""

    def __init__(self, latency: float) -> None:
        super().__init__(latency=latency)
        self.now = self.peak = 0
        self.gate = threading.Lock()

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        with self.gate:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            super().handle(handler, body)
        finally:
            with self.gate:
                self.now -= 1


def test_a_shard_takes_its_share_of_the_total_judge_concurrency(tmp_path: Path, tau_bench_file: Path) -> None:
    with open_store(tmp_path / "c.db") as store, _Peak(latency=0.05) as server:
        assert import_file(store, tau_bench_file, "tau", workers=1).failed == 0
        config = JudgeConfig(model="m", base_url=server.url, api_key="k", concurrency=8)
        report = score_shard(store, "tau", ["relevance_to_query"], (0, 4), tmp_path / "s.jsonl", judge=config)
        assert report.concurrency == 2 and 1 <= server.peak <= 2
        header = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[0])
        assert header["concurrency"] == 2
        server.peak = 0
        alone = score_shard(store, "tau", ["safety"], (0, 1), tmp_path / "t.jsonl", judge=config, concurrency=6)
        assert alone.concurrency == 6 and 2 < server.peak <= 6  # (one shard: the whole total)


def test_import_is_idempotent_and_a_failed_shard_is_run_again(tau: Store, tmp_path: Path) -> None:
    expected = scores_jsonl(tau, score_dataset(tau, "tau", DETERMINISTIC).run.id)
    files = shards(tau, "tau", DETERMINISTIC, 3, tmp_path)
    first = import_scores(tau, files[:2], "tau")
    assert first.created and not first.complete and first.run.status == "running"
    partial = first.scored
    assert 0 < partial < 40 and first.run.items_done == partial * len(DETERMINISTIC)
    again = import_scores(tau, files[1:2], "tau")  # a shard imported twice
    assert not again.created and again.run.id == first.run.id and again.scored == partial
    assert score_count(tau, first.run.id) == first.rows
    # The third shard's job failed: its file cut short is refused, whole, before anything is stored.
    lines = files[2].read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[: len(lines) // 2]))
    with pytest.raises(UsageError, match="cut short"):
        import_scores(tau, [cut], "tau")
    assert score_count(tau, first.run.id) == first.rows
    # Run again, imported with the others once more: every score once, the run done, as one process.
    files[2] = shards(tau, "tau", DETERMINISTIC, 3, tmp_path)[2]
    done = import_scores(tau, files, "tau")
    assert done.run.id == first.run.id and done.complete and done.run.status == "done"
    assert score_count(tau, done.run.id) == 40 * len(DETERMINISTIC) == done.run.items_done
    assert scores_jsonl(tau, done.run.id) == expected
    assert len(tau.runs.recent("tau")) == 3  # the imported rewards, one process's, the shards'


def test_an_unfinished_shard_run_resumes_in_one_process(tau: Store, tmp_path: Path) -> None:
    files = shards(tau, "tau", DETERMINISTIC, 3, tmp_path)
    partial = import_scores(tau, files[:1], "tau")
    resumed = score_dataset(tau, "tau", DETERMINISTIC)
    assert resumed.resumed and resumed.run.id == partial.run.id and resumed.skipped == partial.scored
    assert resumed.run.status == "done" and score_count(tau, resumed.run.id) == 40 * len(DETERMINISTIC)


def _generated(i: int) -> dict[str, Any]:
    tools = [{"name": f"tool{(i + k) % 5}", "args": {"n": (i * k) % 7}} for k in range(i % 4)]
    return {
        "schema_version": 1,
        "session_id": f"g{i}",
        "messages": [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": "" if tools else "a", **({"tool_calls": tools} if tools else {})},
            *([{"role": "tool", "content": "ok"}, {"role": "assistant", "content": f"answer {i}"}] if tools else []),
            {"role": "user", "content": "thanks"},
            {"role": "assistant", "content": "welcome"},
        ],
        "reference_tool_calls": tools[: (i % 3)] if i % 11 else None,
    }


def test_shards_of_twenty_thousand_sessions_export_as_one_process(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(_generated(i)) + "\n" for i in range(20_000)))
    assert import_file(store, source, "many").new == 20_000
    specs = ["tool_call_count", "turn_count", "tool_call_accuracy"]
    expected = scores_jsonl(store, score_dataset(store, "many", specs, workers=1).run.id)
    assert expected.count(b"\n") == 60_000 and b'"not_applicable": true' in expected
    for n in (1, 3, 7):
        report = import_scores(store, shards(store, "many", specs, n, tmp_path), "many", new_run=True)
        assert report.complete and report.rows == 60_000
        assert scores_jsonl(store, report.run.id) == expected, n


def test_rows_of_any_engine_import_as_a_run(tau: Store, tmp_path: Path) -> None:
    """What the README's Spark job does: the sessions exported as evalcore JSON lines, scored a partition at a time,
    the bare rows written in several files, imported with their metrics named."""
    export_dataset(tau, "tau", tmp_path / "tau.jsonl", "evalcore")
    sessions = (tmp_path / "tau.jsonl").read_text().splitlines()
    assert len(sessions) == 40 and sessions[0].startswith('{"schema_version":')
    parts = [sessions[:13], sessions[13:]]
    files = []
    for i, part in enumerate(parts):
        path = tmp_path / f"part-{i}.json"
        path.write_text("".join(json.dumps(row) + "\n" for row in score_partition(part, DETERMINISTIC)))
        files.append(path)
    with pytest.raises(UsageError, match="name its metrics"):
        import_scores(tau, files, "tau")
    report = import_scores(tau, files, "tau", specs=DETERMINISTIC)
    assert report.complete and not report.problems
    assert scores_jsonl(tau, report.run.id) == scores_jsonl(tau, score_dataset(tau, "tau", DETERMINISTIC).run.id)


def test_bad_rows_are_named_and_left_out(tau: Store, tmp_path: Path) -> None:
    good = score_partition([s.session for s in tau.sessions.get_many(tau.sessions.matching("tau"))], ["turn_count"])
    row = dict(zip(ROW_COLUMNS, [good[0][c] for c in ROW_COLUMNS], strict=True))
    lines = [
        json.dumps(row),
        "{not json",
        json.dumps({**row, "metric": "bleu"}),
        json.dumps({**row, "status": "fine"}),
        json.dumps({**row, "key": "id:nobody"}),
        json.dumps({**row, "value": "high"}),
        json.dumps([1, 2]),
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = import_scores(tau, [path], "tau", specs=["turn_count"])
    assert report.rows == 1 and not report.complete
    named = {p.split(": ", 1)[0]: p.split(": ", 1)[1] for p in report.problems}
    assert sorted(named) == [f"{path}:{n}" for n in (2, 3, 4, 5, 6, 7)]
    assert named[f"{path}:5"] == "no session of 'tau' is stored under key 'id:nobody'"
    assert named[f"{path}:2"] == "not JSON" and "'bleu' is not one of the run's" in named[f"{path}:3"]
    other = tmp_path / "other.jsonl"
    score_shard(tau, "tau", ["tool_call_count"], (0, 1), other)
    with pytest.raises(UsageError, match="other work"):
        import_scores(tau, [other], "tau", specs=["turn_count"])
    with pytest.raises(UsageError, match="the shard of dataset 'tau', not 'x'"):
        import_scores(tau, [other], "x")


def test_the_commands_score_a_shard_and_import_it(tmp_path: Path, tau_bench_file: Path, capsys: Any) -> None:
    db = str(tmp_path / "cli.db")
    with open_store(db) as store:
        assert import_file(store, tau_bench_file, "tau", workers=1).failed == 0
    outs = [str(tmp_path / f"scores-{i}.jsonl") for i in range(2)]
    for i, out in enumerate(outs):
        code = main(["score", "--dataset", "tau", "--metrics", "turn_count", "--shard", f"{i}/2", "--output", out,
                     "--db", db])  # fmt: skip
        assert code == 0
        assert f"shard {i}/2: " in capsys.readouterr().err
    assert main(["import-scores", *outs, "--dataset", "tau", "--db", db]) == 0
    assert "new run 2 of 'tau': 40 scores from 2 files, 0 judge answers; 40 of 40 sessions scored; done" in (
        capsys.readouterr().err
    )
    assert main(["import-scores", outs[0], "--dataset", "tau", "--db", db]) == 0
    assert "run 2 of 'tau'" in capsys.readouterr().err  # the same run again
    with pytest.raises(SystemExit) as refused:
        main(["score", "--dataset", "tau", "--metrics", "turn_count", "--shard", "2/2", "--output", outs[0]])
    assert refused.value.code == 2 and "0 <= I < N" in capsys.readouterr().err
    assert main(["score", "--dataset", "tau", "--metrics", "turn_count", "--shard", "0/2", "--db", db]) == 2
    assert "--shard needs --output" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    assert main(["import-scores", str(bad), "--dataset", "tau", "--metrics", "turn_count", "--db", db]) == 1
    assert f"{bad}:1: not JSON" in capsys.readouterr().err
