"""Stopping a solver run whose samples are stuck (issue 23, item 7): in a template that would spin until its deadline
(a macro calling itself twice per level), or waiting on a model that does not answer. ``should_stop`` is looked at
inside the template and while the model is awaited: ``solve`` stops within a fraction of a second, a solver job
started from the app is ``cancelled`` within a second of Cancel (through ``evalcore.background`` and on the Simulate
page itself), and ``evalcore solve`` ends on SIGTERM as promptly. Real threads, a real SQLite file, a real
OpenAI-compatible server on 127.0.0.1; nothing of evalcore is faked."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    app,
    db_fixture,
    open_page,
    run,
    store_fixture,
    template_db_fixture,
    texts,
)
from dbutil import as_user
from solver_server import Reply, ScriptedOpenAI

from evalcore import background
from evalcore.model import ModelClient, ModelConfig
from evalcore.solver import SampleResult, StopRequested, Task, parse_task, solve
from evalcore.solver.limits import MAX_SECONDS
from evalcore.store import Store, open_store

EVALCORE = Path(sys.executable).parent / "evalcore"
#: A template that would run until its deadline (2**40 macro calls).
SPIN = "{% macro f(n) %}{% if n %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(40) }}"
STUCK = (
    "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n"
    f"      - type: chat_message\n        role: user\n        content: {json.dumps(SPIN)}\n"
    "      - type: generate\n"
)
WAITING = "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n      - type: generate\n"


def stop_after(seconds: float) -> tuple[Any, list[float]]:
    """A ``should_stop`` that says True ``seconds`` after its first call; and when it first said so."""
    started: list[float] = []
    said: list[float] = []

    def should_stop() -> bool:
        now = time.monotonic()
        if not started:
            started.append(now)
        if now - started[0] >= seconds:
            if not said:
                said.append(now)
            return True
        return False

    return should_stop, said


def solve_until_stopped(task: Task, server: ScriptedOpenAI, should_stop: Any) -> tuple[list[SampleResult], float]:
    """``solve`` of three samples, two at a time, until ``should_stop`` says so: what finished, and when it ended."""
    finished: list[SampleResult] = []

    async def go() -> None:
        config = ModelConfig(model="m", base_url=server.url, api_key="k", max_retries=0, timeout=30)
        async with ModelClient(config) as client:
            await solve(
                task, [{"n": i} for i in range(3)], client, default_model="m", concurrency=2,
                on_result=lambda i, r: finished.append(r), should_stop=should_stop,
            )  # fmt: skip

    with pytest.raises(StopRequested, match="the run was asked to stop"):
        asyncio.run(go())
    return finished, time.monotonic()


def test_solve_stops_samples_stuck_in_a_template_when_asked() -> None:
    should_stop, said = stop_after(0.5)
    with ScriptedOpenAI(lambda model, messages: "fine") as server:
        finished, ended = solve_until_stopped(parse_task(STUCK, source="stuck.yaml"), server, should_stop)
        assert not server.requests  # never reached the model
    assert finished == []  # the samples in flight are left, not failed
    print(f"solve ended {ended - said[0]:.3f} s after should_stop said so (in a template)")
    assert ended - said[0] < 0.5


def test_solve_stops_samples_waiting_on_a_model_when_asked() -> None:
    should_stop, said = stop_after(0.5)
    with ScriptedOpenAI(lambda model, messages: Reply(timeout=True), timeout_sleep=30) as server:
        try:
            finished, ended = solve_until_stopped(parse_task(WAITING, source="waiting.yaml"), server, should_stop)
        finally:
            server.release.set()
    assert finished == []
    print(f"solve ended {ended - said[0]:.3f} s after should_stop said so (awaiting a model)")
    assert ended - said[0] < 0.5


def _wait(store: Store, job_id: int, seconds: float = 10.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = store.jobs.get(job_id).status
        if status != "running":
            return status
        time.sleep(0.02)
    return store.jobs.get(job_id).status


@pytest.mark.parametrize(("task", "script"), [(STUCK, "fine"), (WAITING, "hold")], ids=["in a template", "on a model"])
def test_cancel_of_a_solver_job_acts_within_a_second(tmp_path: Path, task: str, script: str) -> None:
    reply: Any = "fine" if script == "fine" else Reply(timeout=True)
    with (
        ScriptedOpenAI(lambda model, messages: reply, timeout_sleep=30) as server,
        open_store(tmp_path / "e.db") as store,
    ):
        config = ModelConfig(model="m", base_url=server.url, api_key="k", max_retries=0, timeout=30)
        samples = [{"n": i} for i in range(3)]
        job_id = background.start_solving(store, parse_task(task, source="stuck.yaml"), samples, "d", config)
        time.sleep(1.0)  # well into the first samples (each would take MAX_SECONDS, or 30 s)
        assert store.jobs.get(job_id).status == "running"
        asked = time.monotonic()
        background.cancel(as_user(store, "ann"), job_id)
        status = _wait(store, job_id)
        took = time.monotonic() - asked
        server.release.set()
        print(f"cancelled {took:.3f} s after Cancel ({script})")
        assert status == "cancelled" and took < 1.0
        job = background.wait_for(store, job_id, 5)
        assert job.error == "cancelled by ann" and job.done == 0
        assert "d" not in store.datasets.names() or not store.sessions.pks("d")  # nothing stored: left for a later run


def test_cancel_on_the_simulate_page_acts_within_a_second(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The page as a reviewer uses it: a task stuck in a template, Run, then Cancel while the first sample spins."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "stuck.yaml").write_text(STUCK)
    (tasks / "stuck.jsonl").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(3)))
    monkeypatch.setenv("EVALCORE_TASKS", str(tasks))
    with ScriptedOpenAI(lambda model, messages: "fine") as server:
        monkeypatch.setenv("EVALCORE_BASE_URL", server.url)
        at = open_page(run(app()), "simulate")
        at.text_input(key="sim_model").input("m")
        at.button(key="FormSubmitter:sim_run-Run").click()
        run(at)
        job_id = at.session_state["sim_job"][0]
        time.sleep(1.0)
        run(at)
        assert store.jobs.get(job_id).status == "running"
        at.button(key="sim_cancel").click()
        asked = time.monotonic()
        run(at)
        status = _wait(store, job_id)
        took = time.monotonic() - asked
        print(f"the page's Cancel: the job {status} {took:.3f} s after the click")
        assert status == "cancelled" and took < 1.0
        run(at)
        shown = " ".join(texts(at, "warning"))
        assert "Cancelled after 0 of 3 samples; run it again to go on" in shown, shown
        assert not server.requests


def test_evalcore_solve_ends_on_sigterm_while_a_template_spins(tmp_path: Path) -> None:
    (tmp_path / "stuck.yaml").write_text(STUCK)
    (tmp_path / "stuck.jsonl").write_text('{"n": 1}\n')
    with ScriptedOpenAI(lambda model, messages: "fine") as server:
        proc = subprocess.Popen(
            [str(EVALCORE), "solve", "stuck.yaml", "--samples", "stuck.jsonl", "--dataset", "d", "--model", "m",
             "--base-url", server.url, "--api-key", "k", "--db", "e.db"],
            cwd=tmp_path, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(2.0)  # started, and spinning in the template
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=MAX_SECONDS + 10)
        took = time.monotonic() - sent
    print(f"evalcore solve ended {took:.3f} s after SIGTERM")
    assert proc.returncode == 143 and took < 1.0
    assert "evalcore: terminated; the samples solved so far are stored" in stderr and "Traceback" not in stderr


def test_a_sample_that_is_not_stopped_still_ends_at_its_deadline() -> None:
    """Nobody asks it to stop: the template gives up at ``MAX_SECONDS`` and the sample fails, naming the builder."""
    with ScriptedOpenAI(lambda model, messages: "fine") as server:

        async def go() -> list[SampleResult]:
            config = ModelConfig(model="m", base_url=server.url, api_key="k", max_retries=0)
            async with ModelClient(config) as client:
                return await solve(parse_task(STUCK, source="stuck.yaml"), [{}], client, default_model="m")

        started = time.monotonic()
        (result,) = asyncio.run(go())
    assert result.error == f"message_builders[0]: content: the template ran for more than {MAX_SECONDS:g} s"
    assert time.monotonic() - started < MAX_SECONDS + 1.5
