"""The multi-turn solver, for real: task files parsed and checked, templates in their sandbox, and runs through
the model client (``evalcore.model.ModelClient``) against a chat-completions server on 127.0.0.1 whose answers
are scripted (tests/solver_server.py). No fake of our own code: the HTTP, the client's retries and timeouts
and the format readers of ``load_trace`` are the real ones.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from solver_server import JUDGE, MODEL, Reply, Script, ScriptedOpenAI, clarify, confirmation

from evalcore.errors import EvalcoreError, RegistryError, UnknownNameError, UsageError
from evalcore.formats import detect_format, read
from evalcore.model import ModelClient, ModelConfig
from evalcore.samples import sample_files
from evalcore.solver import (
    SampleResult,
    SamplesError,
    Task,
    TaskError,
    load_samples,
    load_task,
    parse_samples,
    parse_task,
    read_samples,
    sample_key,
    solve,
    solve_sample,
)
from evalcore.solver import templates as templates_module
from evalcore.solver.task import BUILDER_TYPES, BUILDERS, ChatMessage, Generate, Loop
from evalcore.solver.templates import SampleView, TemplateError, Templates

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "sample_data" / "tasks"
AUSTRIA = {"question": "What is the capital city of Austria?", "target": "Vienna"}
JAPAN = {"question": "What is the capital city of Japan?", "target": "Tokyo"}
JUDGE_INSTRUCTIONS = (
    "If the previous message is a question, answer it using the information\n"
    "in the other messages.\n"
    "If the question is asking for confirmation, always answer 'Yes'.\n"
    "\n"
    "Otherwise, answer with '<done>'.\n"
)
SEOUL_BERLIN = [
    ("user", "What is the current temperature in Seoul?"),
    ("assistant", "The current temperature in Seoul is 11 C with partly cloudy skies."),
    ("user", "And what about Berlin?"),
    ("assistant", "In Berlin it is currently 4 C and overcast."),
]


# ---------------------------------------------------------------------------------------------------- helpers


def make_task(*builders: dict[str, Any], config: dict[str, str] | None = None, **solver: Any) -> Task:
    """A task from builders given as dicts (a task file is YAML, and JSON is YAML)."""
    block = {"type": "multi_turn_solver", **solver, "message_builders": list(builders)}
    return parse_task(json.dumps({"definition": {"solver": block}}), config, source="task.yaml")


def user(content: str, **extra: Any) -> dict[str, Any]:
    return {"type": "chat_message", "role": "user", "content": content, **extra}


def generate(**extra: Any) -> dict[str, Any]:
    return {"type": "generate", **extra}


def loop(*builders: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "loop", "message_builders": list(builders), **extra}


def stop_if(includes: str, keep: bool) -> dict[str, Any]:
    return {"terminate_if": {"includes": includes, "keep_iteration": keep}}


def queued(replies: dict[str, list[str]]) -> Script:
    """A script answering each model from its own queue of replies, in order (an exhausted queue: HTTP 500)."""
    queues = {model: deque(texts) for model, texts in replies.items()}
    return lambda model, messages: queues[model].popleft()


def convo(result: SampleResult) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in result.messages]


def config_for(server: ScriptedOpenAI, **options: Any) -> ModelConfig:
    settings: dict[str, Any] = {"model": MODEL, "base_url": server.url, "api_key": "k", "concurrency": 16}
    settings.update({"max_retries": 2, "backoff": 0.01, "timeout": 10.0})
    settings.update(options)
    return ModelConfig(**settings)


def run_task(
    task: Task,
    samples: list[dict[str, Any]],
    script: Script = clarify,
    *,
    concurrency: int = 4,
    latency: float = 0.0,
    on_result: Callable[[int, SampleResult], Any] | None = None,
    **options: Any,
) -> tuple[list[SampleResult], ScriptedOpenAI]:
    """Solve ``samples`` against a scripted server through the real client; the results and the server."""
    with ScriptedOpenAI(script, latency=latency, timeout_sleep=3.0) as server:

        async def go() -> list[SampleResult]:
            client = ModelClient(config_for(server, **options))
            try:
                return await solve(
                    task, samples, client, default_model=MODEL, concurrency=concurrency, on_result=on_result
                )
            finally:
                await client.aclose()

        try:
            results = asyncio.run(go())
        finally:
            server.release.set()
    return results, server


def run_one(
    task: Task, sample: dict[str, Any], script: Script = clarify, **options: Any
) -> tuple[SampleResult, ScriptedOpenAI]:
    results, server = run_task(task, [sample], script, **options)
    return results[0], server


def system_prompt(task: Task) -> str:
    first = task.builders[0]
    assert first.type == "chat_message"
    return first.content


# ------------------------------------------------------------------------------------- the seed's examples


def test_clarification_reproduces_the_seed_table_turn_for_turn() -> None:
    task = load_task(TASKS / "clarification.yaml", {"judge_model": JUDGE})
    result, server = run_one(task, AUSTRIA)
    assert result.ok, result.error
    assert convo(result) == [
        ("system", system_prompt(task)),
        ("user", "What is the capital city of Austria?"),
        ("assistant", "Just to confirm - you're asking about the capital city of Austria, correct?"),
        ("user", "Yes"),  # the judge's answer, appended as output_role user
        ("assistant", "Vienna"),
    ]
    assert [(c.builder, c.model) for c in result.calls] == [
        ("message_builders[2]", MODEL),
        ("message_builders[3]", JUDGE),
        ("message_builders[4]", MODEL),
    ]
    # The judge sees the conversation so far, then its instructions (which are not part of the conversation).
    (judge_request,) = server.calls(JUDGE)
    assert judge_request == [
        {"role": "system", "content": system_prompt(task)},
        {"role": "user", "content": "What is the capital city of Austria?"},
        {"role": "assistant", "content": confirmation("Austria")},
        {"role": "user", "content": JUDGE_INSTRUCTIONS},
    ]
    assert server.calls(MODEL)[-1][-1] == {"role": "user", "content": "Yes"}
    # Tokens as the server reported them, per call and in total.
    expected = [
        ScriptedOpenAI.completion(r, t)["usage"] for r, t in zip(server.requests, ["", "Yes", "Vienna"], strict=True)
    ]
    assert [c.input_tokens for c in result.calls] == [u["prompt_tokens"] for u in expected]
    assert result.input_tokens == sum(u["prompt_tokens"] for u in expected)
    assert [c.output_tokens for c in result.calls] == [
        ScriptedOpenAI.completion(r, t)["usage"]["completion_tokens"]
        for r, t in zip(server.requests, [confirmation("Austria"), "Yes", "Vienna"], strict=True)
    ]
    assert all(c.latency_ms >= 0 for c in result.calls)
    assert result.models == [MODEL, JUDGE]
    assert result.trace is None  # message_format latticeflow


def test_clarification_ends_where_the_judge_says_done_outside_a_loop() -> None:
    """A non-European question is answered at once; the judge's "<done>" (keep_iteration false) is dropped and the
    conversation ends there: the final ``generate`` does not run."""
    task = load_task(TASKS / "clarification.yaml", {"judge_model": JUDGE})
    result, server = run_one(task, JAPAN)
    assert result.ok, result.error
    assert convo(result) == [
        ("system", system_prompt(task)),
        ("user", "What is the capital city of Japan?"),
        ("assistant", "Tokyo"),
    ]
    assert [c.model for c in result.calls] == [MODEL, JUDGE]
    assert len(server.requests) == 2


def test_clarification_loop_reproduces_the_seed_table() -> None:
    task = load_task(TASKS / "clarification_loop.yaml", {"judge_model": JUDGE})
    result, server = run_one(task, AUSTRIA)
    assert result.ok, result.error
    assert convo(result) == [
        ("system", system_prompt(task)),
        ("user", "What is the capital city of Austria?"),
        ("assistant", confirmation("Austria")),
        ("user", "Yes"),  # loop iteration 1, judge
        ("assistant", "Vienna"),  # loop iteration 1, generate; in iteration 2 the judge says <done>: dropped
    ]
    assert [c.model for c in result.calls] == [MODEL, JUDGE, MODEL, JUDGE]
    assert [c.builder for c in result.calls] == [
        "message_builders[2]",
        "message_builders[3].loop.message_builders[0]",
        "message_builders[3].loop.message_builders[1]",
        "message_builders[3].loop.message_builders[0]",
    ]
    assert server.calls(JUDGE)[-1][-2] == {"role": "assistant", "content": "Vienna"}


def test_sample_tasks_run_every_sample_to_its_target() -> None:
    samples = load_samples(TASKS / "clarification.jsonl")
    assert len(samples) == 6
    for name in ("clarification", "clarification_loop"):
        task = load_task(TASKS / f"{name}.yaml", {"judge_model": JUDGE})
        results, _ = run_task(task, samples)
        assert [r.error for r in results] == [None] * 6
        assert [r.messages[-1].text for r in results] == [s["target"] for s in samples]
        assert [r.session().reference for r in results] == [s["target"] for s in samples]


def test_continue_trace_sample_loads_the_recorded_conversation_and_continues_it() -> None:
    task = load_task(TASKS / "continue_trace.yaml")
    samples = load_samples(TASKS / "continue_trace.jsonl")
    assert isinstance(samples[0]["conversation_trace"], dict)
    assert isinstance(samples[1]["conversation_trace"], str)  # a Trace as JSON text
    replies = ["Berlin is colder: 4 C against 11 C in Seoul.", "Oslo is colder than Madrid."]
    results, server = run_task(task, samples, queued({MODEL: replies}), concurrency=1)
    first = results[0]
    assert first.ok, first.error
    assert convo(first) == [*SEOUL_BERLIN, ("assistant", replies[0])]
    assert server.calls(MODEL)[0] == [{"role": r, "content": t} for r, t in SEOUL_BERLIN]
    assert results[1].ok and convo(results[1])[2] == ("user", "And what about Oslo?")
    # message_format open_responses: the conversation as Open Responses items, the loaded ones as they came.
    assert first.trace is not None
    items = first.trace["items"]
    assert [(i["role"], i["content"][0]["type"], i["content"][0]["text"]) for i in items] == [
        ("user", "input_text", SEOUL_BERLIN[0][1]),
        ("assistant", "output_text", SEOUL_BERLIN[1][1]),
        ("user", "input_text", SEOUL_BERLIN[2][1]),
        ("assistant", "output_text", SEOUL_BERLIN[3][1]),
        ("assistant", "output_text", replies[0]),
    ]
    assert [i["id"] for i in items] == ["msg_1", "msg_2", "msg_3", "msg_4", ""]
    assert items[-1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": replies[0]}],
        "id": "",
        "status": "completed",
    }
    assert detect_format(first.trace).name == "open-responses"
    assert first.session().trace == first.trace


# ---------------------------------------------------------------------------------------------- termination


def test_termination_outside_a_loop_keeps_the_message_and_ends_the_conversation() -> None:
    task = make_task(user("hi"), generate(**stop_if("STOP", True)), user("never sent"), generate())
    result, server = run_one(task, {}, queued({MODEL: ["ok STOP"]}))
    assert result.ok
    assert convo(result) == [("user", "hi"), ("assistant", "ok STOP")]
    assert len(server.requests) == 1


def test_termination_outside_a_loop_without_keep_iteration_drops_the_message() -> None:
    task = make_task(user("hi"), generate(**stop_if("STOP", False)), user("never sent"), generate())
    result, server = run_one(task, {}, queued({MODEL: ["ok STOP"]}))
    assert result.ok
    assert convo(result) == [("user", "hi")]
    assert len(server.requests) == 1


def test_a_chat_message_can_terminate_too() -> None:
    task = make_task(user("{{ sample.text }}", **stop_if("bye", False)), generate())
    result, server = run_one(task, {"text": "bye now"}, queued({MODEL: []}))
    assert result.ok and convo(result) == [] and server.requests == []
    result, _ = run_one(task, {"text": "hello"}, queued({MODEL: ["hi"]}))
    assert convo(result) == [("user", "hello"), ("assistant", "hi")]


def test_termination_that_is_not_met_goes_on() -> None:
    task = make_task(user("hi"), generate(**stop_if("STOP", False)), user("more"), generate())
    result, _ = run_one(task, {}, queued({MODEL: ["go on", "done"]}))
    assert convo(result) == [("user", "hi"), ("assistant", "go on"), ("user", "more"), ("assistant", "done")]


@pytest.mark.parametrize("keep", [True, False])
def test_termination_inside_a_loop_ends_the_loop_and_goes_on_after_it(keep: bool) -> None:
    task = make_task(
        loop(user("q{{ loop_index }}"), generate(**stop_if("DONE", keep)), max_iterations=5),
        user("after the loop"),
    )
    result, server = run_one(task, {}, queued({MODEL: ["a0", "a1 DONE"]}))
    assert result.ok, result.error
    iteration_1 = [("user", "q1"), ("assistant", "a1 DONE")] if keep else []  # all of it, or none of it
    assert convo(result) == [("user", "q0"), ("assistant", "a0"), *iteration_1, ("user", "after the loop")]
    assert len(server.requests) == 2


def test_loop_reaching_max_iterations_with_on_max_iterations_error_fails_the_sample() -> None:
    task = make_task(
        user("start"),
        loop(user("q{{ loop_index }}"), generate(**stop_if("DONE", True)), max_iterations=2),
        user("after the loop"),
    )
    result, _ = run_one(task, {}, queued({MODEL: ["a0", "a1"]}))
    assert result.error == (
        "message_builders[1]: the loop reached max_iterations (2) and no terminate_if was met "
        "(on_max_iterations: error)"
    )
    assert not result.ok
    assert convo(result) == [
        ("user", "start"),
        ("user", "q0"),
        ("assistant", "a0"),
        ("user", "q1"),
        ("assistant", "a1"),
    ]
    assert len(result.calls) == 2


def test_loop_reaching_max_iterations_with_on_max_iterations_continue_goes_on() -> None:
    task = make_task(
        loop(
            user("q{{ loop_index }}"), generate(**stop_if("DONE", True)), max_iterations=2, on_max_iterations="continue"
        ),
        user("after the loop"),
    )
    result, _ = run_one(task, {}, queued({MODEL: ["a0", "a1"]}))
    assert result.ok
    assert convo(result)[-3:] == [("user", "q1"), ("assistant", "a1"), ("user", "after the loop")]


def test_loop_without_a_terminating_builder_runs_max_iterations_and_never_errors() -> None:
    task = make_task(loop(user("q{{ loop_index }}"), generate(), max_iterations=3), user("after"))
    assert task.builders[0].type == "loop" and task.builders[0].on_max_iterations == "error"  # (the default)
    result, server = run_one(task, {}, queued({MODEL: ["a0", "a1", "a2"]}))
    assert result.ok, result.error
    assert convo(result) == [
        ("user", "q0"), ("assistant", "a0"), ("user", "q1"), ("assistant", "a1"),
        ("user", "q2"), ("assistant", "a2"), ("user", "after"),
    ]  # fmt: skip
    assert len(server.requests) == 3


def test_loop_default_max_iterations_is_10() -> None:
    task = make_task(loop(generate()))
    result, server = run_one(task, {}, queued({MODEL: [f"a{i}" for i in range(10)]}))
    assert result.ok and len(server.requests) == 10


def test_nested_loops_end_only_the_innermost_loop() -> None:
    inner = loop(
        generate(**stop_if("END", False)),
        user("inner {{ loop_index }}"),
        max_iterations=3,
    )
    task = make_task(
        loop(
            user("outer {{ loop_index }}"),
            inner,
            user("outer end {{ loop_index }}"),
            max_iterations=2,
            on_max_iterations="continue",
        ),
        user("after"),
    )
    result, _ = run_one(task, {}, queued({MODEL: ["r1", "r2 END", "r3 END"]}))
    assert result.ok, result.error
    assert convo(result) == [
        ("user", "outer 0"),
        ("assistant", "r1"),
        ("user", "inner 0"),  # inner iteration 1 ("r2 END") dropped, with keep_iteration false
        ("user", "outer end 0"),  # loop_index is the outer loop's again
        ("user", "outer 1"),
        ("user", "outer end 1"),  # inner iteration 0 ("r3 END") dropped
        ("user", "after"),
    ]
    assert [c.builder for c in result.calls] == [
        "message_builders[0].loop.message_builders[1].loop.message_builders[0]"
    ] * 3


def test_an_outer_loop_counts_a_nested_terminate_if_for_on_max_iterations() -> None:
    """on_max_iterations is ignored only when no builder at any depth has a terminate_if; here the inner loop's
    one makes the outer loop's default ``error`` count when the outer loop reaches its maximum."""
    task = make_task(
        loop(loop(generate(**stop_if("END", True)), max_iterations=1, on_max_iterations="continue"), max_iterations=2)
    )
    result, _ = run_one(task, {}, queued({MODEL: ["END", "END"]}))
    assert result.error == (
        "message_builders[0]: the loop reached max_iterations (2) and no terminate_if was met "
        "(on_max_iterations: error)"
    )
    assert convo(result) == [("assistant", "END"), ("assistant", "END")]


