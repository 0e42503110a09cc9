"""The Sessions page, run for real with AppTest: filters, search, score filter, sort, pages,
opening a session, and changing many sessions at once.

The ``shop`` dataset (apptest_util.shop_sessions): 30 sessions, 5 approved, 3 flagged, 22 todo;
tags ``refund`` (6) and ``vip`` (3); assistants ``bot-a`` / ``bot-b`` (15 each); a reference on
every third (10); 1, 2 or 3 turns (10 of each, scored by ``turn_count``); "zebra" only in shop-07.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    app,
    db_fixture,
    open_page,
    person,
    run,
    store_fixture,
    template_db_fixture,
    texts,
)
from dbutil import as_user
from formats_util import write_jsonl
from streamlit.testing.v1 import AppTest

from evalcore.importing import import_file
from evalcore.store import Store
from evalcore.store.queries import SessionFilter


def _sessions(**query: str) -> AppTest:
    at = run(app(dataset="shop", **query))
    return open_page(at, "sessions")


def _total(at: AppTest) -> int:
    if any(t.startswith("No session") for t in texts(at, "info")):  # (said instead of the count)
        return 0
    [caption] = [c for c in texts(at, "caption") if " sessions. Click a cell" in c]
    match = re.search(r"of \*\*([\d,]+)\*\* sessions", caption)
    assert match, caption
    return int(match.group(1).replace(",", ""))


def _ids(at: AppTest) -> list[str]:
    frame = at.dataframe(key="sessions_table").value
    return list(frame["id"]) if len(frame) else []


def _select(at: AppTest, *, rows: list[int] | None = None, cells: list[Any] | None = None) -> None:
    at.session_state["sessions_table"] = {"selection": {"rows": rows or [], "columns": [], "cells": cells or []}}


def test_all_sessions_in_import_order(db: Path) -> None:
    at = _sessions()
    assert _total(at) == 30
    assert _ids(at) == [f"shop-{i:02d}" for i in range(30)]
    frame = at.dataframe(key="sessions_table").value
    assert list(frame["turns"][:3]) == [1, 2, 3]
    assert list(frame["turn_count"][:3]) == [1.0, 2.0, 3.0]  # the latest score of each metric
    assert frame["ground_truth"].sum() == 10


@pytest.mark.parametrize(
    ("widget", "key", "value", "expected"),
    [
        ("multiselect", "f_status", ["approved"], 5),
        ("multiselect", "f_status", ["approved", "flagged"], 8),
        ("multiselect", "f_tags", ["refund"], 6),
        ("multiselect", "f_tags", ["refund", "vip"], 1),  # all of them: only shop-00
        ("selectbox", "f_assistant", "bot-b", 15),
        ("selectbox", "f_truth", "missing", 20),
        ("selectbox", "f_truth", "present", 10),
        ("text_input", "f_search", "zebra", 1),
        ("text_input", "f_search", "shop 1", 30),  # every word, anywhere
        ("text_input", "f_search", "zeb*", 1),
        ("text_input", "f_search", "nowhere", 0),
    ],
)
def test_each_filter_changes_the_count(db: Path, widget: str, key: str, value: Any, expected: int) -> None:
    at = _sessions()
    getattr(at, widget)(key=key).set_value(value)
    run(at)
    assert _total(at) == expected
    assert len(_ids(at)) == expected


def test_search_leaves_the_system_prompt_out_unless_ticked(db: Path, store: Store, tmp_path: Path) -> None:
    """The labeler's finding (issue 24): a word of the system prompt matched every session; a tool name none."""
    rows = [
        {
            "schema_version": 1,
            "session_id": f"sys-{i}",
            "messages": [
                {"role": "system", "content": "Policy: vouchers after three hours."},
                {"role": "user", "content": f"Question {i}"},
                {"role": "assistant", "tool_calls": [{"id": "c", "name": "find_voucher" if i % 2 else "rebook"}]},
            ],
        }
        for i in range(4)
    ]
    assert import_file(as_user(store, "ann", "admin"), write_jsonl(tmp_path / "sys.jsonl", rows), "sys").new == 4
    at = open_page(run(app(dataset="sys")), "sessions")
    at.text_input(key="f_search").input("vouchers")
    run(at)
    assert _total(at) == 0
    [said] = [t for t in texts(at, "info") if t.startswith("No session")]
    assert "every word of “vouchers” (the system prompt is searched only when ticked)" in said.replace("\\", "")
    at.checkbox(key="f_search_system").check()
    run(at)
    assert _total(at) == 4
    at.text_input(key="f_search").input("find_voucher")  # a tool's name
    run(at)
    assert sorted(_ids(at)) == ["sys-1", "sys-3"]


