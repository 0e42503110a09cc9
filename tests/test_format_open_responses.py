from __future__ import annotations

import json
from pathlib import Path

from formats_util import assert_round_trip, load_output, round_trip, sessions_of, write_jsonl

from evalcore import convert_file

TRACE = {
    "items": [
        {"type": "message", "id": "", "status": "completed", "role": "system",
         "content": [{"type": "input_text", "text": "You are a travel agent."}]},
        {"type": "message", "id": "m1", "status": "completed", "role": "user",
         "content": [{"type": "input_text", "text": "Book me to Rome on May 3."}]},
        {"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": "Search flights first."}]},
        {"type": "function_call", "id": "fc1", "call_id": "call_a", "name": "search_flights",
         "arguments": '{"to":"FCO","date":"2026-05-03"}', "status": "completed"},
        {"type": "function_call", "id": "fc2", "call_id": "call_b", "name": "get_user",
         "arguments": "{}", "status": "completed"},
        {"type": "function_call_output", "id": "o2", "call_id": "call_b", "output": '{"tier": "gold"}',
         "status": "completed"},
        {"type": "function_call_output", "id": "o1", "call_id": "call_a", "output": "AZ123 at 9:00",
         "status": "completed"},
        {"type": "reasoning", "id": "r2", "summary": [{"type": "summary_text", "text": "Offer AZ123."}]},
        {"type": "message", "id": "m2", "status": "completed", "role": "assistant", "phase": "final_answer",
         "content": [{"type": "output_text", "text": "AZ123 leaves at 9:00. Book it?", "annotations": []}]},
        {"type": "message", "role": "user", "content": "Yes please."},
        {"type": "message", "role": "developer", "content": "Confirm politely."},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Booked!"}]},
    ],
    "metadata": {"trace_id": "t-42", "source_type": "latticeflow", "model": "gpt-4o", "tags": ["travel"],
                 "total_tokens": 912},
    "FORMAT": "open_responses",
}  # fmt: skip


def test_trace_round_trip(tmp_path: Path) -> None:
    bare = [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "message", "role": "assistant", "content": "yo"},
    ]
    assert_round_trip(tmp_path, "open-responses", [TRACE, bare])


def test_items_become_messages_linked_by_call_id(tmp_path: Path) -> None:
    (session,) = sessions_of(write_jsonl(tmp_path / "t.jsonl", [TRACE]))
    assert session.session_id == "t-42" and session.tags == ["travel"]
    assert [m.role for m in session.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "system",
        "assistant",
    ]
    planner = session.messages[2]
    assert planner.reasoning == "Search flights first."
    assert [(c.id, c.name) for c in planner.calls] == [("call_a", "search_flights"), ("call_b", "get_user")]
    pairs = session.turns()[0].tool_results()
    assert [(c.id, r.text if r else None) for c, r in pairs] == [
        ("call_a", "AZ123 at 9:00"),
        ("call_b", '{"tier": "gold"}'),
    ]
    answer = session.messages[5]
    assert answer.reasoning == "Offer AZ123." and answer.text == "AZ123 leaves at 9:00. Book it?"
    assert session.messages[3].name == "get_user"


def test_whole_file_array_of_items_is_one_session(tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    path.write_text(json.dumps(TRACE["items"], indent=2))
    (session,) = sessions_of(path)
    assert len(session.messages) == 9


def test_from_openai_writes_parts_and_call_ids(tmp_path: Path) -> None:
    chat = {"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]}  # fmt: skip
    out = tmp_path / "t.jsonl"
    convert_file(write_jsonl(tmp_path / "o.jsonl", [chat]), out, to="open-responses")
    (trace,) = load_output(out)
    synthetic = {"id": "", "status": "completed"}  # LatticeFlow's mark of items made, not read
    assert trace["items"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}], **synthetic},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}", **synthetic},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny", **synthetic},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}], **synthetic},
    ]


def test_items_only_file_writes_items_and_ragas_gets_call_ids(tmp_path: Path) -> None:
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"type": "message", "role": "user", "content": "hi"}]))
    convert_file(items, tmp_path / "t.jsonl", to="open-responses")
    assert load_output(tmp_path / "t.jsonl") == [{"type": "message", "role": "user", "content": "hi"}]
    row = {
        "user_input": [
            {"content": "hi", "type": "human"},
            {"content": "", "type": "ai", "tool_calls": [{"name": "f", "args": {}}, {"name": "g", "args": {}}]},
            {"content": "ok", "type": "tool"},
            {"content": "ok2", "type": "tool"},
        ]
    }
    convert_file(write_jsonl(tmp_path / "r.jsonl", [row]), tmp_path / "o.jsonl", to="open-responses")
    (trace,) = load_output(tmp_path / "o.jsonl")
    kinds = [(i["type"], i.get("call_id")) for i in trace["items"]]
    assert kinds == [("message", None), ("function_call", "call_0"), ("function_call", "call_1"),
                     ("function_call_output", "call_0"), ("function_call_output", "call_1")]  # fmt: skip


