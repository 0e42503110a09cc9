"""OpenAI-family files written by others (tests/data/real/openai, see SOURCE.md there): LangChain
message arrays, double-encoded tool arguments, legacy function calling, the ``{messages}`` form on
write, Open Responses line numbers and detection, Responses API objects and stream logs, and
Agents SDK run state."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from formats_util import load_output, round_trip, sessions_of, write_jsonl

from evalcore import convert_file, read_path, validate_file
from evalcore.errors import FormatDetectionError
from evalcore.formats import detect_format
from evalcore.schema import Session

REAL = Path(__file__).resolve().parent / "data" / "real" / "openai"


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _format_of(path: Path) -> str | None:
    return validate_file(path).format


def _calls(session: Session) -> list[tuple[str | None, str, dict[str, Any]]]:
    return [(c.id, c.name, c.args) for m in session.messages for c in m.calls]


# 1. A JSON array of LangChain messages is one conversation.


def test_langgraph_model_dump_array_is_one_langchain_conversation() -> None:
    path = REAL / "langgraph_thread_state_messages.json"
    (session,) = sessions_of(path)
    assert session.provenance is not None and session.provenance.format == "langchain"
    assert [(m.role, m.text) for m in session.messages] == [
        ("user", "how are you?"),
        ("assistant", "I'm doing well, thanks for asking! I'm an AI assistant created by Anthropic to be helpful, "
                      "honest, and harmless."),
    ]  # fmt: skip
    assert session.messages[1].tool_calls == []


def test_minimal_type_content_array_with_tool_calls(tmp_path: Path) -> None:
    messages = [
        {"type": "human", "content": "hello"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "lookup", "args": {"q": "x"}, "id": "c1"}]},
        {"type": "tool", "content": "found", "tool_call_id": "c1"},
        {"type": "ai", "content": "It is x."},
    ]
    path = tmp_path / "lc.json"
    path.write_text(json.dumps(messages, indent=2), encoding="utf-8")
    (session,) = sessions_of(path)
    assert session.provenance is not None and session.provenance.format == "langchain"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert _calls(session) == [("c1", "lookup", {"q": "x"})]
    [(call, result)] = session.turns()[0].tool_results()
    assert result is not None and result.text == "found" and call.id == result.tool_call_id


# 2. Arguments that are JSON text of something other than an object.


def test_double_encoded_arguments_are_read_as_the_inner_object_and_written_back_as_they_came(tmp_path: Path) -> None:
    path = REAL / "drone_training.jsonl"
    first, second = sessions_of(path)
    assert _calls(first) == [("call_id", "takeoff_drone", {"altitude": 100})]
    assert _calls(second) == [("call_id", "land_drone", {"location": "current"})]
    back = round_trip(tmp_path, "openai", _lines(path))
    assert back == _lines(path)  # value-exact, tools and parallel_tool_calls included
    raw = back[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert raw == json.dumps(json.dumps({"location": "current"}))


@pytest.mark.parametrize("arguments", ['"{\\"a\\": 1}"', "[1, 2]", "7", '"just text"', "{not json", ""])
@pytest.mark.parametrize("fmt", ["openai", "open-responses"])
def test_arguments_that_are_no_object_come_back_exactly(tmp_path: Path, fmt: str, arguments: str) -> None:
    if fmt == "openai":
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        record: Any = {"messages": [{"role": "user", "content": "go"},
                                    {"role": "assistant", "content": None, "tool_calls": [call]}]}  # fmt: skip
    else:
        call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": arguments}
        record = {"items": [{"type": "message", "role": "user", "content": "go"}, call]}
    (session,) = sessions_of(write_jsonl(tmp_path / "in.jsonl", [record]))
    assert _calls(session) == [("c1", "f", {"a": 1} if arguments.startswith('"{') else {})]
    assert round_trip(tmp_path, fmt, [record]) == [record]


# 3. Legacy function calling.


def test_legacy_function_calls_are_tool_calls_linked_to_their_results() -> None:
    path = REAL / "azure_legacy_function_calling.jsonl"
    report = validate_file(path)
    assert report.format == "openai" and report.errors == 0 and report.sessions == 2
    first, second = sessions_of(path)
    assert _calls(first) == [
        ("legacy-call-0", "get_current_weather", {"location": "San Francisco, USA", "format": "celsius"})
    ]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool", "assistant"]
    call = second.messages[1].calls[0]
    result = second.messages[2]
    assert result.tool_call_id == call.id and result.name == "get_current_weather" and result.text == "21.0"
    assert second.messages[3].text == "It is 21 degrees celsius in San Francisco, CA"


def test_legacy_function_calls_are_written_back_in_the_legacy_form(tmp_path: Path) -> None:
    rows = _lines(REAL / "azure_legacy_function_calling.jsonl")
    back = round_trip(tmp_path, "openai", rows)
    assert back == rows  # function_call, role function, no ids made up, no content: null added
    assert "tool_calls" not in json.dumps(back) and "legacy-call" not in json.dumps(back)


def test_legacy_function_calls_convert_to_open_responses_linked_by_call_id(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    report = convert_file(REAL / "azure_legacy_function_calling.jsonl", out, to="open-responses")
    assert report.errors == 0
    items = load_output(out)[1]["items"]
    call = next(i for i in items if i["type"] == "function_call")
    output = next(i for i in items if i["type"] == "function_call_output")
    assert call["name"] == "get_current_weather" and output["call_id"] == call["call_id"]
    assert output["output"] == "21.0"


# 7. The {messages} form on write; line numbers; what is enough to claim Open Responses.


def test_openai_always_writes_messages_rows(tmp_path: Path) -> None:
    array = tmp_path / "array.json"  # a file that is one JSON array of messages
    array.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]))
    bare = write_jsonl(tmp_path / "bare.jsonl", [[{"role": "user", "content": "a"}], {"messages": []}])
    for source in (array, bare, REAL / "langgraph_thread_state_messages.json", REAL / "responses_stream_events.jsonl"):
        out = tmp_path / f"{source.stem}.out.jsonl"
        report = convert_file(source, out, to="openai")
        assert report.errors == 0, [str(p) for p in report.problems]
        rows = load_output(out)
        assert rows and all(isinstance(r, dict) and isinstance(r["messages"], list) for r in rows), source
    assert load_output(tmp_path / "array.out.jsonl") == [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    ]


def _items_file(tmp_path: Path) -> Path:
    items = [
        {"type": "message", "role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "message", "role": "assistant", "content": "Sunny."},
        {"type": "message", "role": "user", "content": "And Rome?"},
        {"type": "function_call", "call_id": "c2", "name": "weather", "arguments": '{"city": "Rome"}'},
        {"type": "function_call_output", "output": "rain"},  # line 7: no call_id
        {"type": "message", "role": "assistant", "content": "Rain."},
    ]
    return write_jsonl(tmp_path / "items.jsonl", items)


def test_a_bad_item_is_reported_on_its_own_line_and_the_others_are_read(tmp_path: Path) -> None:
    with read_path(_items_file(tmp_path)) as results:
        results = list(results)
    problems = [(r.line, p.field, p.message) for r in results for p in r.problems]
    assert problems == [(7, "call_id", "expected a string, got null")]
    (session,) = [r.session for r in results if r.session is not None]
    assert [m.text for m in session.messages if m.role != "tool"][-1] == "Rain."
    assert _calls(session) == [("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"})]


def test_a_lone_message_type_is_not_enough_for_open_responses(tmp_path: Path) -> None:
    with pytest.raises(FormatDetectionError):
        detect_format({"type": "message"})
    anthropic_response = {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Hi!"}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }  # fmt: skip
    with contextlib.suppress(FormatDetectionError):  # claimed by no one is fine; as Open Responses is not
        assert detect_format(anthropic_response).name != "open-responses"
    # A real Open Responses item on its own line still is one.
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    assert detect_format(item).name == "open-responses"


# 9b. Responses API response objects and stream logs.


def test_stream_log_is_one_conversation_with_its_calls() -> None:
    path = REAL / "responses_stream_events.jsonl"
    assert _format_of(path) == "open-responses"
    (session,) = sessions_of(path)
    assert session.session_id == "resp_68d9303e0ef4819e9abaed38fac5de4f03aa6e5a972b3b23"
    assert [m.role for m in session.messages] == ["system", "assistant", "assistant"]
    assert session.messages[0].text == "You are a helpful assistant that reports weather updates."
    assert _calls(session) == [("call_5dp5Uj0Loqn1YcyIpqSq6sLX", "get_weather", {"location": "New York City, USA"})]
    assert session.messages[2].text == "Current weather in New York City, USA: Sunny."
    assert session.metadata["model"] == "gpt-5-2025-08-07"
    assert len(session.metadata["responses_api"]["responses"]) == 2  # both responses' completions kept


def test_stream_log_converts_to_items_and_reads_back_the_same(tmp_path: Path) -> None:
    out = tmp_path / "items.jsonl"
    assert convert_file(REAL / "responses_stream_events.jsonl", out, to="open-responses").errors == 0
    (again,) = sessions_of(out)
    (first,) = sessions_of(REAL / "responses_stream_events.jsonl")
    assert [(m.role, m.text, m.reasoning) for m in again.messages] == [
        (m.role, m.text, m.reasoning) for m in first.messages
    ]
    assert _calls(again) == _calls(first)


def test_stream_without_streamed_items_takes_the_completed_response(tmp_path: Path) -> None:
    events = [e for e in _lines(REAL / "responses_stream_events.jsonl") if e["type"] != "response.output_item.done"]
    (session,) = sessions_of(write_jsonl(tmp_path / "events.jsonl", events))
    assert _calls(session) == [("call_5dp5Uj0Loqn1YcyIpqSq6sLX", "get_weather", {"location": "New York City, USA"})]
    assert session.messages[-1].text == "Current weather in New York City, USA: Sunny."


def test_a_bad_event_is_reported_on_its_line(tmp_path: Path) -> None:
    events = _lines(REAL / "responses_stream_events.jsonl")
    events[3] = {"type": "response.output_item.done", "sequence_number": 3, "item": "oops"}
    with read_path(write_jsonl(tmp_path / "events.jsonl", events)) as results:
        results = list(results)
    assert [(r.line, p.field) for r in results for p in r.problems] == [(4, "item")]
    assert sum(r.session is not None for r in results) == 1


def test_response_object_is_a_conversation() -> None:
    path = REAL / "responses_api_response.json"
    assert _format_of(path) == "open-responses"
    (session,) = sessions_of(path)
    assert session.session_id == "resp_0358c95ad546f0d80168e806a49f7c819f8c20d9127a317a5b"
    (answer,) = session.messages
    assert answer.role == "assistant" and json.loads(answer.text) == {"temperatureCelsius": 22,
                                                                      "condition": "Partly Cloudy"}  # fmt: skip
    assert session.metadata["usage"]["total_tokens"] == 97 and session.metadata["model"] == "gpt-5-mini-2025-08-07"


def test_response_object_with_logged_input_links_calls_by_call_id(tmp_path: Path) -> None:
    # Written in the test from the API reference's item shapes: the API does not echo the input.
    response = {
        "id": "resp_2", "object": "response", "status": "completed", "model": "gpt-4.1",
        "instructions": "Answer briefly.",
        "input": [
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "18C, clear"},
        ],
        "output": [{"type": "message", "id": "msg_2", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "18C and clear.", "annotations": []}]}],
        "usage": {"input_tokens": 30, "output_tokens": 6, "total_tokens": 36},
    }  # fmt: skip
    path = write_jsonl(tmp_path / "responses.jsonl", [response, {**response, "input": "Just say hi."}])
    first, second = sessions_of(path)
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool", "assistant"]
    [(call, result)] = first.turns()[0].tool_results()
    assert (call.id, call.name, call.args) == ("call_1", "get_weather", {"city": "Paris"})
    assert result is not None and result.tool_call_id == "call_1" and result.text == "18C, clear"
    assert [(m.role, m.text) for m in second.messages] == [
        ("system", "Answer briefly."), ("user", "Just say hi."), ("assistant", "18C and clear."),
    ]  # fmt: skip


# 9c. Agents SDK run state.


def test_run_state_pending_approval_reads_the_call_once() -> None:
    path = REAL / "agents_run_state_v1_13_pending_tool_approval.json"
    assert _format_of(path) == "openai-agents"
    (session,) = sessions_of(path)
    assert session.session_id == "trace_179a5e809d614cf89ac5a1f24b415704"
    assert [(m.role, m.text) for m in session.messages] == [("user", "historical input"), ("assistant", "")]
    assert _calls(session) == [("historical-approval-1", "historical_approval", {"account_id": "account-1"})]
    kept = session.metadata["openai_agents"]
    assert kept["current_agent"] == {"name": "compat-agent"} and kept["current_step"] == "next_step_interruption"
    assert kept["model_responses"][0]["response_id"] == "resp-789"


def test_run_state_history_given_and_generated_is_read_once() -> None:
    (session,) = sessions_of(REAL / "agents_run_state_v1_13_nested_history_ownership.json")
    assert [(m.role, m.text) for m in session.messages] == [("assistant", "owned history")]


def test_run_state_keeps_items_it_does_not_model() -> None:
    (session,) = sessions_of(REAL / "agents_run_state_v1_13_programmatic_tool_calling.json")
    assert _calls(session) == [("function-call", "lookup", {})]
    kept = json.dumps(session.model_dump(mode="json")["messages"]) + json.dumps(session.metadata)
    assert '"type": "program"' in kept and '"type": "program_output"' in kept


def test_run_state_output_without_its_call_is_a_clear_problem() -> None:
    with read_path(REAL / "agents_run_state_v1_11_tool_output_custom_data.json") as results:
        (result,) = list(results)
    assert result.session is not None and result.session.messages[1].tool_call_id == "custom-data-1"
    # The ragas order rule's error, and what the id says: it names no call (issue 23, item 10).
    assert [(p.level, p.field) for p in result.problems] == [
        ("error", "messages[1]"),
        ("warning", "messages[1].tool_call_id"),
    ]


def test_run_state_converts_to_every_writable_format(tmp_path: Path) -> None:
    path = REAL / "agents_run_state_v1_13_pending_tool_approval.json"
    for fmt in ("openai", "open-responses", "ragas", "evalcore"):
        report = convert_file(path, tmp_path / f"out.{fmt}.jsonl", to=fmt)
        assert report.errors == 0 and report.sessions == 1, (fmt, [str(p) for p in report.problems])


def test_new_shapes_are_not_taken_by_other_formats() -> None:
    expected = {
        "drone_training.jsonl": "openai",
        "azure_legacy_function_calling.jsonl": "openai",
        "langgraph_thread_state_messages.json": "langchain",
        "responses_stream_events.jsonl": "open-responses",
        "responses_api_response.json": "open-responses",
        "agents_run_state_v1_13_pending_tool_approval.json": "openai-agents",
        "agents_run_state_v1_13_nested_history_ownership.json": "openai-agents",
        "agents_run_state_v1_11_tool_output_custom_data.json": "openai-agents",
        "agents_run_state_v1_13_programmatic_tool_calling.json": "openai-agents",
    }
    assert {p.name for p in REAL.iterdir() if p.suffix != ".md"} == set(expected)
    for name, fmt in expected.items():
        assert _format_of(REAL / name) == fmt, name


def test_double_encoded_arguments_edited_are_written_double_encoded_again(tmp_path: Path) -> None:
    middle = tmp_path / "middle.jsonl"
    assert convert_file(REAL / "drone_training.jsonl", middle, to="evalcore").errors == 0
    rows = load_output(middle)
    call = rows[1]["messages"][2]["tool_calls"][0]
    assert call["args"] == {"location": "current"}
    call["args"] = {"location": "home_base"}  # a reviewer's correction
    write_jsonl(middle, rows)
    back = tmp_path / "back.jsonl"
    assert convert_file(middle, back, to="openai").errors == 0
    arguments = load_output(back)[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(json.loads(arguments)) == {"location": "home_base"}
