from __future__ import annotations

import json
from pathlib import Path

from formats_util import assert_round_trip, load_output, round_trip, sessions_of, write_jsonl

from evalcore import convert_file

ROWS = [
    {
        "request_id": "r-1",
        "request": "What is the difference between reduceByKey and groupByKey in Spark?",
        "response": "reduceByKey aggregates before shuffling; groupByKey shuffles everything.",
        "expected_facts": ["reduceByKey aggregates before the shuffle", "groupByKey shuffles all data"],
        "guidelines": ["The response must be in English", "The response must be concise"],
        "retrieved_context": [
            {"content": "reduceByKey merges values locally...", "doc_uri": "docs/spark/rdd.md"},
            {"content": "groupByKey ...", "doc_uri": "docs/spark/shuffle.md"},
        ],
        "expected_retrieved_context": [{"doc_uri": "docs/spark/rdd.md"}, "docs/spark/shuffle.md"],
    },
    {
        "request": {
            "messages": [
                {"role": "system", "content": "You are a Spark tutor."},
                {"role": "user", "content": "How can you minimize data shuffling in Spark?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "search_docs", "arguments": '{"q":"shuffle"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "Use broadcast joins..."},
            ]
        },
        "response": "Prefer reduceByKey, broadcast small tables and partition well.",
        "expected_response": "Use reduceByKey, broadcast joins and good partitioning.",
        "guidelines": {"tone": ["The response must be polite"], "format": ["The response must use bullets"]},
        "tags": {"team": "spark", "reviewed": "true"},
    },
    {
        "request": {
            "query": "Explain broadcast variables in Spark. How do they enhance performance?",
            "history": [
                {"role": "user", "content": "What are broadcast variables?"},
                {"role": "assistant", "content": "Read-only variables cached on each machine."},
            ],
        },
        "response": {"choices": [{"message": {"role": "assistant", "content": "They avoid shipping copies."}}]},
        "tags": ["multi-turn"],
        "goal": "Learn when to use broadcast variables.",
        "source": {"human": {"user_name": "ana@example.com"}},
    },
]


def test_all_request_shapes_round_trip(tmp_path: Path) -> None:
    assert_round_trip(tmp_path, "databricks", ROWS)


def test_request_shapes_become_conversations(tmp_path: Path) -> None:
    first, second, third = sessions_of(write_jsonl(tmp_path / "d.jsonl", ROWS))
    assert first.session_id == "r-1"
    assert [(m.role, m.text) for m in first.messages] == [
        ("user", ROWS[0]["request"]),
        ("assistant", ROWS[0]["response"]),
    ]
    assert first.expected_facts == ROWS[0]["expected_facts"]
    assert first.retrieved_context and first.retrieved_context[0].doc_uri == "docs/spark/rdd.md"
    assert first.expected_retrieved_context and first.expected_retrieved_context[1].doc_uri == "docs/spark/shuffle.md"
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert second.messages[2].calls[0].args == {"q": "shuffle"}
    assert second.reference == ROWS[1]["expected_response"]
    assert second.tags == ["team=spark", "reviewed"]
    assert [m.text for m in third.messages] == [
        "What are broadcast variables?",
        "Read-only variables cached on each machine.",
        ROWS[2]["request"]["query"],
        "They avoid shipping copies.",
    ]


def test_expected_facts_and_response_together_is_an_error(tmp_path: Path) -> None:
    row = {"request": "q", "response": "a", "expected_facts": ["x"], "expected_response": "y"}
    report = convert_file(write_jsonl(tmp_path / "d.jsonl", [row, ROWS[0]]), tmp_path / "o.jsonl", to="databricks")
    assert report.sessions == 1 and report.errors == 1
    assert "expected_facts: give only one of expected_facts and expected_response" in str(report.problems[0])


def test_mlflow3_rows_round_trip(tmp_path: Path) -> None:
    rows = [
        {
            "inputs": {"question": "What is MLflow?"},
            "outputs": "An open source ML platform.",
            "expectations": {"expected_facts": ["open source", "ML lifecycle"], "guidelines": ["Be brief"]},
        },
        {
            "inputs": {"messages": [{"role": "user", "content": "hi"}]},
            "outputs": {"messages": [{"role": "assistant", "content": "hello"}]},
            "expectations": {},
        },
    ]
    assert_round_trip(tmp_path, "databricks", rows)
    first, _ = sessions_of(write_jsonl(tmp_path / "m.jsonl", rows))
    assert first.messages[0].text == "What is MLflow?" and first.expected_facts == ["open source", "ML lifecycle"]


def test_ragas_reference_becomes_expected_response(tmp_path: Path) -> None:
    row = {
        "user_input": [{"content": "book a table", "type": "human"}, {"content": "Booked.", "type": "ai"}],
        "reference": "A table is booked.",
    }
    out = tmp_path / "d.jsonl"
    convert_file(write_jsonl(tmp_path / "r.jsonl", [row]), out, to="databricks")
    assert load_output(out) == [
        {"request": "book a table", "response": "Booked.", "expected_response": "A table is booked."}
    ]


def test_trace_only_row_derives_the_conversation(tmp_path: Path) -> None:
    trace = {
        "info": {"trace_id": "tr-1", "execution_duration_ms": 1500},
        "data": {
            "spans": [
                {
                    "span_id": "a",
                    "parent_span_id": None,
                    "name": "agent",
                    "start_time_unix_nano": 1,
                    "attributes": {
                        "mlflow.spanType": '"AGENT"',
                        "mlflow.spanInputs": json.dumps({"query": "weather in Paris?"}),
                        "mlflow.spanOutputs": json.dumps("Sunny."),
                    },
                }
            ]
        },
    }
    (session,) = sessions_of(write_jsonl(tmp_path / "t.jsonl", [{"trace": json.dumps(trace)}]))
    assert [(m.role, m.text) for m in session.messages] == [("user", "weather in Paris?"), ("assistant", "Sunny.")]
    assert session.metadata["latency_ms"] == 1500


def test_shapes_that_used_to_change_on_the_way_back(tmp_path: Path) -> None:
    trace = {
        "info": {"trace_id": "tr-9", "tags": {"env": "prod"}},
        "data": {"spans": [{"span_id": "a", "parent_span_id": None, "name": "agent", "attributes": {
            "mlflow.spanInputs": json.dumps("hi"), "mlflow.spanOutputs": json.dumps("hello")}}]},
    }  # fmt: skip
    rows = [
        {
            "inputs": {"question": "q"},
            "outputs": "a",
            "expectations": {"expected_facts": ["f"], "expected_tool_calls": [1]},
        },
        {"inputs": {"question": "q"}},
        {"request": {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}},
        {"trace": json.dumps(trace)},
        {"request": "q", "response": ["4", "four"]},
    ]
    assert_round_trip(tmp_path, "databricks", rows)
    *_, traced, listed = sessions_of(write_jsonl(tmp_path / "r.jsonl", rows))
    assert traced.session_id == "tr-9" and [m.text for m in traced.messages] == ["hi", "hello"]
    assert listed.messages[-1].text == "4"  # Databricks reads a list's first element


def test_chat_messages_written_to_a_request_carry_call_ids(tmp_path: Path) -> None:
    row = {
        "user_input": [
            {"content": "hi", "type": "human"},
            {"content": "", "type": "ai", "tool_calls": [{"name": "f", "args": {}}]},
            {"content": "ok", "type": "tool"},
            {"content": "done", "type": "ai"},
        ]
    }
    convert_file(write_jsonl(tmp_path / "r.jsonl", [row]), tmp_path / "d.jsonl", to="databricks")
    (out,) = load_output(tmp_path / "d.jsonl")
    messages = out["request"]["messages"]
    assert messages[1]["tool_calls"][0]["id"] == "call_0" and messages[2]["tool_call_id"] == "call_0"


def test_a_row_with_request_response_and_trace_takes_what_only_the_trace_has(tmp_path: Path) -> None:
    from evalcore.metrics import create_metric

    j = json.dumps
    span = {"trace_id": "t", "start_time_unix_nano": 0, "end_time_unix_nano": 1, "status": {"code": "STATUS_CODE_OK"}}
    trace = {
        "info": {"trace_id": "tr-1", "state": "OK", "execution_duration_ms": 2500},
        "data": {"spans": [
            {**span, "span_id": "r", "parent_span_id": None, "name": "root", "attributes": {
                "mlflow.spanType": j("CHAIN"), "mlflow.spanOutputs": j("MLflow is a platform."),
                "mlflow.spanInputs": j({"messages": [{"role": "user", "content": "What is MLflow?"}]})}},
            {**span, "span_id": "ret", "parent_span_id": "r", "name": "retrieve", "attributes": {
                "mlflow.spanType": j("RETRIEVER"), "mlflow.spanInputs": j("q"),
                "mlflow.spanOutputs": j([{"page_content": "MLflow docs", "metadata": {"doc_uri": "doc1"}}])}},
            {**span, "span_id": "llm", "parent_span_id": "r", "name": "llm", "attributes": {
                "mlflow.spanType": j("CHAT_MODEL"),
                "mlflow.chat.tokenUsage": j({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15})}},
        ]},
    }  # fmt: skip
    row = {
        "request_id": "r-1",
        "request": "What is MLflow?",
        "response": "An open platform.",
        "trace": j(trace),
        "expected_retrieved_context": [{"doc_uri": "doc1"}],
    }
    (session,) = sessions_of(write_jsonl(tmp_path / "r.jsonl", [row]))
    assert session.session_id == "r-1" and [m.text for m in session.messages] == [row["request"], row["response"]]
    scores = {m: create_metric(m).evaluate(session)[-1].value for m in ("latency", "token_usage", "document_recall")}
    assert scores == {"latency": 2.5, "token_usage": 15.0, "document_recall": 1.0}  # were "not applicable"
    assert round_trip(tmp_path, "databricks", [row]) == [row]  # and nothing the trace gave becomes a column
    (broken,) = sessions_of(write_jsonl(tmp_path / "b.jsonl", [{**row, "trace": "{not json"}]))
    assert [m.text for m in broken.messages] == [row["request"], row["response"]]  # the row stands on its own


def test_a_row_whose_trace_failed_carries_the_error_and_writes_back_unchanged(tmp_path: Path) -> None:
    real = Path(__file__).resolve().parent / "data" / "real" / "traces" / "mlflow_error_trace.json"
    trace = json.loads(real.read_text(encoding="utf-8"))
    row = {
        "request": "What is the weather like in Boston today?",
        "response": "Sorry, try later.",
        "trace": json.dumps(trace),
    }
    (session,) = sessions_of(write_jsonl(tmp_path / "r.jsonl", [row]))
    assert session.metadata["error"]["type"] == "ConnectionError"
    assert [m.text for m in session.messages] == [row["request"], row["response"]]
    assert round_trip(tmp_path, "databricks", [row]) == [row]


def test_responses_agent_request_and_response_columns(tmp_path: Path) -> None:
    row = {
        "request": {"input": [{"role": "user", "content": "Hi"}], "custom_inputs": {"user": "ana"}},
        "response": {"output": [{"type": "message", "id": "m1", "role": "assistant",
                                 "content": [{"type": "output_text", "text": "Hello!"}]}]},
    }  # fmt: skip
    (session,) = sessions_of(write_jsonl(tmp_path / "r.jsonl", [row]))
    assert [(m.role, m.text) for m in session.messages] == [("user", "Hi"), ("assistant", "Hello!")]
    assert_round_trip(tmp_path, "databricks", [row])
