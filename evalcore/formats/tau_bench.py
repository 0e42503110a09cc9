"""``tau-bench``: the trajectory files τ-bench writes (``run.py`` results, ``historical_trajectories/*.json``).

``traj`` is the conversation; ``info.task.actions`` the reference tool calls;
``info.task.instruction`` the user's goal; ``info.task.outputs`` the
expected facts; ``reward`` an imported score.

The ``tool-calling`` strategy writes OpenAI chat messages with ``tool_calls`` and ``tool``
results, read as they are. The ``react`` and ``act`` strategies write the action as the
assistant's text (``Thought: ...\\nAction: {"name": ..., "arguments": {...}}``; ``act`` without
the thought) and send tool results back as user messages ``API output: ...``. Those are read
as τ-bench itself read them (the text after the last ``Action:``, else a reply to the user):
a tool action becomes a tool call whose id is made up here (``tau-<index>``, flagged
``metadata.tau_bench.synthesised_id``) and its ``API output`` a tool message answering it; a
``respond`` action becomes the assistant's text; the thought becomes the message's
``reasoning``. The original text of each message is kept in ``metadata.tau_bench``.

A record says nothing about the agent's model: ``run.py`` puts it in the file's name only
(``<strategy>-<model>-<temperature>_range_…_user-<user model>-…json``), and so do the published
``historical_trajectories`` (``<model>-<domain>.json``). The model in such a name is each session's
``assistant_id`` (two agents' runs, whose ids are ``task-N-trial-M`` in both, are then two sets of
sessions in one dataset); with any other name it is left unset.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._chat import chat_message_in, chat_messages_in
from evalcore.formats._records import build_session, expect_dict, expect_list
from evalcore.formats.base import Format, register
from evalcore.formats.jsonio import loads
from evalcore.schema import Session

NS = "tau_bench"
#: What τ-bench puts before a tool's output when it sends it back as a user message.
API_OUTPUT = "API output: "
RESPOND = "respond"
_ACTION = "Action:"
#: File names that say the agent's model: ``run.py``'s results and the published historical trajectories.
_STRATEGY = r"(?:tool-calling|act|react|few-shot)-"
_RUN_NAME = re.compile(_STRATEGY + r"(?P<model>.+?)-\d+(?:\.\d+)?_range_")
_HISTORY_NAME = re.compile(rf"(?!{_STRATEGY})(?P<model>.+?)-(?:airline|retail)(?:[-_.]|$)")


@register
class TauBenchFormat(Format):
    """One τ-bench trajectory: ``task_id``, ``trial``, ``reward``, ``info``, ``traj``."""

    name = "tau-bench"
    description = "τ-bench trajectories (tool-calling, ReAct and Act; ground-truth actions, reward)"
    priority = 20

    def sniff(self, value: Any) -> bool:
        return isinstance(value, dict) and isinstance(value.get("traj"), list)

    def assistant_from_source(self, source: str) -> str | None:
        name = PurePath(source).name
        match = _RUN_NAME.match(name) or _HISTORY_NAME.match(name)
        return match["model"] if match else None

    def parse(self, value: Any) -> Session:
        row = expect_dict(value, "record")
        info = expect_dict(row.get("info", {}), "info")
        task = expect_dict(info.get("task", {}), "info.task")
        traj = expect_list(row.get("traj"), "traj")
        text_actions = _has_text_actions(traj)
        messages = _text_action_messages(traj) if text_actions else chat_messages_in(traj, "traj")
        data: dict[str, Any] = {"messages": messages}
        task_id, trial = row.get("task_id"), row.get("trial")
        if task_id is not None:
            data["session_id"] = f"task-{task_id}" + (f"-trial-{trial}" if trial is not None else "")
        _add_task(data, task)
        if isinstance(row.get("reward"), int | float):
            data["scores"] = {"reward": float(row["reward"])}
        kept = {k: v for k, v in row.items() if k not in ("traj", "info")}
        kept |= {"info": {k: v for k, v in info.items() if k != "task"}, "task": task}
        if text_actions:
            kept["strategy"] = "react" if any(m.get("reasoning") for m in messages) else "act"
        data["metadata"] = {NS: kept}
        if isinstance(task.get("user_id"), str):
            data["tags"] = [f"user:{task['user_id']}"]
        return build_session(data)


def _add_task(data: dict[str, Any], task: dict[str, Any]) -> None:
    """The task's ground truth: reference calls, goal, expected facts."""
    actions = task.get("actions")
    if actions is not None:
        calls = []
        for i, action in enumerate(expect_list(actions, "info.task.actions")):
            action = expect_dict(action, f"info.task.actions[{i}]")
            if not isinstance(action.get("name"), str):
                raise RecordError("missing tool name", f"info.task.actions[{i}].name")
            kwargs = expect_dict(action.get("kwargs", {}), f"info.task.actions[{i}].kwargs")
            calls.append({"name": action["name"], "args": kwargs})
        data["reference_tool_calls"] = calls
    if isinstance(task.get("instruction"), str):
        data["goal"] = task["instruction"]
    outputs = task.get("outputs")
    if outputs:
        data["expected_facts"] = [str(o) for o in expect_list(outputs, "info.task.outputs")]


