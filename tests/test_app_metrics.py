"""The Metrics page through AppTest on a real SQLite file: pick metrics, see what they need, set
parameters, run in the background and watch the counts, cancel and resume, and judge metrics
against the loopback OpenAI server, faults included."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from apptest_util import (
    all_text,
    app,
    db_fixture,  # noqa: F401
    plain,
    plain_texts,
    run,
    store_fixture,  # noqa: F401
    template_db_fixture,  # noqa: F401
    texts,
)
from openai_server import FakeOpenAI
from streamlit.testing.v1 import AppTest

from evalcore import background
from evalcore.judge import JudgeConfig
from evalcore.scoring import score_dataset
from evalcore.store import Store

SECRET = "sk-test-never-shown-4242"


def open_metrics(dataset: str = "shop") -> AppTest:
    at = run(app(dataset=dataset))
    at.switch_page("app_pages/metrics.py")
    run(at)
    at._page_hash = ""  # stay where the app is on later runs (see apptest_util.open_page)
    return at


def latest_job(store: Store, dataset: str) -> int:
    return next(j.id for j in store.jobs.recent(dataset) if j.kind == "score")


def finish(at: AppTest, store: Store, dataset: str) -> Any:
    """Wait for the page's job to end, then run the page again, as its fragment would."""
    job = background.wait_for(store, latest_job(store, dataset), timeout=120)
    run(at)
    return job


def counts_line(at: AppTest) -> str:
    return next(m for m in texts(at, "markdown") if m.startswith("Sessions **"))


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        monkeypatch.setenv("EVALCORE_JUDGE_MODEL", "gpt-4o-mini")
        monkeypatch.setenv("EVALCORE_BASE_URL", server.url)
        monkeypatch.setenv("EVALCORE_API_KEY", SECRET)
        monkeypatch.delenv("EVALCORE_JUDGE_BASE_URL", raising=False)
        yield server


def test_the_page_lists_metrics_by_group_with_what_they_need(db: Path) -> None:
    at = open_metrics("review")
    assert at.title[0].value == "Metrics"
    assert [t.label for t in at.tabs] == ["Deterministic (14)", "LLM judge (15)"]
    tables = [t.value for t in at.dataframe]
    deterministic = tables[0].set_index("metric")
    assert deterministic.loc["turn_count", "needs"] == "nothing"
    # review has 3 sessions, none with reference tool calls; one with a reference answer.
    assert deterministic.loc["tool_call_accuracy", "needs"] == "needs reference tool calls: 0 of 3 sessions have it"
    assert deterministic.loc["exact_match", "applies_to"] == pytest.approx(1 / 3)
    assert deterministic.loc["turn_count", "applies_to"] == 1.0
    judges = tables[1].set_index("metric")
    assert "instance_rubric_score" in judges.index and judges.loc["instance_rubric_score", "applies_to"] == 1 / 3
    assert at.button(key="run").disabled  # nothing picked yet


def test_run_deterministic_metrics_and_see_the_counts_and_the_run(db: Path, store: Store) -> None:
    at = open_metrics("shop")
    before = len(store.runs.recent("shop"))
    at.multiselect(key="pick_deterministic").set_value(["turn_count", "exact_match", "rouge"])
    run(at)
    assert [e.label for e in at.expander] == ["rouge", "Calls"]  # only rouge has parameters; the judge's calls
    at.selectbox(key="param:rouge:rouge_type").set_value("rouge1")
    run(at)
    assert "No judge metric picked: this run calls no model." in texts(at, "caption")
    at.button(key="run").click()
    run(at)
    job = finish(at, store, "shop")
    assert job.status == "done", job.error
    runs = store.runs.recent("shop")
    assert len(runs) == before + 1
    new = runs[0]
    assert new.metrics == ["turn_count", "exact_match", "rouge:rouge_type=rouge1"]
    # shop: 30 sessions, a reference on 10: exact match and rouge apply to 10 each.
    assert (new.n_items, new.n_done, new.n_failed, new.n_not_applicable) == (90, 50, 0, 40)
    assert counts_line(at) == (
        "Sessions **30** of 30 · items **50** scored · **0** failed · **40** not applicable of 90"
    )
    assert any("Done: 30 sessions scored" in s for s in texts(at, "success"))
    past = at.dataframe[-1].value
    assert (
        past.iloc[0]["run"] == new.id and past.iloc[0]["metrics"] == "turn_count, exact_match, rouge:rouge_type=rouge1"
    )
    assert (past.iloc[0]["done"], past.iloc[0]["not_applicable"], past.iloc[0]["status"]) == (50, 40, "done")


def test_bad_parameters_block_the_run_with_a_message(db: Path) -> None:
    at = open_metrics("shop")
    at.multiselect(key="pick_llm_judge").set_value(["aspect_critique"])
    run(at)
    assert any("aspect_critique: aspect" in e for e in plain_texts(at, "error"))
    assert at.button(key="run").disabled
    at.text_input(key="param:aspect_critique:aspect").input("polite")
    at.text_input(key="param:aspect_critique:definition").input("Is the assistant polite?")
    run(at)
    assert not texts(at, "error")


