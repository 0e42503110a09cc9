"""The Dashboard's A/B by task, where tools fail, cost per assistant and trends, and the side-by-side page, run
for real with AppTest on τ-bench's file imported as two assistants (B's copy with rewards changed: 3 tasks
improved, 2 regressed, task 39 left out), as in tests/test_ab_views.py."""

from __future__ import annotations

import json
from pathlib import Path

from apptest_util import (  # noqa: F401 (fixtures)
    app,
    fresh_db_fixture,
    open_page,
    plain_texts,
    run,
    texts,
)
from dbutil import as_user
from streamlit.testing.v1 import AppTest

from evalcore.importing import import_file
from evalcore.store import open_store
from evalcore.views.ab import Side, ab_pairs
from evalcore.views.review.tables import session_label


def _two_assistants(db: Path, tau: Path, folder: Path) -> None:
    rows = json.loads(tau.read_text())
    for row in rows:
        if row["task_id"] in (0, 1, 2):
            row["reward"] = 1.0
        if row["task_id"] in (6, 11):
            row["reward"] = 0.0
    changed = folder / "b.json"
    changed.write_text(json.dumps([r for r in rows if r["task_id"] != 39]))
    with open_store(db) as store:
        owner = as_user(store, "ann", "owner")
        import_file(owner, tau, "tau", workers=1, assistant="agent-A")
        import_file(owner, changed, "tau", workers=1, assistant="agent-B")


def _frame(at: AppTest, first_column: str) -> list[dict[str, object]]:
    """The rows of the one table whose first column is ``first_column``."""
    [frame] = [d.value for d in at.dataframe if list(d.value.columns)[:1] == [first_column]]
    return list(frame.to_dict("records"))


def test_ab_tools_cost_and_the_side_by_side_pair(fresh_db: Path, tau_bench_file: Path, tmp_path: Path) -> None:
    _two_assistants(fresh_db, tau_bench_file, tmp_path)
    at = open_page(run(app(dataset="tau")), "dashboard")
    assert at.selectbox(key="ab_a_who").value == "agent-A" and at.selectbox(key="ab_b_who").value == "agent-B"
    [reward] = [r for r in _frame(at, "metric") if r["metric"] == "reward"]
    assert (reward["tasks"], reward["improved"], reward["regressed"], reward["unchanged"]) == (39, 3, 2, 34)
    caption = next(c for c in texts(at, "caption") if "tasks paired" in c)
    assert "39 tasks paired, 1 only in A, 0 only in B" in caption
    pairs = _frame(at, "task")
    assert [p["task"] for p in pairs[:2]] == ["task 11", "task 6"] and pairs[0]["change"] == -1.0
    tools = _frame(at, "tool")
    assert tools and {"tool", "expected", "made", "missing", "extra"} <= set(tools[0])
    usage = _frame(at, "assistant")
    assert [(u["assistant"], u["sessions"]) for u in usage] == [("agent-A", 40), ("agent-B", 39)]
    # Every chart has its data's download under it, and the toolbar's PNG export.
    downloads = [b for b in at.get("download_button")]
    assert len(downloads) >= len(at.get("plotly_chart"))
    specs = [c.proto.config for c in at.get("plotly_chart")]
    assert all('"toImage"' in s and '"displaylogo": false' in s for s in specs), specs[:1]

    # The worst pair, side by side.
    with open_store(fresh_db) as store:
        [imported] = [r.id for r in store.runs.recent("tau") if r.imported]
        worst = ab_pairs(store, Side(imported, "agent-A"), Side(imported, "agent-B"), "reward")[0][0]
    assert pairs[0]["session_a"] == session_label(worst.a_ref) and pairs[0]["session_b"] == session_label(worst.b_ref)
    side = app(dataset="tau", a=worst.a_ref, b=worst.b_ref, task=worst.task)
    side = open_page(run(side), "compare")
    assert side.title[0].value == "Side by side"
    headings = [m for m in texts(side, "markdown") if m.startswith("##### ")]
    assert len(headings) == 2 and headings[0].startswith("##### A: ") and headings[1].startswith("##### B: ")
    sides = [c for c in texts(side, "caption") if "reward" in c]  # (Markdown: the hyphen escaped)
    assert sides == ["agent\\-A · reward 1", "agent\\-B · reward 0"]
    assert len(side.chat_message) > 4  # both transcripts drawn
    # B is A's copy: the same calls; the summary above the two sides says so (rewards differ, not the runs).
    [same] = plain_texts(side, "success")
    assert same.startswith("Identical call sequences: A and B make the same ") and "Their results" in same
    # The assistant's Markdown applied: bold labels in a list, never the asterisks escaped.
    said = [md.value for m in side.chat_message for md in m.markdown]
    assert any("- **Trip Type&#58;** One Way" in s for s in said)
    assert not any("\\*\\*Trip Type" in s for s in said)
    # "Show raw text" shows it as written again.
    side.sidebar.toggle(key="transcript_raw_text").set_value(True)
    said = [md.value for m in run(side).chat_message for md in m.markdown]
    assert any("\\- \\*\\*Trip Type&#58;\\*\\* One Way" in s for s in said)


def test_a_link_with_the_dashboards_choices_opens_them(fresh_db: Path, tau_bench_file: Path, tmp_path: Path) -> None:
    """The choices as the URL carries them (the browser writes them there: tests/e2e/test_dashboard_browser.py)."""
    _two_assistants(fresh_db, tau_bench_file, tmp_path)
    at = open_page(run(app(dataset="tau", ab_a_who="agent-B", ab_b_who="agent-A", tools_who="agent-B")), "dashboard")
    assert at.selectbox(key="ab_a_who").value == "agent-B" and at.selectbox(key="tools_who").value == "agent-B"
    [reward] = [r for r in _frame(at, "metric") if r["metric"] == "reward"]
    assert (reward["improved"], reward["regressed"]) == (2, 3)  # B − A the other way round
