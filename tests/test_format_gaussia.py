from __future__ import annotations

from pathlib import Path

from formats_util import assert_round_trip, load_output, round_trip, sessions_of, write_jsonl

from evalcore import convert_file
from evalcore.schema import resolve_weights

DATASET = {
    "session_id": "s-1",
    "assistant_id": "support-bot-v2",
    "language": "english",
    "context": "Acme Widget product documentation.",
    "conversation": [
        {
            "qa_id": "q1",
            "query": "How do I install the widget?",
            "assistant": "Run pip install acme-widget.",
            "ground_truth_assistant": "Install with: pip install acme-widget",
            "observation": "Correct command, terse.",
            "weight": 0.4,
            "agentic": {},
            "ground_truth_agentic": {},
            "logprobs": {},
        },
        {
            "qa_id": "q2",
            "query": "Is my order 42 shipped?",
            "assistant": "Yes, it shipped yesterday.",
            "ground_truth_assistant": "",
            "weight": 0.6,
            "agentic": {
                "tools_used": [
                    {"tool_name": "get_order", "parameters": {"id": 42}, "result": {"status": "shipped"}, "step": 1},
                    {"tool_name": "get_tracking", "parameters": {"id": 42}, "result": "UPS 1Z999", "step": 2},
                ],
                "final_answer_uses_tools": True,
            },
            "ground_truth_agentic": {
                "expected_tools": [{"tool_name": "get_order", "parameters": {"id": 42}, "step": 1}],
                "tool_sequence_matters": True,
            },
        },
    ],
}


def test_dataset_json_array_round_trip(tmp_path: Path) -> None:
    second = {**DATASET, "session_id": "s-2", "chatbot_role": "a polite support agent"}
    assert_round_trip(tmp_path, "gaussia", [DATASET, second], suffix=".json")


def test_dataset_jsonl_round_trip(tmp_path: Path) -> None:
    assert_round_trip(tmp_path, "gaussia", [DATASET])


def test_batches_become_turns_with_tools(tmp_path: Path) -> None:
    (session,) = sessions_of(write_jsonl(tmp_path / "g.jsonl", [DATASET]))
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant", "tool", "tool", "assistant"]
    turns = session.turns()
    assert [t.truth.qa_id for t in turns] == ["q1", "q2"]
    assert turns[0].truth.observation == "Correct command, terse."
    assert turns[1].answer == "Yes, it shipped yesterday."
    assert [c.name for c in turns[1].tool_calls] == ["get_order", "get_tracking"]
    assert [r.text if r else None for _, r in turns[1].tool_results()] == ['{"status": "shipped"}', "UPS 1Z999"]
    assert turns[1].truth.expected_tool_usage == DATASET["conversation"][1]["ground_truth_agentic"]
    assert session.context == "Acme Widget product documentation."


def test_streamed_batches_group_into_sessions(tmp_path: Path) -> None:
    header = {k: DATASET[k] for k in ("session_id", "assistant_id", "language", "context")}
    lines = [{"metadata": header, "batch": b} for b in DATASET["conversation"]]
    other = {"metadata": {**header, "session_id": "s-9"}, "batch": {**DATASET["conversation"][0], "qa_id": "z"}}
    records = [*lines, other]
    sessions = sessions_of(write_jsonl(tmp_path / "stream.jsonl", records))
    assert [s.session_id for s in sessions] == ["s-1", "s-9"]
    assert [len(s.turn_truth) for s in sessions] == [2, 1]
    assert sessions[0].provenance is not None and sessions[0].provenance.line == 1
    assert sessions[1].provenance is not None and sessions[1].provenance.line == 3
    assert round_trip(tmp_path, "gaussia", records) == records


def test_non_contiguous_batches_are_kept_with_a_warning(tmp_path: Path) -> None:
    header = {k: DATASET[k] for k in ("session_id", "assistant_id", "context")}
    b1, b2 = ({k: v for k, v in b.items() if k != "weight"} for b in DATASET["conversation"])
    records = [
        {"metadata": header, "batch": b1},
        {"metadata": {**header, "session_id": "other"}, "batch": b1},
        {"metadata": header, "batch": b2},
    ]
    report = convert_file(write_jsonl(tmp_path / "s.jsonl", records), tmp_path / "o.jsonl", to="evalcore")
    assert report.sessions == 3 and report.errors == 0 and report.warnings == 1
    assert "resume after other sessions" in str(report.problems[0]) and ":3:" in str(report.problems[0])


def test_bad_batch_reports_field_and_keeps_the_rest(tmp_path: Path) -> None:
    bad = {**DATASET, "conversation": [{**DATASET["conversation"][0], "weight": -1}]}
    missing = {**DATASET, "conversation": [{"qa_id": "q", "query": "hi", "assistant": "yo"}]}
    path = write_jsonl(tmp_path / "g.jsonl", [DATASET, bad, missing, DATASET])
    report = convert_file(path, tmp_path / "out.jsonl", to="gaussia")
    assert report.sessions == 2 and report.errors == 2
    messages = [str(p) for p in report.problems]
    assert messages[0] == f"{path}:2: conversation[0].weight: must be a number >= 0, got -1"
    assert messages[1].startswith(f"{path}:3: conversation[0].ground_truth_assistant: missing")
    assert len(load_output(tmp_path / "out.jsonl")) == 2


