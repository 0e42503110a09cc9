"""The Dashboard's shareable and exportable views and the A/B pair side by side, in headless Chromium, on τ-bench's
file imported as two assistants (B's copy: tasks 0-2 improved, 6 and 11 regressed, 39 left out):

- a choice made on the Dashboard goes into the URL, and that URL opened in a fresh browser context shows the same;
- a chart's CSV download holds what the library computes for that chart;
- the worst pair of the A/B table opens the Side by side page with both transcripts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from app_server import settle, shot
from dbutil import as_user
from e2e_ui import ROOT, Server, choose, grid_with, heading
from playwright.sync_api import expect

from evalcore.importing import import_file
from evalcore.store import open_store
from evalcore.views.chart_data import histogram_csv
from evalcore.views.dashboard import distribution

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]
TAU = ROOT / "tests" / "data" / "tau_bench" / "gpt-4o-airline-first40.json"


@pytest.fixture(scope="module")
def tau(server: Server) -> int:
    """The dataset ``tau``: agent-A's 40 trajectories and agent-B's 39; the imported run's id."""
    rows = json.loads(TAU.read_text())
    for row in rows:
        if row["task_id"] in (0, 1, 2):
            row["reward"] = 1.0
        if row["task_id"] in (6, 11):
            row["reward"] = 0.0
    changed = server.folder / "b.json"
    changed.write_text(json.dumps([r for r in rows if r["task_id"] != 39]))
    with open_store(server.db) as store:
        owner = as_user(store, "ann", "owner")
        import_file(owner, TAU, "tau", workers=1, assistant="agent-A")
        import_file(owner, changed, "tau", workers=1, assistant="agent-B")
        [run] = [r.id for r in store.runs.recent("tau") if r.imported]
    return run


def test_a_dashboard_link_opens_the_same_view_in_a_fresh_browser(server: Server, new_page: NewPage, tau: int) -> None:
    page = new_page("/dashboard?dataset=tau")
    expect(heading(page)).to_have_text("Dashboard")
    choose(page, "A: assistant", "agent-B")
    choose(page, "B: assistant", "agent-A")
    expect(page).to_have_url(re.compile(r"ab_a_who=agent-B"))
    expect(page.get_by_text(re.compile(r"A is run #\d+ · agent-B, B is run #\d+ · agent-A"))).to_be_visible()
    link = page.url
    fresh = new_page(link[len(server.url) :])  # another context: no session state, only the link
    expect(heading(fresh)).to_have_text("Dashboard")
    expect(fresh.get_by_role("combobox", name="A: assistant", exact=True)).to_have_value("agent-B")
    expect(fresh.get_by_role("combobox", name="B: assistant", exact=True)).to_have_value("agent-A")
    expect(fresh.get_by_text(re.compile(r"A is run #\d+ · agent-B, B is run #\d+ · agent-A"))).to_be_visible()
    shot(fresh, "dashboard-ab")


def test_a_charts_data_downloads_as_csv(server: Server, new_page: NewPage, tau: int) -> None:
    page = new_page("/dashboard?dataset=tau")
    expect(heading(page)).to_have_text("Dashboard")
    button = page.get_by_role("button", name=re.compile("CSV")).first  # under the first chart: the distribution
    with page.expect_download(timeout=30_000) as info:
        button.click()
    got = info.value
    assert got.suggested_filename == f"reward-run{tau}-distribution.csv"
    with open_store(server.db) as store:
        expected = histogram_csv(distribution(store, tau, "reward"))
    text = Path(got.path()).read_text(encoding="utf-8")
    assert text == expected and text.startswith("low,high,bar,sessions\n")
    # Every bar's sessions: 79 in all, 28 of them rewarded (14 of A's, 14 of B's).
    counts = [int(line.rsplit(",", 1)[1]) for line in text.splitlines()[1:]]
    assert sum(counts) == 79 and counts[-1] == 28


def test_the_worst_pair_side_by_side(server: Server, new_page: NewPage, tau: int) -> None:
    page = new_page("/dashboard?dataset=tau")
    expect(heading(page)).to_have_text("Dashboard")
    grid = grid_with(page, "session A")
    grid.scroll_into_view_if_needed()
    expect(grid).to_be_visible()
    settle(page)
    grid.click(position={"x": 14, "y": 35 + 35 / 2})  # the first row's selection box
    expect(page).to_have_url(re.compile(r"/compare\?"))
    settle(page)
    expect(heading(page)).to_have_text("Side by side")
    expect(page.get_by_text("Task: task 11")).to_be_visible()
    a, b = page.locator(".st-key-side-A"), page.locator(".st-key-side-B")
    expect(a.get_by_text("agent-A · reward 1")).to_be_visible()
    expect(b.get_by_text("agent-B · reward 0")).to_be_visible()
    assert a.locator('[data-testid="stChatMessage"]').count() > 3
    assert b.locator('[data-testid="stChatMessage"]').count() > 3
    box_a, box_b = a.bounding_box(), b.bounding_box()
    assert box_a and box_b and box_a["x"] + box_a["width"] <= box_b["x"] + 1  # side by side, A on the left
    expect(page.get_by_text("Identical call sequences: A and B make the same")).to_be_visible()
    expect(a.locator("li strong", has_text="Trip Type:").first).to_be_visible()  # the assistant's Markdown applied
    shot(page, "compare-side-by-side")