def test_judge_metrics_run_against_the_loopback_server(db: Path, store: Store, judge_env: FakeOpenAI) -> None:
    at = open_metrics("shop")
    assert at.text_input(key="judge_model").value == "gpt-4o-mini"
    assert at.text_input(key="judge_base_url").value == judge_env.url
    assert any(c.startswith("key: set in environment") for c in texts(at, "caption"))
    at.multiselect(key="pick_llm_judge").set_value(["safety"])
    run(at)
    estimate = at.dataframe[-2].value  # the estimate, above the past runs
    assert list(estimate["metric"]) == ["safety"] and estimate.iloc[0]["calls"] == 30
    assert estimate.iloc[0]["cost"] > 0
    assert any(c.startswith("About 30 calls") for c in texts(at, "caption"))
    at.button(key="run").click()
    run(at)
    job = finish(at, store, "shop")
    assert job.status == "done", job.error
    new = store.runs.recent("shop")[0]
    assert new.judge_model == "gpt-4o-mini" and new.n_done == 30 and new.n_failed == 0
    assert len(judge_env.requests) == 30
    row = at.dataframe[-1].value.iloc[0]
    assert row["judge_calls"] == 30 and row["cost"] > 0 and row["judge"] == "gpt-4o-mini"
    assert SECRET not in all_text(at)
    assert SECRET.encode() not in Path(db).read_bytes()


def test_judge_faults_are_counted_as_failures_not_a_crash(db: Path, store: Store, judge_env: FakeOpenAI) -> None:
    at = open_metrics("shop")
    at.multiselect(key="pick_llm_judge").set_value(["safety"])
    run(at)
    at.number_input(key="judge_retries").set_value(0)  # a 500 fails its item at once
    run(at)
    judge_env.queue("500", "garbage", "500", "garbage")  # each fails the item it answers (no retry)
    at.button(key="run").click()
    run(at)
    job = finish(at, store, "shop")
    assert job.status == "done", job.error
    new = store.runs.recent("shop")[0]
    assert (new.n_done, new.n_failed) == (26, 4)
    assert "**4** failed" in counts_line(at)
    errors = [r.error or "" for r in store.runs.scores(new.id) if r.status == "error"]
    assert len(errors) == 4 and any("HTTP 500" in e for e in errors) and any("not JSON" in e for e in errors)
    assert at.dataframe[-1].value.iloc[0]["failed"] == 4
    # Not a green "Done": amber, the failures grouped by reason and counted.
    assert not texts(at, "success")
    assert texts(at, "warning") == [f"Partly failed: 4 of 30 items failed (run #{new.id})"]
    failures = "2 × HTTP 500 from the judge · 2 × the judge's answer was not JSON"
    assert f"Failures: {failures}" in plain_texts(at, "caption")
    assert (at.dataframe[-1].value.iloc[0]["status"], at.dataframe[-1].value.iloc[0]["failures"]) == (
        "partial",
        failures,
    )
    # The endpoint is changed on the page (never the key): a closed port fails every item, still no crash.
    at.text_input(key="judge_base_url").input("http://127.0.0.1:9/v1")
    at.checkbox(key="new_run").check()
    run(at)
    at.button(key="run").click()
    run(at)
    job = finish(at, store, "shop")
    assert job.status == "done", job.error
    closed = store.runs.recent("shop")[0]
    assert (closed.n_done, closed.n_failed) == (0, 30)
    # Red, never "Done": every item failed; the reasons add up to the 30 (after five in a row, none is sent).
    assert not texts(at, "success")
    assert f"Failed: all 30 items failed, none was scored (run #{closed.id})" in plain_texts(at, "error")
    (line,) = [c for c in plain_texts(at, "caption") if c.startswith("Failures: ")]
    counts = [int(part.split(" × ")[0]) for part in line.removeprefix("Failures: ").split(" · ")]
    assert sum(counts) == 30 and "the judge could not be reached" in line, line
    assert at.dataframe[-1].value.iloc[0]["status"] == "all failed"
    assert SECRET not in all_text(at)


