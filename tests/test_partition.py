"""``score_partition``: plain session JSON in, plain score rows out, the rows a one-process run stores.

Checked on the τ-bench data (40 real agent trajectories) against a real run of ``score_dataset`` in a real SQLite
store, with deterministic metrics and with a judge metric against the loopback OpenAI-protocol server.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user
from openai_server import FakeOpenAI

from evalcore.errors import UsageError
from evalcore.importing import import_file
from evalcore.judge import JudgeConfig, MemoryCache
from evalcore.partition import ROW_COLUMNS
from evalcore.scoring import score_dataset, score_partition
from evalcore.store import Store, open_store

DETERMINISTIC = ["tool_call_count", "turn_count", "token_usage", "latency", "tool_call_accuracy", "exact_match"]


@pytest.fixture
def tau(tmp_path: Path, tau_bench_file: Path) -> Iterator[Store]:
    with open_store(tmp_path / "tau.db") as store:
        ann = as_user(store, "ann")
        assert import_file(ann, tau_bench_file, "tau", workers=1).failed == 0
        yield ann


def stored_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    return sorted((dict(zip(ROW_COLUMNS, row, strict=True)) for row in store.runs.keyed_rows(run_id)), key=_order)


def _order(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["key"], row["metric"], row["turn"]


def session_json(store: Store, dataset: str) -> list[tuple[str, dict[str, Any]]]:
    """Each session of ``dataset`` as its stored key and its JSON."""
    pks = store.sessions.matching(dataset)
    return [(s.key, s.session.model_dump(mode="json")) for s in store.sessions.get_many(pks)]


def test_a_partition_scores_the_rows_a_run_stores(tau: Store) -> None:
    run = score_dataset(tau, "tau", DETERMINISTIC).run
    expected = stored_rows(tau, run.id)
    assert len(expected) >= 40 * len(DETERMINISTIC)
    statuses = {row["status"] for row in expected}
    assert {"ok", "not_applicable"} <= statuses  # (tau-bench has no reference answers: some do not apply)
    sessions = session_json(tau, "tau")
    rows = score_partition([data for _, data in sessions], DETERMINISTIC)
    assert sorted(rows, key=_order) == expected
    # Rows are plain: picklable, every row with every column, values of plain types.
    assert pickle.loads(pickle.dumps(rows)) == rows
    assert all(list(row) == list(ROW_COLUMNS) for row in rows)
    assert all(type(v) in (str, int, float, type(None)) for row in rows for v in row.values())
    # The same from its JSON as text, keyed explicitly, in parts of any size: nothing depends on the partition.
    as_text = [json.dumps(data) for _, data in sessions]
    parts = [as_text[:7], as_text[7:8], as_text[8:]]
    pieced = [row for part in parts for row in score_partition(part, DETERMINISTIC)]
    assert sorted(pieced, key=_order) == expected
    keyed = score_partition([{"key": key, "session": data} for key, data in sessions], DETERMINISTIC)
    assert sorted(keyed, key=_order) == expected


def test_metrics_reading_only_calls_score_the_json_as_the_run_does(tau: Store) -> None:
    """Every metric reads only tool calls: the partition reads them from the JSON without building sessions."""
    specs = ["tool_call_count", "tool_call_accuracy", "tool_call_f1"]
    run = score_dataset(tau, "tau", specs).run
    rows = score_partition([data for _, data in session_json(tau, "tau")], specs)
    assert sorted(rows, key=_order) == stored_rows(tau, run.id)
    assert any(row["value"] for row in rows if row["metric"] == "tool_call_count")


def test_a_judged_partition_scores_the_rows_a_judged_run_stores(tau: Store) -> None:
    specs = ["relevance_to_query", "gaussia_conversational", "turn_count"]
    with FakeOpenAI() as server:
        config = JudgeConfig(model="m", base_url=server.url, api_key="k", concurrency=4)
        run = score_dataset(tau, "tau", specs, judge=config).run
        expected = stored_rows(tau, run.id)
        calls = len(server.requests)
        cache = MemoryCache()
        rows = score_partition([data for _, data in session_json(tau, "tau")], specs, judge=config, cache=cache)
        assert len(server.requests) == 2 * calls  # a cache of its own: every call made again
        again = score_partition([data for _, data in session_json(tau, "tau")], specs, judge=config, cache=cache)
        assert len(server.requests) == 2 * calls  # the cache answered every one

    def timeless(row: dict[str, Any]) -> dict[str, Any]:  # (the judge's latency is measured, never the same)
        return {k: v for k, v in row.items() if k != "latency_ms"}

    assert [timeless(r) for r in sorted(rows, key=_order)] == [timeless(r) for r in expected]
    judged = [r for r in rows if r["metric"] == "relevance_to_query" and r["status"] == "ok"]
    assert judged and all(r["calls"] == 1 and r["input_tokens"] for r in judged)
    assert any(r["turn"] >= 0 for r in rows if r["metric"] == "gaussia_conversational")  # per-turn rows too
    assert all(r["calls"] == 0 and r["cached"] == 1 for r in again if r["metric"] == "relevance_to_query")
    assert pickle.loads(pickle.dumps(rows)) == rows


def test_bad_partitions_are_named() -> None:
    with pytest.raises(UsageError, match="need a judge model"):
        score_partition([], ["relevance_to_query"])
    with pytest.raises(UsageError, match="session #1 of the partition has no session_id"):
        score_partition([{"session_id": "a", "messages": []}, {"messages": []}], ["turn_count"])
    with pytest.raises(UsageError, match="session #0 of the partition: a session is its JSON"):
        score_partition([42], ["turn_count"])
    with pytest.raises(UsageError, match="metric given twice"):
        score_partition([], ["turn_count", "turn_count"])
    assert score_partition([{"key": "pos:f.jsonl:0", "session": {"messages": []}}], ["turn_count"])[0]["key"] == (
        "pos:f.jsonl:0"
    )