# ------------------------------------------------------------------------------------------ generate_message


def test_include_conversation_false_sends_only_the_extra_messages() -> None:
    judge = {
        "type": "generate_message",
        "model_id": JUDGE,
        "include_conversation": False,
        "extra_input_messages": [
            {"type": "chat_message", "role": "system", "content": "You grade answers."},
            {"role": "user", "content": "Grade: {{ messages[-1].content }} (for {{ sample.question }})"},
        ],
    }
    task = make_task(user("{{ sample.question }}"), generate(), judge)
    result, server = run_one(task, {"question": "2+2?"}, queued({MODEL: ["4"], JUDGE: ["correct"]}))
    assert result.ok
    assert server.calls(JUDGE) == [
        [{"role": "system", "content": "You grade answers."}, {"role": "user", "content": "Grade: 4 (for 2+2?)"}]
    ]
    # output_role defaults to assistant; the extra messages are not part of the conversation.
    assert convo(result) == [("user", "2+2?"), ("assistant", "4"), ("assistant", "correct")]


def test_generate_message_with_a_config_model_key() -> None:
    builder = {
        "type": "generate_message",
        "model_key": "<< config.simulator >>",
        "extra_input_messages": [{"role": "user", "content": "Ask a follow-up question."}],
        "output_role": "user",
    }
    task = make_task(user("hi"), generate(), builder, generate(), config={"simulator": JUDGE})
    result, server = run_one(task, {}, queued({MODEL: ["hello", "fine"], JUDGE: ["how are you?"]}))
    assert convo(result) == [("user", "hi"), ("assistant", "hello"), ("user", "how are you?"), ("assistant", "fine")]
    assert [r["model"] for r in server.requests] == [MODEL, JUDGE, MODEL]


