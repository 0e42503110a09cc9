"""The Dashboard page, run for real with AppTest on a real SQLite file: runs and metrics chosen, the
summary, the comparison of two runs, the heatmap, review progress. (Clicks on the charts themselves are
driven in the browser: tests/e2e/test_dashboard_browser.py.)

The ``shop`` dataset (apptest_util.shop_sessions): 30 sessions, 1, 2 or 3 turns (10 of each), assistants
``bot-a`` / ``bot-b`` (15 each), scored once by ``turn_count`` in the template.
"""

from __future__ import annotations

import json
from pathlib import Path

from apptest_util import (  # noqa: F401 (fixtures)
    app,
    db_fixture,
    fresh_db_fixture,
    open_page,
    run,
    store_fixture,
    template_db_fixture,
    texts,
    write_jsonl,
)
from dbutil import as_user
from streamlit.testing.v1 import AppTest

from evalcore.importing import import_file
from evalcore.metrics.base import MetricResult
from evalcore.scoring import save_results, score_dataset
from evalcore.store import Store, open_store
from evalcore.store.labels import LABEL


def _dashboard(dataset: str = "shop") -> AppTest:
    return open_page(run(app(dataset=dataset)), "dashboard")


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_the_latest_run_is_shown(db: Path) -> None:
    at = _dashboard()
    assert at.title[0].value == "Dashboard"
    assert at.selectbox(key="dash_run").value.metrics == ["turn_count"]
    assert "#### turn\\_count" in texts(at, "markdown")
    shown = _metrics(at)
    assert shown["Mean"] == "2.000" and shown["Scored"] == "30"  # 10 sessions each of 1, 2 and 3 turns
    assert shown["Failed · not applicable"] == "0 · 0"
    low, high = (float(x) for x in shown["95% interval"].split(" – "))
    assert 1.6 < low < 2.0 < high < 2.4  # 2 ± 1.96 · sqrt(2/3) / sqrt(30) = 2 ± 0.29
    assert len(at.get("plotly_chart")) >= 3  # histogram, by assistant, heatmap
    assert any("The run's 30 sessions by turn\\_count, the lowest first" in c for c in texts(at, "caption"))
    assert "No reviewer has set a status on this dataset yet." in texts(at, "info")


def test_two_runs_compared(db: Path, store: Store) -> None:
    score_dataset(store, "shop", ["turn_count", "tool_call_count"], resume=False)
    at = _dashboard()
    run_select = at.selectbox(key="dash_run")
    assert run_select.value.metrics == ["turn_count", "tool_call_count"]  # the newest run first
    at.selectbox(key="dash_metric").set_value("turn_count")
    run(at)
    against = at.selectbox(key="dash_against")
    assert against.options[0] == "no comparison" and len(against.options) == 2
    against.select_index(1)
    run(at)
    heading = [m for m in texts(at, "markdown") if m.startswith("#### Run #")]
    assert heading, texts(at, "markdown")
    caption = next(c for c in texts(at, "caption") if "sessions scored by both" in c)
    assert caption.startswith("30 sessions scored by both: **0 worse**, 0 better, 30 the same; mean change +0.000")
    # The sessions x metrics of two counts: drawn in the neutral blue only, each row naming its assistant.
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (spec,) = [f for f in specs if sum(t["type"] == "heatmap" for t in f["data"]) == 2]
    quality, counts = (t for t in spec["data"] if t["type"] == "heatmap")
    assert all(v is None for row in quality["z"] for v in row)
    assert all(v is not None for row in counts["z"] for v in row) and counts["colorscale"][-1][1] == "#7aa0e0"
    assert all(label.endswith((" · bot-a", " · bot-b")) for label in counts["y"])
    # The older run has nothing earlier to be compared with (a later run is not "earlier").
    at.selectbox(key="dash_run").select_index(1)
    run(at)
    assert at.selectbox(key="dash_against").options == ["no comparison"]


