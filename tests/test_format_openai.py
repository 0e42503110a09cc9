from __future__ import annotations

import json
from pathlib import Path

from formats_util import assert_round_trip, load_output, sessions_of, write_jsonl

from evalcore import convert_file

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
CHAT = {
    "messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}], "name": "ana"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "24C"},
        {"role": "assistant", "content": "Paris 18C, Rome 24C.", "weight": 1},
        {
            "role": "assistant",
            "content": "bad",
            "tool_calls": [{"id": "call_3", "type": "function", "function": {"name": "x", "arguments": "{not json"}}],
            "weight": 0,
        },
    ],
    "tools": TOOLS,
    "parallel_tool_calls": True,
}


def test_fine_tuning_rows_round_trip(tmp_path: Path) -> None:
    assert_round_trip(tmp_path, "openai", [CHAT, {"messages": [{"role": "user", "content": "hi"}]}])


def test_parallel_calls_link_to_results(tmp_path: Path) -> None:
    (session,) = sessions_of(write_jsonl(tmp_path / "o.jsonl", [CHAT]))
    assert session.messages[0].role == "system"
    assert session.messages[1].text == "Weather in Paris and Rome?"
    turn = session.turns()[0]
    assert [(c.args, r.text if r else None) for c, r in turn.tool_results()][:2] == [
        ({"city": "Paris"}, "18C"),
        ({"city": "Rome"}, "24C"),
    ]
    assert turn.tool_calls[2].args == {}  # arguments that are not JSON are kept as given, not guessed


def test_conversions_keep_what_the_target_holds(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "o.jsonl", [CHAT])
    convert_file(source, tmp_path / "r.jsonl", to="ragas")
    (row,) = load_output(tmp_path / "r.jsonl")
    assert [m["type"] for m in row["user_input"]] == ["human", "ai", "tool", "tool", "ai", "ai"]
    assert row["user_input"][1]["tool_calls"][0] == {"name": "get_weather", "args": {"city": "Paris"}}
    convert_file(source, tmp_path / "or.jsonl", to="open-responses")
    (trace,) = load_output(tmp_path / "or.jsonl")
    calls = [i for i in trace["items"] if i["type"] == "function_call"]
    outputs = [i for i in trace["items"] if i["type"] == "function_call_output"]
    assert [c["call_id"] for c in calls][:2] == [o["call_id"] for o in outputs] == ["call_1", "call_2"]
    assert json.loads(calls[0]["arguments"]) == {"city": "Paris"}


def test_calls_without_ids_get_ids_the_api_requires(tmp_path: Path) -> None:
    row = {
        "user_input": [
            {"content": "hi", "type": "human"},
            {"content": "", "type": "ai", "tool_calls": [{"name": "f", "args": {"a": 1}}, {"name": "g", "args": {}}]},
            {"content": "ok", "type": "tool"},
            {"content": "ok2", "type": "tool"},
        ]
    }
    convert_file(write_jsonl(tmp_path / "r.jsonl", [row]), tmp_path / "o.jsonl", to="openai")
    (chat,) = load_output(tmp_path / "o.jsonl")
    calls = chat["messages"][1]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_0", "call_1"]
    assert calls[0]["function"] == {"name": "f", "arguments": '{"a": 1}'} and calls[0]["type"] == "function"
    assert [m["tool_call_id"] for m in chat["messages"][2:]] == ["call_0", "call_1"]
