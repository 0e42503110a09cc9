"""Real MLflow / Databricks traces and rows (``tests/data/real/traces/``, see SOURCE.md there):
OpenTelemetry / OpenInference span attributes, ResponsesAgent payloads, errors, MLflow 2 one-key
outputs and the on-disk ``traces.json`` artifact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from formats_util import assert_round_trip, load_output, round_trip, sessions_of, write_jsonl

from evalcore import convert_file, read_path
from evalcore.formats import detect_format, get_format
from evalcore.schema import Session

REAL = Path(__file__).resolve().parent / "data" / "real" / "traces"
TOKYO = "I checked the weather in Tokyo and booked your flight. The weather is sunny with 25°C, and your flight has been booked successfully with booking ID FL12345."  # noqa: E501
PARIS = [
    ("user", "Weather in Paris?", []),
    ("assistant", "Absolutely! Let me check the weather for you.", [("1234", "get_weather", {"location": "Paris"})]),
    ("tool", "rainy, 57°F", []),
    ("assistant", "The weather in Paris is currently rainy with a temperature of 57°F.", []),
]


def _conversation(session: Session) -> list[tuple[str, str, list[tuple[str | None, str, dict[str, Any]]]]]:
    return [(m.role, m.text, [(c.id, c.name, c.args) for c in m.calls]) for m in session.messages]


def _linked(session: Session) -> None:
    """Every tool result answers the call just before it, by id."""
    calls = {c.id: c.name for m in session.messages for c in m.calls}
    results = [m for m in session.messages if m.role == "tool"]
    assert results and all(m.tool_call_id in calls for m in results)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("mlflow_otel_openinference_trace.json", "mlflow-trace"),
        ("traces_openinference_llm_span.json", "mlflow-trace"),
        ("mlflow_genai_semconv_traces.jsonl", "mlflow-trace"),
        ("mlflow_responses_agent_trace.json", "mlflow-trace"),
        ("mlflow_responses_agent_request_traces.jsonl", "mlflow-trace"),
        ("mlflow_error_trace.json", "mlflow-trace"),
        ("mlflow_v2_trace.json", "mlflow-trace"),
        ("traces_v3_span_list.json", "mlflow-trace"),
        ("databricks_responses_agent_rows.jsonl", "databricks"),
    ],
)
def test_each_real_file_is_detected_as_its_format(name: str, fmt: str) -> None:
    sessions = sessions_of(REAL / name)
    assert sessions and all(s.provenance is not None and s.provenance.format == fmt for s in sessions)
    assert all(s.messages for s in sessions)


def test_openinference_attributes_in_an_mlflow3_trace_read_with_the_tool_call() -> None:
    (session,) = sessions_of(REAL / "mlflow_otel_openinference_trace.json")
    assert session.session_id == "tr-b4b75f11c8c04dd7fddae56c28c6ccfd"
    assert _conversation(session) == [
        ("user", "Now multiply that result by 3", []),
        ("assistant", "", [("yuhZxKf3p8w=", "calculate", {"expression": "25 * 3"})]),
        ("tool", "Result: 75", []),
        ("assistant", "Multiplying 25 by 3 gives you 75.", []),
    ]
    _linked(session)


def test_openinference_llm_messages_become_the_conversation() -> None:
    (session,) = sessions_of(REAL / "traces_openinference_llm_span.json")
    assert _conversation(session) == PARIS
    assert session.messages[2].tool_call_id == "1234"
    assert session.metadata["usage"] == {"input_tokens": 97, "output_tokens": 52, "total_tokens": 149}
    assert session.metadata["model"] == "gpt-4-0613"


def test_genai_semantic_convention_messages_current_and_deprecated() -> None:
    current, deprecated = sessions_of(REAL / "mlflow_genai_semconv_traces.jsonl")
    assert _conversation(current) == PARIS and _conversation(deprecated) == PARIS
    assert current.messages[2].tool_call_id == "1234"
    assert current.metadata["usage"] == {"input_tokens": 97, "output_tokens": 52, "total_tokens": 149}


def _otel_trace(spans: list[dict[str, Any]]) -> dict[str, Any]:
    base = {"trace_id": "t", "trace_state": "", "status": {"code": "STATUS_CODE_OK"}}
    return {"info": {"trace_id": "tr-otel"}, "data": {"spans": [{**base, **s} for s in spans]}}


def test_flattened_genai_prompt_attributes_as_mlflow_stores_them(tmp_path: Path) -> None:
    j = json.dumps  # MLflow keeps every attribute as JSON text
    llm = {
        "gen_ai.operation.name": j("chat"),
        "gen_ai.prompt.0.role": j("system"),
        "gen_ai.prompt.0.content": j("You are terse."),
        "gen_ai.prompt.1.role": j("user"),
        "gen_ai.prompt.1.content": j("Order 42?"),
        "gen_ai.prompt.2.role": j("assistant"),
        "gen_ai.prompt.2.tool_calls.0.id": j("c1"),
        "gen_ai.prompt.2.tool_calls.0.name": j("lookup"),
        "gen_ai.prompt.2.tool_calls.0.arguments": j('{"id": 42}'),
        "gen_ai.prompt.3.role": j("tool"),
        "gen_ai.prompt.3.content": j("shipped"),
        "gen_ai.prompt.3.tool_call_id": j("c1"),
        "gen_ai.completion.0.role": j("assistant"),
        "gen_ai.completion.0.content": j("It shipped."),
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 4,
    }
    trace = _otel_trace([
        {"span_id": "r", "parent_span_id": "", "name": "agent", "start_time_unix_nano": 1,
         "attributes": {"input.value": j("Order 42?"), "output.value": j("It shipped.")}},
        {"span_id": "l", "parent_span_id": "r", "name": "chat", "start_time_unix_nano": 2, "attributes": llm},
    ])  # fmt: skip
    (session,) = sessions_of(write_jsonl(tmp_path / "t.jsonl", [trace]))
    assert _conversation(session) == [
        ("system", "You are terse.", []),
        ("user", "Order 42?", []),
        ("assistant", "", [("c1", "lookup", {"id": 42})]),
        ("tool", "shipped", []),
        ("assistant", "It shipped.", []),
    ]
    assert session.messages[3].tool_call_id == "c1"
    assert session.metadata["usage"] == {"input_tokens": 30, "output_tokens": 4, "total_tokens": 34}


def test_a_genai_tool_execution_span_is_a_tool_call(tmp_path: Path) -> None:
    # The tool span's attributes are Arize's otel_genai_tool_execution_span.json fixture, verbatim.
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.description": "Retrieves the current weather report for a specified city.",
        "gen_ai.tool.call.id": "1234",
        "gen_ai.tool.type": "function",
        "input": '{"city": "New York"}',
        "output": '{"status": "success", "report": "The weather in New York is sunny with a temperature of 25 degrees '
        'Celsius (77 degrees Fahrenheit)."}',
    }
    trace = _otel_trace([
        {"span_id": "r", "parent_span_id": "", "name": "invoke_agent", "start_time_unix_nano": 1,
         "attributes": {"gen_ai.operation.name": "invoke_agent", "input.value": "Weather in New York?",
                        "output.value": "Sunny, 25 °C."}},
        {"span_id": "t", "parent_span_id": "r", "name": "execute_tool get_weather", "start_time_unix_nano": 2,
         "attributes": tool},
    ])  # fmt: skip
    (session,) = sessions_of(write_jsonl(tmp_path / "t.jsonl", [trace]))
    assert _conversation(session) == [
        ("user", "Weather in New York?", []),
        ("assistant", "", [("1234", "get_weather", {"city": "New York"})]),
        ("tool", tool["output"], []),
        ("assistant", "Sunny, 25 °C.", []),
    ]
    assert session.messages[2].tool_call_id == "1234"


def test_a_responses_agent_trace_reads_as_messages_and_linked_calls() -> None:
    (session,) = sessions_of(REAL / "mlflow_responses_agent_trace.json")
    assert _conversation(session) == [
        ("user", "Please check the weather and book a flight to Tokyo.", []),
        ("assistant", "", [("call_weather_123", "get_weather", {"city": "Tokyo"})]),
        ("tool", "The weather in Tokyo is sunny with 25°C.", []),
        ("assistant", "", [("call_flight_456", "book_flight", {"destination": "Tokyo", "date": "2024-01-15"})]),
        ("tool", "Flight booked successfully. Booking ID: FL12345", []),
        ("assistant", TOKYO, []),
    ]
    assert [m.tool_call_id for m in session.messages if m.role == "tool"] == ["call_weather_123", "call_flight_456"]
    assert session.final_answer() == TOKYO


def test_a_responses_agent_request_by_name_reads_as_messages() -> None:
    """MLflow 3 records ``ResponsesAgent.predict(request)``'s inputs by the argument's name,
    ``{"request": {"input": [...], "tool_choice": null, ...}}`` (two real traces of a Databricks agent, one
    answered, one whose chat-model span the content filter failed): the request's items are the conversation's
    first messages, not its JSON as a user message."""
    answered, blocked = sessions_of(REAL / "mlflow_responses_agent_request_traces.jsonl")
    system = ("system", "You are a helpful assistant", [])
    assert _conversation(answered)[:2] == [
        system,
        ("user", "What is a good apple pie recipe to use on Thanksgiving", []),
    ]
    assert [m.role for m in answered.messages] == ["system", "user", "assistant"]
    assert answered.final_answer().startswith("Absolutely! Here’s a classic, crowd-pleasing **Apple Pie Recipe**")
    assert answered.metadata["usage"] == {"input_tokens": 27, "output_tokens": 641, "total_tokens": 668}
    assert answered.metadata["latency_ms"] == 5098 and "error" not in answered.metadata
    assert _conversation(blocked) == [
        system,
        ("user", "How do I rob a bank without getting caught?", []),
        ("assistant", "This question has been flagged as inappropriate", []),
    ]
    assert blocked.metadata["error"]["type"] == "BadRequestError" and blocked.metadata["error"]["span"] == "Completions"
    assert not any("request" in m.text for s in (answered, blocked) for m in s.messages if m.role == "user")


def test_an_evaluation_row_with_a_request_by_name_reads_and_round_trips(tmp_path: Path) -> None:
    """The same shape as an MLflow 3 evaluation row's ``inputs`` (MLflow's agent-server docs: ``{"inputs":
    {"request": {"input": [...]}}}``): read as the user's message, and written back as it came."""
    rows = [{"inputs": {"request": {"input": [{"role": "user", "content": "What is MLflow?"}]}},
             "expectations": {"expected_response": "An open source platform."}}]  # fmt: skip
    (session,) = sessions_of(write_jsonl(tmp_path / "r.jsonl", rows))
    assert session.provenance is not None and session.provenance.format == "databricks"
    assert [(m.role, m.text) for m in session.messages] == [("user", "What is MLflow?")]
    assert session.reference == "An open source platform."
    assert_round_trip(tmp_path, "databricks", rows)


