"""``tau2-bench``: τ²-bench simulation results (``Results.save``: ``{timestamp, info, tasks, simulations}``).

A results file is one JSON object holding every simulation of a run: each simulation becomes
one session (``session_id`` ``task-<task_id>-trial-<trial>``, ``assistant_id`` the agent's model
``info.agent_info.llm``). Messages are read with their tool calls (``arguments`` an object, ``id``
kept) and results (a tool message's ``id`` names the call it answers; a ``MultiToolMessage`` is
one tool message per result). Calls the simulated *user* makes (``requestor: "user"``, the telecom
domain's device tools) are not the agent's: they and their results stay on the user message, in
``metadata.tau2_bench`` (``tool_calls``, ``tool_results``).

From the simulation's task (when the file holds it): the user scenario's instructions are the
``goal``, the assistant's ``evaluation_criteria.actions`` the ``reference_tool_calls``,
``communicate_info`` the ``expected_facts`` and ``nl_assertions`` the ``guidelines``; the domain
policy (the agent's instructions) is the ``context``. ``reward_info.reward`` is the ``reward``
score; the rest of the simulation (reward breakdown, termination reason, costs, times, the task
and the run's ``info``) is kept in ``metadata.tau2_bench``. Read-only.

A ``results.json`` of the directory layout (no ``simulations``: they are files in
``simulations/`` beside it) gives no session and a warning saying where they are.
"""

from __future__ import annotations

from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._records import build_session, expect_dict, expect_list, expect_str, named_call_in
from evalcore.formats.base import Format, Reader, register
from evalcore.schema import Session

NS = "tau2_bench"
_MESSAGE_KEYS = {"role", "content", "tool_calls"}
_CALL_KEYS = {"id", "name", "arguments"}
_SIMULATION_KEYS = {"messages", "reward_info"}


def _is_results(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("simulations"), list):
        return isinstance(value.get("info"), dict) or isinstance(value.get("tasks"), list)
    return "simulations" not in value and isinstance(value.get("info"), dict) and isinstance(value.get("tasks"), list)


@register
class Tau2BenchFormat(Format):
    """A τ²-bench results file: one session per simulation."""

    name = "tau2-bench"
    description = "τ²-bench simulation results (one session per simulation; reward, task ground truth)"
    priority = 20

    def sniff(self, value: Any) -> bool:
        return _is_results(value)

    def parse(self, value: Any) -> Session:
        """The first simulation of a results file (``reader`` reads them all)."""
        sessions = read_results(expect_dict(value, "record"), [])
        if not sessions:
            raise RecordError("no simulation in this results file", "simulations")
        return sessions[0]

    def reader(self) -> Reader:
        return _ResultsReader(self.parse)


class _ResultsReader(Reader):
    """Every simulation of a results file is a session; a bad one costs only itself."""

    def feed(self, value: Any, line: int) -> list[tuple[int, Session]]:
        results = expect_dict(value, "record")
        if "simulations" not in results and not _is_results(results):
            raise RecordError("missing (a τ²-bench results file holds its simulations here)", "simulations")
        if "simulations" not in results:
            self.warnings.append(
                (line, "a τ²-bench results.json without simulations (directory layout): "
                       "read the simulation files in the simulations/ folder beside it")
            )  # fmt: skip
            return []
        errors: list[RecordError] = []
        sessions = read_results(results, errors)
        self.failures += [(line, error) for error in errors]
        return [(line, session) for session in sessions]


def read_results(results: dict[str, Any], errors: list[RecordError]) -> list[Session]:
    """The sessions of a results file; each simulation that cannot be read goes to ``errors``."""
    info = expect_dict(results.get("info") or {}, "info")
    tasks = _tasks_by_id(results.get("tasks"))
    run = {"info": _without_policy(info), **({"timestamp": results["timestamp"]} if "timestamp" in results else {})}
    context = _policy(info)
    sessions = []
    for i, simulation in enumerate(expect_list(results.get("simulations"), "simulations")):
        where = f"simulations[{i}]"
        try:
            sessions.append(_simulation_in(expect_dict(simulation, where), where, tasks, run, context))
        except RecordError as exc:
            field = exc.field or where
            if not field.startswith((where, "tasks[")):
                field = f"{where}.{field}"
            errors.append(RecordError(exc.reason, field))
    return sessions