def test_duplicate_qa_ids_are_an_error(tmp_path: Path) -> None:
    twice = {**DATASET, "conversation": [DATASET["conversation"][0], DATASET["conversation"][0]]}
    report = convert_file(write_jsonl(tmp_path / "g.jsonl", [twice]), tmp_path / "o.jsonl", to="evalcore")
    assert report.errors == 1
    assert "turns[1].qa_id: 'q1' is already the qa_id of turns[0]" in str(report.problems[0])


def test_weight_rules_warn_but_keep_the_session(tmp_path: Path) -> None:
    conv = [dict(b, weight=0.7) for b in DATASET["conversation"]]
    report = convert_file(
        write_jsonl(tmp_path / "g.jsonl", [{**DATASET, "conversation": conv}]), tmp_path / "o.jsonl", to="evalcore"
    )
    assert report.sessions == 1 and report.errors == 0 and report.warnings == 1
    assert "weights sum to 1.4, not 1.0" in str(report.problems[0])


def test_resolve_weights_case_by_case() -> None:
    assert resolve_weights([]) == ([], None)
    assert resolve_weights([None, None]) == ([0.5, 0.5], None)
    assert resolve_weights([0.25, 0.75]) == ([0.25, 0.75], None)
    weights, warning = resolve_weights([0.5, 0.7])
    assert weights == [0.5, 0.5] and warning and "sum to 1.2" in warning
    weights, warning = resolve_weights([0.2, None, None])
    assert warning is None and weights == [0.2, 0.4, 0.4]
    weights, warning = resolve_weights([1.0, None])
    assert weights == [0.5, 0.5] and warning and ">= 1.0" in warning
    weights, warning = resolve_weights([0.0, 0.0])
    assert weights == [0.5, 0.5] and warning


def test_ragas_to_gaussia_puts_reference_on_the_last_turn(tmp_path: Path) -> None:
    row = {
        "user_input": [
            {"content": "hi", "type": "human"},
            {"content": "hello", "type": "ai"},
            {"content": "refund order 7", "type": "human"},
            {"content": "", "type": "ai", "tool_calls": [{"name": "refund", "args": {"order": 7}}]},
            {"content": "ok", "type": "tool"},
            {"content": "Refunded.", "type": "ai"},
        ],
        "reference": "Order 7 is refunded.",
    }
    out = tmp_path / "g.jsonl"
    convert_file(write_jsonl(tmp_path / "r.jsonl", [row]), out, to="gaussia")
    (dataset,) = load_output(out)
    batches = dataset["conversation"]
    assert [b["query"] for b in batches] == ["hi", "refund order 7"]
    assert [b["ground_truth_assistant"] for b in batches] == ["", "Order 7 is refunded."]
    assert batches[1]["assistant"] == "Refunded."
    assert batches[1]["agentic"]["tools_used"] == [
        {"tool_name": "refund", "parameters": {"order": 7}, "result": "ok", "step": 1}
    ]


def test_a_bad_streamed_line_costs_nothing_before_it(tmp_path: Path) -> None:
    header = {k: DATASET[k] for k in ("session_id", "assistant_id", "context")}
    b1, b2 = ({k: v for k, v in b.items() if k != "weight"} for b in DATASET["conversation"])
    records = [
        {"metadata": header, "batch": b1},
        {"metadata": header, "batch": b2},
        {"metadata": header, "batch": None},
        {"metadata": {**header, "session_id": "s-2", "language": 7}, "batch": b1},
        {"metadata": {**header, "session_id": "s-3", "chatbot_role": "concierge"}, "batch": b1},
    ]
    path = write_jsonl(tmp_path / "s.jsonl", records)
    out = tmp_path / "o.jsonl"
    report = convert_file(path, out, to="gaussia")
    assert report.sessions == 2 and report.errors == 2
    problems = [str(p) for p in report.problems]
    assert problems[0].startswith(f"{path}:3: ") and "batch" in problems[0]
    assert problems[1] == f"{path}:4: metadata.language: expected a string, got a number"
    written = load_output(out)
    assert [r["metadata"]["session_id"] for r in written] == ["s-1", "s-1", "s-3"]
    assert written[2]["metadata"]["chatbot_role"] == "concierge"  # header extras come back


def test_results_stay_with_their_calls_and_context_travels_as_a_system_message(tmp_path: Path) -> None:
    dataset = {
        "session_id": "s",
        "assistant_id": "a",
        "context": "Be terse.",
        "conversation": [
            {
                "qa_id": "q1",
                "query": "book it",
                "assistant": "Booked.",
                "ground_truth_assistant": "",
                "agentic": {"tools_used": [
                    {"tool_name": "notify", "parameters": {}, "step": 1},
                    {"tool_name": "book", "parameters": {"id": 7}, "result": "ok", "step": 2},
                ]},
            }
        ],
    }  # fmt: skip
    out = tmp_path / "o.jsonl"
    convert_file(write_jsonl(tmp_path / "g.jsonl", [dataset]), out, to="openai")
    (chat,) = load_output(out)
    messages = chat["messages"]
    assert messages[0] == {"role": "system", "content": "Be terse."}
    calls = {c["function"]["name"]: c["id"] for c in messages[2]["tool_calls"]}
    assert messages[3]["tool_call_id"] == calls["book"] and messages[3]["content"] == "ok"
    back = tmp_path / "back.jsonl"
    convert_file(out, back, to="gaussia")
    (again,) = load_output(back)
    assert again["context"] == "Be terse."
    assert [t.get("result") for t in again["conversation"][0]["agentic"]["tools_used"]] == [None, "ok"]
