"""The Review page, run for real with AppTest: the transcript, the editors, status and navigation,
two reviewers in conflict, history, comments, verdicts, scores, the diff, and hostile text.

The ``review`` dataset (apptest_util.review_sessions): ``r-tools`` (6 turns, a ``get_order`` call
in turn 1, a reference answer, a ``politeness`` rubric), ``r-second`` and ``r-xss``, in that order.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    XSS,
    app,
    by_prefix,
    db_fixture,
    open_page,
    person,
    plain,
    plain_texts,
    review_sessions,
    run,
    store_fixture,
    template_db_fixture,
    texts,
    write_jsonl,
)
from streamlit.testing.v1 import AppTest

from evalcore.importing import import_file
from evalcore.samples import SAMPLE_METRICS
from evalcore.store import Store
from evalcore.views.text import literal_markdown, literal_name


def _review(session: str = "r-tools", reviewer: str | None = "ann", dataset: str = "review", **query: str) -> AppTest:
    """A browser session on Review (``?dataset=&session=``), signed in as ``reviewer`` (None: one-person mode, no
    name given yet)."""
    at = app(dataset=dataset, session=session, **query)
    if reviewer is not None:
        person(at, reviewer)
    return open_page(run(at), "review")


def _tab(at: AppTest, name: str) -> AppTest:
    at.session_state["review_tab"] = name
    return run(at)


def _submit(at: AppTest, form: str) -> AppTest:
    """Click the submit button of the form whose id starts with ``form`` (ids carry the session's pk)."""
    by_prefix(at.button, f"FormSubmitter:{form}").click()
    return run(at)


def _session(store: Store, ref: str = "r-tools") -> tuple[int, object]:
    pk = store.sessions.find("review", ref)
    return pk, store.sessions.get(pk)


# -- the transcript -------------------------------------------------------------------------------


def test_the_transcript_shows_messages_and_tool_calls(db: Path) -> None:
    at = _review()
    assert "### r\\-tools" in texts(at, "markdown")
    said = [md.value for m in at.chat_message for md in m.markdown]
    assert literal_markdown("Where is order 7?") in said
    assert literal_markdown("Order 7 has shipped.") in said
    assert "**get\\_order** · call ` c1 `" in said  # the call's name and id
    assert texts(at, "text") == ['{\n  "order_id": 7\n}', '{\n  "status": "shipped"\n}']  # arguments, result
    assert [m.name for m in at.chat_message][:4] == ["user", "tool", "assistant", "user"]
    status = texts(at, "caption")[0]
    assert status.startswith("**todo** · helper · 6 turns, 1 tool calls · version 1 · 1 of 3")


def test_the_first_paint_goes_without_the_tables(db: Path) -> None:
    """The grid of the two tables is the heaviest script in the browser: only their own tab loads it."""
    at = _review()
    assert not at.data_editor and by_prefix(at.button, "FormSubmitter:truth-")
    assert [e.key.split("-")[1] for e in _tab(at, "Calls & rubrics").data_editor] == ["calls", "rubrics"]


def test_turns_are_paged(db: Path) -> None:
    at = _review()
    assert "Turns 1–4 of 6" in texts(at, "caption")
    assert at.button(key="turns_back").disabled
    at.button(key="turns_on").click()
    run(at)
    assert "Turns 5–6 of 6" in texts(at, "caption")
    assert at.query_params["turn"] == "5"
    assert "**Turn 5** of 6" in texts(at, "markdown") and "**Turn 1** of 6" not in texts(at, "markdown")
    assert at.button(key="turns_on").disabled
    at.button(key="turns_back").click()
    run(at)
    assert "Turns 1–4 of 6" in texts(at, "caption") and at.query_params["turn"] == "1"


@pytest.mark.parametrize(("turn", "shown"), [("6", "5–6"), ("5", "5–6"), ("4", "1–4"), ("99", "5–6"), ("x", "1–4")])
def test_a_deep_link_to_a_turn_opens_its_page(db: Path, turn: str, shown: str) -> None:
    at = _review(turn=turn)
    assert f"Turns {shown} of 6" in texts(at, "caption")
    if turn == "6":
        assert "**Turn 6** of 6" in texts(at, "markdown")
        assert literal_markdown("Question number 6") in texts(at, "markdown")


def test_a_deep_link_to_an_unknown_session(db: Path) -> None:
    at = _review(session="nope")
    assert any("no session 'nope' in dataset 'review'" in w for w in plain_texts(at, "warning"))
    assert not at.error


# -- editors --------------------------------------------------------------------------------------


def test_saving_the_reference_answer(db: Path, store: Store) -> None:
    at = _review()
    field = by_prefix(at.text_area, "s-reference-")
    assert field.value == "The parcel left the warehouse on Monday."
    field.input("The parcel is on its way.")
    _submit(at, "truth-")
    assert "Ground truth saved." in texts(at, "success")
    pk, stored = _session(store)
    assert stored.session.reference == "The parcel is on its way."
    assert stored.version == 2
    [edit] = store.sessions.history(pk)
    assert (edit.field, edit.author, edit.old, edit.new) == (
        "reference",
        "ann",
        "The parcel left the warehouse on Monday.",
        "The parcel is on its way.",
    )
    # Saving again unchanged changes nothing.
    _submit(at, "truth-")
    assert "Nothing changed." in texts(at, "info")
    assert store.sessions.get(pk).version == 2


def test_the_reference_and_expected_facts_may_both_be_saved(db: Path, store: Store) -> None:
    at = _review()
    by_prefix(at.text_area, "s-expected_facts-").input("It shipped")
    _submit(at, "truth-")
    assert "Ground truth saved." in texts(at, "success")
    assert not texts(at, "error")
    stored = store.sessions.get(store.sessions.find("review", "r-tools"))
    assert stored.version == 2
    assert stored.session.reference == "The parcel left the warehouse on Monday."
    assert stored.session.expected_facts == ["It shipped"]


def test_tool_calls_copied_from_the_conversation(db: Path, store: Store) -> None:
    at = _tab(_review(), "Calls & rubrics")
    at.button(key=by_prefix(at.button, "copy_calls-").key).click()
    run(at)
    editor = by_prefix(at.data_editor, "s-calls-")
    assert list(editor.value["name"]) == ["get_order"]
    _submit(at, "calls-")
    calls = store.sessions.get(store.sessions.find("review", "r-tools")).session.reference_tool_calls
    assert calls is not None and [(c.name, c.args) for c in calls] == [("get_order", {"order_id": 7})]


def test_a_rubric_added_in_the_table(db: Path, store: Store) -> None:
    at = _tab(_review(), "Calls & rubrics")
    rubrics = by_prefix(at.data_editor, "s-rubrics-")
    # AppTest cannot type into a data editor: its edit state is given as the browser would send it.
    at.session_state[rubrics.key] = {
        "edited_rows": {0: {"description": "Polite and brief."}},
        "added_rows": [{"name": "accuracy", "description": "Says what the tool said."}],
        "deleted_rows": [],
    }
    _submit(at, "calls-")
    assert store.sessions.get(store.sessions.find("review", "r-tools")).session.rubrics == {
        "politeness": "Polite and brief.",
        "accuracy": "Says what the tool said.",
    }


def test_saving_a_turns_ground_truth(db: Path, store: Store) -> None:
    at = _review()
    by_prefix(at.text_area, "t-gt-0-").input("Order 7 shipped on Monday.")
    by_prefix(at.text_area, "t-obs-0-").input("Should give the date.")
    by_prefix(at.text_area, "t-etu-0-").input('{"tools": ["get_order"]}')
    by_prefix(at.text_input, "t-qa-0-").input("q1")
    _submit(at, "turn-form-0-")
    assert "Turn 1 saved." in texts(at, "success")
    pk, stored = _session(store)
    truth = stored.session.turn_truth[0]
    assert (truth.ground_truth, truth.observation, truth.expected_tool_usage, truth.qa_id) == (
        "Order 7 shipped on Monday.",
        "Should give the date.",
        {"tools": ["get_order"]},
        "q1",
    )
    assert stored.version == 2 and {e.turn for e in store.sessions.history(pk)} == {0}
    label = at.expander[0].label
    assert label.startswith("Ground truth for turn 1 · ") and "reference answer" in label


def test_invalid_json_in_expected_tool_usage_is_refused(db: Path, store: Store) -> None:
    at = _review()
    by_prefix(at.text_area, "t-gt-0-").input("An answer that must not be saved alone")
    by_prefix(at.text_area, "t-etu-0-").input("{not json")
    _submit(at, "turn-form-0-")
    [error] = texts(at, "error")
    assert error.startswith("Nothing was saved; fix these first")
    assert literal_markdown("expected_tool_usage") in error and "not valid JSON" in error
    assert by_prefix(at.text_area, "t-etu-0-").value == "{not json"  # kept as typed
    _pk, stored = _session(store)
    assert stored.version == 1 and not stored.session.turn_truth
    # A JSON value that is not an object is refused too.
    by_prefix(at.text_area, "t-etu-0-").input("[1, 2]")
    _submit(at, "turn-form-0-")
    assert "must be a JSON object" in texts(at, "error")[0]
    assert store.sessions.get(stored.pk).version == 1


def test_the_effective_weights_follow_what_is_typed(db: Path, store: Store) -> None:
    at = _review()
    before = "Effective weight **0.167**. No weights set: each of the 6 turns weighs 1/6 (0.167)."
    assert texts(at, "caption").count(before) == 4  # one per turn shown
    by_prefix(at.number_input, "t-weight-0-").set_value(0.5)
    run(at)
    sentence = "1 of 6 weights set (sum 0.5): the remaining 0.5 is split over the 5 other turns (0.1 each)."
    captions = texts(at, "caption")
    assert f"Effective weight **0.5**. {sentence}" in captions
    assert f"Effective weight **0.1**. {sentence}" in captions
    assert at.expander[0].label == "Ground truth for turn 1 · effective weight 0.5"
    _pk, stored = _session(store)
    assert stored.version == 1 and not stored.session.turn_truth  # not saved yet
    _tab(at, "Weights")
    assert sentence in texts(at, "info")
    table = at.dataframe[0].value
    assert list(table["typed"]) == ["0.5", "", "", "", "", ""]
    assert list(table["effective"]) == pytest.approx([0.5, 0.1, 0.1, 0.1, 0.1, 0.1])
    # Saved with the turn's form.
    _tab(at, "Truth")
    _submit(at, "turn-form-0-")
    assert store.sessions.get(stored.pk).session.turn_truth[0].weight == 0.5
    # Weights that add up to more than 1 with turns left over fall back to equal weights: a warning.
    by_prefix(at.number_input, "t-weight-1-").set_value(0.75)
    _tab(at, "Weights")
    assert any("equal weights 1/6 each" in w for w in texts(at, "warning"))


def test_editing_needs_a_reviewer(db: Path, store: Store) -> None:
    at = _review(reviewer=None)
    assert any("Enter your name" in t for t in texts(at, "info"))
    assert by_prefix(at.button, "FormSubmitter:truth-").disabled
    assert by_prefix(at.button, "FormSubmitter:turn-form-0-").disabled
    assert all(at.button(key=k).disabled for k in ("approve_next", "approve", "reject", "flag", "todo"))

    assert store.sessions.get(store.sessions.find("review", "r-tools")).session.status == "todo"


# -- status and navigation -----------------------------------------------------------------------------


def test_status_buttons(db: Path, store: Store) -> None:
    at = _review()
    pk = store.sessions.find("review", "r-tools")
    for button, status in [("approve", "approved"), ("reject", "rejected"), ("flag", "flagged"), ("todo", "todo")]:
        at.button(key=button).click()
        run(at)
        stored = store.sessions.get(pk)
        assert (stored.session.status, stored.status_by) == (status, "ann"), button
        assert texts(at, "caption")[0].startswith(f"**{status}** by ann"), button
        assert at.query_params["session"] == "r-tools"
    assert [e.new for e in store.sessions.history(pk)] == ["approved", "rejected", "flagged", "todo"]


def test_approve_and_next(db: Path, store: Store) -> None:
    at = _review()
    at.button(key="approve_next").click()
    run(at)
    assert at.query_params["session"] == "r-second"
    assert "### r\\-second" in texts(at, "markdown")
    assert store.sessions.get(store.sessions.find("review", "r-tools")).session.status == "approved"
    assert store.sessions.get(store.sessions.find("review", "r-second")).session.status == "todo"


def test_previous_and_next(db: Path) -> None:
    at = _review()
    assert at.button(key="previous").disabled
    for expected in ("r-second", "r-xss"):
        at.button(key="next").click()
        run(at)
        assert at.query_params["session"] == expected
        assert f"### {literal_markdown(expected)}" in texts(at, "markdown")
    assert at.button(key="next").disabled
    at.button(key="previous").click()
    run(at)
    assert at.query_params["session"] == "r-second"
    assert "2 of 3 in the Sessions filter" in texts(at, "caption")[0]


def test_next_follows_the_sessions_filter(db: Path) -> None:
    at = run(app(dataset="shop"))
    person(at, "ann")
    open_page(at, "sessions")
    at.multiselect(key="f_tags").set_value(["vip"])  # shop-00, shop-10, shop-20
    run(at)
    at.session_state["sessions_table"] = {"selection": {"rows": [], "columns": [], "cells": [[0, "id"]]}}
    run(at)
    assert at.query_params["session"] == "shop-00"
    assert "1 of 3 in the Sessions filter" in texts(at, "caption")[0]
    at.button(key="approve_next").click()
    run(at)
    assert at.query_params["session"] == "shop-10"
    at.button(key="next").click()
    run(at)
    assert at.query_params["session"] == "shop-20"
    assert at.button(key="next").disabled  # the last one with the tag


# -- two reviewers --------------------------------------------------------------------------------------


@pytest.mark.parametrize("resolution", ["take_theirs", "reapply"])
def test_a_conflict_with_another_reviewer(db: Path, store: Store, resolution: str) -> None:
    ann = _review(reviewer="ann")
    bob = _review(reviewer="bob")  # another browser, the same database
    by_prefix(bob.text_area, "s-reference-").input("Bob's reference")
    _submit(bob, "truth-")
    assert "Ground truth saved." in texts(bob, "success")

    run(ann)  # any rerun tells Ann, before she saves
    assert any(w.startswith("bob changed this session since you opened it (reference)") for w in texts(ann, "warning"))
    by_prefix(ann.text_area, "s-goal-").input("Find order 7")
    _submit(ann, "truth-")
    [box] = [e for e in plain_texts(ann, "error") if "was not saved" in e]  # (names and ids in it: shown as text)
    # In the page's words: the session as its heading names it, the field as its form labels it, no "reload".
    assert box == (
        "Ground truth was not saved: bob changed Reference answer in r-tools since you opened it (your forms show "
        "version 1; it is at version 2 now). Nothing of yours was saved."
    )
    assert "Reference answer now, as bob saved it at " in " ".join(texts(ann, "caption"))
    assert "Bob's reference" in [c.value for c in ann.code]  # their value, shown
    assert not any("reload" in t.lower() for kind in ("error", "caption", "warning") for t in texts(ann, kind))
    pk = store.sessions.find("review", "r-tools")
    assert store.sessions.get(pk).session.goal is None  # nothing of Ann's was saved

    ann.button(key=resolution).click()
    run(ann)
    assert not any("was not saved" in e for e in plain_texts(ann, "error"))
    stored = store.sessions.get(pk)
    assert stored.session.reference == "Bob's reference"  # Bob's change stays either way
    if resolution == "take_theirs":
        assert stored.version == 2 and stored.session.goal is None
        assert by_prefix(ann.text_area, "s-reference-").value == "Bob's reference"
        assert by_prefix(ann.text_area, "s-goal-").value == ""  # Ann's typing is dropped
    else:
        assert stored.version == 3 and stored.session.goal == "Find order 7"
        assert [(e.author, e.field) for e in store.sessions.history(pk)] == [("bob", "reference"), ("ann", "goal")]
        assert by_prefix(ann.text_area, "s-goal-").value == "Find order 7"
        assert "Ground truth saved." in texts(ann, "success")
    # Either way Ann's forms are on the current version now: her next save goes through.
    by_prefix(ann.text_area, "s-goal-").input("Track order 7")
    _submit(ann, "truth-")
    assert store.sessions.get(pk).session.goal == "Track order 7"
    assert store.sessions.get(pk).session.reference == "Bob's reference"


def test_a_turns_conflict_is_announced_at_the_top_and_said_under_the_turn(db: Path, store: Store) -> None:
    ann = _review(reviewer="ann")
    bob = _review(reviewer="bob")
    by_prefix(bob.text_area, "t-obs-2-").input("Bob's note on turn 3")
    _submit(bob, "turn-form-2-")
    assert "Turn 3 saved." in texts(bob, "success")
    by_prefix(ann.text_area, "t-gt-2-").input("Ann's answer")
    _submit(ann, "turn-form-2-")
    # At the top, a warning (not a faint caption) that says where the choice is.
    assert any(w.startswith("Turn 3 was not saved: someone else saved this session first.") and "under turn 3" in w
               for w in texts(ann, "warning"))  # fmt: skip
    [box] = [e for e in plain_texts(ann, "error") if "was not saved" in e]
    assert box.startswith("Turn 3 was not saved: bob changed Turn 3 · Observation in r-tools since you opened it")
    assert "Bob's note on turn 3" in [c.value for c in ann.code]
    assert any("st-key-conflict_box" in h.proto.body for h in ann.html)  # scrolled to, once
    run(ann)
    assert not any("st-key-conflict_box" in h.proto.body for h in ann.html)
    ann.button(key="reapply").click()
    run(ann)
    assert "Turn 3 saved." in texts(ann, "success")  # said under the turn
    truth = store.sessions.get(store.sessions.find("review", "r-tools")).session.turn_truth[2]
    assert (truth.ground_truth, truth.observation) == ("Ann's answer", "Bob's note on turn 3")


def test_saved_is_said_beside_its_button_not_in_a_toast(db: Path, store: Store) -> None:
    at = _review()
    assert at.button(key="approve_next").proto.type == "primary"  # (not in a queue: the page's primary action)
    at.button(key="flag").click()
    run(at)
    assert "r-tools set to flagged." in texts(at, "success") and not at.toast
    run(at)  # (the draft of what is typed reruns the page right after a save: still said)
    assert "r-tools set to flagged." in texts(at, "success")
    at.session_state["review_saved"] = {**at.session_state["review_saved"], "at": 0.0}  # a while later
    run(at)
    assert "r-tools set to flagged." not in texts(at, "success")  # said for a few seconds, then no more
    at.button(key="approve_next").click()
    run(at)
    assert at.query_params["session"] == "r-second"
    assert "r-tools set to approved." in texts(at, "success")  # the session left, named
    by_prefix(at.text_area, "s-goal-").input("A goal")
    _submit(at, "truth-")
    assert texts(at, "success") == ["Ground truth saved."] and not at.toast


def test_load_their_version(db: Path, store: Store) -> None:
    ann = _review(reviewer="ann")
    bob = _review(reviewer="bob")
    bob.button(key="flag").click()
    run(bob)
    run(ann)
    assert any("bob changed this session" in w for w in texts(ann, "warning"))
    ann.button(key="load_theirs").click()
    run(ann)
    assert not any("changed this session" in w for w in texts(ann, "warning"))
    assert "version 2" in texts(ann, "caption")[0]
    ann.button(key="approve").click()
    run(ann)
    assert store.sessions.get(store.sessions.find("review", "r-tools")).session.status == "approved"


# -- the other tabs ---------------------------------------------------------------------------------------


def test_history_and_restore(db: Path, store: Store) -> None:
    at = _review()
    pk = store.sessions.find("review", "r-tools")
    for text in ("First rewrite.", "Second rewrite."):
        by_prefix(at.text_area, "s-reference-").input(text)
        _submit(at, "truth-")
    first, second = store.sessions.history(pk)
    _tab(at, "History")
    table = at.dataframe[0].value
    assert list(table["edit"]) == [second.id, first.id]  # newest first
    assert list(table["by"]) == ["ann", "ann"] and list(table["field"]) == ["Reference answer", "Reference answer"]
    assert list(table["at"]) == [second.at[:16].replace("T", " "), first.at[:16].replace("T", " ")]  # with the time
    assert "Select an edit to read its new and old values in full." in texts(at, "caption")
    at.session_state[by_prefix(at.dataframe, "history-").key] = {"selection": {"rows": [0], "columns": []}}
    run(at)
    title = f"#{second.id} · Reference answer · by ann · {second.at[:16].replace('T', ' ')}"
    assert f"**{literal_name(title)}**" in texts(at, "markdown")
    assert [c.value for c in at.code] == ["Second rewrite.", "First rewrite."]  # new, then before: in full
    # The newest edit is the session as it is: not offered to restore to.
    assert by_prefix(at.selectbox, "restore_to-").options == [f"#{first.id} · Reference answer · by ann · "
                                                              f"{first.at[:16].replace('T', ' ')}"]  # fmt: skip
    by_prefix(at.selectbox, "restore_to-").set_value(first.id)
    by_prefix(at.button, "restore-").click()
    run(at)
    assert f"Restored to the state after edit #{first.id}." in texts(at, "success")
    assert store.sessions.get(pk).session.reference == "First rewrite."
    assert store.sessions.history(pk)[-1].reason == f"restored to the state after edit #{first.id}"
    assert len(at.dataframe[0].value) == 3
    _tab(at, "Truth")
    assert by_prefix(at.text_area, "s-reference-").value == "First rewrite."


def test_history_of_an_untouched_session(db: Path) -> None:
    at = _tab(_review(), "History")
    assert "No edit yet: the session is as it was imported." in texts(at, "info")


def test_comments(db: Path, store: Store) -> None:
    at = _tab(_review(), "Comments")
    pk = store.sessions.find("review", "r-tools")
    by_prefix(at.text_area, "comment_body-").input("Check the <b>date</b> [here](javascript:x)")
    _submit(at, "comment-")
    [comment] = store.labels.comments(pk)
    assert (comment.author, comment.body) == ("ann", "Check the <b>date</b> [here](javascript:x)")
    [shown] = [m for m in texts(at, "markdown") if m.startswith("**ann** · ")]
    assert shown.endswith(literal_markdown(comment.body))
    _submit(at, "comment-")  # an empty comment
    assert "a comment needs some text" in texts(at, "error")
    assert len(store.labels.comments(pk)) == 1


def test_verdicts(db: Path, store: Store) -> None:
    at = _tab(_review(), "Verdict")
    pk = store.sessions.find("review", "r-tools")
    by_prefix(at.segmented_control, "v-label-").set_value("pass")
    run(at)
    assert [(v.author, v.name, v.value) for v in store.labels.verdicts(pk)] == [("ann", "label", 1.0)]
    by_prefix(at.segmented_control, "v-politeness-").set_value(4)
    run(at)
    by_prefix(at.segmented_control, "v-label-").set_value("fail")
    run(at)
    assert {(v.author, v.name, v.value) for v in store.labels.verdicts(pk)} == {
        ("ann", "label", 0.0),
        ("ann", "rubric:politeness", 4.0),
    }
    # Another reviewer sees Ann's verdicts beside their own (empty) ones.
    bob = _tab(_review(reviewer="bob"), "Verdict")
    assert by_prefix(bob.segmented_control, "v-label-").value is None
    assert by_prefix(at.segmented_control, "v-politeness-").value == 4
    # One line a reviewer, pass or fail first (a compact list: a long name cannot push the verdicts out of sight).
    [others] = [m for m in texts(bob, "markdown") if m.startswith("- **ann** · ")]
    assert re.fullmatch(r"- \*\*ann\*\* · fail · politeness 4 · \d{4}-\d\d-\d\d \d\d:\d\d", others), others
    # Without a name the verdicts cannot be given.
    nobody = _tab(_review(reviewer=None), "Verdict")
    assert by_prefix(nobody.segmented_control, "v-label-").disabled


def test_scores_of_the_sample_runs(db: Path, store: Store) -> None:
    at = _tab(_review(dataset="sample-ragas", session=""), "Scores")
    ref = at.query_params["session"]  # no session in the link: the first of the dataset
    pk = store.sessions.find_ref("sample-ragas", ref)
    expected = store.runs.for_session(pk)
    assert expected and {s.metric for s in expected} <= set(SAMPLE_METRICS)
    table = at.dataframe[0].value
    assert len(table) == len(expected)
    named = {s.metric + ("" if s.turn is None else f" · turn {s.turn + 1}") for s in expected}
    assert set(table["metric"]) == named
    assert {"tool_call_accuracy", "turn_count"} <= set(table["metric"])
    shown = dict(zip(table["metric"], table["value"], strict=True))
    for s in expected:
        value = shown[s.metric + ("" if s.turn is None else f" · turn {s.turn + 1}")]
        assert math.isnan(value) if s.value is None else value == pytest.approx(s.value)


def test_scores_of_an_unscored_session(db: Path, store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "new.jsonl", review_sessions()[1:2]), "unscored", workers=1)
    at = _tab(_review(dataset="unscored", session="r-second"), "Scores")
    assert "No run has scored this session yet." in texts(at, "info")
    assert not at.dataframe


