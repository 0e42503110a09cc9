from __future__ import annotations

import json
from pathlib import Path

from formats_util import sessions_of


def _span(span_id: str, parent: str | None, name: str, kind: str, start: int, inputs: object, outputs: object,
          **extra: str) -> dict[str, object]:  # fmt: skip
    attributes = {
        "mlflow.spanType": json.dumps(kind),
        "mlflow.spanInputs": json.dumps(inputs),
        "mlflow.spanOutputs": json.dumps(outputs),
        **extra,
    }
    return {
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "start_time_unix_nano": start,
        "end_time_unix_nano": start + 10,
        "status": {"code": "STATUS_CODE_OK"},
        "attributes": attributes,
    }


USAGE = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
TRACE = {
    "info": {
        "trace_id": "tr-7",
        "execution_duration_ms": 2300,
        "state": "OK",
        "tags": {"channel": "web", "mlflow.user": "x", "vip": "true"},
        "trace_metadata": {"mlflow.trace.session": "conv-3"},
    },
    "data": {
        "spans": [
            _span("root", None, "agent", "AGENT", 1, {"messages": [{"role": "user", "content": "Refund order 9?"}]},
                  {"choices": [{"message": {"role": "assistant", "content": "Refunded order 9."}}]}),
            _span("ret", "root", "retriever", "RETRIEVER", 2, {"query": "refund policy"},
                  [{"page_content": "Refunds within 30 days.", "metadata": {"doc_uri": "kb/refunds.md"}, "id": "1"}]),
            _span("llm", "root", "chat", "CHAT_MODEL", 3, {"messages": []}, {},
                  **{"mlflow.chat.tokenUsage": json.dumps(USAGE), "mlflow.llm.model": json.dumps("gpt-4o-mini")}),
            _span("t1", "root", "refund_order", "TOOL", 4, {"order_id": 9}, {"ok": True}),
        ]
    },
}  # fmt: skip


def test_spans_become_a_conversation(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE, indent=2))
    (session,) = sessions_of(path)
    assert session.provenance is not None and session.provenance.format == "mlflow-trace"
    assert session.session_id == "tr-7"
    assert [(m.role, m.text) for m in session.messages] == [
        ("user", "Refund order 9?"),
        ("assistant", ""),
        ("tool", '{"ok": true}'),
        ("assistant", "Refunded order 9."),
    ]
    call = session.messages[1].calls[0]
    assert (call.name, call.args) == ("refund_order", {"order_id": 9})
    assert session.messages[2].tool_call_id == call.id
    assert session.retrieved_context is not None
    assert [(c.content, c.doc_uri) for c in session.retrieved_context] == [("Refunds within 30 days.", "kb/refunds.md")]
    assert session.metadata["usage"] == {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
    assert session.metadata["latency_ms"] == 2300 and session.metadata["model"] == "gpt-4o-mini"
    assert session.trace == TRACE
    assert session.tags == ["channel=web", "vip"] and session.metadata["conversation_id"] == "conv-3"


def test_chat_model_messages_win_over_tool_spans(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "Refund order 9?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "x1", "type": "function", "function": {"name": "refund_order", "arguments": '{"order_id": 9}'}}]},
        {"role": "tool", "tool_call_id": "x1", "content": "ok"},
    ]  # fmt: skip
    trace = json.loads(json.dumps(TRACE))
    trace["data"]["spans"][2]["attributes"]["mlflow.spanInputs"] = json.dumps({"messages": messages})
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    (session,) = sessions_of(path)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.messages[1].calls[0].id == "x1"


def test_a_trace_goes_to_databricks_as_a_json_string(tmp_path: Path) -> None:
    from formats_util import load_output, round_trip

    from evalcore import convert_file

    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    convert_file(path, tmp_path / "d.jsonl", to="databricks")
    (row,) = load_output(tmp_path / "d.jsonl")
    assert json.loads(row["trace"]) == TRACE
    assert row["response"] == "Refunded order 9." and row["retrieved_context"][0]["doc_uri"] == "kb/refunds.md"
    assert round_trip(tmp_path, "databricks", [row]) == [row]


def test_a_span_tree_with_a_cycle_or_no_ids_does_not_hang(tmp_path: Path) -> None:
    trace = json.loads(json.dumps(TRACE))
    del trace["data"]["spans"][3]["span_id"]  # a span with no id...
    trace["data"]["spans"][1]["parent_span_id"] = "ret"  # ...and a retriever that is its own parent
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    (session,) = sessions_of(path)
    assert session.retrieved_context is not None