def _has_text_actions(traj: list[Any]) -> bool:
    """Whether ``traj`` is a ReAct / Act trajectory: no tool messages or calls, actions in the text."""
    found = False
    for m in traj:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool" or m.get("tool_calls"):
            return False
        content = m.get("content")
        if m.get("role") == "assistant" and isinstance(content, str) and _ACTION in content:
            found = True
    return found


def parse_action(text: str) -> tuple[str | None, str, dict[str, Any]]:
    """The thought, the action's name and its arguments in an assistant's text, read as τ-bench reads it.

    τ-bench takes the text after the last ``Action:`` as JSON; when that is not an action it
    takes the whole of that text as a reply to the user (``respond``).
    """
    before, _, after = text.rpartition(_ACTION)
    action_text = after.strip()
    thought = before.strip().removeprefix("Thought:").strip() or None
    try:
        action = loads(action_text)
    except (json.JSONDecodeError, ValueError):
        action = None
    if isinstance(action, dict) and isinstance(action.get("name"), str) and isinstance(action.get("arguments"), dict):
        return thought, action["name"], action["arguments"]
    return thought, RESPOND, {"content": action_text}


def _text_action_messages(traj: list[Any]) -> list[dict[str, Any]]:
    """Canonical messages of a ReAct / Act trajectory (see the module's docstring)."""
    out: list[dict[str, Any]] = []
    pending: tuple[str, str] | None = None  # (call id, tool name) of the last tool action
    for i, m in enumerate(traj):
        field = f"traj[{i}]"
        message = chat_message_in(m, field)
        content = message.get("content")
        if message["role"] == "assistant" and isinstance(content, str):
            message, pending = _assistant_in(message, content, f"tau-{i}"), None
            calls = message.get("tool_calls")
            if calls:
                pending = (calls[0]["id"], calls[0]["name"])
        elif message["role"] == "user" and pending and isinstance(content, str) and content.startswith(API_OUTPUT):
            message = _result_in(message, content, *pending)
            pending = None
        else:
            pending = None
        out.append(message)
    return out


def _assistant_in(message: dict[str, Any], text: str, call_id: str) -> dict[str, Any]:
    thought, name, args = parse_action(text)
    metadata = dict(message.get("metadata") or {})
    extras = dict(metadata.get("openai") or {})
    kept: dict[str, Any] = {"text": text}
    if "tool_calls" in extras:  # what the wire said (null); the calls are now read from the text
        kept["tool_calls"] = extras.pop("tool_calls")
    elif "tool_calls" in message:
        kept["tool_calls"] = message.pop("tool_calls")
    metadata.pop("openai", None)
    if extras:
        metadata["openai"] = extras
    metadata[NS] = kept
    out = {k: v for k, v in message.items() if k not in ("content", "tool_calls", "metadata")}
    out["metadata"] = metadata
    if thought is not None:
        hidden = out.get("reasoning")  # the model's own reasoning_content, when the wire had one
        if hidden:
            kept["reasoning_content"] = hidden
        out["reasoning"] = f"{hidden}\n\n{thought}" if hidden else thought
    if name == RESPOND:
        reply = args.get("content")
        out["content"] = reply if isinstance(reply, str) else json.dumps(args, ensure_ascii=False)
    else:
        out["content"] = None
        out["tool_calls"] = [{"id": call_id, "name": name, "args": args, "metadata": {NS: {"synthesised_id": True}}}]
    return out


def _result_in(message: dict[str, Any], text: str, call_id: str, name: str) -> dict[str, Any]:
    metadata = dict(message.get("metadata") or {})
    metadata[NS] = {"role": "user", "text": text}
    return {
        "role": "tool",
        "content": text.removeprefix(API_OUTPUT),
        "tool_call_id": call_id,
        "name": name,
        "metadata": metadata,
    }
