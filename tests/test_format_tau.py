"""τ-bench ReAct / Act trajectories and τ²-bench simulation results, read from real files
(tests/data/real/tau/, see its SOURCE.md)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from formats_util import load_output, sessions_of

from evalcore import convert_file
from evalcore.formats import detect_format, formats, get_format, read_path
from evalcore.formats.tau_bench import parse_action

REAL = Path(__file__).resolve().parent / "data" / "real" / "tau"
REACT = REAL / "react-qwen3-4b-airline-2.json"
ACT = REAL / "act-qwen3-4b-airline-2.json"
TAU2 = REAL / "tau2-grok-4-fast-airline-relaxed-2sims.json"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"


def _raw(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(tmp_path: Path, name: str, value: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return path


# ---- τ-bench: ReAct and Act -------------------------------------------------------------------


def test_react_actions_become_tool_calls_and_api_outputs_their_results() -> None:
    raw = _raw(REACT)
    session, _ = sessions_of(REACT)
    assert session.provenance is not None and session.provenance.format == "tau-bench"
    assert session.session_id == "task-43-trial-0" and session.scores == {"reward": 1.0}
    assert [m.role for m in session.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user",
    ]  # fmt: skip
    lookup, result, update, updated, reply = session.messages[2:7]
    # The thought is the reasoning; the action a call whose id was made up (and says so).
    assert lookup.content is None
    assert lookup.reasoning is not None and lookup.reasoning.startswith(
        "The user has requested to update the passenger name from Mei Lee to Mei Garcia"
    )
    (call,) = lookup.calls
    assert (call.id, call.name, call.args) == ("tau-2", "get_reservation_details", {"reservation_id": "3RK2T9"})
    assert call.metadata == {"tau_bench": {"synthesised_id": True}}
    assert lookup.metadata["tau_bench"]["text"] == raw[0]["traj"][2]["content"]
    # The user message "API output: ..." is the tool's result, linked to the call.
    assert (result.role, result.tool_call_id, result.name) == ("tool", "tau-2", "get_reservation_details")
    assert result.text == raw[0]["traj"][3]["content"].removeprefix("API output: ")
    assert json.loads(result.text)["reservation_id"] == "3RK2T9"
    assert result.metadata["tau_bench"] == {"role": "user", "text": raw[0]["traj"][3]["content"]}
    (change,) = update.calls
    assert change.name == "update_reservation_passengers" and change.args["passengers"][1] == {
        "first_name": "Mei", "last_name": "Garcia", "dob": "1989-12-13"
    }  # fmt: skip
    assert updated.tool_call_id == change.id == "tau-4"
    # ``respond`` is the assistant's words to the user, its thought still the reasoning.
    assert reply.calls == [] and reply.text.startswith("The passenger name has been successfully updated")
    assert reply.reasoning is not None and reply.reasoning.startswith("The passenger name has been successfully")
    assert session.final_answer() == reply.text
    pairs = session.turns()[0].tool_results()
    assert [(c.name, r.tool_call_id if r else None) for c, r in pairs] == [
        ("get_reservation_details", "tau-2"), ("update_reservation_passengers", "tau-4"),
    ]  # fmt: skip
    assert [c.name for c in session.reference_tool_calls or []] == [
        "get_reservation_details", "update_reservation_passengers",
    ]  # fmt: skip
    assert session.metadata["tau_bench"]["strategy"] == "react"


def test_react_tool_errors_and_empty_outputs_are_results_too() -> None:
    _, session = sessions_of(REACT)
    assert session.session_id == "task-15-trial-0"
    tools = [m for m in session.messages if m.role == "tool"]
    assert [(m.name, m.text) for m in tools] == [
        ("get_reservation_details", tools[0].text),
        ("think", ""),
        ("update_reservation_flights", "Error: not enough seats on flight HAT290"),
        ("transfer_to_human_agents", "Transfer successful"),
    ]
    assert [c.name for c in session.tool_calls()] == [
        "get_reservation_details", "think", "update_reservation_flights", "transfer_to_human_agents",
    ]  # fmt: skip
    assert session.tool_calls()[2].args["cabin"] == "economy"
    assert [m.tool_call_id for m in tools] == ["tau-2", "tau-4", "tau-6", "tau-8"]
    assert not any(m.role == "user" and m.text.startswith("API output:") for m in session.messages)


def test_act_has_no_thought_and_plain_text_is_a_reply_as_tau_bench_reads_it() -> None:
    raw = _raw(ACT)
    first, second = sessions_of(ACT)
    assert first.metadata["tau_bench"]["strategy"] == "act"
    assert all(m.reasoning is None for m in first.messages)
    assert [(c.id, c.name) for c in first.tool_calls()] == [
        ("tau-2", "get_reservation_details"), ("tau-4", "update_reservation_passengers"),
    ]  # fmt: skip
    # An answer with no "Action:" at all: τ-bench sent the whole text to the user (its "respond" fallback).
    answer = first.messages[6]
    assert answer.role == "assistant" and answer.calls == []
    assert answer.text == raw[0]["traj"][6]["content"] and "Action:" not in answer.text
    assert [c.name for c in second.tool_calls()] == ["think", "transfer_to_human_agents"]
    assert second.messages[-1].role == "tool" and second.messages[-1].text == "Transfer successful"


def test_parse_action_follows_tau_bench() -> None:
    thought, name, args = parse_action('Thought:\nLook it up.\nAction:\n{"name": "f", "arguments": {"x": 1}}')
    assert (thought, name, args) == ("Look it up.", "f", {"x": 1})
    # The last "Action:" wins; text that is no action is a reply of that text.
    assert parse_action("Action: first\nAction:\nnot json") == ("Action: first", "respond", {"content": "not json"})
    assert parse_action("Hello there") == (None, "respond", {"content": "Hello there"})
    assert parse_action('Action: {"name": "f"}') == (None, "respond", {"content": '{"name": "f"}'})


def test_tool_calling_trajectories_read_as_before(tau_bench_file: Path) -> None:
    raw = _raw(tau_bench_file)
    sessions = sessions_of(tau_bench_file)
    assert len(sessions) == 40
    for row, session in zip(raw, sessions, strict=True):
        assert "strategy" not in session.metadata["tau_bench"]
        wire_ids = [c["id"] for m in row["traj"] if m.get("tool_calls") for c in m["tool_calls"]]
        assert [c.id for c in session.tool_calls()] == wire_ids
        assert all("tau_bench" not in m.metadata for m in session.messages)


def test_react_converts_to_openai_with_real_tool_messages(tmp_path: Path) -> None:
    out = tmp_path / "react.jsonl"
    report = convert_file(REACT, out, to="openai")
    assert report.errors == 0 and report.sessions == 2
    first = load_output(out)[0]
    messages = first["messages"] if isinstance(first, dict) else first
    assistant = messages[2]
    assert assistant["tool_calls"][0]["id"] == "tau-2"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"reservation_id": "3RK2T9"}
    assert assistant["reasoning_content"].startswith("The user has requested")
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "tau-2"


# ---- τ²-bench ---------------------------------------------------------------------------------


def test_tau2_each_simulation_is_a_session() -> None:
    raw = _raw(TAU2)
    sessions = sessions_of(TAU2)
    assert [s.session_id for s in sessions] == ["task-8-trial-2", "task-8-trial-0"]
    assert {s.provenance.format for s in sessions if s.provenance} == {"tau2-bench"}
    assert [s.provenance.position for s in sessions if s.provenance] == [0, 1]
    assert [s.assistant_id for s in sessions] == ["xai/grok-4-fast-reasoning"] * 2
    assert [s.scores for s in sessions] == [{"reward": 1.0}, {"reward": 0.0}]
    session = sessions[0]
    sim = raw["simulations"][0]
    assert len(session.messages) == len(sim["messages"])
    assert [m.role for m in session.messages[:6]] == ["assistant", "user", "assistant", "user", "assistant", "tool"]
    assert session.messages[1].text == sim["messages"][1]["content"]
    (call,) = session.messages[4].calls
    assert (call.id, call.name, call.args) == ("call_76457061", "get_user_details", {"user_id": "sophia_silva_7557"})
    assert call.metadata == {"tau2_bench": {"requestor": "assistant"}}
    result = session.messages[5]
    assert result.tool_call_id == "call_76457061" and json.loads(result.text)["user_id"] == "sophia_silva_7557"
    assert result.metadata["tau2_bench"]["requestor"] == "assistant"
    assert result.metadata["tau2_bench"]["error"] is False
    for call, answer in session.turns()[1].tool_results():
        assert answer is not None and answer.tool_call_id == call.id
    assert session.tags == ["domain:airline-relaxed"]
    assert session.context == raw["info"]["environment_info"]["policy"]


def test_tau2_several_calls_in_one_message_each_get_their_result() -> None:
    _, session = sessions_of(TAU2)
    batch = session.messages[6]
    assert [c.args["reservation_id"] for c in batch.calls] == ["NM1VX1", "KC18K6", "S61CZX", "H8Q05L", "WUNA5K"]
    results = dict((c.id, r) for c, r in session.turns()[1].tool_results())
    wunak = results[batch.calls[4].id]
    assert wunak is not None and json.loads(wunak.text)["reservation_id"] == "WUNA5K"


def test_tau2_ground_truth_and_what_is_kept() -> None:
    raw = _raw(TAU2)
    session, failed = sessions_of(TAU2)
    task = raw["tasks"][0]
    instructions = task["user_scenario"]["instructions"]
    assert session.goal is not None
    assert session.goal.startswith("Domain: airline\nReason for call:\n\tYou want to book a one-way flight")
    assert "Known info:\n\tYour name is Sophia Silva.\n\n\tYour user id is sophia_silva_7557." in session.goal
    assert session.goal.endswith("\tYou want to pay using only one of your certificates.\n\n\tYou do not accept any "
                                 "other mode of payment. \n\n\tYour birthday is in your user profile so you prefer "
                                 "not to provide it.")  # fmt: skip
    assert instructions["task_instructions"].split("\n")[0] in session.goal
    # The task's criteria have no ``actions`` (this fork grades ``acceptable_outcomes``): no reference calls.
    assert session.reference_tool_calls is None
    kept = failed.metadata["tau2_bench"]
    assert kept["termination_reason"] == "user_stop" and kept["trial"] == 0 and kept["task_id"] == "8"
    assert kept["agent_cost"] == raw["simulations"][1]["agent_cost"]
    assert kept["reward_info"]["info"] == {"note": "No acceptable outcome matched"}
    assert kept["reward_info"]["reward_basis"] == ["DB"] and "reward" not in kept["reward_info"]
    breakdown = session.metadata["tau2_bench"]["reward_info"]
    assert breakdown["db_check"] == {"db_match": True, "db_reward": 1.0}
    assert [c["action_match"] for c in breakdown["action_checks"]] == [True] * 4
    assert kept["task"] == task
    assert kept["run"]["timestamp"] == raw["timestamp"]
    assert kept["run"]["info"]["agent_info"]["llm"] == "xai/grok-4-fast-reasoning"
    assert "policy" not in kept["run"]["info"]["environment_info"]  # it is the session's context
    assert session.messages[1].metadata["tau2_bench"]["turn_idx"] == 1


def test_tau2_evaluation_actions_become_reference_calls(tmp_path: Path) -> None:
    raw = _raw(TAU2)
    criteria = raw["tasks"][0]["evaluation_criteria"]
    actions = copy.deepcopy(criteria["acceptable_outcomes"][0]["actions"])
    actions.append({"action_id": "u", "requestor": "user", "name": "toggle_airplane_mode", "arguments": {}})
    criteria.update(actions=actions, communicate_info=["166"], nl_assertions=["Agent offers basic economy."])
    session, _ = sessions_of(_write(tmp_path, "criteria.json", raw))
    refs = session.reference_tool_calls or []
    assert [c.name for c in refs] == [
        "get_user_details",
        "get_reservation_details",
        "search_direct_flight",
        "book_reservation",
    ]  # fmt: skip  (the user's own action is not the agent's)
    assert refs[0].args == {"user_id": "sophia_silva_7557"}
    assert refs[0].metadata["tau2_bench"]["action_id"] == "8_0"
    assert session.expected_facts == ["166"] and session.guidelines == ["Agent offers basic economy."]


def test_tau2_a_bad_simulation_costs_only_itself(tmp_path: Path) -> None:
    raw = _raw(TAU2)
    raw["simulations"][0]["messages"][3]["role"] = "narrator"
    path = _write(tmp_path, "bad.json", raw)
    with read_path(path) as results:
        out = list(results)
    errors = [p for r in out for p in r.problems if p.level == "error"]
    assert len(errors) == 1
    assert errors[0].field == "simulations[0].messages[3].role" and "narrator" in errors[0].message
    good = [r.session for r in out if r.ok]
    assert [s.session_id for s in good if s] == ["task-8-trial-0"]


def test_tau2_user_tool_calls_and_multi_tool_messages(tmp_path: Path) -> None:
    # Shapes of tau2's message model (data_model/message.py): the telecom user's device calls, and a
    # MultiToolMessage holding several results. Built here: the real file above has neither.
    results = {
        "info": {"agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1"}},
        "tasks": [],
        "simulations": [{
            "id": "s1", "task_id": "t1", "trial": 0, "termination_reason": "user_stop",
            "reward_info": {"reward": 0.5},
            "messages": [
                {"role": "assistant", "content": "Please turn airplane mode off."},
                {"role": "user", "content": None, "tool_calls": [
                    {"id": "u1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}]},
                {"role": "tool", "id": "u1", "content": "Airplane mode is OFF", "requestor": "user", "error": False},
                {"role": "user", "content": "Done. Check both lines?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a1", "name": "get_line", "arguments": {"n": 1}, "requestor": "assistant"},
                    {"id": "a2", "name": "get_line", "arguments": {"n": 2}, "requestor": "assistant"}]},
                {"role": "tool", "tool_messages": [
                    {"role": "tool", "id": "a2", "content": "line 2 ok", "requestor": "assistant"},
                    {"role": "tool", "id": "a1", "content": "line 1 ok", "requestor": "assistant"}]},
                {"role": "assistant", "content": "Both lines are fine."},
            ],
        }],
    }  # fmt: skip
    (session,) = sessions_of(_write(tmp_path, "telecom.json", results))
    assert session.session_id == "task-t1-trial-0" and session.assistant_id == "gpt-4.1"
    assert [m.role for m in session.messages] == ["assistant", "user", "user", "assistant", "tool", "tool", "assistant"]
    device = session.messages[1]
    assert device.tool_calls is None
    assert device.metadata["tau2_bench"]["tool_calls"][0]["name"] == "toggle_airplane_mode"
    assert device.metadata["tau2_bench"]["tool_results"][0]["content"] == "Airplane mode is OFF"
    assert [c.name for c in session.tool_calls()] == ["get_line", "get_line"]
    pairs = session.turns()[1].tool_results()
    assert [(c.id, r.text if r else None) for c, r in pairs] == [("a1", "line 1 ok"), ("a2", "line 2 ok")]


def test_tau2_directory_layout_results_json_says_where_the_simulations_are(tmp_path: Path) -> None:
    raw = _raw(TAU2)
    del raw["simulations"]
    with read_path(_write(tmp_path, "results.json", raw)) as results:
        out = list(results)
    assert [r.session for r in out] == [None]
    (problem,) = out[0].problems
    assert problem.level == "warning" and "simulations/" in problem.message


def test_two_agents_runs_keep_their_assistant(tmp_path: Path) -> None:
    """Same task and trial in two runs: the agent's model tells the sessions apart."""
    raw = _raw(TAU2)
    other = copy.deepcopy(raw)
    other["info"]["agent_info"]["llm"] = "gpt-4.1-2025-04-14"
    mine = sessions_of(TAU2)[0]
    theirs = sessions_of(_write(tmp_path, "other.json", other))[0]
    assert mine.session_id == theirs.session_id == "task-8-trial-2"
    assert (mine.assistant_id, theirs.assistant_id) == ("xai/grok-4-fast-reasoning", "gpt-4.1-2025-04-14")
    # A τ-bench record names no model (run.py puts it in the file name only): nothing is made up.
    assert [s.assistant_id for s in sessions_of(REACT)] == [None, None]