def test_cancel_then_resume(db: Path, store: Store, judge_env: FakeOpenAI) -> None:
    judge_env.latency = 0.2  # slow enough to cancel in the middle (one call at a time: 6 s in all)
    at = open_metrics("shop")
    at.multiselect(key="pick_llm_judge").set_value(["relevance_to_query"])
    run(at)
    at.number_input(key="judge_concurrency").set_value(1)
    run(at)
    at.button(key="run").click()
    run(at)
    job_id = latest_job(store, "shop")
    (bar,) = at.get("progress")  # the fragment's bar, with the live counts under it
    assert re.fullmatch(r"Scoring: \d+ of 30 sessions|Starting the run…", bar.proto.text), bar.proto.text
    assert counts_line(at).startswith("Sessions **")
    # Cancelled once some sessions are saved (the live counts are written at each flush, every 2 s), so
    # that the resumed run has sessions to skip, however slow the machine.
    deadline = time.monotonic() + 60
    while not any(r.items_done > 0 for r in store.runs.recent("shop") if r.metrics == ["relevance_to_query"]):
        assert time.monotonic() < deadline, "no session scored within 60 s"
        time.sleep(0.05)
    at.button(key="cancel_run").click()
    run(at)
    assert "Stopping after the sessions in hand…" in texts(at, "caption") or not store.jobs.get(job_id).active
    job = background.wait_for(store, job_id, timeout=60)
    assert job.status == "cancelled" and (job.error or "").startswith("cancelled by")
    cancelled = store.runs.recent("shop")[0]
    assert cancelled.status == "cancelled" and cancelled.n_done < 30
    run(at)
    assert any("Cancelled after" in w for w in texts(at, "warning"))
    assert at.dataframe[-1].value.iloc[0]["status"] == "cancelled"
    assert str(cancelled.id) in at.selectbox(key="resume_pick").format_func(cancelled.id)
    judge_env.latency = 0.0
    at.button(key="resume").click()
    run(at)
    job = finish(at, store, "shop")
    assert job.status == "done", job.error
    resumed = store.runs.get(cancelled.id)
    assert resumed.status == "done" and resumed.n_done == 30
    assert store.runs.recent("shop")[0].id == cancelled.id  # the same run went on, no new one
    # Every session asked once, but for the calls in flight when it stopped (their answers were not kept).
    assert 30 <= len(judge_env.requests) <= 32
    assert json.loads(json.dumps(job.result))["skipped"] > 0


def cancelled_run(store: Store, server: FakeOpenAI, metric: str) -> int:
    """A run of ``metric`` on ``server`` (the environment's endpoint), stopped after a few sessions."""
    config = JudgeConfig.from_env(concurrency=1, max_retries=0)
    assert config is not None and config.base_url == server.url
    asked = len(server.requests)
    report = score_dataset(store, "shop", [metric], judge=config, should_stop=lambda: len(server.requests) >= asked + 3)
    assert report.cancelled and store.runs.get(report.run.id).judge_base_url == server.url
    return report.run.id


def test_resume_calls_the_runs_own_endpoint_unless_another_is_confirmed(
    db: Path, store: Store, judge_env: FakeOpenAI
) -> None:
    first = cancelled_run(store, judge_env, "safety")  # (from the library, as the command line does: no job)
    at = open_metrics("shop")
    # The newest run is shown, though the app has no job for it.
    assert f"Last run: #{first} ·" in " ".join(plain_texts(at, "caption"))
    assert any(w.startswith("Cancelled after ") for w in texts(at, "warning"))
    with FakeOpenAI() as other:
        at.text_input(key="judge_base_url").input(other.url)  # the form now names another endpoint
        run(at)
        assert at.selectbox(key="resume_pick").value == first
        assert f"Resuming run #{first} calls its own judge, gpt-4o-mini at {judge_env.url}." in plain_texts(
            at, "caption"
        )
        (confirm,) = [c for c in at.checkbox if c.key == "resume_other"]
        assert (
            plain(confirm.label) == f"Call {other.url} (this form's endpoint) instead of the run's own {judge_env.url}"
        )
        assert not confirm.value
        at.button(key="resume").click()
        run(at)
        job = finish(at, store, "shop")
        assert job.status == "done", job.error
        assert store.runs.get(first).n_done + store.runs.get(first).n_not_applicable == 30
        assert other.requests == []  # not one call (no transcript, no key) reached the other endpoint
        # Confirmed, another run goes on at the other endpoint, which it then records as its own.
        second = cancelled_run(store, judge_env, "relevance_to_query")
        run(at)
        at.selectbox(key="resume_pick").set_value(second)
        run(at)
        at.checkbox(key="resume_other").check()
        run(at)
        at.button(key="resume").click()
        run(at)
        job = finish(at, store, "shop")
        assert job.status == "done", job.error
        assert other.requests and store.runs.get(second).judge_base_url == other.url
        # The Run button would go on with an unfinished run at another endpoint: refused, saying where.
        third = cancelled_run(store, judge_env, "agent_goal_accuracy_no_reference")
        at.multiselect(key="pick_llm_judge").set_value(["agent_goal_accuracy_no_reference"])
        run(at)
        at.number_input(key="judge_retries").set_value(0)
        run(at)
        before = len(other.requests)
        at.button(key="run").click()
        run(at)
        (refusal,) = plain_texts(at, "error")
        assert refusal.startswith(f"Run #{third} of these metrics and settings is unfinished")
        assert judge_env.url in refusal and other.url in refusal
        assert len(other.requests) == before and store.runs.get(third).status == "cancelled"
