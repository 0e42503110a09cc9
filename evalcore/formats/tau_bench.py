"""``tau-bench``: the trajectory files τ-bench publishes (``historical_trajectories/*.json``).

``traj`` is the conversation; ``info.task.actions`` the reference tool calls;
``info.task.instruction`` the user's goal; ``info.task.outputs`` the
expected facts; ``reward`` an imported score.
"""

from __future__ import annotations

from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._chat import chat_messages_in
from evalcore.formats._records import build_session, expect_dict, expect_list
from evalcore.formats.base import Format, register
from evalcore.schema import Session


@register
class TauBenchFormat(Format):
    """One τ-bench trajectory: ``task_id``, ``trial``, ``reward``, ``info``, ``traj``."""

    name = "tau-bench"
    description = "τ-bench trajectories (traj, ground-truth actions, reward)"
    priority = 20

    def sniff(self, value: Any) -> bool:
        return isinstance(value, dict) and isinstance(value.get("traj"), list)

    def parse(self, value: Any) -> Session:
        row = expect_dict(value, "record")
        info = expect_dict(row.get("info", {}), "info")
        task = expect_dict(info.get("task", {}), "info.task")
        data: dict[str, Any] = {"messages": chat_messages_in(row.get("traj"), "traj")}
        task_id, trial = row.get("task_id"), row.get("trial")
        if task_id is not None:
            data["session_id"] = f"task-{task_id}" + (f"-trial-{trial}" if trial is not None else "")
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
        if isinstance(row.get("reward"), int | float):
            data["scores"] = {"reward": float(row["reward"])}
        data["metadata"] = {
            "tau_bench": {k: v for k, v in row.items() if k not in ("traj", "info")}
            | {"info": {k: v for k, v in info.items() if k != "task"}, "task": task}
        }
        if isinstance(task.get("user_id"), str):
            data["tags"] = [f"user:{task['user_id']}"]
        return build_session(data)