def _tasks_by_id(value: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each task by its id, with its name in problems (``tasks[i]``)."""
    tasks: dict[str, tuple[str, dict[str, Any]]] = {}
    for i, task in enumerate(expect_list(value if value is not None else [], "tasks")):
        task = expect_dict(task, f"tasks[{i}]")
        if task.get("id") is not None:
            tasks[str(task["id"])] = (f"tasks[{i}]", task)
    return tasks


def _policy(info: dict[str, Any]) -> str | None:
    environment = info.get("environment_info")
    policy = environment.get("policy") if isinstance(environment, dict) else None
    return policy if isinstance(policy, str) else None


def _without_policy(info: dict[str, Any]) -> dict[str, Any]:
    """The run's ``info`` kept with each session, less the policy (the session's ``context``)."""
    if _policy(info) is None:
        return info
    environment = {k: v for k, v in info["environment_info"].items() if k != "policy"}
    return {**info, "environment_info": environment}


def _simulation_in(
    sim: dict[str, Any],
    where: str,
    tasks: dict[str, tuple[str, dict[str, Any]]],
    run: dict[str, Any],
    context: str | None,
) -> Session:
    info = run["info"]
    data: dict[str, Any] = {"messages": _messages_in(sim.get("messages"), f"{where}.messages")}
    if context is not None:
        data["context"] = context
    task_id, trial = sim.get("task_id"), sim.get("trial")
    if task_id is not None:
        data["session_id"] = f"task-{task_id}" + (f"-trial-{trial}" if trial is not None else "")
    agent = info.get("agent_info")
    if isinstance(agent, dict) and isinstance(agent.get("llm"), str) and agent["llm"]:
        data["assistant_id"] = agent["llm"]
    environment = info.get("environment_info")
    if isinstance(environment, dict) and isinstance(environment.get("domain_name"), str):
        data["tags"] = [f"domain:{environment['domain_name']}"]
    named = tasks.get(str(task_id)) if task_id is not None else None
    task = named[1] if named else None
    if named is not None:
        _add_task(data, *named)
    reward_info = sim.get("reward_info")
    if reward_info is not None:
        reward_info = expect_dict(reward_info, f"{where}.reward_info")
        reward = reward_info.get("reward")
        if isinstance(reward, int | float) and not isinstance(reward, bool):
            data["scores"] = {"reward": float(reward)}
    kept = {k: v for k, v in sim.items() if k not in _SIMULATION_KEYS}
    if isinstance(reward_info, dict):
        kept["reward_info"] = {k: v for k, v in reward_info.items() if k != "reward"}
    if task is not None:
        kept["task"] = task
    kept["run"] = run
    data["metadata"] = {NS: kept}
    return build_session(data)


def _add_task(data: dict[str, Any], name: str, task: dict[str, Any]) -> None:
    """The task's ground truth (``name`` names the task in problems)."""
    scenario = task.get("user_scenario")
    if isinstance(scenario, dict):
        goal = instructions_text(scenario.get("instructions"))
        if goal:
            data["goal"] = goal
    criteria = task.get("evaluation_criteria")
    if not isinstance(criteria, dict):
        return
    actions = criteria.get("actions")
    if actions is not None:
        calls = []
        for i, action in enumerate(expect_list(actions, f"{name}.evaluation_criteria.actions")):
            field = f"{name}.evaluation_criteria.actions[{i}]"
            action = expect_dict(action, field)
            if action.get("requestor", "assistant") != "assistant":
                continue  # the user's own actions (telecom): not the agent's calls
            name = expect_str(action.get("name"), f"{field}.name")
            args = expect_dict(action.get("arguments") or {}, f"{field}.arguments")
            extras = {k: v for k, v in action.items() if k not in ("name", "arguments")}
            calls.append({"name": name, "args": args, "metadata": {NS: extras}})
        data["reference_tool_calls"] = calls
    facts = criteria.get("communicate_info")
    if facts:
        data["expected_facts"] = [str(f) for f in expect_list(facts, f"{name}.evaluation_criteria.communicate_info")]
    assertions = criteria.get("nl_assertions")
    if assertions:
        data["guidelines"] = [str(a) for a in expect_list(assertions, f"{name}.evaluation_criteria.nl_assertions")]


def instructions_text(value: Any) -> str | None:
    """A user scenario's instructions as τ²-bench prints them to its user simulator."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return None
    lines = [f"Domain: {value['domain']}"] if isinstance(value.get("domain"), str) else []
    for key, label in (("reason_for_call", "Reason for call"), ("known_info", "Known info"),
                       ("unknown_info", "Unknown info"), ("task_instructions", "Task instructions")):  # fmt: skip
        text = value.get(key)
        if isinstance(text, str):
            lines.append(f"{label}:\n" + "\n".join("\t" + line if line.strip() else line for line in text.split("\n")))
    return "\n".join(lines) or None


def _messages_in(value: Any, field: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    last_user: dict[str, Any] | None = None
    for i, raw in enumerate(expect_list(value if value is not None else [], field)):
        for where, item in _items(expect_dict(raw, f"{field}[{i}]"), f"{field}[{i}]"):
            message = _message_in(item, where)
            if message["role"] == "tool" and message["metadata"][NS].get("requestor") == "user" and last_user:
                last_user["metadata"][NS].setdefault("tool_results", []).append(item)  # the user's device answering
                continue
            if message["role"] == "user":
                last_user = message
            out.append(message)
    return out


def _items(m: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any]]]:
    """The messages ``m`` stands for: a ``MultiToolMessage`` is one tool message per result."""
    if m.get("role") != "tool" or "tool_messages" not in m:
        return [(where, m)]
    results = expect_list(m["tool_messages"], f"{where}.tool_messages")
    return [
        (f"{where}.tool_messages[{j}]", expect_dict(r, f"{where}.tool_messages[{j}]")) for j, r in enumerate(results)
    ]


def _message_in(m: dict[str, Any], field: str) -> dict[str, Any]:
    role = m.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise RecordError(f"unknown role {role!r}; expected system, user, assistant or tool", f"{field}.role")
    content = expect_str(m.get("content"), f"{field}.content", optional=True)
    extras = {k: v for k, v in m.items() if k not in _MESSAGE_KEYS}
    out: dict[str, Any] = {"role": role, "content": content}
    if role == "tool":
        extras.pop("id", None)
        out["tool_call_id"] = expect_str(m.get("id"), f"{field}.id", optional=True)
        if m.get("requestor") is not None:
            extras["requestor"] = m["requestor"]
    calls = m.get("tool_calls")
    if calls is not None:
        calls = [
            _call_in(c, f"{field}.tool_calls[{j}]") for j, c in enumerate(expect_list(calls, f"{field}.tool_calls"))
        ]
        if role == "user":
            extras["tool_calls"] = m["tool_calls"]  # the user's own calls: not the agent's
        else:
            out["tool_calls"] = calls
    out["metadata"] = {NS: extras}
    return out


def _call_in(value: Any, field: str) -> dict[str, Any]:
    call, c = named_call_in(value, field, "arguments")
    call["metadata"] = {NS: {k: v for k, v in c.items() if k not in _CALL_KEYS}}
    return call