def test_a_link_with_the_filters_opens_them(db: Path) -> None:
    """The filters as the URL carries them (the browser writes them there, ``bind``): a fresh session opens the
    same view."""
    at = _sessions(f_assistant="bot-b", f_truth="missing", f_status=["approved", "flagged"])
    assert at.selectbox(key="f_assistant").value == "bot-b" and at.multiselect(key="f_status").value == [
        "approved", "flagged"
    ]  # fmt: skip
    alone = _sessions(f_assistant="bot-b")
    assert _total(alone) == 15 and _total(at) < 15


def test_filters_combine_and_search_finds_the_session(db: Path) -> None:
    at = _sessions()
    at.text_input(key="f_search").input("zebra")
    run(at)
    assert _ids(at) == ["shop-07"]
    at.multiselect(key="f_status").set_value(["flagged"])
    run(at)
    assert _ids(at) == ["shop-07"]
    at.selectbox(key="f_assistant").set_value("bot-a")
    run(at)
    assert _total(at) == 0 and not _ids(at)


def test_score_filter(db: Path) -> None:
    at = _sessions()
    runs = at.selectbox(key="f_run").options
    assert runs[0] == "no score filter" and len(runs) == 2
    at.selectbox(key="f_run").select_index(1)
    run(at)
    assert at.selectbox(key="f_metric").value == "turn_count"
    assert _total(at) == 30  # a run and metric alone keep every scored session
    at.number_input(key="f_min").set_value(2)
    run(at)
    assert _total(at) == 20
    at.number_input(key="f_max").set_value(2)
    run(at)
    assert _total(at) == 10
    assert _ids(at)[:3] == ["shop-01", "shop-04", "shop-07"]
    frame = at.dataframe(key="sessions_table").value
    assert set(frame["score"]) == {2.0}
    at.selectbox(key="f_run").select_index(0)
    run(at)
    assert _total(at) == 30


def test_sort(db: Path) -> None:
    at = _sessions()
    at.selectbox(key="f_sort").set_value("session_id")
    at.toggle(key="f_desc").set_value(True)
    run(at)
    assert _ids(at)[:3] == ["shop-29", "shop-28", "shop-27"]
    at.selectbox(key="f_sort").set_value("turns")
    run(at)
    ids = _ids(at)
    assert ids[:2] == ["shop-29", "shop-26"]  # 3 turns, the later first
    assert ids[-1] == "shop-00"
    # A score sort needs a run: "score" is offered only with one.
    assert "score" not in at.selectbox(key="f_sort").options
    at.selectbox(key="f_run").select_index(1)
    run(at)
    assert "score" in at.selectbox(key="f_sort").options


def test_pages_of_rows(db: Path) -> None:
    at = _sessions()
    assert at.button(key="page_next").disabled and at.button(key="page_prev").disabled
    at.selectbox(key="page_size").set_value(25)
    run(at)
    assert len(_ids(at)) == 25 and "Page 1 of 2" in texts(at, "caption")
    assert at.button(key="page_prev").disabled
    at.button(key="page_next").click()
    run(at)
    assert _ids(at) == [f"shop-{i}" for i in range(25, 30)]
    assert "Page 2 of 2" in texts(at, "caption") and any(c.startswith("26–30 of **30**") for c in texts(at, "caption"))
    assert at.button(key="page_next").disabled
    # A new filter starts again on page 1.
    at.selectbox(key="f_truth").set_value("missing")
    run(at)
    assert "Page 1 of 1" in texts(at, "caption") and _ids(at)[0] == "shop-01"
    at.selectbox(key="f_truth").set_value("any")
    run(at)
    at.button(key="page_next").click()
    run(at)
    at.button(key="page_prev").click()
    run(at)
    assert _ids(at)[0] == "shop-00" and "Page 1 of 2" in texts(at, "caption")


def test_clicking_a_cell_opens_the_session_in_review(db: Path) -> None:
    at = _sessions()
    at.multiselect(key="f_status").set_value(["flagged"])
    run(at)
    _select(at, cells=[[1, "first_question"]])
    run(at)
    assert at.query_params["session"] == "shop-06" and at.query_params["dataset"] == "shop"
    assert "### shop\\-06" in texts(at, "markdown")
    # Review follows the Sessions filter: shop-06 is the 2nd of the 3 flagged ones.
    assert any("2 of 3 in the Sessions filter" in c for c in texts(at, "caption"))


def test_a_selection_on_rows_that_are_gone_opens_nothing(db: Path) -> None:
    at = _sessions()
    at.text_input(key="f_search").input("zebra")
    run(at)
    _select(at, rows=[5], cells=[[5, "id"]])  # made on the longer table before the search
    run(at)
    assert "session" not in at.query_params and not at.error
    assert _ids(at) == ["shop-07"]


def test_one_ticked_row_can_be_opened(db: Path) -> None:
    at = _sessions()
    _select(at, rows=[4])
    run(at)
    at.button(key="open_selected").click()
    run(at)
    assert at.query_params["session"] == "shop-04"
    assert "### shop\\-04" in texts(at, "markdown")