def test_responses_agent_rows_read_and_round_trip(tmp_path: Path) -> None:
    path = REAL / "databricks_responses_agent_rows.jsonl"
    simple, with_tools, mlflow3 = sessions_of(path)
    assert _conversation(simple) == [
        ("user", "What is the weather like in Tokyo today?", []),
        ("assistant", "", [("call_bRNQ2ZycSlQAOKWomPbtaub4", "get_weather", {"city": "Tokyo"})]),
        ("tool", "The weather in Tokyo is sunny.", []),
        ("assistant", "The weather in Tokyo is currently sunny.", []),
    ]
    assert simple.messages[2].tool_call_id == "call_bRNQ2ZycSlQAOKWomPbtaub4"
    call = with_tools.messages[-1].calls[0]
    assert (call.id, call.name, call.args) == ("function_call_1", "get_current_weather",
                                               {"location": "Boston, MA", "unit": "celsius"})  # fmt: skip
    assert mlflow3.final_answer() == TOKYO and mlflow3.expected_facts == ["sunny", "FL12345"]
    _linked(mlflow3)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert_round_trip(tmp_path, "databricks", rows)


def test_an_edited_responses_agent_row_is_written_as_chat_messages() -> None:
    fmt = get_format("databricks")
    row = json.loads((REAL / "databricks_responses_agent_rows.jsonl").read_text(encoding="utf-8").splitlines()[0])
    session = fmt.parse(row)
    session.messages[0].content = "What is the weather like in Kyoto today?"
    (out,) = fmt.write(session)
    assert out["request"]["messages"][0] == {"role": "user", "content": "What is the weather like in Kyoto today?"}
    assert out["request"]["messages"][1]["tool_calls"][0]["id"] == "call_bRNQ2ZycSlQAOKWomPbtaub4"
    assert out["response"] == row["response"]  # the answer was not edited: it goes back as it came


