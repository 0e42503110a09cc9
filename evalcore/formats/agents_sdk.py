"""``openai-agents``: OpenAI Agents SDK run state (``RunState.to_json()`` / ``to_string()``).

A run state is one conversation: the run's ``original_input`` (a string is one user message; a
list holds Responses items), then the ``raw_item`` of each of its ``generated_items`` — Responses
items, read as Open Responses items are (calls and their outputs linked by ``call_id``). An
approval waiting on a call (``tool_approval_item``) repeats that call, and a generated item with
the id of an input item repeats it: neither is read twice. Items the model has no place for
(hosted tools, programs) are kept with the message that follows them. The run's trace id is the
session's id; the current agent, the turn, the model responses' ids and usage are kept under
``metadata["openai_agents"]``.
Read-only: written to another format, the conversation is what is carried.
"""

from __future__ import annotations

from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._records import expect_dict, expect_list
from evalcore.formats.base import Format, register
from evalcore.formats.open_responses import items_session
from evalcore.formats.responses_api import Items
from evalcore.schema import Session

NS = "openai_agents"
#: Generated items that repeat an item already read (an approval pending on a call).
_REPEATS = {"tool_approval_item"}
_KEPT = ("$schemaVersion", "current_agent", "current_turn", "max_turns", "trace", "conversation_id")


def _is_run_state(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "$schemaVersion" in value
        and isinstance(value.get("generated_items"), list)
        and ("original_input" in value or "current_agent" in value)
    )


@register
class AgentsSdkFormat(Format):
    """OpenAI Agents SDK run state JSON."""

    name = "openai-agents"
    description = "OpenAI Agents SDK run state (RunState.to_json: generated_items[].raw_item, original_input)"
    priority = 14  # before open-responses, which looks into a record's columns for a trace

    def sniff(self, value: Any) -> bool:
        return _is_run_state(value)

    def parse(self, value: Any) -> Session:
        state = expect_dict(value, "record")
        found = Items()
        original = state.get("original_input")
        if isinstance(original, str):
            found.add({"type": "message", "role": "user", "content": original}, 0, "original_input")
        elif isinstance(original, list):
            for i, item in enumerate(original):
                found.add(item, 0, f"original_input[{i}]")
        elif original is not None:
            raise RecordError("expected a string or a list of items", "original_input")
        seen = {item["id"] for item in found.items if isinstance(item, dict) and isinstance(item.get("id"), str)}
        for i, generated in enumerate(expect_list(state.get("generated_items"), "generated_items")):
            generated = expect_dict(generated, f"generated_items[{i}]")
            raw = expect_dict(generated.get("raw_item"), f"generated_items[{i}].raw_item")
            if generated.get("type") in _REPEATS or (isinstance(raw.get("id"), str) and raw["id"] in seen):
                continue  # the same item again (an approval on a call; history the run was given)
            found.add(raw, 0, f"generated_items[{i}].raw_item")
        found.data = {"metadata": {NS: _kept(state)}}
        trace = state.get("trace")
        if isinstance(trace, dict) and isinstance(trace.get("id"), str):
            found.data["session_id"] = trace["id"]
        session, failures = items_session(found)
        if failures:
            raise failures[0][1]
        assert session is not None
        return session


def _kept(state: dict[str, Any]) -> dict[str, Any]:
    kept = {k: state[k] for k in _KEPT if k in state}
    responses = state.get("model_responses")
    if isinstance(responses, list):
        kept["model_responses"] = [
            {k: v for k, v in r.items() if k != "output"} if isinstance(r, dict) else r for r in responses
        ]
    step = state.get("current_step")
    if isinstance(step, dict) and isinstance(step.get("type"), str):
        kept["current_step"] = step["type"]  # e.g. next_step_interruption: the run waits on an approval
    return kept