def test_bulk_changes_need_a_reviewer(db: Path) -> None:
    at = _sessions()
    _select(at, rows=[0, 1])
    run(at)
    assert any("Enter your name" in t for t in texts(at, "info"))
    assert at.button(key="bulk_apply").disabled
    person(at, "ann")
    run(at)
    assert not at.button(key="bulk_apply").disabled


def test_bulk_status_for_the_ticked_rows(db: Path, store: Store) -> None:
    at = _sessions()
    person(at, "ann")
    _select(at, rows=[8, 9, 10])
    run(at)
    assert at.radio(key="bulk_scope").value == "selected"
    at.selectbox(key="bulk_status").set_value("rejected")
    run(at)
    assert at.button(key="bulk_apply").label == "Apply to 3 sessions"
    at.button(key="bulk_apply").click()
    run(at)
    assert "3 sessions changed." in texts(at, "success")
    rejected = store.sessions.pks("shop")[8:11]
    for pk in rejected:
        stored = store.sessions.get(pk)
        assert (stored.session.status, stored.status_by) == ("rejected", "ann")
        assert [(e.field, e.new, e.author) for e in store.sessions.history(pk)] == [("status", "rejected", "ann")]
    assert store.sessions.count("shop", SessionFilter(status=["rejected"])) == 3
    assert list(at.dataframe(key="sessions_table").value["status"][8:11]) == ["rejected"] * 3


def test_one_ticked_row_and_one_session_are_said_in_the_singular(db: Path, store: Store) -> None:
    at = _sessions()
    person(at, "ann")
    at.text_input(key="f_search").input("zebra")  # shop-07 alone
    run(at)
    _select(at, rows=[0])
    run(at)
    assert at.radio(key="bulk_scope").value == "selected"
    at.selectbox(key="bulk_status").set_value("rejected")  # (none is)
    run(at)
    assert at.button(key="bulk_apply").label == "Apply to 1 session"
    at.button(key="bulk_apply").click()
    run(at)
    assert "1 session changed." in texts(at, "success")


def test_no_match_says_what_to_change(db: Path) -> None:
    at = _sessions()
    at.multiselect(key="f_status").set_value(["rejected"])  # (none is)
    run(at)
    [said] = [t for t in texts(at, "info") if t.startswith("No session")]  # (shown as text: punctuation escaped)
    assert "No session matches these filters" in said and "clear one of them to see more" in said
    at.text_input(key="f_search").input("zebra")
    run(at)
    assert any("the search “zebra” and the filters together" in t.replace("\\", "") for t in texts(at, "info"))
    assert not [c for c in texts(at, "caption") if "Click a cell" in c]  # (no "0–0 of 0")


def test_bulk_tag_for_the_ticked_rows(db: Path, store: Store) -> None:
    at = _sessions()
    person(at, "ann")
    _select(at, rows=[0, 29])
    run(at)
    at.selectbox(key="bulk_action").set_value("add tag")
    run(at)
    at.text_input(key="bulk_tag").input("later")
    run(at)
    at.button(key="bulk_apply").click()
    run(at)
    assert store.sessions.count("shop", SessionFilter(tags=["later"])) == 2
    tags = at.multiselect(key="f_tags")
    assert "later" in tags.options and "later: 2" in tags.help  # its count in the help (the URL names it alone)


def test_bulk_status_for_the_whole_filter_needs_the_confirmation(db: Path, store: Store) -> None:
    at = _sessions()
    person(at, "ann")
    at.multiselect(key="f_status").set_value(["flagged"])
    at.selectbox(key="page_size").set_value(25)
    run(at)
    at.radio(key="bulk_scope").set_value("filter")
    at.selectbox(key="bulk_status").set_value("approved")
    run(at)
    assert at.checkbox(key="bulk_confirm").label == "Yes, change 3"
    assert at.button(key="bulk_apply").disabled
    at.checkbox(key="bulk_confirm").check()
    run(at)
    at.button(key="bulk_apply").click()
    run(at)
    assert "3 sessions changed." in texts(at, "success")
    assert store.sessions.count("shop", SessionFilter(status=["flagged"])) == 0
    assert store.sessions.count("shop", SessionFilter(status=["approved"])) == 8
    assert _total(at) == 0  # the filter (flagged) matches none now
    assert store.sessions.count("shop", SessionFilter(status=["todo"])) == 22  # nothing else changed


def test_counts_show_as_whole_numbers_and_scores_with_two_decimals(db: Path, store: Store) -> None:
    from evalcore.scoring import score_dataset

    score_dataset(store, "shop", ["tool_call_count", "rouge"], resume=False)
    at = _sessions()
    config = json.loads(at.dataframe(key="sessions_table").proto.columns)
    formats = {name: column.get("type_config", {}).get("format") for name, column in config.items()}
    assert formats["turn_count"] == "%d" and formats["tool_call_count"] == "%d"  # 7, never 7.00
    assert formats["rouge"] == "%.2f"