def test_the_diff_of_the_answer_and_the_reference(db: Path) -> None:
    at = _tab(_review(), "Diff")
    assert any("1 word only in the answer (struck), 1 word only in the reference" in c for c in texts(at, "caption"))
    markdown = texts(at, "markdown")
    assert any("~~depot~~" in m and "warehouse" in m for m in markdown)
    at = _tab(_review(session="r-second"), "Diff")
    assert "The diff needs both a final answer and a reference answer." in texts(at, "info")


def test_hostile_message_text_is_shown_literally(db: Path) -> None:
    at = _review(session="r-xss")
    said = [md.value for m in at.chat_message for md in m.markdown]
    assert literal_markdown("\n".join(XSS)) in said  # the user's message is there...
    assert literal_markdown("Reply: " + " ".join(XSS)) in said
    for value in texts(at, "markdown"):  # ...and nothing on the page is markup
        assert not re.search(r"(?<!\\)<", value), value
        assert "![" not in value and "](javascript:" not in value and "javascript:" not in value
        assert "http://" not in value


def test_a_failed_runs_error_is_shown_above_the_transcript(store: Store) -> None:
    """A trace whose span failed (MLflow: status ERROR and its exception event) is read with the error; the
    page says so before anything else, and a session without one shows no such banner."""
    trace = Path(__file__).parent / "data" / "real" / "traces" / "mlflow_error_trace.json"
    report = import_file(store, trace, "traces", workers=1)
    assert report.new == 1 and report.failed == 0
    (pk,) = store.sessions.pks("traces")
    at = _review(session=store.sessions.get(pk).ref, dataset="traces")
    assert not at.exception
    errors = texts(at, "error")
    shown = "ConnectionError: Weather service unavailable (HTTP 503) (in span get_current_weather)"
    assert errors == [f"The run failed: {literal_markdown(shown)}"]  # the message is data: never markdown
    assert not [e for e in texts(_review(), "error") if e.startswith("The run failed")]


