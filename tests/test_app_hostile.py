"""Every name, id and message the pages show, shown as text (issue 23, items 2 and 11), page by page with AppTest.

One dataset where everything a person or a file names is hostile (``hostile``: Markdown images and links, HTML,
a colour directive, LaTeX, a right-to-left override and a zero-width space): the dataset's name, the upload's
file name, session ids, the assistant id, a tag, tool names and call ids, a rubric, a retrieved chunk's URI, the
reviewer's name, a reason, a comment, a run's metric (its typed parameter) and label, a job's label and error.
Each page, each Review tab, is run on it, and every string Streamlit renders as Markdown (bodies, labels, help,
captions, progress texts, options of radios and segmented controls, metric values...) is read from the page's
protos: none holds the markup unescaped (``raw_markup``), and ids and names show their invisible characters as
escapes. The browser test (tests/e2e/test_hostile.py) proves the same by counting requests.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    app,
    by_prefix,
    db_fixture,
    hostile,
    markdown_strings,
    open_page,
    person,
    plain,
    plain_texts,
    raw_markup,
    run,
    store_fixture,
    template_db_fixture,
    texts,
    write_jsonl,
)
from dbutil import as_user
from streamlit.testing.v1 import AppTest

from evalcore import background
from evalcore.metrics.base import MetricResult
from evalcore.scoring import save_results
from evalcore.store import Store
from evalcore.store.labels import LABEL, rubric_verdict
from evalcore.views.text import code_span, literal_name, visible

DATASET = hostile("ds")
SESSION = hostile("sid")
REVIEWER = hostile("rev")
RUBRIC = hostile("rubric")
METRIC = f"aspect_critique:aspect={hostile('metric')}"
#: A file name has no slash: the same attack through ``http:\\host\x`` (which a browser reads as http://host/x).
FILE = "upload ![f](http:\\\\127.0.0.1:9\\f.png) <img src=http:127.0.0.1:9\\g.png> :red[f] $x$ \u202e.jsonl"
RLO_ID = "gnp\u202eexe.png"
ZW_ID = "\u200b\u200b"


def hostile_sessions() -> list[dict[str, Any]]:
    text = "Where is order 7? ![q](http://127.0.0.1:9/q.png)"  # conversation text: literal_markdown's, tested elsewhere
    return [
        {
            "session_id": SESSION,
            "assistant_id": hostile("asst"),
            "tags": [hostile("tag")],
            "messages": [
                {"role": "user", "content": text},
                {"role": "assistant", "tool_calls": [{"id": hostile("call"), "name": hostile("tool"), "args": {}}]},
                {"role": "tool", "tool_call_id": hostile("call"), "name": hostile("tool"), "content": "shipped"},
                {"role": "tool", "tool_call_id": hostile("orphan"), "name": hostile("t2"), "content": "stray"},
                {"role": "assistant", "content": "It has shipped."},
            ],
            "reference": "It shipped.",
            "rubrics": {RUBRIC: "Polite ![d](http://127.0.0.1:9/d.png)"},
            "retrieved_context": [{"doc_uri": hostile("doc"), "content": "chunk"}],
        },
        {"session_id": RLO_ID, "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
        {"session_id": ZW_ID, "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
    ]


@pytest.fixture
def hostile_db(db: Path, store: Store, tmp_path: Path) -> Store:
    """The test's database with the hostile dataset in it: imported as an upload, reviewed, commented, given
    verdicts, scored, and with a failed solver job of its own."""
    data = write_jsonl(tmp_path / "in.jsonl", hostile_sessions()).read_bytes()
    job = background.start_import(as_user(store, REVIEWER, "admin"), data, FILE, DATASET)
    deadline = time.monotonic() + 60
    while store.jobs.get(job).active:
        assert time.monotonic() < deadline, "the import did not end"
        time.sleep(0.05)
    assert store.jobs.get(job).status == "done", store.jobs.get(job)
    pk = store.sessions.find(DATASET, SESSION)
    stored = store.sessions.get(pk)
    as_user(store, REVIEWER).sessions.save(pk, {"goal": "Find it"}, base_version=stored.version, reason=hostile("why"))
    as_user(store, REVIEWER).sessions.set_status_many([pk], "approved")
    as_user(store, REVIEWER).labels.add_comment(pk, "A comment ![c](http://127.0.0.1:9/c.png)")
    as_user(store, REVIEWER).labels.set_verdict(pk, LABEL, 1.0)
    as_user(store, REVIEWER).labels.set_verdict(pk, rubric_verdict(RUBRIC), 4.0)
    run_ = store.runs.create(DATASET, [METRIC], {METRIC: {"name": "aspect_critique"}})
    save_results(store, run_.id, [(pk, METRIC, MetricResult(METRIC, None, 0.0, hostile("reason")))])
    store.runs.recount(run_.id, status="done")
    solve = as_user(store, REVIEWER).jobs.create("solve", DATASET, hostile("job"), unit="samples")
    store.jobs.fail(solve, hostile("error"))
    return store


def _frame(**query: str) -> AppTest:
    return run(person(app(dataset=DATASET, **query), REVIEWER, "admin"))


def _clean(at: AppTest) -> None:
    """Nothing hostile unescaped in any Markdown the page renders, and the page did render some of it."""
    assert raw_markup(at) == []
    assert markdown_strings(at)


def test_the_frame_and_datasets(hostile_db: Store) -> None:
    at = _frame()
    _clean(at)
    assert at.sidebar.selectbox(key="dataset").value == DATASET
    assert visible(DATASET) in at.sidebar.selectbox(key="dataset").options  # (options are plain text)
    assert f"Manage {literal_name(DATASET)}" in [h.value for h in at.subheader]
    # The last import: its file name in the caption and the headline, as text.
    shown = plain_texts(at, "warning")  # (stored, with warnings: the result of an unknown call)
    assert any(f"import {visible(FILE)}" in s and "3 sessions stored" in s for s in shown), shown
    table = at.dataframe[0].value
    assert visible(DATASET) in list(table["dataset"])


def test_sessions(hostile_db: Store) -> None:
    at = open_page(_frame(), "sessions")
    _clean(at)
    ids = list(at.dataframe[0].value["id"])
    assert ids == [visible(SESSION), "gnp\\u202eexe.png", "\\u200b\\u200b"]  # never "gnpgnp.exe", never blank
    assert visible(hostile("tag")) in [o.split(" (")[0] for o in at.multiselect(key="f_tags").options]
    at.session_state["sessions_table"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    run(at)
    (button,) = [b for b in at.button if b.key == "open_selected"]
    assert plain(button.label) == "Open gnp\\u202eexe.png in Review"
    _clean(at)


@pytest.mark.parametrize(
    "tab", ["Truth", "Calls & rubrics", "Weights", "Verdict", "Scores", "Diff", "History", "Comments"]
)
def test_review_and_each_tab(hostile_db: Store, tab: str) -> None:
    at = open_page(_frame(session=SESSION), "review")
    at.session_state["review_tab"] = tab
    run(at)
    _clean(at)
    said = "\n".join(plain(s) for _, s in markdown_strings(at))
    assert f"### {visible(SESSION)}" in [plain(m.value) for m in at.markdown]
    assert f"by {visible(REVIEWER)}" in said and visible(hostile("asst")) in said  # the header's caption
    raw = [s for _, s in markdown_strings(at)]
    assert f":material/link_off: result of an unknown call {code_span(visible(hostile('orphan')))}" in "\n".join(raw)
    if tab == "Verdict":
        assert f"{visible(RUBRIC)} (1–5)" in said
    if tab == "Comments":
        assert f"{visible(REVIEWER)} ·" in said


@pytest.mark.parametrize("ref", [hostile("missing"), "![x](http://127.0.0.1:9/pixel.png)"])
def test_a_link_to_no_session_says_so_as_text(hostile_db: Store, ref: str) -> None:
    at = open_page(_frame(session=ref), "review")
    _clean(at)
    (warning,) = plain_texts(at, "warning")
    assert warning.startswith(f"no session '{visible(ref)}'")


def test_a_conflict_names_the_other_reviewer_and_the_session_as_text(hostile_db: Store) -> None:
    mine = open_page(_frame(session=SESSION), "review")
    theirs = open_page(run(person(app(dataset=DATASET, session=SESSION), hostile("other"))), "review")
    by_prefix(theirs.text_area, "s-reference-").input("Their reference")
    by_prefix(theirs.button, "FormSubmitter:truth-").click()
    run(theirs)
    run(mine)
    _clean(mine)  # the warning that someone changed it
    by_prefix(mine.text_area, "s-goal-").input("Mine")
    by_prefix(mine.button, "FormSubmitter:truth-").click()
    run(mine)
    _clean(mine)
    (box,) = [e for e in plain_texts(mine, "error") if "was not saved" in e]
    assert visible(hostile("other")) in box and visible(SESSION) in box


def test_metrics(hostile_db: Store) -> None:
    at = open_page(_frame(), "metrics")
    _clean(at)
    (past,) = [d.value for d in at.dataframe if "metrics" in d.value.columns]
    assert list(past["metrics"]) == [visible(METRIC)]
    # A parameter typed wrong: the error quotes the line, as text.
    at.multiselect(key="pick_llm_judge").set_value(["rubric_score"])
    run(at)
    typed = "![x](http//127.0.0.1/x.png) <img src=x> [link](y) $x$"  # (no colon: not a 'name: text' line)
    at.text_area(key="param:rubric_score:rubrics").input(typed)
    run(at)
    _clean(at)
    (error,) = plain_texts(at, "error")
    assert f"not {typed!r}" in error


def test_dashboard(hostile_db: Store) -> None:
    at = open_page(_frame(), "dashboard")
    _clean(at)
    assert at.selectbox(key="dash_metric").options == [visible(METRIC)]
    assert f"#### {literal_name(METRIC)}" in [m.value for m in at.markdown]


def test_export(hostile_db: Store) -> None:
    at = open_page(_frame(), "export")
    _clean(at)
    labels = [plain(b.label) for b in at.get("download_button")]
    # The file's name is made of the dataset's by a slug (letters, digits, dots and dashes): nothing to escape.
    assert labels[0].startswith("Download ds-x-http-127.0.0.1-9-ds.png-img-src-http"), labels


def test_simulate(hostile_db: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    key = "judge_model"
    (tasks / "evil ![t](http:127.0.0.1:9\\t.png) \u202e.yaml").write_text(
        "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n"
        f"      - type: chat_message\n        role: user\n        content: '<< config.{key} >> ![m](http://127.0.0.1:9/m.png)'\n"
        "      - type: generate\n"
    )
    (tasks / "evil.jsonl").write_text('{"id": "s1"}\n')
    monkeypatch.setenv("EVALCORE_TASKS", str(tasks))
    at = open_page(_frame(), "simulate")
    _clean(at)
    said = "\n".join(plain(s) for _, s in markdown_strings(at))
    assert f"Last solver run: {visible(hostile('job'))} into {visible(DATASET)}" in said
