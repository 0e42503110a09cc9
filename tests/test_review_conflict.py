"""A refused save on Review in the page's words (evalcore.views.review.conflict), and the Review tables that name
fields the same way (history, the restore targets, other reviewers' verdicts)."""

from __future__ import annotations

from evalcore.store.labels import Verdict
from evalcore.store.records import Edit
from evalcore.views.review.conflict import MOST_VALUES, conflict_view, field_label, value_text
from evalcore.views.review.tables import edit_detail, edit_label, history_rows, other_verdicts, restore_targets


def _edit(id: int, field: str, new: object, *, turn: int | None = None, author: str = "bob", version: int = 2,
          old: object = None) -> Edit:  # fmt: skip
    return Edit(id, 7, turn, field, old, new, author, f"2026-11-27T10:0{id % 10}:30+00:00", None, version)


def test_a_field_is_named_as_the_page_labels_it() -> None:
    assert field_label("reference") == "Reference answer"
    assert field_label("reference_tool_calls") == "Reference tool calls"
    assert field_label("status") == "Status"
    assert field_label("observation", 2) == "Turn 3 · Observation"  # 0-based in the store, 1-based on the page
    assert field_label("turns[2].observation") == "Turn 3 · Observation"  # the store's path, read too
    assert field_label("turns[0].ground_truth") == "Turn 1 · Reference answer"
    assert field_label("turns[10].weight") == "Turn 11 · Weight"
    assert field_label("something_new") == "something_new"  # no label: as it is
    assert field_label("turns[x].observation") == "turns[x].observation"


def test_a_value_as_a_person_reads_it() -> None:
    assert value_text("Bob's reference") == "Bob's reference"
    assert value_text(None) == value_text("") == value_text([]) == "(empty)"
    assert value_text({"tools": ["get_order"]}) == '{\n  "tools": [\n    "get_order"\n  ]\n}'
    assert value_text(0.5) == "0.5"


def test_a_conflict_says_who_changed_which_field_and_their_value() -> None:
    edits = [
        _edit(1, "goal", "old goal", version=1, author="ann"),  # before the forms' version: not part of it
        _edit(2, "reference", "First try", version=2),
        _edit(3, "observation", "slow", turn=2, version=3, author="cy"),
        _edit(4, "reference", "Bob's reference", version=4),
    ]
    said = conflict_view("Ground truth", "conflict.jsonl · session 1", 1, edits, me="ann")
    assert said.message == (
        "Ground truth was not saved: bob and cy changed Turn 3 · Observation, Reference answer in "
        "conflict.jsonl · session 1 since you opened it (your forms show version 1; it is at version 4 now). "
        "Nothing of yours was saved."
    )
    assert "reload" not in said.message and "#" not in said.message and "turns[" not in said.message
    assert [(v.label, v.author, v.at, v.value) for v in said.values] == [
        ("Turn 3 · Observation", "cy", "2026-11-27 10:03", "slow"),
        ("Reference answer", "bob", "2026-11-27 10:04", "Bob's reference"),  # the latest of the field
    ]
    assert said.more == 0


def test_a_conflict_with_oneself_in_another_tab() -> None:
    said = conflict_view("Turn 2", "r-tools", 3, [_edit(5, "weight", 0.5, turn=1, author="ann", version=4)], "ann")
    assert said.message.startswith("Turn 2 was not saved: you (in another tab) changed Turn 2 · Weight in r-tools")
    assert [(v.author, v.value) for v in said.values] == [("you (in another tab)", "0.5")]


def test_a_conflict_of_many_fields_shows_the_latest_few() -> None:
    edits = [_edit(i, "weight", float(i), turn=i, version=2) for i in range(1, MOST_VALUES + 4)]
    said = conflict_view("Ground truth", "s", 1, edits, None)
    assert len(said.values) == MOST_VALUES and said.more == 3
    assert said.values[-1].label == f"Turn {MOST_VALUES + 4} · Weight"
    assert conflict_view("Status", "s", 1, [], None).message.startswith("Status was not saved: someone changed it")


def test_history_rows_and_an_edit_in_full() -> None:
    edits = [_edit(1, "reference", "First", old=None), _edit(2, "ground_truth", "Second", turn=0, old="First")]
    assert [(r.edit, r.at, r.by, r.field) for r in history_rows(edits)] == [
        (2, "2026-11-27 10:02", "bob", "Turn 1 · Reference answer"),  # newest first, with the time
        (1, "2026-11-27 10:01", "bob", "Reference answer"),
    ]
    detail = edit_detail(edits[1])
    assert (detail.title, detail.new, detail.old) == (
        "#2 · Turn 1 · Reference answer · by bob · 2026-11-27 10:02",
        "Second",
        "First",
    )
    assert edit_detail(edits[0]).old == "(empty)"
    assert edit_label(edits[0]) == "#1 · Reference answer · by bob · 2026-11-27 10:01"


def test_the_newest_edit_is_not_a_state_to_restore_to() -> None:
    edits = [_edit(1, "reference", "a"), _edit(2, "reference", "b"), _edit(3, "goal", "c")]
    assert restore_targets(edits) == [2, 1]  # newest first, without #3: the session is as it was after it
    assert restore_targets(edits[:1]) == []
    assert restore_targets([]) == []


def test_other_reviewers_verdicts_one_line_each() -> None:
    long_name = "a reviewer with a very long name " * 4
    verdicts = [
        Verdict(7, long_name, "rubric:politeness", 4.0, "2026-11-27T10:00:00"),
        Verdict(7, long_name, "label", 1.0, "2026-11-27T10:05:00"),
        Verdict(7, "cy", "label", 0.0, "2026-11-27T09:00:00"),
        Verdict(7, "cy", "rubric:tone\u202e", 2.5, "2026-11-27T09:01:00"),
    ]
    lines = other_verdicts(verdicts)
    assert [(o.reviewer, o.verdicts, o.at) for o in lines] == [
        (long_name, "pass · politeness 4", "2026-11-27 10:05"),  # pass or fail first; the time of the latest
        ("cy", "fail · tone\\u202e 2.5", "2026-11-27 09:01"),  # a reordering character shown as its escape
    ]
