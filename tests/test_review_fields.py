"""The editable ground-truth fields: widget values to one save's changes, problems by field and row, the real store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dbutil import as_user
from formats_util import write_jsonl

from evalcore.importing import import_file
from evalcore.schema import Session, TurnTruth
from evalcore.store import SESSION_FIELDS, TURN_FIELDS, Store, open_store
from evalcore.views.review import (
    RUBRIC_SCALE_NAMES,
    SESSION_EDITORS,
    TURN_EDITORS,
    FieldProblem,
    calls_from_conversation,
    form_values,
    guidelines_text,
    rubric_rows,
    session_changes,
    turn_changes,
    turn_form_values,
)

CONVERSATION = [
    {"role": "user", "content": "Is order 7 shipped?"},
    {"role": "assistant", "tool_calls": [{"id": "c1", "name": "get_order", "args": {"id": 7, "fields": ["status"]}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
    {"role": "assistant", "content": "Yes, it shipped yesterday."},
    {"role": "user", "content": "And order 8?"},
    {"role": "assistant", "content": "Order 8 is still packing."},
]

#: Hand-made sessions, from bare to every field set in every shape (and some awkward values).
SESSIONS = [
    Session(),
    Session.model_validate({"messages": CONVERSATION}),
    Session.model_validate(
        {
            "messages": CONVERSATION,
            "goal": "Know where order 7 is",
            "reference": "Order 7 shipped yesterday.\n\nIt arrives Friday.",
            "reference_tool_calls": [
                {"id": "r1", "name": "get_order", "args": {"id": 7}, "metadata": {"step": 1}},
                {"name": "notify", "args": {}},
            ],
            "rubrics": {f"score{i}_description": f"level {i}" for i in range(1, 6)},
            "reference_topics": ["orders", "shipping"],
            "guidelines": {"tone": ["Be polite.", "[not a group]"], "safety": ["\\never share PII"], "empty": []},
            "expected_retrieved_context": [{"content": "Orders ship in 2 days.", "doc_uri": "kb://ship"}],
            "tags": ["gold", "orders"],
            "turn_truth": [{"qa_id": "q1", "ground_truth": "Yes.", "weight": 0.4, "expected_tool_usage": {"a": [1]}}],
        }
    ),
    Session.model_validate(
        {
            "messages": CONVERSATION,
            "expected_facts": ["ships in 2 days", "a fact\nwith a line break"],
            "guidelines": ["Answer in English.", "[looks like a group]", "  indented  "],
            "rubrics": {"accuracy": ""},
            "reference_topics": [],
            "reference_tool_calls": [],
            "goal": "   ",
        }
    ),
]


def test_the_editors_cover_every_field_the_store_saves() -> None:
    assert [spec.name for spec in SESSION_EDITORS] == [*SESSION_FIELDS, "tags"]
    assert [spec.name for spec in TURN_EDITORS] == list(TURN_FIELDS)
    kinds = {spec.name: spec.kind for spec in SESSION_EDITORS + TURN_EDITORS}
    assert kinds == {
        "goal": "text",
        "reference": "text",
        "reference_tool_calls": "tool_calls",
        "rubrics": "rubrics",
        "reference_topics": "lines",
        "expected_facts": "lines",
        "guidelines": "guidelines",
        "expected_retrieved_context": "json",
        "tags": "tags",
        "qa_id": "line",
        "ground_truth": "text",
        "observation": "text",
        "weight": "number",
        "expected_tool_usage": "json",
    }
    assert all(spec.label and spec.help for spec in SESSION_EDITORS + TURN_EDITORS)


@pytest.mark.parametrize("session", SESSIONS)
def test_an_untouched_form_changes_nothing(session: Session) -> None:
    result = session_changes(session, form_values(session))
    assert result.changes == {} and result.ok
    for truth in [*session.turn_truth, TurnTruth()]:
        result = turn_changes(truth, turn_form_values(truth))
        assert result.changes == {} and result.ok


def _retyped(form: dict[str, Any]) -> dict[str, Any]:
    """The same values as a reviewer would retype them: rows copied, text with extra blank lines and spaces."""
    out: dict[str, Any] = {}
    for name, value in form.items():
        if isinstance(value, str):
            out[name] = "\n" + value + "\n\n" if name != "goal" and name != "reference" else value
        elif isinstance(value, list):
            out[name] = [
                {k: f" {v} " for k, v in row.items()} if isinstance(row, dict) else f" {row} " for row in value
            ]
        else:
            out[name] = value
    return out


@pytest.mark.parametrize("session", SESSIONS[:3])
def test_parsing_is_the_inverse_of_form_values(session: Session) -> None:
    # Retyped values that differ from what the form showed are parsed, and parse to the same values.
    form = _retyped(form_values(session))
    assert form != form_values(session) or session == Session()
    result = session_changes(session, form)
    assert result.changes == {} and result.ok


def test_values_are_turned_into_changes_in_the_store_s_shape() -> None:
    session = SESSIONS[1]
    form = {
        "goal": "Track the order",
        "reference": "It shipped.",
        "reference_tool_calls": [
            {"name": " get_order ", "arguments": '{"id": 7}'},
            {"name": "", "arguments": ""},  # an empty row
            {"name": "notify", "arguments": ""},
        ],
        "rubrics": [{"name": "accuracy", "description": "States the status."}, {"name": "", "description": None}],
        "reference_topics": "orders\n\n  shipping  \n",
        "guidelines": "[tone]\nBe polite.\n\n[safety]\nNo PII.",
        "expected_retrieved_context": '[{"content": "Orders ship in 2 days.", "doc_uri": "kb://ship"}]',
        "tags": ["gold", " gold ", "", "orders"],
    }
    result = session_changes(session, form)
    assert result.ok
    assert result.changes == {
        "goal": "Track the order",
        "reference": "It shipped.",
        "reference_tool_calls": [{"name": "get_order", "args": {"id": 7}}, {"name": "notify"}],
        "rubrics": {"accuracy": "States the status."},
        "reference_topics": ["orders", "shipping"],
        "guidelines": {"tone": ["Be polite."], "safety": ["No PII."]},
        "expected_retrieved_context": [{"content": "Orders ship in 2 days.", "doc_uri": "kb://ship"}],
        "tags": ["gold", "orders"],
    }


def test_only_fields_that_differ_and_fields_in_the_form_are_changes() -> None:
    session = SESSIONS[2]
    form = form_values(session) | {"goal": "A new goal"}
    assert session_changes(session, form).changes == {"goal": "A new goal"}
    assert session_changes(session, {"reference_topics": "orders\nshipping"}).changes == {}
    assert session_changes(session, {}).changes == {}


def test_clearing_a_field_is_a_change_to_none() -> None:
    session = SESSIONS[2]
    form = {
        "goal": "",
        "reference": "  \n",
        "reference_tool_calls": [],
        "rubrics": [],
        "reference_topics": "",
        "guidelines": "\n",
        "expected_retrieved_context": "",
        "tags": [],
    }
    result = session_changes(session, form)
    assert result.ok
    assert result.changes == {name: None for name in form if name != "tags"} | {"tags": []}
    truth = session.turn_truth[0]
    changes = turn_changes(truth, {"qa_id": " ", "ground_truth": "", "weight": None, "expected_tool_usage": ""})
    assert changes.changes == {"qa_id": None, "ground_truth": None, "weight": None, "expected_tool_usage": None}


def test_an_unchanged_reference_call_keeps_its_id_and_metadata() -> None:
    session = SESSIONS[2]
    rows = form_values(session)["reference_tool_calls"]
    assert rows == [
        {"name": "get_order", "arguments": '{\n  "id": 7\n}'},
        {"name": "notify", "arguments": "{}"},
    ]
    rows = [*rows, {"name": "cancel", "arguments": '{"id": 7}'}]
    changes = session_changes(session, {"reference_tool_calls": rows}).changes
    assert changes == {
        "reference_tool_calls": [
            {"id": "r1", "name": "get_order", "args": {"id": 7}, "metadata": {"step": 1}},
            {"name": "notify"},
            {"name": "cancel", "args": {"id": 7}},
        ]
    }


def test_tool_call_problems_name_field_and_row() -> None:
    rows = [
        {"name": "ok", "arguments": '{"a": 1}'},
        {"name": "get_order", "arguments": '{"id": 7 "x": 1}'},
        {"name": "list", "arguments": "[1, 2]"},
        {"name": "", "arguments": '{"id": 7}'},
        {"name": None, "arguments": "{bad"},
        {"name": "nan", "arguments": '{"x": NaN}'},
    ]
    result = session_changes(SESSIONS[1], {"reference_tool_calls": rows, "goal": "still computed"})
    assert not result.ok
    assert [str(p) for p in result.problems] == [
        "reference_tool_calls row 2: arguments are not valid JSON: Expecting ',' delimiter (char 9)",
        "reference_tool_calls row 3: arguments must be a JSON object",
        "reference_tool_calls row 4: a tool call needs a name",
        "reference_tool_calls row 5: arguments are not valid JSON: "
        "Expecting property name enclosed in double quotes (char 1)",
        "reference_tool_calls row 5: a tool call needs a name",
        "reference_tool_calls row 6: arguments are not valid JSON: NaN is not allowed in JSON",
    ]
    assert result.problems[0] == FieldProblem(
        "reference_tool_calls", 2, "arguments are not valid JSON: Expecting ',' delimiter (char 9)"
    )
    # The fields without problems are still worked out (the page refuses the save anyway).
    assert result.changes == {"goal": "still computed"}


def test_tool_call_rows_from_a_data_frame_and_dict_arguments() -> None:
    frame = pd.DataFrame([{"name": "get_order", "arguments": '{"id": 7}'}, {"name": None, "arguments": None}])
    result = session_changes(SESSIONS[1], {"reference_tool_calls": frame})
    assert result.ok and result.changes == {"reference_tool_calls": [{"name": "get_order", "args": {"id": 7}}]}
    result = session_changes(SESSIONS[1], {"reference_tool_calls": [{"name": "x", "arguments": {"k": "v"}}]})
    assert result.changes == {"reference_tool_calls": [{"name": "x", "args": {"k": "v"}}]}


def test_rubric_rows_problems_and_the_score_scale() -> None:
    assert tuple(f"score{i}_description" for i in range(1, 6)) == RUBRIC_SCALE_NAMES
    rows = rubric_rows({"score2_description": "fair"}, scale=True)
    assert [r["name"] for r in rows] == [
        "score2_description",
        *(n for n in RUBRIC_SCALE_NAMES if n != "score2_description"),
    ]
    assert rubric_rows(None) == [] and len(rubric_rows(None, scale=True)) == 5
    # Unfilled scale rows are left out.
    rows[1]["description"] = "very poor"
    assert session_changes(Session(), {"rubrics": rows}).changes == {
        "rubrics": {"score2_description": "fair", "score1_description": "very poor"}
    }
    result = session_changes(
        Session(),
        {
            "rubrics": [
                {"name": "a", "description": "x"},
                {"name": "", "description": "no name"},
                {"name": "a", "description": "again"},
            ]
        },
    )
    assert [str(p) for p in result.problems] == [
        "rubrics row 2: a rubric needs a name",
        "rubrics row 3: the rubric name 'a' is used twice",
    ]
    assert result.changes == {}


def test_guidelines_text_both_ways() -> None:
    text = guidelines_text({"tone": ["Be polite.", "[draft]"], "safety": ["\\x"]})
    assert text == "[tone]\nBe polite.\n\\[draft]\n\n[safety]\n\\\\x"
    assert guidelines_text(["a", "[b]"]) == "a\n\\[b]"
    assert guidelines_text(None) == "" and guidelines_text([]) == ""
    session = Session()
    assert session_changes(session, {"guidelines": text}).changes == {
        "guidelines": {"tone": ["Be polite.", "[draft]"], "safety": ["\\x"]}
    }
    assert session_changes(session, {"guidelines": "one\n  two  \n\n\\[three]"}).changes == {
        "guidelines": ["one", "two", "[three]"]
    }
    result = session_changes(session, {"guidelines": "loose\n[tone]\nok\n[ ]\nx"})
    assert [str(p) for p in result.problems] == [
        "guidelines row 1: 'loose' is above the first [group] line: put it under a group, or use no groups",
        "guidelines row 4: a group needs a name between [ and ]",
    ]
    # A group named twice is one group.
    assert session_changes(session, {"guidelines": "[a]\nx\n[b]\ny\n[a]\nz"}).changes == {
        "guidelines": {"a": ["x", "z"], "b": ["y"]}
    }


def test_json_fields() -> None:
    result = session_changes(Session(), {"expected_retrieved_context": '{"content": "x"}'})
    assert [str(p) for p in result.problems] == [
        'expected_retrieved_context: must be a JSON list of chunks, like [{"content": "...", "doc_uri": "..."}]'
    ]
    result = session_changes(Session(), {"expected_retrieved_context": '[{"content": "x"}, {"text": "y"}, 3]'})
    assert [str(p) for p in result.problems] == [
        "expected_retrieved_context row 2: text: Extra inputs are not permitted",
        "expected_retrieved_context row 3: Input should be a valid dictionary or instance of ContextChunk",
    ]
    result = session_changes(Session(), {"expected_retrieved_context": '[\n  {"content": "x"\n]'})
    assert [str(p) for p in result.problems] == [
        "expected_retrieved_context: not valid JSON: Expecting ',' delimiter (line 3, column 1)"
    ]
    truth = TurnTruth()
    assert [str(p) for p in turn_changes(truth, {"expected_tool_usage": "[1]"}).problems] == [
        "expected_tool_usage: must be a JSON object"
    ]
    assert turn_changes(truth, {"expected_tool_usage": '{"tools": ["a"]}'}).changes == {
        "expected_tool_usage": {"tools": ["a"]}
    }
    assert turn_changes(truth, {"expected_tool_usage": {"tools": []}}).changes == {"expected_tool_usage": {"tools": []}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(0.5, 0.5), (0, 0.0), ("0.25", 0.25), (" 1 ", 1.0), (None, None), ("", None), (2, 2.0)],
)
def test_weight_values(raw: Any, expected: float | None) -> None:
    result = turn_changes(TurnTruth(weight=0.7), {"weight": raw})
    assert result.ok and result.changes == {"weight": expected}


@pytest.mark.parametrize("raw", [-0.1, "-1", "abc", float("nan"), float("inf"), True])
def test_bad_weights(raw: Any) -> None:
    result = turn_changes(TurnTruth(), {"weight": raw})
    assert not result.ok and result.changes == {}
    (problem,) = result.problems
    assert problem.field == "weight" and problem.row is None
    assert problem.message.startswith("weight must be a number >= 0")


def test_turn_text_fields() -> None:
    truth = TurnTruth(qa_id="q1", observation="too terse")
    result = turn_changes(truth, {"qa_id": " q2 ", "ground_truth": "Yes.\n", "observation": "too terse"})
    assert result.changes == {"qa_id": "q2", "ground_truth": "Yes.\n"}


def test_tags_from_text() -> None:
    assert session_changes(Session(), {"tags": "gold, orders\nhard,,gold"}).changes == {
        "tags": ["gold", "orders", "hard"]
    }


def test_a_reference_and_expected_facts_may_both_be_set() -> None:
    session = Session(reference="It shipped.")
    result = session_changes(session, {"expected_facts": "shipped"})
    assert result.ok and result.changes == {"expected_facts": ["shipped"]}
    both = Session(reference="r", expected_facts=["f"])
    assert session_changes(both, {"reference": "r2"}).changes == {"reference": "r2"}


def test_calls_from_the_conversation() -> None:
    session = Session.model_validate(
        {
            "messages": [
                *CONVERSATION,
                {"role": "assistant", "tool_calls": [{"name": "a", "args": {"é": [1, 2]}}, {"name": "b"}]},
            ]
        }
    )
    assert calls_from_conversation(session) == [
        {"name": "get_order", "arguments": '{\n  "id": 7,\n  "fields": [\n    "status"\n  ]\n}'},
        {"name": "a", "arguments": '{\n  "é": [\n    1,\n    2\n  ]\n}'},
        {"name": "b", "arguments": "{}"},
    ]
    assert calls_from_conversation(Session()) == []
    # Copied rows are valid input for the editor.
    rows = calls_from_conversation(session)
    assert session_changes(Session(), {"reference_tool_calls": rows}).changes == {
        "reference_tool_calls": [
            {"name": "get_order", "args": {"id": 7, "fields": ["status"]}},
            {"name": "a", "args": {"é": [1, 2]}},
            {"name": "b"},
        ]
    }


# -- through the real store --------------------------------------------------------------------


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


RAGAS_ROW = {
    "user_input": [
        {"content": "Is order 7 shipped?", "type": "human"},
        {"content": "", "type": "ai", "tool_calls": [{"name": "get_order", "args": {"id": 7}}]},
        {"content": '{"status": "shipped"}', "type": "tool"},
        {"content": "Yes, it shipped yesterday.", "type": "ai"},
        {"content": "And order 8?", "type": "human"},
        {"content": "Order 8 is still packing.", "type": "ai"},
    ],
    "reference_topics": ["orders"],
    "rubrics": {"score1_description": "wrong", "score5_description": "right"},
}


def test_a_ragas_session_round_trips_through_the_store(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [RAGAS_ROW]), "d")
    (pk,) = store.sessions.pks("d")
    stored = store.sessions.get(pk)
    assert session_changes(stored.session, form_values(stored.session)).changes == {}
    form = form_values(stored.session) | {
        "reference": "Order 7 shipped yesterday; order 8 is packing.",
        "reference_tool_calls": calls_from_conversation(stored.session),
        "rubrics": [*form_values(stored.session)["rubrics"], {"name": "score3_description", "description": "partly"}],
        "reference_topics": "orders\nshipping",
        "guidelines": "[tone]\nBe polite.",
        "expected_retrieved_context": '[{"content": "Orders ship in 2 days.", "doc_uri": "kb://ship"}]',
        "tags": ["gold"],
    }
    result = session_changes(stored.session, form)
    assert result.ok
    version = as_user(store, "t").sessions.save(pk, result.changes, base_version=stored.version)
    after = store.sessions.get(pk)
    assert after.version == version == stored.version + 1
    session = after.session
    assert session.reference == "Order 7 shipped yesterday; order 8 is packing."
    assert [(c.name, c.args) for c in session.reference_tool_calls or []] == [("get_order", {"id": 7})]
    assert session.rubrics == {
        "score1_description": "wrong",
        "score5_description": "right",
        "score3_description": "partly",
    }
    assert session.reference_topics == ["orders", "shipping"]
    assert session.guidelines == {"tone": ["Be polite."]}
    assert session.expected_retrieved_context is not None
    assert session.expected_retrieved_context[0].doc_uri == "kb://ship"
    assert session.tags == ["gold"]
    # What was saved shows as the form again, and saving that form changes nothing.
    assert session_changes(session, form_values(session)).changes == {}
    assert session_changes(session, form).changes == {}
    # Every changed field is one entry of the history.
    assert sorted(e.field for e in store.sessions.history(pk)) == sorted(result.changes)


def test_turn_changes_round_trip_through_the_store(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [RAGAS_ROW]), "d")
    (pk,) = store.sessions.pks("d")
    stored = store.sessions.get(pk)
    turns = stored.session.turns()
    form = turn_form_values(turns[1].truth) | {
        "qa_id": "q2",
        "ground_truth": "Still packing.",
        "weight": "0.6",
        "expected_tool_usage": '{"tools": []}',
    }
    result = turn_changes(turns[1].truth, form)
    assert result.ok
    version = as_user(store, "t").sessions.save(pk, result.changes, base_version=stored.version, turn=1)
    truth = store.sessions.get(pk).session.turn_truth[1]
    assert (truth.qa_id, truth.ground_truth, truth.weight, truth.expected_tool_usage) == (
        "q2",
        "Still packing.",
        0.6,
        {"tools": []},
    )
    assert turn_changes(truth, turn_form_values(truth)).changes == {}
    # Clearing every field of the last turn: the store trims the empty entry.
    cleared = turn_changes(truth, {"qa_id": "", "ground_truth": "", "weight": None, "expected_tool_usage": ""})
    as_user(store, "t").sessions.save(pk, cleared.changes, base_version=version, turn=1)
    assert store.sessions.get(pk).session.turn_truth == []


def test_an_evalcore_session_with_every_field_round_trips(store: Store, tmp_path: Path) -> None:
    data = SESSIONS[2].model_dump(mode="json", exclude_defaults=True)
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"schema_version": 1, "session_id": "s1", **data}) + "\n", encoding="utf-8")
    import_file(store, path, "d")
    stored = store.sessions.get(store.sessions.find("d", "s1"))
    form = form_values(stored.session)
    assert session_changes(stored.session, form).changes == {}
    # Reorder the reference calls: both keep their ids and metadata.
    form["reference_tool_calls"] = list(reversed(form["reference_tool_calls"]))
    result = session_changes(stored.session, form)
    as_user(store, "t").sessions.save(stored.pk, result.changes, base_version=stored.version)
    calls = store.sessions.get(stored.pk).session.reference_tool_calls or []
    assert [(c.name, c.id, c.metadata) for c in calls] == [("notify", None, {}), ("get_order", "r1", {"step": 1})]


def test_the_store_keeps_a_reference_and_expected_facts_both(store: Store, tmp_path: Path) -> None:
    """The labeler's finding (issue 24): a reference answer could not be saved beside a file's expected facts."""
    row = dict(RAGAS_ROW, reference="It shipped.")
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [row]), "d")
    (pk,) = store.sessions.pks("d")
    stored = store.sessions.get(pk)
    result = session_changes(stored.session, {"expected_facts": "shipped\non Monday"})
    assert result.ok
    as_user(store, "t").sessions.save(pk, result.changes, base_version=stored.version)
    saved = store.sessions.get(pk).session
    assert (saved.reference, saved.expected_facts) == ("It shipped.", ["shipped", "on Monday"])
