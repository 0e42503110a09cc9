"""The outcomes that came with the data, in the app (AppTest on a real SQLite file; issue 21, item 1): the 40
τ-bench conversations of tests/data/tau_bench imported, their ``reward`` is a column of Sessions with its filter
and sort, a row of Review's scores, and what the Dashboard shows first — the success rate counted here from the
file."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
from streamlit.testing.v1 import AppTest

from evalcore.importing import import_file
from evalcore.scoring import score_dataset
from evalcore.store import Store


@pytest.fixture
def tau(store: Store, tau_bench_file: Path) -> dict[str, float]:
    """The τ-bench file imported into ``tau`` and scored once by evalcore after (a newer run than the imported
    one); each session's reward, read from the file here."""
    ann = as_user(store, "ann")
    import_file(ann, tau_bench_file, "tau", workers=1)
    score_dataset(ann, "tau", ["tool_call_accuracy"])
    rows = json.loads(tau_bench_file.read_text())
    return {f"task-{r['task_id']}-trial-{r['trial']}": float(r["reward"]) for r in rows}


def _total(at: AppTest) -> int:
    [caption] = [c for c in texts(at, "caption") if " sessions. Click a cell" in c]
    match = re.search(r"of \*\*([\d,]+)\*\* sessions", caption)
    assert match, caption
    return int(match.group(1).replace(",", ""))


def test_sessions_show_filter_and_sort_by_the_reward(db: Path, tau: dict[str, float]) -> None:
    successes = sorted(s for s, r in tau.items() if r == 1.0)
    assert len(successes) == 14
    at = open_page(run(app(dataset="tau")), "sessions")
    frame = at.dataframe(key="sessions_table").value
    assert dict(zip(frame["id"], frame["reward"], strict=True)) == tau  # the column
    runs = at.selectbox(key="f_run")
    [imported] = [i for i, r in enumerate(runs.options) if "reward · imported with the data" in r]
    runs.select_index(imported)
    run(at)
    assert at.selectbox(key="f_metric").value == "reward"
    at.number_input(key="f_min").set_value(1.0)  # the filter: the successes
    run(at)
    assert _total(at) == 14
    assert sorted(at.dataframe(key="sessions_table").value["id"]) == successes
    at.number_input(key="f_min").set_value(None)
    at.selectbox(key="f_sort").set_value("score")  # the sort: the successes last, then first
    run(at)
    assert _total(at) == 40
    assert sorted(at.dataframe(key="sessions_table").value["id"][-14:]) == successes
    at.toggle(key="f_desc").set_value(True)
    run(at)
    assert sorted(at.dataframe(key="sessions_table").value["id"][:14]) == successes


def test_review_shows_the_reward_among_the_scores(db: Path, store: Store, tau: dict[str, float]) -> None:
    at = app(dataset="tau", session="task-11-trial-0")
    at = open_page(run(at), "review")
    at.session_state["review_tab"] = "Scores"
    run(at)
    table = at.dataframe[0].value
    shown = dict(zip(table["metric"], table["run"], strict=True))
    assert shown["reward"].endswith("· imported with the data")
    values = dict(zip(table["metric"], table["value"], strict=True))
    assert values["reward"] == tau["task-11-trial-0"] == 1.0


def test_the_dashboard_shows_the_reward_first(db: Path, tau: dict[str, float]) -> None:
    at = open_page(run(app(dataset="tau")), "dashboard")
    chosen = at.selectbox(key="dash_run").value
    assert chosen.imported and chosen.metrics == ["reward"]  # though a newer run scored tool_call_accuracy
    assert at.selectbox(key="dash_metric").value == "reward"
    shown = {m.label: m.value for m in at.metric}
    rate = sum(tau.values()) / len(tau)  # 14 of 40
    assert shown["Mean"] == f"{rate:.3f}" == "0.350" and shown["Scored"] == "40"
    assert shown["Failed · not applicable"] == "0 · 0"
    assert any("The run's 40 sessions by reward, the lowest first" in c for c in texts(at, "caption"))
