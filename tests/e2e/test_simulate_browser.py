"""The Simulate page in headless Chromium: run the seed's clarification task against a scripted OpenAI-compatible
server on 127.0.0.1, watch it finish, and open a resulting session in Review. Screenshots in tests/e2e/artifacts/."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from app_server import settle, shot
from e2e_ui import SAMPLE_DATA, Server, heading, start_server
from playwright.sync_api import expect
from solver_server import JUDGE, ScriptedOpenAI, clarify

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app (with the sample data and its tasks) whose models are a scripted server on the loopback."""
    with ScriptedOpenAI(clarify) as models:
        saved = {k: os.environ.get(k) for k in ("EVALCORE_BASE_URL", "EVALCORE_API_KEY")}
        os.environ.update(EVALCORE_BASE_URL=models.url, EVALCORE_API_KEY="sk-browser-test")
        try:
            yield from start_server(tmp_path_factory, samples=SAMPLE_DATA)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def test_run_the_clarification_task_and_open_a_session_in_review(server: Server, new_page: NewPage) -> None:
    page = new_page("/simulate")
    expect(heading(page)).to_have_text("Simulate")
    expect(page.get_by_text("5 steps; conversations recorded as")).to_be_visible()  # clarification.yaml, read
    expect(page.get_by_text("6 samples; the first ones:")).to_be_visible()
    page.get_by_role("textbox", name="Model under evaluation").fill("eval-model")
    page.get_by_role("textbox", name="Judge model").fill(JUDGE)  # the task's config.judge_model, in words
    settle(page)
    shot(page, "simulate")
    page.get_by_role("button", name="Run").click()
    expect(page.get_by_text("Done: 6 samples")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("6 solved, 0 failed").first).to_be_visible()
    settle(page)
    shot(page, "simulate-done")

    page.get_by_role("button", name="Open in Review").click()
    expect(heading(page)).to_have_text("clarification-1")
    expect(page.get_by_text("Just to confirm - you're asking about the capital city of Austria")).to_be_visible()
    expect(page.get_by_text("Vienna", exact=True).first).to_be_visible()
    settle(page)
    shot(page, "simulate-review")
    rows = server.rows(
        "SELECT count(*) FROM sessions s JOIN datasets d ON d.id = s.dataset_id WHERE d.name = 'clarification'"
    )
    assert rows == [(6,)]


#: A task whose template would spin until its deadline (2**40 macro calls) for each sample: uploaded, then cancelled.
STUCK = (
    "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n      - type: chat_message\n"
    "        role: user\n        content: '{% macro f(n) %}{% if n %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}"
    "{{ f(40) }}'\n      - type: generate\n"
)


def test_cancel_stops_a_run_stuck_in_a_template_within_a_second(server: Server, new_page: NewPage) -> None:
    """An uploaded task whose template spins (issue 23): Cancel ends the run at once, not when the sample's deadline
    comes, and nothing of the stuck samples is stored."""
    task, samples = server.folder / "stuck.yaml", server.folder / "stuck.jsonl"
    task.write_text(STUCK)
    samples.write_text("".join(f'{{"n": {i}}}\n' for i in range(3)))
    page = new_page("/simulate")
    expect(heading(page)).to_have_text("Simulate")
    page.get_by_role("radio", name="Upload").first.click()  # the task: uploaded
    settle(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(task)
    expect(page.get_by_text("2 steps; conversations recorded as")).to_be_visible()
    page.get_by_role("radio", name="Upload").nth(1).click()  # the samples: uploaded too
    settle(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').nth(1).set_input_files(samples)
    expect(page.get_by_text("3 samples; the first ones:")).to_be_visible()
    page.get_by_role("textbox", name="Model under evaluation").fill("eval-model")
    page.get_by_role("textbox", name="Into dataset").fill("stuck")
    settle(page)
    page.get_by_role("button", name="Run").click()
    cancel = page.get_by_role("button", name="Cancel")
    expect(cancel).to_be_visible()
    page.wait_for_timeout(1000)  # the first sample well into its template (its deadline is 5 s away)
    started = time.monotonic()
    cancel.click()
    expect(page.get_by_text("Cancelled after 0 of 3 samples; run it again to go on")).to_be_visible(timeout=5_000)
    took = time.monotonic() - started
    print(f"Cancel clicked: the page said cancelled {took:.2f} s later")
    assert took < 2.0  # the job within a second, the page's next look (twice a second) included
    # Nothing was made: no "Open in Review" (nor Metrics, nor Dashboard) for a run that left no session.
    expect(page.get_by_text("The run left no session: nothing to review, score or compare.")).to_be_visible()
    expect(page.get_by_role("button", name="Open in Review")).to_have_count(0)
    shot(page, "simulate-cancelled")
    rows = server.rows("SELECT count(*) FROM sessions s JOIN datasets d ON d.id = s.dataset_id WHERE d.name = 'stuck'")
    assert rows == [(0,)]