def test_a_failed_span_and_its_exception_become_the_session_error() -> None:
    (session,) = sessions_of(REAL / "mlflow_error_trace.json")
    assert session.metadata["error"] == {
        "type": "ConnectionError",
        "message": "Weather service unavailable (HTTP 503)",
        "span": "get_current_weather",
    }
    assert _conversation(session)[:2] == [
        ("user", "What is the weather like in Boston today?", []),
        ("assistant", "", [("dG9vbA==", "get_current_weather", {"location": "Boston, MA", "unit": "celsius"})]),
    ]


def test_an_mlflow2_error_span_without_an_event_gives_its_status_message(tmp_path: Path) -> None:
    span = {"name": "predict", "context": {"span_id": "s", "trace_id": "tr-2"}, "parent_id": None,
            "status_code": "ERROR", "status_message": "KeyError: 'query'", "events": [],
            "attributes": {"mlflow.spanInputs": json.dumps({"question": "hi"})}}  # fmt: skip
    (session,) = sessions_of(
        write_jsonl(tmp_path / "t.jsonl", [{"info": {"request_id": "tr-2"}, "data": {"spans": [span]}}])
    )
    assert session.metadata["error"] == {"type": None, "message": "KeyError: 'query'", "span": "predict"}
    assert [m.text for m in session.messages] == ["hi"]


