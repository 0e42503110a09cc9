"""Every page and every Review tab on the sample data, as a reviewer sees them at 1400 px: each one is
saved under tests/e2e/artifacts/ (``shot``) for a person to look at, and checked for what it must show.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from app_server import settle, shot
from e2e_ui import (
    SAMPLE_DATA,
    Server,
    alert,
    heading,
    open_expander,
    review_path,
    set_reviewer,
    start_server,
    text_area,
)
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]

#: Each Review tab, with something it must show on this sample session.
TABS = {
    "Truth": "Save ground truth",
    "Calls & rubrics": "Save calls and rubrics",
    "Weights": "effective",
    "Verdict": "Does the assistant pass?",
    "Scores": "metric",
    "Diff": "The assistant's final answer against the",
    "History": "Select an edit to read its new and old values in full.",  # (one edit: nothing to restore to)
    "Comments": "Add a comment",
}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Server]:
    """The app on a new database that the sample data is loaded into on first use, as for a newcomer: a SQLite
    file, then a PostgreSQL database (every page the same on both)."""
    db = request.getfixturevalue("pg_cluster").new_database() if request.param == "postgresql" else None
    yield from start_server(tmp_path_factory, samples=SAMPLE_DATA, db=db)


#: Every link the sidebar's navigation shows while the page is drawn, from its first paint.
WATCH_NAVIGATION = """
window.__nav = [];
new MutationObserver(() => document.querySelectorAll('[data-testid="stSidebarNav"] a').forEach(a => {
    const text = a.innerText.trim().split("\\n").pop().trim();  // (after its icon's name)
    if (text && !window.__nav.includes(text)) window.__nav.push(text);
})).observe(document, {subtree: true, childList: true, characterData: true});
"""
#: The app's navigation, as a newcomer on this machine (no sign-in: its owner) sees it.
NAVIGATION = {"Datasets", "Sessions", "Review", "Labeling", "Metrics", "Dashboard", "Side by side", "Export",
              "Simulate", "Users"}  # fmt: skip


def test_datasets_and_sessions_pages(server: Server, new_page: NewPage) -> None:
    # The server's first request (this module's first test): its sidebar never lists the pages' files (a folder
    # named ``pages`` beside app.py made Streamlit's first run show them, ``_shared`` and all, for a moment).
    page = new_page("/", init=WATCH_NAVIGATION)
    expect(heading(page)).to_have_text("Datasets")
    shown = set(page.evaluate("window.__nav"))
    assert shown and shown <= NAVIGATION, shown
    expect(page.get_by_role("heading", name="Import a file")).to_be_visible()
    expect(page.get_by_role("heading", name="Manage sample-anthropic")).to_be_visible()
    shot(page, server.shot_name("datasets"))

    page.get_by_role("link", name="Sessions").click()
    expect(heading(page)).to_have_text("Sessions")
    expect(page.get_by_text("sessions. Click a cell to open its session")).to_be_visible()
    settle(page)
    shot(page, server.shot_name("sessions"))


def test_review_page_and_each_tab(server: Server, new_page: NewPage) -> None:
    [(ref,)] = server.rows(
        "SELECT s.key FROM sessions s JOIN datasets d ON d.id = s.dataset_id"
        " WHERE d.name = 'sample-evalcore' AND s.session_id = 'air-missed-connection-0412'"
    )
    page = new_page(review_path("sample-evalcore", ref))  # the stored identity (ida:...) opens it too
    expect(heading(page)).to_have_text("air-missed-connection-0412")
    set_reviewer(page, "Alice")
    shot(page, server.shot_name("review-top"))

    # Something in History and Comments, made the way a reviewer makes them.
    goal = text_area(page, "Goal")
    goal.fill("Get the passenger to Halifax tonight at no cost.")
    page.get_by_role("button", name="Save ground truth").click()
    expect(alert(page, "Ground truth saved.")).to_be_visible()
    settle(page)
    page.get_by_role("tab", name="Comments").click()
    settle(page)
    text_area(page, "Add a comment").fill("The meal voucher is right: the wait is over 3 hours.")
    page.get_by_role("button", name="Comment", exact=True).click()
    expect(page.get_by_text("The meal voucher is right")).to_be_visible()
    page.get_by_role("tab", name="Truth").click()
    settle(page)

    open_expander(page, "Ground truth for turn 1")
    shot(page, server.shot_name("review-turn-editor"))

    for tab, shows in TABS.items():
        page.get_by_role("tab", name=tab).click()
        settle(page)
        panel = page.locator('[data-testid="stTabs"]')
        expect(panel.get_by_text(shows).first).to_be_attached()
        if tab == "Verdict":
            verdict = page.get_by_role("radio", name="pass", exact=True)
            verdict.click()
            expect(verdict).to_have_attribute("aria-checked", "true")
            settle(page)
        shot(page, server.shot_name("review-tab-" + "-".join(tab.lower().replace("&", " ").split())))


def test_review_shows_an_image_and_a_failed_runs_error(server: Server, new_page: NewPage) -> None:
    """A user's image (embedded in an Anthropic request) is drawn in its turn; a trace whose span failed says so
    at the top of the page."""
    expect(heading(new_page("/"))).to_have_text("Datasets")  # (the samples are loaded on the first visit)
    [(key,)] = server.rows(
        "SELECT s.key FROM sessions s JOIN datasets d ON d.id = s.dataset_id"
        ' WHERE d.name = \'sample-anthropic\' AND s.data LIKE \'%"source":{"type":"base64"%\' LIMIT 1'
    )
    page = new_page(review_path("sample-anthropic", key))
    image = page.locator('[data-testid="stMain"] [data-testid="stImage"] img').first
    expect(image).to_be_visible()
    shot(page, server.shot_name("review-image"))

    trace = Path(__file__).parent.parent / "data" / "real" / "traces" / "mlflow_error_trace.json"
    (ref,) = server.import_sessions("failed-trace", [json.dumps(json.loads(trace.read_text()))], "trace.jsonl")
    page = new_page(review_path("failed-trace", ref))
    expect(page.get_by_text("The run failed: ConnectionError")).to_be_visible()
    shot(page, server.shot_name("review-error"))


def test_the_scores_pages_and_the_solver(server: Server, new_page: NewPage) -> None:
    """Metrics (its past runs: the samples' first scoring), the Dashboard (a distribution from those scores),
    Export (the count and preview of a dataset) and Simulate, each as a reviewer first sees it."""
    page = new_page("/metrics?dataset=sample-ragas")
    expect(heading(page)).to_have_text("Metrics")
    expect(page.get_by_role("heading", name="Past runs")).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"]').last).to_be_visible()  # the past runs' table
    settle(page)
    shot(page, server.shot_name("metrics"))

    page.get_by_role("link", name="Dashboard").click()
    expect(heading(page)).to_have_text("Dashboard")
    expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
    settle(page)
    shot(page, server.shot_name("dashboard"))

    page.get_by_role("link", name="Export").click()
    expect(heading(page)).to_have_text("Export")
    expect(page.get_by_role("heading", name="Preview")).to_be_visible()
    expect(page.get_by_text("5 sessions").first).to_be_visible()
    settle(page)
    shot(page, server.shot_name("export"))

    page.get_by_role("link", name="Simulate").click()
    expect(heading(page)).to_have_text("Simulate")
    expect(page.get_by_role("heading", name="Task")).to_be_visible()
    settle(page)
    shot(page, server.shot_name("simulate"))
    assert "Traceback" not in server.log_text()