# ------------------------------------------------------------------------------------------------- templates


def test_templates_see_the_messages_and_the_loop_index() -> None:
    task = make_task(
        user("{{ sample.question }}"),
        generate(),
        loop(
            user(
                "#{{ loop_index }}: {{ messages | length }} so far, first {{ messages[0].role }}, "
                "last {{ messages[-1].content }}; roles {% for m in messages %}{{ m.role[0] }}{% endfor %}"
            ),
            generate(),
            max_iterations=2,
        ),
    )
    result, server = run_one(task, {"question": "Q"}, queued({MODEL: ["A", "B", "C"]}))
    assert result.ok, result.error
    assert [t for r, t in convo(result) if r == "user"] == [
        "Q",
        "#0: 2 so far, first user, last A; roles ua",
        "#1: 4 so far, first user, last B; roles uaua",
    ]
    assert server.calls(MODEL)[2][-1]["content"] == "#1: 4 so far, first user, last B; roles uaua"


def test_a_plain_content_is_used_as_written() -> None:
    task = make_task(user("Not a {template}, 100% plain.\n"), generate())
    result, server = run_one(task, {}, queued({MODEL: ["ok"]}))
    assert server.calls(MODEL)[0] == [{"role": "user", "content": "Not a {template}, 100% plain.\n"}]
    assert result.ok


ESCAPES = [
    "{{ ''.__class__.__mro__ }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ sample.__class__ }}",
    "{{ sample.__class__.__init__.__globals__ }}",
    "{{ messages.__class__.__base__ }}",
    "{{ cycler.__init__.__globals__.os }}",
    "{{ lipsum.__globals__['os'].system('echo owned') }}",
    "{{ messages.append({'role': 'user', 'content': 'injected'}) }}",
    "{{ sample.update({'question': 'changed'}) }}",
    "{{ messages[0].clear() }}",
]


@pytest.mark.parametrize("escape", ESCAPES)
def test_a_template_cannot_reach_python_internals(escape: str) -> None:
    task = make_task(user("{{ sample.question }}"), generate(), user("x " + escape), generate())
    sample = {"question": "Q"}
    result, server = run_one(task, sample, queued({MODEL: ["A"]}))
    assert result.error is not None
    assert result.error.startswith("message_builders[2]: content: the template may not reach Python internals (")
    assert "is unsafe" in result.error
    assert "<class" not in result.error and "<function" not in result.error and " at 0x" not in result.error
    assert convo(result) == [("user", "Q"), ("assistant", "A")]  # the conversation so far, unchanged
    assert sample == {"question": "Q"}
    assert len(server.requests) == 1


