"""The Metrics page in headless Chromium: pick deterministic metrics, run them, watch the progress bar
go to the end and the run appear among the past runs. Screenshots in tests/e2e/artifacts/."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from app_server import settle, shot
from e2e_ui import Server, alert, heading, ragas_lines
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]

#: Every text the progress bar shows, kept by the page itself as it changes.
WATCH_PROGRESS = """() => {
    window.__progress = [];
    const look = () => document.querySelectorAll('[data-testid="stProgress"]').forEach(p => {
        if (!window.__progress.includes(p.innerText)) window.__progress.push(p.innerText);
    });
    new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""

SESSIONS = 4000


def pick(page: Any, label: str, options: list[str]) -> None:
    """Pick ``options`` in the multiselect labelled ``label``."""
    box = page.get_by_role("combobox", name=label)
    widget = page.locator('[data-testid="stMultiSelect"]').filter(has=box)
    for option in options:
        # A rerun can land between typing and choosing (the page reruns on every pick): choose again
        # until the option shows among the chosen ones.
        for _ in range(3):
            box.click()
            box.fill(option)
            page.get_by_role("option", name=option, exact=True).click()
            page.keyboard.press("Escape")
            settle(page)
            if option in widget.inner_text():
                break
        expect(widget).to_contain_text(option)


def test_run_deterministic_metrics_and_watch_the_progress(server: Server, new_page: NewPage) -> None:
    good = ragas_lines()
    server.import_sessions("big", [good[n % len(good)] for n in range(SESSIONS)], "big.jsonl")
    page = new_page("/metrics?dataset=big")
    expect(heading(page)).to_have_text("Metrics")
    expect(page.get_by_text("Score big (4,000 sessions).")).to_be_visible()  # (not the table's cells saying it too)
    pick(page, "Deterministic metrics to run", ["rouge", "bleu", "string_similarity", "tool_call_accuracy"])
    expect(page.locator('[data-testid="stExpander"]').filter(has_text="rouge")).to_be_visible()
    shot(page, "metrics")

    page.evaluate(WATCH_PROGRESS)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator('[data-testid="stProgress"]')).to_be_visible()
    shot(page, "metrics-running")
    expect(alert(page, re.compile(r"Done: 4,000 sessions scored"))).to_be_visible(timeout=120_000)
    expect(page.locator('[data-testid="stProgress"]')).to_have_count(0)
    progress = page.evaluate("window.__progress")
    partial = [t for t in progress if re.search(r"Scoring: [\d,]+ of 4,000 sessions", t)]
    assert partial, progress  # the bar was seen on its way
    counts = [int(re.search(r"Scoring: ([\d,]+)", t).group(1).replace(",", "")) for t in partial]  # type: ignore[union-attr]
    assert counts == sorted(counts) and counts[0] < SESSIONS, counts
    settle(page)
    line = re.compile(r"Sessions 4,000 of 4,000 · items [\d,]+ scored · 0 failed · [\d,]+ not applicable of 16,000")
    expect(page.get_by_text(line)).to_be_visible()
    (run,) = server.rows(
        "SELECT r.status, r.n_items, r.n_done + r.n_failed + r.n_not_applicable FROM runs r "
        "JOIN datasets d ON d.id = r.dataset_id WHERE d.name = 'big'"
    )
    assert run == ("done", SESSIONS * 4, SESSIONS * 4)
    expect(page.get_by_role("heading", name="Past runs")).to_be_visible()
    shot(page, "metrics-done")


def test_a_judge_metric_shows_its_estimate(server: Server, new_page: NewPage) -> None:
    good = ragas_lines()
    server.import_sessions("judged", [good[n % len(good)] for n in range(50)], "judged.jsonl")
    page = new_page("/metrics?dataset=judged")
    expect(heading(page)).to_have_text("Metrics")
    page.get_by_role("tab", name="LLM judge (15)").click()
    pick(page, "LLM judge metrics to run", ["safety", "aspect_critique"])
    expect(page.get_by_text("aspect_critique: aspect")).to_be_visible()  # a required parameter, not given yet
    page.get_by_role("textbox", name="aspect *").fill("polite")
    page.get_by_role("textbox", name="definition *").fill("Is the assistant polite?")
    page.get_by_role("textbox", name="Judge model").fill("gpt-4o-mini")
    page.keyboard.press("Enter")
    settle(page)
    expect(page.get_by_text(re.compile(r"About 100 calls, [\d,]+ tokens, \$[\d.]+\."))).to_be_visible()
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_enabled()
    shot(page, "metrics-judge")


def test_a_run_where_every_item_failed_is_shown_failed(server: Server, new_page: NewPage) -> None:
    good = ragas_lines()
    server.import_sessions("unreachable", [good[n % len(good)] for n in range(4)], "unreachable.jsonl")
    page = new_page("/metrics?dataset=unreachable")
    expect(heading(page)).to_have_text("Metrics")
    page.get_by_role("tab", name="LLM judge (15)").click()
    pick(page, "LLM judge metrics to run", ["safety"])
    page.get_by_role("textbox", name="Judge model").fill("gpt-4o-mini")
    page.keyboard.press("Enter")
    settle(page)
    endpoint = page.get_by_role("textbox", name="Endpoint (base URL)")
    endpoint.fill("http://127.0.0.1:9/v1")  # nothing listens there: every call fails
    page.keyboard.press("Enter")
    settle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    failed = alert(page, re.compile(r"Failed: all 4 items failed, none was scored"))
    expect(failed).to_be_visible(timeout=120_000)
    expect(failed.locator('[data-testid="stAlertContentError"]')).to_have_count(1)  # red
    expect(page.get_by_text("Failures: 4 × the judge could not be reached")).to_be_visible()
    expect(alert(page, re.compile(r"Done: "))).to_have_count(0)  # never a green "Done"
    shot(page, "metrics-all-failed")