# ---- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "name"), [(REACT, "tau-bench"), (ACT, "tau-bench"), (TAU2, "tau2-bench")])
def test_real_files_are_detected_as_their_format(path: Path, name: str) -> None:
    value = _raw(path)
    record = value[0] if isinstance(value, list) else value
    assert detect_format(record).name == name
    others = [f.name for f in formats() if f.name != name and f.sniff(record)]
    assert others == []


def test_tau2_does_not_claim_the_sample_files() -> None:
    tau2 = get_format("tau2-bench")
    for path in sorted(set(SAMPLES.glob("*.json*")) - {SAMPLES / "tau2_bench.json"}):
        text = path.read_text(encoding="utf-8")
        values = [json.loads(text)] if path.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x]
        records = [v for value in values for v in (value if isinstance(value, list) else [value])]
        assert not any(tau2.sniff(r) for r in records), path.name


def test_react_thought_joins_the_models_own_reasoning(tmp_path: Path) -> None:
    raw = _raw(REACT)[:1]
    raw[0]["traj"][2]["reasoning_content"] = "Hidden chain."
    session = sessions_of(_write(tmp_path, "reasoning.json", raw))[0]
    lookup = session.messages[2]
    assert lookup.reasoning is not None and lookup.reasoning.startswith("Hidden chain.\n\nThe user has requested")
    assert lookup.metadata["tau_bench"]["reasoning_content"] == "Hidden chain."
    assert lookup.calls[0].name == "get_reservation_details"


def test_tau2_a_bad_task_is_named_where_it_is(tmp_path: Path) -> None:
    raw = _raw(TAU2)
    raw["tasks"][0]["evaluation_criteria"]["actions"] = [{"requestor": "assistant", "name": 7, "arguments": {}}]
    with read_path(_write(tmp_path, "bad_task.json", raw)) as results:
        out = list(results)
    fields = [p.field for r in out for p in r.problems if p.level == "error"]
    assert fields == ["tasks[0].evaluation_criteria.actions[0].name"] * 2  # both simulations of that task
