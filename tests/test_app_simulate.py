"""The Simulate page on a real SQLite file, against a scripted OpenAI-compatible server on 127.0.0.1: the seed's
clarification task from the folder, its samples beside it, a run in the background with progress, the sessions
in the dataset, a link to Review; a task with problems lists every one; a missing config value is said."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    app,
    db_fixture,
    open_page,
    plain_texts,
    run,
    store_fixture,
    template_db_fixture,
    texts,
)
from openai_server import FakeOpenAI
from solver_server import JUDGE, ScriptedOpenAI, clarify
from streamlit.testing.v1 import AppTest

from evalcore.store import Store


def _simulate() -> AppTest:
    return open_page(run(app()), "simulate")


def _wait_done(at: AppTest, seconds: float = 30) -> AppTest:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run(at)
        if texts(at, "success") or texts(at, "error"):
            return at
        time.sleep(0.2)
    raise AssertionError("the solver job did not end")


def test_the_clarification_task_runs_into_a_dataset_and_opens_in_review(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedOpenAI(clarify) as server:
        monkeypatch.setenv("EVALCORE_BASE_URL", server.url)
        monkeypatch.setenv("EVALCORE_API_KEY", "sk-simulate-secret")
        at = _simulate()
        assert at.selectbox(key="sim_task_file").value.name == "clarification.yaml"
        assert at.selectbox(key="sim_samples_file").value.name == "clarification.jsonl"
        steps = [m.value for m in at.markdown if "answers as user" in m.value]
        assert steps and "the model in “Judge model” answers as user" in steps[0].replace("\\", "")  # (its field)
        assert "6 samples; the first ones:" in texts(at, "caption")
        assert "sk-simulate-secret" not in str(at)  # the key is never shown
        at.text_input(key="sim_model").input("eval-model")
        assert at.text_input(key="sim_config_judge_model").label == "Judge model"  # not "config.judge_model"
        at.text_input(key="sim_config_judge_model").input(JUDGE)
        at.button(key="FormSubmitter:sim_run-Run").click()
        at = _wait_done(run(at))
        assert texts(at, "success") == ["Done: 6 samples"]
        shown = [c.replace("\\", "").replace("\u2060", "") for c in texts(at, "caption")]  # (escaped: data)
        assert any("6 solved, 0 failed" in c for c in shown), shown
        items = store.sessions.browse("clarification").items
        assert len(items) == 6 and {s.assistant_id for s in items} == {"eval-model"}
        at.button(key="sim_review").click()
        run(at)
        assert at.query_params.get("dataset") == ["clarification"] or at.query_params.get("dataset") == "clarification"
        headings = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("### ")]
        assert "### clarification-1" in headings, headings  # Review's heading: the first sample


def test_a_task_with_problems_lists_each_and_a_missing_config_is_said(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "broken.yaml").write_text(
        "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n"
        "      - type: nope\n      - type: loop\n        max_iterations: 0\n        message_builders: []\n"
    )
    monkeypatch.setenv("EVALCORE_TASKS", str(tasks))
    at = _simulate()
    (error,) = (e.replace("\\", "").replace("&#58;", ":") for e in texts(at, "error"))
    assert error.startswith("**broken.yaml** cannot run:")
    assert "- message_builders[0]: type: unknown builder type 'nope'" in error
    assert "- message_builders[1]: max_iterations: must be at least 1, got 0 (line 7)" in error
    assert at.button(key="FormSubmitter:sim_run-Run").disabled


def test_a_run_without_a_config_value_says_which_and_starts_nothing(store: Store) -> None:
    at = _simulate()
    at.text_input(key="sim_model").input("eval-model")
    at.button(key="FormSubmitter:sim_run-Run").click()
    run(at)
    (error,) = (e.replace("\\", "").replace("&#58;", ":") for e in texts(at, "error"))
    assert "config key 'judge_model' is not set" in error
    assert "sim_job" not in at.session_state and "clarification" not in store.datasets.names()


def test_a_run_missing_several_values_says_each_at_once(store: Store) -> None:
    """A labeler's finding: "Name the model and the dataset." with the dataset filled in, and the judge model (also
    missing) not said."""
    at = _simulate()
    assert at.text_input(key="sim_dataset").value == "clarification"
    at.button(key="FormSubmitter:sim_run-Run").click()
    run(at)
    (error,) = (e.replace("\\", "").replace("&#58;", ":") for e in texts(at, "error"))
    assert error.startswith("- name the model under evaluation\n- ") and "dataset" not in error
    assert "config key 'judge_model' is not set" in error
    assert "sim_job" not in at.session_state


def test_a_run_that_left_no_session_offers_nothing_to_open() -> None:
    """A run cancelled before its first sample (simulate-cancelled.png) has no session for Review, Metrics or the
    Dashboard; one that made or kept sessions has."""
    from evalcore.store.jobs import Job
    from evalcore.views.simulate import solve_progress

    now = "2026-01-01T00:00:00+00:00"
    cancelled = {"solved": 0, "failed": 0, "skipped": 0, "new": 0, "updated": 0}
    job = Job(8, "solve", "d", "solve t with m", None, "cancelled", 0, 3, "samples", cancelled, None, now, now, None)
    assert not solve_progress(job).has_sessions
    for made in ({"new": 2}, {"updated": 1}, {"skipped": 3}):
        done = Job(9, "solve", "d", "solve t", None, "done", 3, 3, "samples", cancelled | made, None, now, now, None)
        assert solve_progress(done).has_sessions and solve_progress(done).sessions == sum(made.values())


def test_a_config_value_is_labelled_in_words() -> None:
    from evalcore.views.simulate import config_label

    assert config_label("judge_model") == "Judge model"
    assert config_label("user.persona-style") == "User persona style"
    assert config_label("x") == "X"


def test_a_slow_run_is_still_followed_not_given_up() -> None:
    """A job with no sample finished for minutes (a slow model) looks stalled, and the page keeps following it."""
    from evalcore.store.jobs import Job
    from evalcore.views.simulate import solve_progress

    old = "2020-01-01T00:00:00+00:00"
    job = Job(7, "solve", "d", "solve t with m", None, "running", 2, 6, "samples", None, None, old, old, None)
    view = solve_progress(job)
    assert view.status == "stalled" and view.active and "2 of 6 samples" in view.message


def test_the_endpoint_field_is_called_and_a_run_where_every_sample_failed_is_red(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI() as decoy, FakeOpenAI() as failing:
        monkeypatch.setenv("EVALCORE_BASE_URL", decoy.url)  # the environment's endpoint: not the one typed
        monkeypatch.setenv("EVALCORE_API_KEY", "sk-simulate-secret")
        failing.queue(*["400"] * 500)  # (not retried: six quick failures, on a slow machine too)
        at = _simulate()
        assert at.text_input(key="sim_base_url").value == decoy.url
        at.text_input(key="sim_base_url").input(failing.url)
        at.text_input(key="sim_model").input("eval-model")
        at.text_input(key="sim_config_judge_model").input(JUDGE)
        at.number_input(key="sim_concurrency").set_value(1)
        at.button(key="FormSubmitter:sim_run-Run").click()
        at = _wait_done(run(at), seconds=60)
        assert not texts(at, "success")  # never a green "Done" when samples failed
        assert "Failed: all 6 samples failed, none was solved" in plain_texts(at, "error")
        (line,) = [c for c in plain_texts(at, "caption") if c.startswith("Failures: ")]
        counts = [int(part.split(" × ")[0]) for part in line.removeprefix("Failures: ").split(" · ")]
        assert sum(counts) == 6 and "HTTP 400 from the model" in line, line
        assert failing.requests and decoy.requests == []