def test_an_embedded_image_is_shown_and_a_remote_one_named(store: Store, tmp_path: Path) -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Is this receipt paid?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
                    {"type": "image", "source": {"type": "url", "url": "https://images.example/r.png"}},
                ],
            },
            {"role": "assistant", "content": "Yes."},
        ],
    }
    source = tmp_path / "img.jsonl"
    source.write_text(json.dumps(request) + "\n", encoding="utf-8")  # as logged: an Anthropic request
    assert import_file(store, source, "images", workers=1).new == 1
    (pk,) = store.sessions.pks("images")
    at = _review(session=store.sessions.get(pk).ref, dataset="images")
    assert not at.exception
    (image,) = at.get("image")  # the embedded one, drawn
    assert [plain(c) for c in image.captions] == ["image/png"]  # (a caption is Markdown: shown as text)
    assert any("images.example/r.png" in c and "not loaded" in c for c in texts(at, "caption"))


def test_an_image_that_cannot_be_drawn_is_named_not_a_crash(store: Store, tmp_path: Path) -> None:
    not_png = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="  # an SVG, said to be a PNG
    row = {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{not_png}"}}]},
        {"role": "assistant", "content": "A drawing."},
    ]}  # fmt: skip
    source = tmp_path / "img.jsonl"
    source.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert import_file(store, source, "broken-image", workers=1).new == 1
    (pk,) = store.sessions.pks("broken-image")
    at = _review(session=store.sessions.get(pk).ref, dataset="broken-image")
    assert not at.exception and not at.get("image")
    assert any("cannot be drawn" in c for c in texts(at, "caption"))