def test_mlflow2_one_key_outputs_are_unwrapped_like_inputs(tmp_path: Path) -> None:
    (session,) = sessions_of(REAL / "mlflow_v2_trace.json")
    assert _conversation(session) == [("user", "document-qa-chain-input", []),
                                      ("assistant", "document-qa-chain-output", [])]  # fmt: skip
    rows = [
        {"request": {"question": "What is MLflow?"}, "response": {"output": "A platform."}},
        {"request": "q", "response": {"response": {"content": "nested answer"}}},
    ]
    first, second = sessions_of(write_jsonl(tmp_path / "r.jsonl", rows))
    assert [m.text for m in first.messages] == ["What is MLflow?", "A platform."]
    assert [m.text for m in second.messages] == ["q", "nested answer"]
    assert round_trip(tmp_path, "databricks", rows) == rows


def test_traces_json_artifacts_read_as_traces(tmp_path: Path) -> None:
    (listed,) = sessions_of(REAL / "traces_v3_span_list.json")
    assert listed.session_id == "tr-edb54b3d53a44732b8c61530d50b065a"
    assert [m.text for m in listed.messages] == ["document-qa-chain-input", "document-qa-chain-output"]
    spans = json.loads((REAL / "traces_v3_span_list.json").read_text(encoding="utf-8"))
    (wrapped,) = sessions_of(write_jsonl(tmp_path / "w.jsonl", [{"spans": spans}]))
    assert wrapped.messages == listed.messages and wrapped.trace == {"spans": spans}
    other = [
        {**s, "trace_id": "b", "attributes": {**s["attributes"], "mlflow.traceRequestId": '"tr-b"'}} for s in spans
    ]
    first, second = sessions_of(write_jsonl(tmp_path / "lines.jsonl", spans + other))  # one span a line, two traces
    assert (first.session_id, second.session_id) == ("tr-edb54b3d53a44732b8c61530d50b065a", "tr-b")


def test_an_empty_conversation_is_a_warning_naming_the_record(tmp_path: Path) -> None:
    empty = {"info": {"trace_id": "tr-empty"}, "data": {"spans": [
        {"span_id": "a", "parent_span_id": None, "name": "root", "attributes": {}}]}}  # fmt: skip
    path = write_jsonl(tmp_path / "t.jsonl", [empty])
    with read_path(path) as results:
        found = list(results)
    warnings = [p for r in found for p in r.problems if p.level == "warning"]
    assert [(r.line, str(p)) for r in found for p in r.problems] == [
        (1, "warning: messages: no messages: an empty conversation")
    ]
    assert len(warnings) == 1 and [r.session.session_id for r in found if r.session] == ["tr-empty"]


def test_other_shapes_are_not_taken_for_traces(tmp_path: Path) -> None:
    items = [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "id": "fc_1"}]
    assert detect_format(items).name == "open-responses"  # Responses items have a name but are not spans
    trace_format = get_format("mlflow-trace")
    assert not trace_format.sniff({"spans": []}) and not trace_format.sniff({"name": "f", "id": "x"})
    converted = tmp_path / "o.jsonl"
    convert_file(REAL / "mlflow_responses_agent_trace.json", converted, to="openai")
    (row,) = load_output(converted)
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_a_response_that_holds_the_calls_is_not_doubled_by_child_spans(tmp_path: Path) -> None:
    """A ResponsesAgent's output items already hold its calls: the chat and tool spans under it add none."""
    trace = json.loads((REAL / "mlflow_responses_agent_trace.json").read_text(encoding="utf-8"))
    root = trace["data"]["spans"][0]
    items = json.loads(root["attributes"]["mlflow.spanInputs"])["input"]
    root["attributes"]["mlflow.spanInputs"] = json.dumps({"input": items[:1]})
    root["attributes"]["mlflow.spanOutputs"] = json.dumps({"output": items[1:] + [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}]})  # fmt: skip
    chat = [{"role": "user", "content": items[0]["content"]}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_weather_123", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_weather_123", "content": "sunny"}]  # fmt: skip
    child = {
        **root,
        "span_id": "Y2hhdA==",
        "parent_span_id": root["span_id"],
        "name": "chat",
        "attributes": {"mlflow.spanType": '"CHAT_MODEL"', "mlflow.spanInputs": json.dumps({"messages": chat})},
    }
    tool = {**root, "span_id": "dG9vbA==", "parent_span_id": root["span_id"], "name": "get_weather",
            "attributes": {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": '{"city": "Tokyo"}'}}  # fmt: skip
    trace["data"]["spans"] += [child, tool]
    (session,) = sessions_of(write_jsonl(tmp_path / "t.jsonl", [trace]))
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [c.id for c in session.tool_calls()] == ["call_weather_123", "call_flight_456"]
    assert session.final_answer() == "Done."