def test_review_progress_counts_status_changes(db: Path, store: Store) -> None:
    pks = store.sessions.pks("shop")
    as_user(store, "ann").sessions.set_status_many(pks[10:14], "approved")
    as_user(store, "bob").sessions.set_status_many(pks[14:16], "rejected")
    at = _dashboard()
    assert "No reviewer has set a status on this dataset yet." not in texts(at, "info")
    assert "Statuses set by each reviewer" in texts(at, "caption")
    assert any(c == "Now: 16 todo · 9 approved · 2 rejected · 3 flagged." for c in texts(at, "caption"))


def test_a_dataset_without_runs(fresh_db: Path) -> None:
    at = run(app())
    at = open_page(at, "dashboard")
    assert texts(at, "info")  # no dataset yet, or no run: said, not an error
    assert not at.error


def test_the_judge_against_the_reviewers(db: Path, store: Store) -> None:
    """A pass/fail judge on 4 shop sessions that ann judged too: they agree on 3 (hand-worked kappa 0.5)."""
    pks = store.sessions.pks("shop")[:4]
    run_id = store.runs.create("shop", ["aspect_critique"], {"aspect_critique": {"name": "aspect_critique"}}).id
    judged = [1.0, 1.0, 0.0, 0.0]
    human = [1.0, 0.0, 0.0, 0.0]
    save_results(
        store,
        run_id,
        [(pk, "aspect_critique", MetricResult("aspect_critique", value=v)) for pk, v in zip(pks, judged, strict=True)],
    )
    store.runs.finish(run_id)
    for pk, v in zip(pks, human, strict=True):
        as_user(store, "ann").labels.set_verdict(pk, LABEL, v)
    at = _dashboard()
    assert "**aspect\\_critique** against the reviewers' **label**" in texts(at, "markdown")
    shown = _metrics(at)
    # observed agreement 3/4; expected: judge passes 2/4, reviewers 1/4 -> .5*.25 + .5*.75 = .5;
    # kappa = (.75 - .5) / (1 - .5) = 0.5.
    assert shown["Kappa (Cohen's)"] == "0.50" and shown["Agree"] == "75%" and shown["Sessions"] == "4"
    assert any(c.startswith("The judge passes at 0.5 or more; left out: none.") for c in texts(at, "caption"))
    table = at.dataframe(key=next(d.key for d in at.dataframe if d.key and d.key.startswith("dash_disagree-"))).value
    assert list(table["judge_says"]) == ["pass"] and list(table["reviewers_say"]) == ["fail"]


def test_no_tool_failed_is_said_and_cell_values_read_on_their_colour(fresh_db: Path, tmp_path: Path) -> None:
    """Every reference call made as expected: "No tool failed" instead of an empty chart. The heatmap's 1s (dark
    green) are written in white, and a 0/1 metric's histogram has its ticks at 0 and 1."""
    rows = [
        {
            "schema_version": 1,
            "session_id": f"t-{i}",
            "messages": [
                {"role": "user", "content": f"Where is order {i}?"},
                {"role": "assistant", "tool_calls": [{"id": "c", "name": "get_order", "args": {"id": i}}]},
                {"role": "tool", "tool_call_id": "c", "content": "shipped"},
                {"role": "assistant", "content": "It has shipped."},
            ],
            "reference_tool_calls": [{"name": "get_order", "args": {"id": i}}],
        }
        for i in range(3)
    ]
    with open_store(fresh_db) as store:
        import_file(as_user(store, "ann", "owner"), write_jsonl(tmp_path / "calls.jsonl", rows), "calls", workers=1)
        score_dataset(as_user(store, "ann", "owner"), "calls", ["tool_call_accuracy"])
    at = _dashboard("calls")
    assert any(s.startswith("No tool failed: every reference call was made") for s in texts(at, "success"))
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert not [s for s in specs if any(t.get("name") == "missing" for t in s["data"])]  # no tool chart
    [cells] = [t for s in specs for t in s["data"] if t.get("mode") == "text"]
    assert cells["text"] == ["1", "1", "1"] and cells["textfont"]["color"] == ["#ffffff"] * 3
    [histogram] = [s for s in specs if s["data"][0].get("type") == "bar" and "sessions" in str(s["layout"])]
    assert histogram["layout"]["xaxis"]["tickvals"] == [0.0, 1.0]
