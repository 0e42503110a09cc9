"""Runs and solves tell how they ended: green "done" only when nothing failed, "partial" when some items failed,
"failed" when all did, the failures grouped by reason and counted; the Metrics page's last run is the newest
scoring whoever started it (a command-line run has no job); resuming names the run's own endpoint. Real runs on
real stores against the loopback OpenAI server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import FakeOpenAI

from evalcore.background import job_run, start_import, start_scoring, start_solving, wait_for
from evalcore.judge import JudgeConfig
from evalcore.model import ModelConfig
from evalcore.resuming import OtherEndpointError
from evalcore.scoring import score_dataset
from evalcore.solver import load_task
from evalcore.solver.samples import read_placed_samples
from evalcore.store import Store, open_store
from evalcore.store.jobs import Job
from evalcore.views.metrics import (
    endpoint_refusal,
    last_run,
    past_runs,
    progress_view,
    resumable_runs,
    resume_view,
    run_view,
)
from evalcore.views.outcome import Failure, ending, failure_reason, failures, failures_text
from evalcore.views.simulate import solve_progress

ROOT = Path(__file__).resolve().parent.parent
CLOSED = "http://127.0.0.1:9/v1"  # nothing listens there: every call fails to connect


def _lines(n: int) -> bytes:
    rows = [
        {
            "schema_version": 1,
            "session_id": f"s-{i:02d}",
            "messages": [{"role": "user", "content": f"Question {i}"}, {"role": "assistant", "content": f"Answer {i}"}],
        }
        for i in range(n)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        for name, n in (("ds", 12), ("small", 4)):
            job = wait_for(s, start_import(s, _lines(n), f"{name}.jsonl", name))
            assert job.status == "done", job.error
        yield s


def judge(url: str, **options: Any) -> JudgeConfig:
    return JudgeConfig(model="gpt-4o-mini", base_url=url, api_key="sk-x", backoff=0.01, max_retries=0, **options)


def test_failure_reasons_leave_out_what_varies() -> None:
    errors = [
        ('JudgeError: gave up after 1 tries: HTTP 500: {"error": {"message": "boom"}}', 3),
        ('JudgeError: gave up after 5 tries: HTTP 500: {"error": {"message": "other words"}}', 137),
        ("JudgeError: gave up after 1 tries: timed out after 60 s", 20),
        ("JudgeError: gave up after 1 tries: connection failed (ConnectError: All connection attempts failed)", 2),
        ("JudgeError: not sent: 5 calls in a row were given up on (the last: connection failed); ...", 4),
        ("JudgeError: gave up after 1 tries: the endpoint answered 200 with a body that is not JSON", 1),
        ("ValueError: the rubric names no score " + "x" * 200, 1),
        (None, 1),
    ]
    found = failures(errors)
    assert [f.text for f in found] == [
        "140 × HTTP 500 from the judge",
        "20 × timeout",
        "4 × not sent: the judge kept failing",
        "2 × the judge could not be reached",
        "1 × no error recorded",
        "1 × the judge's answer was not JSON",
        "1 × the rubric names no score " + "x" * 53 + "…",
    ]
    assert len(found[-1].reason) == 80
    assert failures_text(found[:2]) == "140 × HTTP 500 from the judge · 20 × timeout"
    assert failures_text(found, most=2) == "140 × HTTP 500 from the judge · 20 × timeout · 9 × 5 other reasons"
    assert failure_reason("clarification-1 failed: HTTP 429: slow down", "the model") == "HTTP 429 from the model"
    assert (ending(5, 0), ending(5, 1), ending(0, 3), ending(0, 0)) == ("done", "partial", "failed", "done")
    assert failures_text([]) == ""


def test_a_run_where_some_items_failed_is_partial_with_its_reasons(store: Store) -> None:
    with FakeOpenAI(timeout_sleep=2) as server:
        server.queue("500", "500", "500", "timeout")  # four failures in a row, then good answers
        config = judge(server.url, concurrency=1, timeout=0.3)
        job = wait_for(store, start_scoring(store, "ds", ["safety"], judge=config))
        server.release.set()
    assert job.status == "done", job.error  # the job did its work: the items are what failed
    run_id = job_run(store, job.id)
    view = progress_view(store, job, run_id)
    assert (view.status, view.done, view.failed) == ("partial", 8, 4)
    assert view.message == f"Partly failed: 4 of 12 items failed (run #{run_id})"
    assert view.failures == (Failure("HTTP 500 from the judge", 3), Failure("timeout", 1))
    assert view.failures_line == "Failures: 3 × HTTP 500 from the judge · 1 × timeout"
    (row,) = past_runs(store, "ds")
    assert (row.status, row.failed, row.failures) == ("partial", 4, "3 × HTTP 500 from the judge · 1 × timeout")
    assert resumable_runs([row], None) == []


def test_a_run_where_every_item_failed_is_failed_never_done(store: Store) -> None:
    job = wait_for(store, start_scoring(store, "small", ["safety"], judge=judge(CLOSED, concurrency=1)))
    assert job.status == "done", job.error
    run_id = job_run(store, job.id)
    view = progress_view(store, job, run_id)
    assert (view.status, view.done, view.failed) == ("failed", 0, 4)
    assert view.message == f"Failed: all 4 items failed, none was scored (run #{run_id})"
    assert view.failures_line == "Failures: 4 × the judge could not be reached"
    (row,) = past_runs(store, "small")
    assert (row.status, row.failures) == ("all failed", "4 × the judge could not be reached")
    # Deterministic items that do not apply are no failures: a clean run is done.
    clean = wait_for(store, start_scoring(store, "small", ["turn_count", "exact_match"]))
    done = progress_view(store, clean, job_run(store, clean.id))
    assert (done.status, done.message, done.failures_line) == (
        "done",
        f"Done: 4 sessions scored (run #{done.run_id})",
        "",
    )
    assert done.not_applicable == 4


def test_the_last_run_is_the_newest_whoever_started_it(store: Store) -> None:
    assert last_run(store, "small") is None
    job = wait_for(store, start_scoring(store, "small", ["turn_count"]))
    last = last_run(store, "small")
    assert last is not None and last.label == job.label and last.view.job_id == job.id
    # A run from the command line (the library, no job): now it is the last one, with its counts and failures.
    report = score_dataset(store, "small", ["safety"], judge=judge(CLOSED, concurrency=1))
    last = last_run(store, "small")
    assert last is not None and last.label == store.runs.get(report.run.id).label
    view = last.view
    assert (view.job_id, view.run_id, view.status) == (None, report.run.id, "failed")
    assert view.message == f"Failed: all 4 items failed, none was scored (run #{report.run.id})"
    assert view.counts_markdown == "Items **0** scored · **4** failed · **0** not applicable of 4"
    assert view.failures_line == "Failures: 4 × the judge could not be reached"
    cancelled = score_dataset(store, "small", ["tool_call_count"], should_stop=lambda: True)
    shown = run_view(store, store.runs.get(cancelled.run.id))
    assert shown.status == "cancelled" and shown.message.startswith("Cancelled after ")
    # A job started after it is the last again.
    again = wait_for(store, start_scoring(store, "small", ["turn_count"], new_run=True))
    last = last_run(store, "small")
    assert last is not None and last.view.job_id == again.id and last.view.status == "done"


def test_resuming_names_the_runs_own_endpoint_and_asks_for_another(store: Store) -> None:
    with FakeOpenAI() as own:
        report = score_dataset(
            store, "ds", ["safety"], judge=judge(own.url, concurrency=1), should_stop=lambda: len(own.requests) >= 2
        )
    run_id = report.run.id
    here = resume_view(store, run_id, own.url + "/")
    assert not here.other and here.confirm_label is None and not here.must_confirm
    assert here.note == f"Resuming run #{run_id} calls its own judge, gpt-4o-mini at {own.url}."
    there = resume_view(store, run_id, "https://api.openai.com/v1")
    assert there.other and not there.must_confirm
    assert (
        there.confirm_label
        == f"Call https://api.openai.com/v1 (this form's endpoint) instead of the run's own {own.url}"
    )
    with pytest.raises(OtherEndpointError) as refused:
        start_scoring(store, "ds", ["safety"], judge=judge("https://api.openai.com/v1"))
    assert endpoint_refusal(refused.value).startswith(
        f"Run #{run_id} of these metrics and settings is unfinished, and its judge was called at {own.url}; this "
        "form names https://api.openai.com/v1."
    )
    plain = score_dataset(store, "small", ["turn_count"], should_stop=lambda: True)
    assert resume_view(store, plain.run.id, "https://x.test/v1").confirm_label is None


def test_a_solve_where_samples_failed_is_failed_or_partial(store: Store) -> None:
    task = load_task(str(ROOT / "sample_data/tasks/clarification.yaml"), {"judge_model": "judge-m"})
    placed, _ = read_placed_samples(str(ROOT / "sample_data/tasks/clarification.jsonl"))
    with FakeOpenAI() as server:
        server.queue(*["500"] * 200)
        config = ModelConfig(model="m", base_url=server.url, api_key="k", max_retries=0, backoff=0.01)
        rows = [row for _, row in placed][:4]  # (fewer than the five failures in a row that stop all calls)
        job = wait_for(store, start_solving(store, task, rows, "solved", config, concurrency=1))
    assert job.status == "done", job.error
    view = solve_progress(job)
    assert (view.status, view.message) == ("failed", "Failed: all 4 samples failed, none was solved")
    assert view.failures_line == "Failures: 4 × HTTP 500 from the model"
    some = Job(
        id=1, kind="solve", dataset="d", label="solve", author=None, status="done", done=6, total=6, unit="samples",
        result={"solved": 4, "failed": 2, "errors": ["a-1: gave up after 1 tries: timed out after 60 s"] * 2},
        error=None, started_at="2026-01-01T00:00:00", updated_at="2026-01-01T00:00:00", finished_at=None,
    )  # fmt: skip
    partial = solve_progress(some)
    assert (partial.status, partial.message) == ("partial", "Partly failed: 2 of 6 samples failed")
    assert partial.failures_line == "Failures: 2 × timeout"
    clean = solve_progress(dataclass_replace(some, result={"solved": 6, "failed": 0, "errors": []}))
    assert (clean.status, clean.message, clean.failures_line) == ("done", "Done: 6 samples", "")


def dataclass_replace(job: Job, **changes: Any) -> Job:
    import dataclasses

    return dataclasses.replace(job, **changes)
