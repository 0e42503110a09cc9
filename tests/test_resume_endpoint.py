"""A run goes on with its own judge model at its own endpoint: two loopback OpenAI servers, the run's own and
"another endpoint" that records every request, prove that nothing reaches the other one (not a transcript, not
the key) unless the caller confirms it — by the library (``resume_run``, ``score_dataset``, ``start_scoring``)
and by the command line. A refusal leaves the run as it was, resumable."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import execute
from openai_server import FakeOpenAI

from evalcore.background import resume_run, start_import, start_scoring, wait_for
from evalcore.judge import JudgeConfig
from evalcore.resuming import OtherEndpointError, run_judge
from evalcore.scoring import score_dataset
from evalcore.store import Store, open_store

SECRET = "sk-resume-endpoint-secret-31"
METRIC = "relevance_to_query"
SESSIONS = 12
EVALCORE = str(Path(sys.executable).parent / "evalcore")


def _lines() -> bytes:
    rows = [
        {
            "schema_version": 1,
            "session_id": f"s-{i:02d}",
            "messages": [
                {"role": "user", "content": f"Where is parcel {i}?"},
                {"role": "assistant", "content": f"Parcel {i} left the depot."},
            ],
        }
        for i in range(SESSIONS)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        job = wait_for(s, start_import(s, _lines(), "x.jsonl", "ds"))
        assert job.status == "done", job.error
        yield s


@pytest.fixture
def own() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def other() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def judge(server: FakeOpenAI, **options: Any) -> JudgeConfig:
    return JudgeConfig(model="gpt-4o-mini", base_url=server.url, api_key=SECRET, backoff=0.01, concurrency=1, **options)


def cancelled_run(store: Store, own: FakeOpenAI) -> int:
    """A run of ``METRIC`` on ``own``, stopped after a few sessions: cancelled, part scored."""
    report = score_dataset(store, "ds", [METRIC], judge=judge(own), should_stop=lambda: len(own.requests) >= 4)
    run = store.runs.get(report.run.id)
    assert report.cancelled and run.status == "cancelled" and 0 < run.n_done < SESSIONS
    assert run.judge_base_url == own.url
    return run.id


def test_resume_calls_the_runs_endpoint_whatever_the_form_names(
    store: Store, own: FakeOpenAI, other: FakeOpenAI
) -> None:
    run_id = cancelled_run(store, own)
    before = len(own.requests)
    # The form shows another endpoint (the default public one, say) and the model typed: the run's own is called.
    job = wait_for(store, resume_run(store, run_id, judge=judge(other)))
    assert job.status == "done", job.error
    run = store.runs.get(run_id)
    assert (run.status, run.n_done, run.judge_base_url) == ("done", SESSIONS, own.url)
    assert other.requests == []  # not one call, so neither a transcript nor the key
    assert len(own.requests) > before


def test_resume_with_only_the_environment_calls_the_runs_endpoint(
    store: Store, own: FakeOpenAI, other: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = cancelled_run(store, own)
    monkeypatch.setenv("EVALCORE_BASE_URL", other.url)  # the environment points elsewhere now
    monkeypatch.setenv("EVALCORE_API_KEY", SECRET)
    monkeypatch.delenv("EVALCORE_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("EVALCORE_JUDGE_MODEL", raising=False)
    config = run_judge(store.runs.get(run_id))
    assert config is not None and (config.model, config.base_url, config.api_key) == ("gpt-4o-mini", own.url, SECRET)
    job = wait_for(store, resume_run(store, run_id))
    assert job.status == "done", job.error
    assert other.requests == [] and store.runs.get(run_id).n_done == SESSIONS


def test_scoring_again_at_another_endpoint_is_refused_and_the_run_stays_resumable(
    store: Store, own: FakeOpenAI, other: FakeOpenAI
) -> None:
    run_id = cancelled_run(store, own)
    stopped = store.runs.get(run_id)
    with pytest.raises(OtherEndpointError) as refused:
        score_dataset(store, "ds", [METRIC], judge=judge(other))
    assert (refused.value.run_id, refused.value.run_url, refused.value.url) == (run_id, own.url, other.url)
    assert own.url in str(refused.value) and other.url in str(refused.value)
    # The app's Run button: refused before any job starts.
    jobs = len(store.jobs.recent("ds"))
    with pytest.raises(OtherEndpointError):
        start_scoring(store, "ds", [METRIC], judge=judge(other))
    assert len(store.jobs.recent("ds")) == jobs
    assert other.requests == []
    assert store.runs.get(run_id) == stopped and stopped.resumable  # untouched: resumable as it was
    assert [r.id for r in store.runs.recent("ds")] == [run_id]  # and no new run made
    # Named at its own endpoint, it goes on.
    report = score_dataset(store, "ds", [METRIC], judge=judge(own))
    assert report.resumed and report.run.id == run_id and report.run.n_done == SESSIONS
    assert other.requests == []


def test_another_endpoint_only_when_confirmed(store: Store, own: FakeOpenAI, other: FakeOpenAI) -> None:
    run_id = cancelled_run(store, own)
    asked = len(own.requests)
    job = wait_for(store, resume_run(store, run_id, judge=judge(other), allow_other_endpoint=True))
    assert job.status == "done", job.error
    run = store.runs.get(run_id)
    assert run.n_done == SESSIONS and run.judge_base_url == other.url  # the endpoint it went on at, recorded
    assert len(other.requests) == SESSIONS - (job.result or {})["skipped"] and len(own.requests) == asked


def test_a_run_that_did_not_record_its_endpoint_goes_on_only_where_confirmed(
    store: Store, own: FakeOpenAI, other: FakeOpenAI
) -> None:
    run_id = cancelled_run(store, own)
    execute(store, "UPDATE runs SET judge_base_url = NULL WHERE id = ?", [run_id])  # as older runs are
    with pytest.raises(OtherEndpointError, match="did not record"):
        resume_run(store, run_id, judge=judge(other))
    assert other.requests == [] and store.runs.get(run_id).status == "cancelled"
    job = wait_for(store, resume_run(store, run_id, judge=judge(own), allow_other_endpoint=True))
    assert job.status == "done", job.error
    assert store.runs.get(run_id).judge_base_url == own.url and other.requests == []


def test_the_command_line_refuses_another_endpoint_unless_told(
    tmp_path: Path, own: FakeOpenAI, other: FakeOpenAI
) -> None:
    db = str(tmp_path / "cli.db")
    with open_store(db) as store:
        wait_for(store, start_import(store, _lines(), "x.jsonl", "ds"))
        run_id = cancelled_run(store, own)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "EVALCORE_API_KEY": SECRET}
    base = [EVALCORE, "score", "--dataset", "ds", "--metrics", METRIC, "--db", db, "--judge-model", "gpt-4o-mini"]
    proc = subprocess.run([*base, "--base-url", other.url], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"run #{run_id} (unfinished) called its judge at {own.url}" in proc.stderr
    assert f"--base-url {own.url}" in proc.stderr and "--allow-other-endpoint" in proc.stderr
    assert other.requests == []
    with open_store(db) as store:
        assert store.runs.get(run_id).status == "cancelled"
    proc = subprocess.run(
        [*base, "--base-url", other.url, "--allow-other-endpoint"], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert f"resumed run {run_id}" in proc.stderr and other.requests
    with open_store(db) as store:
        assert store.runs.get(run_id).judge_base_url == other.url
