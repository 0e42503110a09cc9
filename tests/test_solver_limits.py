"""The solver's bounds outside its templates' sandbox (issue 23, items 7 and 12): a task file's size and nesting (read
from YAML's events, before anything reads it recursively), its loops (``max_iterations`` at most 1,000; at most 10,000
message builders a sample, loops inside loops multiplied), a template too deep to compile, a sample's templates' time
in all, its conversation's size; and a samples CSV whose field is over the csv module's limit, which costs its own
record only. Real runs against a chat-completions server on 127.0.0.1 where a model is needed."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from solver_server import ScriptedOpenAI

from evalcore.model import ModelClient, ModelConfig
from evalcore.solver import (
    SampleResult,
    TaskError,
    limits,
    load_task,
    parse_samples,
    parse_task,
    read_samples,
    run,
    solve,
)
from evalcore.solver.samples import _Records
from evalcore.solver.task import MAX_NESTING, MAX_TASK_SIZE

HEAD = "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n"


def problems(text: str) -> list[str]:
    with pytest.raises(TaskError) as caught:
        parse_task(text, {}, source="task.yaml")
    return caught.value.problems


def loop(iterations: int, inner: str, indent: int = 6) -> str:
    pad = " " * indent
    return f"{pad}- type: loop\n{pad}  max_iterations: {iterations}\n{pad}  message_builders:\n{inner}"


# -- task files ---------------------------------------------------------------------------------------------------


def test_a_task_file_nested_too_deep_is_refused_before_it_is_read_recursively() -> None:
    started = time.monotonic()
    assert problems("definition: " + "[" * 100_000 + "]" * 100_000) == ["line 1: nested more than 100 deep"]
    block = "definition:\n" + "".join(" " * i + "-\n" for i in range(1, 500))  # block style, one level a line
    assert problems(block) == [f"line {MAX_NESTING + 1}: nested more than 100 deep"]
    chain = "l0: &l0 [x]\n" + "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, 20_000))
    assert problems(chain) == ["line 100: nested more than 100 deep once *l98 is expanded"]
    assert problems("a: &a {b: *a}\n") == ["line 1: the alias *a is inside its own anchor"]
    assert time.monotonic() - started < 5
    # As deep as a task may be, with aliases (of scalars and of lists): read.
    fine = "x: &x hello\nl: &l [*x]\n" + HEAD + "      - {type: chat_message, role: user, content: *x}\n"
    assert parse_task(fine).builders[0].content == "hello"


def test_a_task_file_too_large_is_refused_and_not_read_past_its_bound(tmp_path: Path) -> None:
    assert problems("a: " + "x" * MAX_TASK_SIZE) == ["the file is larger than a task file may be (1,000,000 bytes)"]
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_TASK_SIZE + "\n")
    with pytest.raises(TaskError, match=r"big\.yaml: 1 problem\n  the file is larger than a task file may be"):
        load_task(big)
    started = time.monotonic()
    with pytest.raises(TaskError, match="the file is larger than a task file may be"):
        load_task("/dev/zero")  # endless: read no further than the bound
    assert time.monotonic() - started < 2


def test_numbers_in_a_task_file_are_bounded() -> None:
    digits = "9" * 5000
    assert problems(
        HEAD + "      - {type: loop, max_iterations: " + digits + ", message_builders: [{type: generate}]}\n"
    ) == ["a value that cannot be read: a number of more than 4,300 digits"]
    assert problems(HEAD + loop(1_000_000_000_000, "          - type: generate\n")) == [
        "message_builders[0]: max_iterations: must be at most 1,000, got 1000000000000 (line 6)"
    ]
    huge = HEAD + loop(0, "          - type: generate\n").replace(
        "max_iterations: 0", "max_iterations: 0x" + "f" * 5000
    )
    assert problems(huge) == [
        "message_builders[0]: max_iterations: must be at most 1,000, got a number of about 6,000 digits (line 6)"
    ]
    assert parse_task(HEAD + loop(1000, "          - type: generate\n")).builders[0].max_iterations == 1000


def test_loops_inside_loops_are_bounded_by_what_one_sample_could_run() -> None:
    inner = loop(1000, "              - type: generate\n", indent=10)
    assert problems(HEAD + loop(1000, inner)) == [
        "message_builders[0]: max_iterations: one sample could run 1,000,000 message builders (a loop runs what it "
        "holds max_iterations times, loops inside loops multiply); at most 10,000 (line 6)"
    ]
    deepest = loop(1000, loop(20, "                  - type: generate\n", indent=14), indent=10)
    assert problems(HEAD + loop(2, deepest)) == [
        "message_builders[0].loop.message_builders[0]: max_iterations: one sample could run 40,000 message builders "
        "(a loop runs what it holds max_iterations times, loops inside loops multiply); at most 10,000 (line 9)"
    ]
    two = loop(1000, "          - type: generate\n          - type: generate\n          - type: generate\n")
    assert problems(HEAD + two + two + two + two) == [  # no loop alone: the solver block
        "message_builders: one sample could run 12,000 message builders (a loop runs what it holds max_iterations "
        "times, loops inside loops multiply); at most 10,000 (line 5)"
    ]
    assert len(parse_task(HEAD + loop(100, loop(100, "              - type: generate\n", indent=10))).builders) == 1


def test_a_template_too_deep_to_compile_is_a_problem_of_the_file() -> None:
    for content in ["{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "{% if 1 %}" * 150 + "{% endif %}" * 150]:
        said = problems(HEAD + f"      - {{type: chat_message, role: user, content: '{content}'}}\n")
        assert len(said) == 1 and said[0].startswith(
            "message_builders[0]: content: the template nests too deeply to compile"
        ), said


# -- one sample's bounds ------------------------------------------------------------------------------------------


def solve_one(task_text: str, sample: dict[str, Any]) -> SampleResult:
    with ScriptedOpenAI(lambda model, messages: "ok") as server:

        async def go() -> list[SampleResult]:
            config = ModelConfig(model="m", base_url=server.url, api_key="k", max_retries=0)
            async with ModelClient(config) as client:
                return await solve(parse_task(task_text), [sample], client, default_model="m")

        (result,) = asyncio.run(go())
    return result


def test_a_samples_templates_are_bounded_in_time_in_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_SAMPLE_SECONDS", 0.3)
    slow = "{% for i in range(20000) %}{% endfor %}{{ loop_index }}"  # a few ms each
    task = HEAD + loop(1000, f"          - {{type: chat_message, role: user, content: '{slow}'}}\n")
    started = time.monotonic()
    result = solve_one(task, {})
    assert result.error == (
        "message_builders[0].loop.message_builders[0]: content: the sample's templates ran for more than 0.3 s in all"
    )
    assert 10 < len(result.messages) < 1000 and time.monotonic() - started < 3


def test_a_conversation_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "MAX_CONVERSATION", 1000)
    task = HEAD + loop(1000, "          - {type: chat_message, role: user, content: '{{ sample.text }}'}\n")
    result = solve_one(task, {"text": "x" * 300})
    assert result.error == (
        "message_builders[0].loop.message_builders[0]: the conversation would hold more than 1,000 characters "
        "(it holds 900 in 3 messages)"
    )
    assert len(result.messages) == 3  # the conversation so far, kept with the error


# -- samples CSV --------------------------------------------------------------------------------------------------


def test_a_csv_field_over_the_limit_costs_its_record_only(tmp_path: Path) -> None:
    big = "x" * (csv.field_size_limit() + 1)
    table = tmp_path / "s.csv"
    table.write_text(
        "question,target\na,1\n"
        f"{big},2\n"  # line 3: over the limit
        "b,3\n"
        f'"{big}\nstill the same field",4\n'  # lines 5-6: over the limit, quoted over two lines
        "c,5\r\n"
        'd,"two\nlines"\n'  # lines 8-9: good
        "e,6\n",
        encoding="utf-8",
    )
    rows, problems = read_samples(table)
    assert rows == [
        {"question": "a", "target": "1"},
        {"question": "b", "target": "3"},
        {"question": "c", "target": "5"},
        {"question": "d", "target": "two\nlines"},
        {"question": "e", "target": "6"},
    ]
    limit = csv.field_size_limit()
    assert problems == [
        f"line 3: not valid CSV: field larger than field limit ({limit})",
        f"line 5: not valid CSV: field larger than field limit ({limit})",
    ]
    # A bad record keeps its place among the samples (the sessions' names): the next good one is the 4th.
    from evalcore.solver.samples import place_samples

    placed, _ = place_samples(table.read_text(), "s.csv")
    assert [n for n, _ in placed] == [0, 2, 4, 5, 6]
    assert parse_samples("q\n" + big + "\n", "s.csv") == (
        [],
        [f"line 2: not valid CSV: field larger than field limit ({limit})"],
    )


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='ab ,"\n\r', max_size=40))
def test_csv_records_are_split_as_the_csv_module_reads_them(text: str) -> None:
    """Each record is given to the csv module on its own: the rows must be those of the whole text read at once."""
    try:
        whole = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error:
        return
    assert list(csv.reader(_Records(text))) == whole
