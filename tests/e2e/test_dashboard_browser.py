"""The Dashboard in headless Chromium: its charts drawn, a bar clicked down to the Sessions behind it, two
runs compared with the session that got worse listed first, a heatmap cell clicked open in Review."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from app_server import settle, shot
from dbutil import as_user
from e2e_ui import ROOT, Server, heading
from playwright.sync_api import Page, expect

from evalcore.metrics.base import MetricResult
from evalcore.scoring import save_results, score_dataset
from evalcore.store import open_store
from evalcore.store.labels import LABEL
from evalcore.views.review.tables import session_label

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]
SAMPLES = ROOT / "tests" / "data" / "ragas_reference" / "ragas_samples.jsonl"


@pytest.fixture(scope="module")
def scored(server: Server) -> dict[str, Any]:
    """60 real ragas samples scored twice; between the runs one session's reference tool calls changed."""
    server.import_sessions("dash", SAMPLES.read_text().splitlines()[:60], "dash.jsonl")
    with open_store(server.db) as store:
        # A pass/fail judge's verdicts beside a reviewer's on 12 sessions (stored as a judge run stores them).
        pks = store.sessions.pks("dash")[:12]
        judge = store.runs.create("dash", ["aspect_critique"], {"aspect_critique": {"name": "aspect_critique"}})
        results = [
            (pk, "aspect_critique", MetricResult("aspect_critique", value=float(i % 3 != 0)))
            for i, pk in enumerate(pks)
        ]
        save_results(store, judge.id, results)
        store.runs.finish(judge.id)
        for i, pk in enumerate(pks):
            as_user(store, "ann").labels.set_verdict(pk, LABEL, float(i % 4 != 0))
        first = score_dataset(store, "dash", ["tool_call_f1", "tool_call_accuracy"]).run.id
        perfect = [r for r in store.runs.scores(first) if r.metric == "tool_call_f1" and r.value == 1.0]
        pk = perfect[0].session_pk
        stored = store.sessions.get(pk)
        calls = [{"name": "not_a_tool_it_called", "args": {}}]
        as_user(store, "test").sessions.save(pk, {"reference_tool_calls": calls}, base_version=stored.version)
        second = score_dataset(store, "dash", ["tool_call_f1", "tool_call_accuracy"], resume=False).run.id
    return {"first": first, "second": second, "changed": store.sessions.get(pk).ref}


def _charts(page: Page) -> Any:
    return page.locator('[data-testid="stPlotlyChart"]')


def _click_bar(page: Page, chart: int, index: int) -> None:
    """Plotly listens on a layer over the bars: the click lands where the bar is drawn."""
    bar = _charts(page).nth(chart).locator("g.trace.bars g.point path").nth(index)
    expect(bar).to_be_visible()
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] - 4)


def test_dashboard_charts_and_a_bar_down_to_its_sessions(
    server: Server, new_page: NewPage, scored: dict[str, Any]
) -> None:
    page = new_page("/dashboard?dataset=dash")
    expect(heading(page)).to_have_text("Dashboard")
    # distribution, by assistant, A/B (the samples have no assistants: the two runs with a metric in common, the
    # older as A), where tools fail, tool_call_f1 over the two runs, judge vs reviewers, heatmap (no comparison)
    expect(_charts(page)).to_have_count(7)
    expect(page.get_by_text(f"A is run #{scored['first']}, B is run #{scored['second']}")).to_be_visible()
    expect(page.get_by_text("The run's 60 sessions by tool_call_f1, the lowest first")).to_be_visible()
    agreement = page.get_by_text("aspect_critique against the reviewers' label")
    expect(agreement).to_be_visible()
    shot(page, "dashboard")

    # The histogram's tallest bar: its sessions, and only those, on the Sessions page.
    with open_store(server.db) as store:
        from evalcore.views.dashboard import distribution

        d = distribution(store, scored["second"], "tool_call_f1")
    tallest = max(range(len(d.bins)), key=lambda i: d.bins[i].count)
    _click_bar(page, 0, tallest)
    expect(page).to_have_url(re.compile(r"/sessions"))
    settle(page)
    expect(page.get_by_text(re.compile(rf"of {d.bins[tallest].count:,} sessions\."))).to_be_visible()
    shot(page, "dashboard-drilldown-sessions")


def test_a_bar_of_a_chosen_run_down_to_its_sessions_in_the_address(
    server: Server, new_page: NewPage, scored: dict[str, Any]
) -> None:
    """Another run than the newest chosen (a parameter of the address a widget binds): its bar still opens Sessions
    (Streamlit refused to clear that address: "Something went wrong"), and the list is in the address: a reload
    shows the same sessions."""
    page = new_page("/dashboard?dataset=dash")
    runs = page.locator('[data-testid="stSelectbox"]').filter(has_text="Run").first
    runs.click()
    page.get_by_role("option", name=re.compile(rf"^#{scored['first']} ")).click()
    settle(page)
    expect(page).to_have_url(re.compile(r"dash_run="))
    with open_store(server.db) as store:
        from evalcore.views.dashboard import distribution

        d = distribution(store, scored["first"], "tool_call_f1")
    lowest = min(i for i, b in enumerate(d.bins) if b.count)
    _click_bar(page, 0, lowest)
    expect(page).to_have_url(re.compile(r"/sessions\?.*f_run="))
    settle(page)
    listed = page.get_by_text(re.compile(rf"of {d.bins[lowest].count:,} sessions\."))
    expect(listed).to_be_visible()
    expect(page.get_by_text("Something went wrong")).to_have_count(0)
    for name in ("f_min", "f_max"):  # (the metric is the run's first: a widget's default is not in the address)
        assert f"{name}=" in page.url, page.url
    page.reload()
    settle(page)
    expect(listed).to_be_visible()  # the same list from the address alone


def test_two_runs_compared_and_a_cell_opened_in_review(
    server: Server, new_page: NewPage, scored: dict[str, Any]
) -> None:
    page = new_page("/dashboard?dataset=dash")
    against = page.locator('[data-testid="stSelectbox"]').filter(has_text="Compare with an earlier run")
    against.click()
    page.get_by_role("option", name=re.compile(rf"^#{scored['first']} ")).click()
    settle(page)
    expect(page.get_by_text(re.compile(r"60 sessions scored by both: 1 worse"))).to_be_visible()
    expect(_charts(page)).to_have_count(9)  # + the paired values and the differences
    shot(page, "dashboard-compare")

    # The heatmap (the last chart) puts the lowest sessions first: click the first row's first cell.
    heat = _charts(page).last  # the heatmap comes last
    heat.scroll_into_view_if_needed()
    cell = heat.locator("g.trace.scatter g.points path").first
    expect(cell).to_be_attached()
    box = cell.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(page).to_have_url(re.compile(r"/review\?"))
    settle(page)
    with open_store(server.db) as store:
        from evalcore.views.dashboard import heatmap

        first_ref = heatmap(store, scored["second"], "tool_call_f1", limit=1).sessions[0][1]
    expect(heading(page)).to_have_text(session_label(first_ref))
    shot(page, "dashboard-cell-to-review")
