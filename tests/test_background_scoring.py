"""Background scoring with parameters and a judge on the loopback OpenAI server; cancelled from
another connection (another tab) and resumed where it stopped. Real SQLite files throughout."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from dbutil import as_user, query
from openai_server import FakeOpenAI

from evalcore.background import cancel, cancel_requested, job_run, resume_run, start_import, start_scoring, wait_for
from evalcore.errors import NotFoundError, UsageError
from evalcore.judge import JudgeConfig
from evalcore.store import Store, open_store
from evalcore.views.metrics import progress_view

SECRET = "sk-background-secret-77"


def _session(i: int) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "session_id": f"s-{i:02d}",
        "messages": [
            {"role": "user", "content": f"Is order {i} shipped?"},
            {"role": "assistant", "content": f"Yes, order {i} shipped."},
        ],
        "reference": f"Order {i} shipped." if i % 2 == 0 else None,
    }


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        data = "".join(json.dumps(_session(i)) + "\n" for i in range(40)).encode()
        job = wait_for(s, start_import(s, data, "x.jsonl", "ds"))
        assert job.status == "done", job.error
        yield s


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def judge(server: FakeOpenAI, **options: Any) -> JudgeConfig:
    return JudgeConfig(model="gpt-4o-mini", base_url=server.url, api_key=SECRET, backoff=0.01, **options)


def test_scoring_with_parameters_names_its_run(store: Store) -> None:
    job_id = start_scoring(store, "ds", ["turn_count", {"name": "rouge", "params": {"rouge_type": "rouge1"}}])
    job = wait_for(store, job_id)
    assert job.status == "done", job.error
    assert job.label == "score turn_count, rouge:rouge_type=rouge1"
    run = store.runs.get(job_run(store, job_id) or 0)
    assert run.metrics == ["turn_count", "rouge:rouge_type=rouge1"]
    assert (run.n_items, run.n_done, run.n_not_applicable) == (80, 60, 20)
    assert job.result is not None and job.result["run"] == run.id and job.result["cancelled"] is False
    with pytest.raises(UsageError, match="rouge"):  # a bad parameter is refused before any job starts
        start_scoring(store, "ds", [{"name": "rouge", "params": {"rouge_type": "rouge9"}}])


def test_a_judge_run_in_the_background(store: Store, server: FakeOpenAI) -> None:
    job = wait_for(store, start_scoring(store, "ds", ["safety"], judge=judge(server)))
    assert job.status == "done", job.error
    run = store.runs.recent("ds")[0]
    assert run.judge_model == "gpt-4o-mini" and (run.n_done, run.n_failed) == (40, 0)
    assert len(server.requests) == 40 and job.result is not None and job.result["judge_requests"] == 40
    assert not any(
        SECRET in str(cell)
        for table in ("runs", "scores", "jobs", "judge_cache")
        for row in query(store, f"SELECT * FROM {table}")
        for cell in row
    )
    # Judge metrics with no judge: the job fails and says what to set.
    failed = wait_for(store, start_scoring(store, "ds", ["safety"], new_run=True))
    assert failed.status == "failed" and "judge model" in (failed.error or "")


def test_faults_of_the_judge_are_failures_of_items(store: Store, server: FakeOpenAI) -> None:
    server.queue("500", "garbage", "500")  # each fails the item it answers (no retry)
    job = wait_for(store, start_scoring(store, "ds", ["safety"], judge=judge(server, max_retries=0, concurrency=1)))
    assert job.status == "done", job.error
    run = store.runs.recent("ds")[0]
    assert (run.n_done, run.n_failed) == (37, 3)


def test_cancel_from_another_connection_then_resume(store: Store, server: FakeOpenAI) -> None:
    server.latency = 0.03
    config = judge(server, concurrency=1)
    job_id = start_scoring(store, "ds", ["relevance_to_query"], judge=config)
    with open_store(store.url) as other:  # another tab asks it to stop
        deadline = time.monotonic() + 30
        while other.jobs.get(job_id).done < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not cancel_requested(other, job_id)
        live = progress_view(other, other.jobs.get(job_id), job_run(other, job_id))
        assert live.status == "running" and live.active and live.run_id is not None
        assert re.fullmatch(r"Scoring: \d+ of 40 sessions", live.message) and live.items == 40
        cancel(as_user(other, "bob"), job_id)
        assert cancel_requested(other, job_id)
    job = wait_for(store, job_id)
    assert (job.status, job.error, job.cancel_by) == ("cancelled", "cancelled by bob", "bob")
    assert job.result is not None and job.result["cancelled"] is True
    run_id = job_run(store, job_id)
    assert run_id is not None and job.result["run"] == run_id
    stopped = store.runs.get(run_id)
    assert stopped.status == "cancelled" and 5 <= stopped.n_done < 40
    view = progress_view(store, job, run_id)
    assert view.status == "cancelled" and not view.active
    assert view.message == f"Cancelled after {job.done} of 40 sessions; resume it below to go on"
    assert (view.done, view.failed, view.not_applicable) == (stopped.n_done, stopped.n_failed, 0)
    asked = len(server.requests)
    assert asked < 40

    server.latency = 0.0
    again = wait_for(store, resume_run(store, run_id, judge=config))
    assert again.status == "done", again.error
    assert job_run(store, again.id) == run_id and again.result is not None
    assert again.result["skipped"] == stopped.n_done + stopped.n_failed + stopped.n_not_applicable
    done = store.runs.get(run_id)
    assert done.status == "done" and done.n_done == 40
    finished = progress_view(store, again, run_id)
    assert (finished.status, finished.fraction, finished.done) == ("done", 1.0, 40)
    assert finished.message == f"Done: 40 sessions scored (run #{run_id})"
    assert finished.counts == "40 scored · 0 failed · 0 not applicable"
    assert len(server.requests) <= asked + (40 - stopped.n_done)  # what was scored is not asked again
    with pytest.raises(UsageError, match="finished"):
        resume_run(store, run_id, judge=config)
    with pytest.raises(NotFoundError):
        cancel(store, 999_999)