def test_templates_unit_render_and_errors() -> None:
    templates = Templates()
    render = templates.render
    assert render("{{ sample.a }}-{{ loop_index }}", "w", sample={"a": 1}, messages=[], loop_index=3) == "1-3"
    assert templates.compile("plain") is None
    first = templates.compile("{{ sample.a }}")
    assert first is not None and templates.compile("{{ sample.a }}") is first  # compiled once
    with pytest.raises(TemplateError, match=r"^w: the template may not reach Python internals \(access to attribute "):
        render("{{ sample.__class__ }}", "w", sample=SampleView(a=1), messages=[])
    with pytest.raises(TemplateError) as caught:
        render("{{ 1 / 0 }}", "w", sample={}, messages=[])
    assert str(caught.value) == "w: the template failed: ZeroDivisionError: division by zero"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (
            "{{ 'a' * 10**10 }}",
            "w: the template asks for too large a value (a text of 10,000,000,000 characters; at most 1,000,000)",
        ),
        (
            "{{ [0] * 2000000 }}",
            "w: the template asks for too large a value (a value of 10,000,000 characters; at most 1,000,000)",
        ),
        (
            "{{ 7 ** 100000 }}",
            "w: the template asks for too large a value (an exponent of 100,000; at most 1,000)",
        ),
        ("{% for i in range(10**9) %}{% endfor %}", "w: the template asks for too large a value (Range too big. "),
        (
            "{% for i in range(100000) %}{% for j in range(100) %}{{ 'x' }}{% endfor %}{% endfor %}",
            "w: the template asks for too large a value (a text of more than 1,000,000 characters)",
        ),
    ],
)
def test_a_template_cannot_exhaust_memory_or_time(content: str, error: str) -> None:
    started = time.perf_counter()
    with pytest.raises(TemplateError) as caught:
        Templates().render(content, "w", sample={}, messages=[])
    assert str(caught.value).startswith(error)
    assert time.perf_counter() - started < 1.0
    assert (
        Templates().render("{{ 'ab' * 3 }} {{ 2 ** 10 }} {{ 3 * 4 }}", "w", sample={}, messages=[]) == "ababab 1024 12"
    )


def test_a_template_that_renders_for_too_long_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(templates_module, "MAX_SECONDS", 0.01)
    with pytest.raises(TemplateError, match=r"^w: the template ran for more than 0.01 s$"):
        Templates().render("{% for i in range(100000) %}{{ i }}{% endfor %}", "w", sample={}, messages=[])


def test_templates_are_compiled_once_per_task() -> None:
    task = make_task(
        user("{{ sample.n }}"), generate(), loop(user("again {{ sample.n }}"), generate(), max_iterations=2)
    )
    templates = task.templates()
    assert task.templates() is templates
    compiled = dict(templates._compiled)
    assert sorted(compiled) == ["again {{ sample.n }}", "{{ sample.n }}"]  # compiled when the task was parsed
    results, _ = run_task(task, [{"n": i} for i in range(5)], lambda model, messages: "x")
    assert all(r.ok for r in results)
    assert templates._compiled == compiled and all(templates._compiled[k] is compiled[k] for k in compiled)


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (
            "{{ sample.question }}",
            "message_builders[0]: content: undefined variable: the sample has no field 'question' "
            "(its fields: qestion, target)",
        ),
        ("{{ sample.question.text }}", None),  # the first missing step is named, not the last
        ("{{ nothing }}", "message_builders[0]: content: undefined variable: 'nothing' is undefined"),
        (
            "{{ loop_index }}",
            "message_builders[0]: content: undefined variable: "
            "'loop_index' is undefined: it is defined only inside a loop",
        ),
        (
            "{{ messages[3].content }}",
            "message_builders[0]: content: undefined variable: "
            "messages has no element 3 (the conversation has 0 messages)",
        ),
        ("{% if sample.question %}x{% endif %}", None),
    ],
)
def test_a_missing_template_variable_fails_the_sample_naming_it(content: str, error: str | None) -> None:
    task = make_task(user(content), generate())
    result, server = run_one(task, {"qestion": "typo", "target": "x"}, queued({MODEL: []}))
    assert result.error == (
        error
        or "message_builders[0]: content: undefined variable: "
        "the sample has no field 'question' (its fields: qestion, target)"
    )
    assert result.messages == [] and server.requests == []


def test_a_missing_variable_in_extra_input_messages_names_that_message() -> None:
    builder = {
        "type": "generate_message",
        "model_id": JUDGE,
        "extra_input_messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": "{{ sample.rubric }}"}],
    }
    task = make_task(loop(user("hi"), builder, max_iterations=1))
    result, _ = run_one(task, {}, queued({}))
    assert result.error == (
        "message_builders[0].loop.message_builders[1].extra_input_messages[1]: content: undefined variable: "
        "the sample has no field 'rubric' (its fields: none)"
    )
    assert convo(result) == [("user", "hi")]


# ------------------------------------------------------------------------------------------------ config keys


def test_config_keys_are_listed_then_filled() -> None:
    task = load_task(TASKS / "clarification.yaml")
    assert task.config_keys == {"judge_model": ["message_builders[3]: model_key"]}
    assert not task.filled
    filled = task.configure({"judge_model": JUDGE, "unused": "x"})
    assert filled.filled and filled.config == {"judge_model": JUDGE, "unused": "x"}
    judge = filled.builders[3]
    assert judge.type == "generate_message" and judge.model == JUDGE
    # The hash: the same filled task, the same hash; another config value, another hash.
    assert filled.hash() == load_task(TASKS / "clarification.yaml", {"judge_model": JUDGE}).hash()
    assert filled.hash() != task.configure({"judge_model": "other"}).hash()
    assert len(filled.hash()) == 64
    assert load_task(TASKS / "continue_trace.yaml").filled
    with pytest.raises(TaskError) as caught:
        task.configure({"judge": JUDGE})
    assert caught.value.problems == [
        "message_builders[3]: model_key: config key 'judge_model' is not set "
        "(give --config judge_model=VALUE) (line 36)"
    ]


def test_a_missing_config_key_is_an_error_naming_it_and_where_it_is_used() -> None:
    with pytest.raises(TaskError) as caught:
        load_task(TASKS / "clarification_loop.yaml", {"other": "x"})
    assert str(caught.value) == (
        f"{TASKS / 'clarification_loop.yaml'}: 1 problem\n"
        "  message_builders[3].loop.message_builders[0]: model_key: config key 'judge_model' is not set "
        "(give --config judge_model=VALUE) (line 35)"
    )
    assert isinstance(caught.value, UsageError)


def test_an_unfilled_task_is_not_run() -> None:
    task = load_task(TASKS / "clarification.yaml")
    with ScriptedOpenAI(clarify) as server:

        async def go() -> None:
            client = ModelClient(config_for(server))
            try:
                with pytest.raises(TaskError, match=r"config keys not filled: judge_model \(give --config"):
                    await solve_sample(task, AUSTRIA, client, default_model=MODEL)
                with pytest.raises(TaskError, match="config keys not filled"):
                    await solve(task, [AUSTRIA], client, default_model=MODEL)
            finally:
                await client.aclose()

        asyncio.run(go())
    assert server.requests == []