def test_missing_call_id_names_the_field(tmp_path: Path) -> None:
    bad = {"items": [{"type": "function_call", "name": "x", "arguments": "{}"}]}
    report = convert_file(write_jsonl(tmp_path / "t.jsonl", [bad, TRACE]), tmp_path / "o.jsonl", to="evalcore")
    assert report.sessions == 1 and report.errors == 1
    assert str(report.problems[0]).endswith(":1: items[0].call_id: expected a string, got null")


def test_an_items_file_keeps_unknown_items_in_place(tmp_path: Path) -> None:
    items = [
        {"type": "message", "role": "user", "content": "Find me a hotel"},
        {"type": "message", "role": "assistant", "content": "Searching.", "id": "m2"},
        {"type": "web_search_call", "id": "ws1", "status": "completed"},
        {"type": "function_call", "call_id": "c1", "name": "book", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"role": "assistant", "content": "Booked."},
    ]
    path = tmp_path / "items.json"
    path.write_text(json.dumps(items))
    out = tmp_path / "out.json"
    report = convert_file(path, out, to="open-responses")
    assert report.errors == 0 and report.sessions == 1
    assert load_output(out) == items  # the same flat array of items, order and shapes kept


def test_content_parts_and_bare_items_come_back_as_they_were(tmp_path: Path) -> None:
    trace = {
        "items": [
            {"type": "message", "role": "user", "content": [{"type": "text", "text": "hi"},
             {"type": "input_audio", "input_audio": {"data": "AAA=", "format": "wav"}}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ]
    }  # fmt: skip
    assert_round_trip(tmp_path, "open-responses", [trace])


# -- LatticeFlow dataset rows: a column holds the Trace -----------------------------------------

ROW = {"sample_id": "s-1", "trace": TRACE, "target": "Booked!", "difficulty": "easy"}
ROW_AS_TEXT = {"conversation": json.dumps(TRACE), "target": "AZ123", "notes": None}


def test_dataset_rows_are_read_as_traces_not_databricks_rows(tmp_path: Path) -> None:
    # A row whose "trace" column holds a Trace once went to the Databricks reader (which has a trace column too).
    sessions = sessions_of(write_jsonl(tmp_path / "rows.jsonl", [ROW, ROW_AS_TEXT]))
    assert [s.provenance.format for s in sessions if s.provenance] == ["open-responses", "open-responses"]
    row, text = sessions
    assert row.session_id == "t-42" and row.reference == "Booked!" and len(row.messages) == 9
    assert row.tool_calls()[0].name == "search_flights" and row.messages[3].tool_call_id == "call_b"
    assert text.reference == "AZ123" and [m.text for m in text.messages] == [m.text for m in row.messages]
    # Any column name works when the Trace carries LatticeFlow's FORMAT mark; the first record decides.
    (other,) = sessions_of(write_jsonl(tmp_path / "c.jsonl", [{"input": "x", "recorded": TRACE}]))
    assert other.provenance is not None and other.provenance.format == "open-responses"


def test_dataset_rows_round_trip_and_take_the_reviewers_reference(tmp_path: Path) -> None:
    row, text = round_trip(tmp_path, "open-responses", [ROW, ROW_AS_TEXT])
    assert row == ROW
    assert list(text) == list(ROW_AS_TEXT) and json.loads(text.pop("conversation")) == TRACE  # text stays text
    assert text == {k: v for k, v in ROW_AS_TEXT.items() if k != "conversation"}
    (session,) = sessions_of(write_jsonl(tmp_path / "r.jsonl", [ROW]))
    session.reference = "Booked on AZ123."
    middle = tmp_path / "edited.jsonl"
    middle.write_text(session.model_dump_json() + "\n", encoding="utf-8")
    back = tmp_path / "back.jsonl"
    report = convert_file(middle, back, to="open-responses", source_format="evalcore")
    assert report.errors == 0
    (row,) = load_output(back)
    assert row == {**ROW, "target": "Booked on AZ123."}  # where LatticeFlow's scorers read it; nothing else moved


def test_a_bad_trace_in_a_row_names_the_column(tmp_path: Path) -> None:
    bad = {"trace": {"items": [{"type": "function_call", "name": "x", "arguments": "{}"}]}, "target": "t"}
    report = convert_file(write_jsonl(tmp_path / "t.jsonl", [ROW, bad]), tmp_path / "o.jsonl", to="evalcore")
    assert report.sessions == 1 and report.errors == 1
    assert str(report.problems[0]).endswith(":2: trace.items[0].call_id: expected a string, got null")