# ------------------------------------------------------------------------------------------------- load_trace


def _open_responses_trace() -> dict[str, Any]:
    part = {"user": "input_text", "assistant": "output_text"}
    items = [
        {"type": "message", "id": f"m{i}", "status": "completed", "role": r, "content": [{"type": part[r], "text": t}]}
        for i, (r, t) in enumerate(SEOUL_BERLIN)
    ]
    return {"FORMAT": "open_responses", "items": items, "metadata": {"source_type": "latticeflow"}}


TRACES: dict[str, tuple[str, Any]] = {
    "open-responses Trace": ("open-responses", _open_responses_trace()),
    "open-responses Trace as JSON text": ("open-responses", json.dumps(_open_responses_trace())),
    "open-responses items": ("open-responses", _open_responses_trace()["items"]),
    "openai messages": ("openai", [{"role": r, "content": t} for r, t in SEOUL_BERLIN]),
    "openai record": ("openai", {"messages": [{"role": r, "content": t} for r, t in SEOUL_BERLIN]}),
    "openai messages as JSON text": ("openai", json.dumps([{"role": r, "content": t} for r, t in SEOUL_BERLIN])),
    "anthropic request": (
        "anthropic",
        {
            "model": "claude",
            "max_tokens": 100,
            "system": "You report the weather.",
            "messages": [
                {"role": r, "content": [{"type": "text", "text": t}] if r == "assistant" else t}
                for r, t in SEOUL_BERLIN
            ],
        },
    ),
    "langchain messages_to_dict": (
        "langchain",
        [
            {
                "type": {"user": "human", "assistant": "ai"}[r],
                "data": {"content": t, "type": {"user": "human", "assistant": "ai"}[r]},
            }
            for r, t in SEOUL_BERLIN
        ],
    ),
    "langchain model_dump": (
        "langchain",
        [{"type": {"user": "human", "assistant": "ai"}[r], "content": t} for r, t in SEOUL_BERLIN],
    ),
}


@pytest.mark.parametrize("name", list(TRACES))
def test_load_trace_continues_a_recorded_conversation_in_each_format(name: str) -> None:
    fmt, value = TRACES[name]
    assert detect_format(json.loads(value) if isinstance(value, str) else value).name == fmt
    task = make_task(
        {"type": "load_trace", "trace_column": "conversation_trace"},
        user("{{ messages | length }} turns; last: {{ messages[-1].content }}"),
        generate(),
    )
    result, server = run_one(task, {"conversation_trace": value}, queued({MODEL: ["Berlin is colder."]}))
    assert result.ok, result.error
    loaded = [("system", "You report the weather."), *SEOUL_BERLIN] if fmt == "anthropic" else SEOUL_BERLIN
    expected_user = f"{len(loaded)} turns; last: {SEOUL_BERLIN[-1][1]}"
    assert convo(result) == [*loaded, ("user", expected_user), ("assistant", "Berlin is colder.")]
    (request,) = server.calls(MODEL)
    assert [
        (m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]) for m in request
    ] == [
        *loaded,
        ("user", expected_user),
    ]


SAMPLE_TRACES = {  # a sample file of each format evalcore reads: what its first conversation is, as one value
    "anthropic.jsonl": "anthropic",
    "databricks.jsonl": "databricks",
    "evalcore.jsonl": "evalcore",
    "gaussia.json": "gaussia",
    "gaussia_stream.jsonl": "gaussia",
    "langchain.jsonl": "langchain",
    "mlflow_trace.json": "mlflow-trace",
    "mlflow_traces.jsonl": "mlflow-trace",
    "open_responses.jsonl": "open-responses",
    "open_responses_items.json": "open-responses",
    "openai.jsonl": "openai",
    "openai_agents.json": "openai-agents",
    "ragas.jsonl": "ragas",
    "swarm.jsonl": "swarm",
    "tau2_bench.json": "tau2-bench",
    "tau_bench.json": "tau-bench",
}


def test_every_sample_file_has_a_trace_case() -> None:
    assert sorted(SAMPLE_TRACES) == sorted(p.name for p in sample_files(ROOT / "sample_data"))


@pytest.mark.parametrize("name", list(SAMPLE_TRACES))
def test_load_trace_reads_a_conversation_of_every_format_as_import_does(name: str) -> None:
    """The trace column may hold a conversation in any format evalcore reads: load_trace reads it as importing it
    would, and the model gets it as a valid chat (tool results after the calls they answer, by id)."""
    text = (ROOT / "sample_data" / name).read_text(encoding="utf-8")
    value = json.loads(text.splitlines()[0]) if name.endswith(".jsonl") else json.loads(text)
    if name in ("gaussia.json", "tau_bench.json"):
        value = value[0]  # (these files are arrays of conversations)
    assert detect_format(value).name == SAMPLE_TRACES[name]
    imported = next(r.session for r in read(io.StringIO(json.dumps(value))) if r.session is not None)
    expected = [(m.role, m.text) for m in imported.messages_with_context()]
    task = make_task({"type": "load_trace", "trace_column": "trace"}, generate())
    result, server = run_one(task, {"trace": value}, queued({MODEL: ["next"]}))
    assert result.ok, result.error
    assert convo(result) == [*expected, ("assistant", "next")]
    (request,) = server.calls(MODEL)
    assert len(request) == len(expected)
    called: set[str] = set()
    for message in request:
        assert message["role"] in ("system", "user", "assistant", "tool")
        called |= {call["id"] for call in message.get("tool_calls") or []}
        if message["role"] == "tool":
            assert message["tool_call_id"] in called
    assert called or not imported.tool_calls()


def test_load_trace_with_tool_calls_sends_them_linked_to_their_results() -> None:
    transcript = [
        {"role": "user", "content": "What is the weather in Seoul?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Seoul"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "11 C"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It is 11 C in Seoul."}]},
        {"role": "user", "content": "And Berlin?"},
    ]
    assert detect_format(transcript).name == "anthropic"
    task = make_task({"type": "load_trace", "trace_column": "t"}, generate(), message_format="open_responses")
    result, server = run_one(task, {"t": transcript}, queued({MODEL: ["4 C in Berlin."]}))
    assert result.ok, result.error
    (request,) = server.calls(MODEL)
    assert [m["role"] for m in request] == ["user", "assistant", "tool", "assistant", "user"]
    assert request[1]["tool_calls"] == [
        {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Seoul"}'}}
    ]
    assert request[2]["tool_call_id"] == "toolu_1" and request[2]["content"] == "11 C"
    assert result.messages[1].tool_calls is not None and result.messages[1].tool_calls[0].args == {"city": "Seoul"}
    assert result.trace is not None
    kinds = [i["type"] for i in result.trace["items"]]
    assert kinds == ["message", "message", "function_call", "function_call_output", "message", "message", "message"]


@pytest.mark.parametrize(
    ("sample", "error"),
    [
        ({"other": 1}, "message_builders[0]: trace_column 'trace': the sample has no such field (its fields: other)"),
        ({"trace": "not json {"}, "message_builders[0]: trace_column 'trace': the text is not JSON ("),
        ({"trace": None}, "message_builders[0]: trace_column 'trace': the trace is empty"),
        ({"trace": []}, "message_builders[0]: trace_column 'trace': the trace is empty"),
        (
            {"trace": {"hello": "world"}},
            "message_builders[0]: trace_column 'trace': the trace cannot be read: no format",
        ),
        (
            {"trace": [{"role": "wizard", "content": "x"}]},
            "message_builders[0]: trace_column 'trace': the trace cannot be read: "
            "messages[0].role: unknown role 'wizard'",
        ),
        (
            {
                "trace": {
                    "items": [
                        {"type": "message", "role": "user", "content": "q"},
                        {"type": "message", "role": "wizard"},
                    ]
                }
            },
            "message_builders[0]: trace_column 'trace': the trace cannot be read: items[1].role: unknown role 'wizard'",
        ),
    ],
)
def test_load_trace_errors_name_the_column(sample: dict[str, Any], error: str) -> None:
    task = make_task({"type": "load_trace", "trace_column": "trace"}, generate())
    result, server = run_one(task, sample, queued({}))
    assert result.error is not None and result.error.startswith(error), result.error
    assert server.requests == []


# ----------------------------------------------------------------------------------------- model failures


def _fails_for(country: str, reply: Reply) -> Script:
    """``clarify``, but the judge's answer in a conversation about ``country`` is ``reply``."""

    def script(model: str, messages: list[dict[str, Any]]) -> str | Reply:
        if model == JUDGE and country in messages[1]["content"]:
            return reply
        return clarify(model, messages)

    return script


def _clarification_run(script: Script, **options: Any) -> tuple[list[SampleResult], ScriptedOpenAI]:
    task = load_task(TASKS / "clarification.yaml", {"judge_model": JUDGE})
    samples = [AUSTRIA, {"question": "What is the capital city of France?", "target": "Paris"}, JAPAN]
    return run_task(task, samples, script, **options)


def _failed_austria(result: SampleResult) -> None:
    assert result.error is not None and result.error.startswith("message_builders[3]: the model 'judge-model' failed: ")
    # The conversation so far, and the calls made.
    assert [m.text for m in result.messages][1:] == ["What is the capital city of Austria?", confirmation("Austria")]
    assert [c.model for c in result.calls] == [MODEL]


def test_a_server_error_after_retries_fails_the_sample_and_the_others_finish() -> None:
    results, server = _clarification_run(_fails_for("Austria", Reply("boom", status=500)))
    _failed_austria(results[0])
    assert "HTTP 500" in (results[0].error or "") and "3 tries" in (results[0].error or "")
    assert [r.ok for r in results[1:]] == [True, True]
    assert results[1].messages[-1].text == "Paris"
    austria_judge = [m for m in server.calls(JUDGE) if "Austria" in m[1]["content"]]
    assert len(austria_judge) == 3  # the first try and max_retries (2) more


def test_a_refusal_is_not_retried() -> None:
    results, server = _clarification_run(_fails_for("Austria", Reply("bad request: no such model", status=400)))
    _failed_austria(results[0])
    assert "HTTP 400" in (results[0].error or "") and "bad request: no such model" in (results[0].error or "")
    assert len([m for m in server.calls(JUDGE) if "Austria" in m[1]["content"]]) == 1
    assert [r.ok for r in results[1:]] == [True, True]


def test_a_timeout_mid_conversation_fails_the_sample_and_the_others_finish() -> None:
    started = time.perf_counter()
    results, _ = _clarification_run(_fails_for("Austria", Reply("late", timeout=True)), timeout=0.3, max_retries=0)
    _failed_austria(results[0])
    assert "timed out after 0.3 s" in (results[0].error or "")
    assert [r.ok for r in results[1:]] == [True, True]
    assert time.perf_counter() - started < 3.0


# -------------------------------------------------------------------------------------------------- running


def test_samples_run_concurrently() -> None:
    task = make_task(user("{{ sample.n }}"), generate())
    samples = [{"n": i} for i in range(10)]
    started = time.perf_counter()
    results, server = run_task(
        task, samples, lambda model, messages: f"answer {messages[-1]['content']}", concurrency=10, latency=0.2
    )
    elapsed = time.perf_counter() - started
    assert [r.messages[-1].text for r in results] == [f"answer {i}" for i in range(10)]
    assert elapsed < 1.0, f"10 calls of 0.2 s at concurrency 10 took {elapsed:.2f} s"
    assert len(server.requests) == 10


def test_concurrency_is_bounded() -> None:
    task = make_task(generate())
    started = time.perf_counter()
    run_task(task, [{}] * 4, lambda model, messages: "x", concurrency=1, latency=0.1)
    assert time.perf_counter() - started >= 0.4


def test_on_result_is_called_as_each_sample_finishes_and_results_keep_the_samples_order() -> None:
    task = make_task(user("{{ sample.n }}"), generate())
    seen: list[tuple[int, str]] = []

    def script(model: str, messages: list[dict[str, Any]]) -> Reply:
        n = int(messages[-1]["content"])
        return Reply(f"a{n}", latency=0.1 * (3 - n))  # the last sample finishes first

    results, _ = run_task(
        task,
        [{"n": n} for n in range(4)],
        script,
        concurrency=4,
        on_result=lambda i, r: seen.append((i, r.messages[-1].text)),
    )
    assert [r.messages[-1].text for r in results] == ["a0", "a1", "a2", "a3"]
    assert sorted(seen) == [(0, "a0"), (1, "a1"), (2, "a2"), (3, "a3")]
    assert seen[0] == (3, "a3")


def test_an_async_on_result_is_awaited_and_its_failure_stops_the_run() -> None:
    task = make_task(generate())
    stored: list[int] = []

    async def store(index: int, result: SampleResult) -> None:
        await asyncio.sleep(0)
        stored.append(index)

    run_task(task, [{}] * 3, lambda model, messages: "x", on_result=store)
    assert sorted(stored) == [0, 1, 2]

    def broken(index: int, result: SampleResult) -> None:
        raise UsageError("the store is full")

    with pytest.raises(UsageError, match="the store is full"):
        run_task(task, [{}] * 3, lambda model, messages: "x", on_result=broken, concurrency=1)


def test_solve_refuses_a_concurrency_below_1_and_solves_no_samples() -> None:
    with pytest.raises(UsageError, match="concurrency must be at least 1, got 0"):
        run_task(make_task(generate()), [{}], concurrency=0)
    results, server = run_task(make_task(generate()), [])
    assert results == [] and server.requests == []


def test_sample_result_as_a_session() -> None:
    task = load_task(TASKS / "clarification.yaml", {"judge_model": JUDGE})
    result, _ = run_one(task, AUSTRIA)
    session = result.session()
    assert session.reference == "Vienna"
    assert session.metadata["sample"] == AUSTRIA
    solver = session.metadata["solver"]
    assert solver["task_hash"] == task.hash() and solver["model"] == MODEL and solver["models"] == [MODEL, JUDGE]
    assert solver["error"] is None and len(solver["calls"]) == 3
    assert solver["input_tokens"] == result.input_tokens
    assert [m.text for m in session.messages] == [m.text for m in result.messages]
    assert sample_key(task.hash(), MODEL, AUSTRIA) == sample_key(task.hash(), MODEL, dict(reversed(AUSTRIA.items())))
    assert sample_key(task.hash(), MODEL, AUSTRIA) != sample_key(task.hash(), JUDGE, AUSTRIA)


# ---------------------------------------------------------------------------------------------- task files

HEAD = "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n"

BAD_TASKS = {
    "unknown builder type": (
        HEAD + "      - type: generate\n      - type: chat_mesage\n        role: user\n        content: hi\n",
        [
            "message_builders[1]: type: unknown builder type 'chat_mesage'; "
            "expected one of chat_message, generate, generate_message, loop, load_trace (line 6)"
        ],
    ),
    "no type": (
        HEAD + "      - role: user\n        content: hi\n",
        [
            "message_builders[0]: type: "
            "required; one of chat_message, generate, generate_message, loop, load_trace (line 5)"
        ],
    ),
    "missing content": (
        HEAD + "      - type: chat_message\n        role: user\n",
        ["message_builders[0]: content: required (line 5)"],
    ),
    "bad role": (
        HEAD + "      - type: chat_message\n        role: bot\n        content: hi\n",
        ["message_builders[0]: role: expected one of 'system', 'user' or 'assistant', got 'bot' (line 6)"],
    ),
    "both model_key and model_id": (
        HEAD
        + "      - type: generate_message\n        model_key: a\n        model_id: b\n"
        + "        extra_input_messages: [{role: user, content: hi}]\n",
        ["message_builders[0]: model_key: give model_key or model_id, not both (line 6)"],
    ),
    "neither model_key nor model_id": (
        HEAD + "      - type: generate_message\n        extra_input_messages: [{role: user, content: hi}]\n",
        ["message_builders[0]: model_key: required: give model_key or model_id (line 5)"],
    ),
    "no extra_input_messages": (
        HEAD + "      - type: generate_message\n        model_id: j\n        extra_input_messages: []\n",
        ["message_builders[0]: extra_input_messages: must not be empty (line 7)"],
    ),
    "load_trace inside a loop": (
        HEAD + "      - type: loop\n        message_builders:\n          - type: generate\n"
        "          - type: load_trace\n            trace_column: t\n",
        [
            "message_builders[0].loop.message_builders[1]: type: "
            "load_trace is not allowed inside a loop: load the trace before the loop (line 8)"
        ],
    ),
    "max_iterations 0": (
        HEAD + "      - type: loop\n        max_iterations: 0\n        message_builders: [{type: generate}]\n",
        ["message_builders[0]: max_iterations: must be at least 1, got 0 (line 6)"],
    ),
    "bad on_max_iterations": (
        HEAD + "      - type: loop\n        on_max_iterations: stop\n        message_builders: [{type: generate}]\n",
        ["message_builders[0]: on_max_iterations: expected one of 'error' or 'continue', got 'stop' (line 6)"],
    ),
    "terminate_if on a loop": (
        HEAD
        + "      - type: loop\n        terminate_if: {includes: x}\n        message_builders: [{type: generate}]\n",
        ["message_builders[0]: terminate_if: not allowed on a loop (a builder inside a loop may have one) (line 6)"],
    ),
    "terminate_if without includes": (
        HEAD + "      - type: generate\n        terminate_if: {keep_iteration: false}\n",
        ["message_builders[0].generate.terminate_if: includes: required (line 6)"],
    ),
    "terminate_if on an extra input message": (
        HEAD
        + "      - type: generate_message\n        model_id: j\n        extra_input_messages:\n"
        + "          - {role: user, content: x, terminate_if: {includes: y}}\n",
        [
            "message_builders[0].generate_message.extra_input_messages[0]: terminate_if: "
            "not allowed on an extra input message (put it on the generate_message) (line 8)"
        ],
    ),
    "unknown field": (
        HEAD + "      - type: generate\n        temperature: 0\n",
        ["message_builders[0]: temperature: unknown field (line 6)"],
    ),
    "deep model_key": (
        HEAD + "      - type: generate\n" * 3 + "      - type: loop\n        message_builders:\n"
        "          - type: generate_message\n            model_key: 3\n"
        "            extra_input_messages: [{role: user, content: x}]\n",
        ["message_builders[3].loop.message_builders[0]: model_key: expected a string, got a number (line 11)"],
    ),
    "template syntax": (
        HEAD + "      - type: chat_message\n        role: user\n        content: '{{ sample.x '\n",
        [
            "message_builders[0]: content: template syntax error on its line 1: "
            "unexpected end of template, expected 'end of print statement'. (line 7)"
        ],
    ),
    "no builders": (
        HEAD.replace("message_builders:\n", "message_builders: []\n"),
        ["message_builders: must not be empty (line 4)"],
    ),
    "bad message_format": (
        HEAD.replace("    message_builders:", "    message_format: openai\n    message_builders:")
        + "      - type: generate\n",
        ["message_format: expected one of 'latticeflow' or 'open_responses', got 'openai' (line 4)"],
    ),
    "bad YAML": (
        HEAD + "      - type: chat_message\n        role: user\n       content: hi\n",
        [
            "line 7, column 8: not valid YAML: "
            "expected <block end>, but found '<block mapping start>' (while parsing a block collection)"
        ],
    ),
    "bad YAML quote": (
        HEAD + '      - type: chat_message\n        content: "unterminated\n',
        ["line 7, column 1: not valid YAML: found unexpected end of stream (while scanning a quoted scalar)"],
    ),
    "a key given twice": (
        HEAD + "      - type: chat_message\n        role: user\n        content: a\n        content: b\n",
        ["message_builders[0]: content: given again on line 8 (only the last would be used) (line 7)"],
    ),
    "an alias inside its own anchor": (
        "a: &a [*a]\ndefinition: {solver: {type: multi_turn_solver, message_builders: *a}}\n",
        ["line 1: the alias *a is inside its own anchor"],
    ),
    "a billion laughs": (
        "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9)),
        ["the file holds more than 100,000 values once its aliases (*name) are expanded"],
    ),
    "a list": (
        "- type: generate\n",
        ["expected a task: a mapping with definition: solver: (type: multi_turn_solver), got a list"],
    ),
    "empty": ("", ["expected a task: a mapping with definition: solver: (type: multi_turn_solver), got nothing"]),
    "no definition": (
        "solver:\n  type: multi_turn_solver\n",
        ["expected a task: a mapping with definition: solver: (type: multi_turn_solver), got no definition"],
    ),
    "solver not a mapping": (
        "definition:\n  solver: multi_turn_solver\n",
        [
            "expected a task: a mapping with definition: solver: (type: multi_turn_solver), "
            "got definition.solver is a string"
        ],
    ),
    "another solver": (
        "definition:\n  solver:\n    type: single_turn_solver\n",
        ["type: only multi_turn_solver is supported, got 'single_turn_solver'"],
    ),
}


@pytest.mark.parametrize("name", list(BAD_TASKS))
def test_bad_task_files_have_exact_errors(name: str) -> None:
    text, problems = BAD_TASKS[name]
    with pytest.raises(TaskError) as caught:
        parse_task(text, {}, source="task.yaml")
    assert caught.value.problems == problems
    assert str(caught.value) == f"task.yaml: {len(problems)} problem{'s' if len(problems) > 1 else ''}" + "".join(
        f"\n  {p}" for p in problems
    )


def test_every_problem_of_a_task_file_is_listed() -> None:
    text = (
        HEAD + "      - type: chat_mesage\n"
        "      - type: chat_message\n        role: user\n"
        "      - type: loop\n        max_iterations: 0\n        message_builders:\n"
        "          - type: load_trace\n            trace_column: t\n"
        "          - type: generate_message\n            model_key: << config.judge >>\n"
        "            extra_input_messages: [{role: user, content: '{% if %}'}]\n"
    )
    with pytest.raises(TaskError) as caught:
        parse_task(text, {}, source="task.yaml")
    assert caught.value.problems == [  # in the order of the file, each with its line
        "message_builders[0]: type: unknown builder type 'chat_mesage'; "
        "expected one of chat_message, generate, generate_message, loop, load_trace (line 5)",
        "message_builders[1]: content: required (line 6)",
        "message_builders[2]: max_iterations: must be at least 1, got 0 (line 9)",
        "message_builders[2].loop.message_builders[0]: type: "
        "load_trace is not allowed inside a loop: load the trace before the loop (line 11)",
        "message_builders[2].loop.message_builders[1]: model_key: "
        "config key 'judge' is not set (give --config judge=VALUE) (line 14)",
        "message_builders[2].loop.message_builders[1].generate_message.extra_input_messages[0]: content: "
        "template syntax error on its line 1: Expected an expression, got 'end of statement block' (line 15)",
    ]


def test_yaml_anchors_and_aliases_are_fine() -> None:
    task = parse_task(HEAD + "      - &ask {type: chat_message, role: user, content: '{{ sample.q }}'}\n      - *ask\n")
    assert [b.type for b in task.builders] == ["chat_message", "chat_message"]


def test_a_task_file_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"missing\.yaml: 1 problem\n  cannot read the file: "):
        load_task(tmp_path / "missing.yaml")


def test_sample_task_files_parse() -> None:
    for name, keys in [
        ("clarification", ["judge_model"]),
        ("clarification_loop", ["judge_model"]),
        ("continue_trace", []),
    ]:
        task = load_task(TASKS / f"{name}.yaml")
        assert sorted(task.config_keys) == keys
    loop_task = load_task(TASKS / "clarification_loop.yaml")
    (the_loop,) = [b for b in loop_task.builders if b.type == "loop"]
    assert the_loop.type == "loop" and the_loop.max_iterations == 3 and the_loop.on_max_iterations == "continue"
    assert the_loop.can_terminate() and not the_loop.fails_at_max()
    assert load_task(TASKS / "continue_trace.yaml").solver.message_format == "open_responses"
    assert load_task(TASKS / "clarification.yaml").solver.message_format == "latticeflow"


# --------------------------------------------------------------------------------------------------- samples


def test_samples_from_jsonl_json_and_csv(tmp_path: Path) -> None:
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text('{"question": "a", "target": "b"}\n\n{"question": "c"}\n', encoding="utf-8")
    assert load_samples(jsonl) == [{"question": "a", "target": "b"}, {"question": "c"}]
    array = tmp_path / "s.json"
    array.write_text('[{"question": "a"}, {"question": "b"}]', encoding="utf-8")
    assert load_samples(array) == [{"question": "a"}, {"question": "b"}]
    array.write_text('{\n  "question": "a",\n  "target": "b"\n}\n', encoding="utf-8")
    assert load_samples(array) == [{"question": "a", "target": "b"}]
    table = tmp_path / "s.csv"
    table.write_text('\ufeffquestion,target\n"What is the capital, of Austria?",Vienna\nb,c\n', encoding="utf-8")
    assert load_samples(table) == [
        {"question": "What is the capital, of Austria?", "target": "Vienna"},
        {"question": "b", "target": "c"},
    ]


def test_bad_samples_are_named_by_line_and_the_good_ones_kept(tmp_path: Path) -> None:
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text('{"q": 1}\n{"q": \n[1, 2]\n{"q": 4}\n', encoding="utf-8")
    rows, problems = read_samples(jsonl)
    assert rows == [{"q": 1}, {"q": 4}]
    assert len(problems) == 2
    assert problems[0].startswith("line 2: not valid JSON: ")
    assert problems[1] == "line 3: expected a JSON object (a sample's fields), got list"
    with pytest.raises(SamplesError) as caught:
        load_samples(jsonl)
    assert str(caught.value).startswith(f"{jsonl}: 2 problems\n  line 2: not valid JSON: ")
    table = tmp_path / "s.csv"
    table.write_text("question,target\na,b\nc\nd,e,f\ng,h\n", encoding="utf-8")
    rows, problems = read_samples(table)
    assert rows == [{"question": "a", "target": "b"}, {"question": "g", "target": "h"}]
    assert problems == ["line 3: 1 fields, the header has 2", "line 4: 3 fields, the header has 2"]
    for text, problem in [
        ("", "line 1: expected a header row naming the columns"),
        ("a,b\n", "no samples in the file"),
        ("a,a\n1,2\n", "line 1: the header names a column more than once: a"),
    ]:
        table.write_text(text, encoding="utf-8")
        with pytest.raises(SamplesError) as caught:
            load_samples(table)
        assert caught.value.problems == [problem]
    with pytest.raises(SamplesError, match="cannot read the file"):
        load_samples(tmp_path / "none.jsonl")
    # An upload's text, read alike.
    assert parse_samples("\ufeffq,t\n1,2\n3\n", "upload.CSV") == (
        [{"q": "1", "t": "2"}],
        ["line 3: 1 fields, the header has 2"],
    )
    assert parse_samples('{"q": 1}\n') == ([{"q": 1}], [])


def test_the_builders_are_registered_by_type() -> None:
    assert BUILDERS.names() == sorted(BUILDER_TYPES)
    assert BUILDERS.get("loop") is Loop and BUILDERS.get("chat_message") is ChatMessage
    with pytest.raises(RegistryError, match="a message builder named 'loop' is registered already"):
        BUILDERS.add("loop", Generate)
    with pytest.raises(UnknownNameError, match="unknown message builder 'loops'; known: chat_message, generate, "):
        BUILDERS.get("loops")


def test_errors_are_evalcore_errors() -> None:
    assert issubclass(TaskError, UsageError) and issubclass(SamplesError, UsageError)
    assert issubclass(TemplateError, EvalcoreError)


def test_loops_that_write_nothing_and_huge_sums_are_bounded_too() -> None:

    started = time.monotonic()
    with pytest.raises(TemplateError, match="the template ran for more than 5 s"):
        Templates().render(
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "w", sample={},
            messages=[],
        )  # fmt: skip
    assert time.monotonic() - started < 15
    with pytest.raises(TemplateError, match="too large"):
        Templates().render("{{ ('a' * 900000) + ('b' * 900000) }}", "w", sample={}, messages=[])
