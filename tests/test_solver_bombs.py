"""Solver task files as a hostile upload would write them (issue 23, item 7), each run for real: in a child process
whose address space is capped (``RLIMIT_AS``, 1 GiB), with a wall-clock bound. Each bomb must be refused or stopped
within its deadline with an error naming the builder, never a traceback, never a ``MemoryError`` (which would mean
the allocation was tried and only the cap stopped it). The child's peak memory is measured (``wait4``) and bounded.

The command line runs the issue's bombs as a person would (``evalcore solve``, the exit code the README documents:
1 for a sample that failed, 2 for a task file refused); one child runs the wider battery through the library
(``Templates.render``, what every builder's content goes through), each bomb timed and weighed on its own line.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from solver_server import ScriptedOpenAI

from evalcore.solver.limits import MAX_SECONDS

EVALCORE = Path(sys.executable).parent / "evalcore"
LIMIT = 1 << 30  # the address space each child may use: a 3 GB allocation fails there, with a MemoryError
PEAK_MB = 400  # what a child may reach (`evalcore solve` on the sample task: about 130 MB)


def _high_water(pid: int) -> int | None:
    """The most resident memory process ``pid`` has held since it started its program (``VmHWM``, kB)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), None)


def run_capped(argv: list[str], timeout: float, cwd: Path) -> tuple[int, str, float, int]:
    """``argv`` in a child capped at ``LIMIT`` bytes of address space: exit code, stderr, seconds, peak MB (its
    ``VmHWM``, read every 10 ms while it runs: ``wait4``'s figure would count this process's memory at the fork);
    killed past ``timeout`` (then the exit code is -9)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    err = cwd / f"stderr-{time.monotonic_ns()}.txt"
    started = time.monotonic()
    peak = 0
    with err.open("w") as sink:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=sink, preexec_fn=cap, cwd=cwd)
    while True:
        peak = max(peak, _high_water(proc.pid) or 0)
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > timeout:
            proc.kill()
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)  # (reaped here: Popen must not wait again)
    return proc.returncode, err.read_text(), time.monotonic() - started, peak // 1024


HEAD = "definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n"


def chat_task(content: str) -> str:
    """A task whose second builder's content is ``content`` (the first is a plain system message)."""
    system = "      - {type: chat_message, role: system, content: hi}\n"
    user = f"      - type: chat_message\n        role: user\n        content: {json.dumps(content)}\n"
    return HEAD + system + user + "      - type: generate\n"


#: The issue's bombs (and a few of their kin) through `evalcore solve`: the task, the exit code, what stderr says,
#: and the most seconds the command may take (its start, about 1 s, included).
CLI_BOMBS: dict[str, tuple[str, int, str, float]] = {
    "format folded at compile time": (
        chat_task("{{ '%3000000000d'|format(1) }}"),
        1,
        "message_builders[1]: content: the template asks for too large a value (a width of 3000000000; "
        "at most 1,000,000)",
        8,
    ),
    "center of 3 GB": (
        chat_task("{{ 'a'|center(3*10**9) }}"),
        1,
        "message_builders[1]: content: the template asks for too large a value (a text of 3,000,000,000 "
        "characters; at most 1,000,000)",
        8,
    ),
    "a macro calling itself twice per level": (
        chat_task("{% macro f(n) %}{% if n %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(40) }}"),
        1,
        f"message_builders[1]: content: the template ran for more than {MAX_SECONDS:g} s",
        MAX_SECONDS + 8,
    ),
    "a namespace value doubled in a loop": (
        chat_task("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}x"),
        1,
        "message_builders[1]: content: the template asks for too large a value (a text of 1,048,576 characters; "
        "at most 1,000,000)",
        8,
    ),
    "a list nested in itself twice per iteration": (
        chat_task(
            "{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}"
            "{{ ns.l == ns.l }}"
        ),
        1,
        "message_builders[1]: content: the template asks for too large a value (a value of more than 1,000,000 "
        "characters)",
        8,
    ),
    "loops that only spin": (
        chat_task("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
        1,
        f"message_builders[1]: content: the template ran for more than {MAX_SECONDS:g} s",
        MAX_SECONDS + 8,
    ),
    "max_iterations without a bound": (
        HEAD + "      - type: loop\n        max_iterations: 1000000000000\n"
        "        message_builders: [{type: generate}]\n",
        2,
        "message_builders[0]: max_iterations: must be at most 1,000, got 1000000000000 (line 6)",
        8,
    ),
    "loops inside loops": (
        HEAD + "      - type: loop\n        max_iterations: 1000\n        message_builders:\n"
        "          - type: loop\n            max_iterations: 1000\n            message_builders: [{type: generate}]\n",
        2,
        "message_builders[0]: max_iterations: one sample could run 1,000,000 message builders",
        8,
    ),
    "a task nested 100,000 deep": (
        "definition: " + "[" * 100_000 + "]" * 100_000 + "\n",
        2,
        "line 1: nested more than 100 deep",
        8,
    ),
    "aliases nested 20,000 deep": (
        "l0: &l0 [x]\n" + "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, 20_000)),
        2,
        "line 100: nested more than 100 deep once *l98 is expanded",
        8,
    ),
    "a template nested too deep to compile": (
        chat_task("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"),
        2,
        "message_builders[1]: content: the template nests too deeply to compile",
        8,
    ),
}


@pytest.fixture(scope="module")
def models() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(lambda model, messages: "fine") as server:
        yield server


@pytest.mark.parametrize("name", list(CLI_BOMBS))
def test_each_bomb_through_evalcore_solve(name: str, tmp_path: Path, models: ScriptedOpenAI) -> None:
    task, code, said, seconds = CLI_BOMBS[name]
    (tmp_path / "bomb.yaml").write_text(task)
    (tmp_path / "bomb.jsonl").write_text('{"q": "x"}\n')
    argv = [
        str(EVALCORE), "solve", "bomb.yaml", "--samples", "bomb.jsonl", "--dataset", "d", "--model", "m",
        "--base-url", models.url, "--api-key", "k", "--db", "e.db", "--max-retries", "0",
    ]  # fmt: skip
    returncode, stderr, took, peak = run_capped(argv, seconds + 30, tmp_path)
    print(f"{name}: exit {returncode} in {took:.2f} s, peak {peak} MB")
    assert returncode == code, stderr
    assert said in stderr, stderr
    assert "Traceback" not in stderr and "MemoryError" not in stderr and "RecursionError" not in stderr
    assert took < seconds, f"{took:.1f} s"
    assert peak < PEAK_MB
    if code == 1:  # the sample failed, stored with its error; the model was never asked
        assert f"evalcore: sample bomb-1: {said}" in stderr
        assert "0 solved, 1 failed" in stderr


# -- the wider battery, through the library, in one capped child -------------------------------------------------

S = "{% set s = 'a' * 1000000 %}"  # a text at the bound, legal on its own
NS = "{% set ns = namespace(s='a', l=[1], d={}, n=9, c=cycler(1), v=[1]) %}"
#: Each bomb and what its error says (after "w: the template asks for too large a value (" unless it starts with
#: "w:"); every one ends well within the deadline unless its error is the deadline's.
BATTERY: dict[str, tuple[str, str]] = {
    "printf width": ("{{ '%3000000000d' % 1 }}", "a width of 3000000000; at most 1,000,000)"),
    "printf width from an argument": ("{{ '%*d' % (3000000000, 1) }}", "a width of 3,000,000,000; at most"),
    "printf precision": ("{{ '%.3000000000f' % 1.0 }}", "a precision of 3000000000; at most"),
    "printf repeated": (S + "{{ ('%s' * 100) % ((s,) * 100) }}", "a value of more than 1,000,000 characters)"),
    "format filter by name": (S + "{{ '%(a)s%(a)s'|format(a=s) }}", "a text of 2,000,010 characters;"),
    "str.center": ("{{ 'a'.center(3000000000) }}", "a text of 3,000,000,000 characters;"),
    "str.ljust": ("{{ 'a'.ljust(3000000000) }}", "a text of 3,000,000,000 characters;"),
    "str.zfill": ("{{ '1'.zfill(3000000000) }}", "a text of 3,000,000,000 characters;"),
    "Markup.center": ("{{ ('a'|safe).center(3000000000) }}", "a text of 3,000,000,000 characters;"),
    "str.format width": ("{{ '{:3000000000}'.format(1) }}", "a width of 3000000000; at most"),
    "str.format nested width": ("{{ '{:{w}}'.format(1, w=3000000000) }}", "a width of 3000000000; at most"),
    "str.format repeated field": (S + "{{ '{0}{0}{0}'.format(s) }}", "a text of 2,000,000 characters;"),
    "str.format_map": (S + "{{ '{a}{a}'.format_map({'a': s}) }}", "a value of more than 1,000,000 characters)"),
    "str.replace": (S + "{{ s.replace('a', 'aa') }}", "a text of 2,000,000 characters;"),
    "replace filter": (S + "{{ s|replace('a', 'aa') }}", "a text of 2,000,000 characters;"),
    "replace of nothing": ("{{ ('a' * 1000)|replace('', 'x' * 10000) }}", "a text of 10,011,000 characters;"),
    "expandtabs": ("{{ ('\t' * 1000000).expandtabs(100) }}", "a text of 101,000,000 characters;"),
    "translate": (S + "{{ s.translate({97: 'bb'}) }}", "a text of 2,000,000 characters;"),
    "str.join": (S + "{{ s.join(['x'] * 3) }}", "a text of 2,000,003 characters;"),
    "join filter": (S + "{{ [s, s]|join }}", "a value of more than 1,000,000 characters)"),
    "join filter's separator": (S + "{{ range(100)|join(s) }}", "a text of 99,000,"),
    "a list repeated": (S + "{{ [s] * 1000000 }}", "a value of more than 1,000,000 characters)"),
    "a text repeated": ("{{ 'a' * 3000000000 }}", "a text of 3,000,000,000 characters;"),
    "texts added": (S + "{{ s + s }}", "a text of 2,000,000 characters;"),
    "texts joined with ~": (S + "{{ s ~ s }}", "a text of 2,000,000 characters;"),
    "a namespace text doubled with +": (
        NS + "{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "a text of 1,048,576 characters;",
    ),
    "a dict of itself twice": (
        NS + "{% for i in range(60) %}{% set ns.d = dict(a=ns.d, b=ns.d) %}{% endfor %}",
        "a value of more than 1,000,000 characters)",
    ),
    "a namespace of itself twice": (
        NS + "{% for i in range(60) %}{% set ns.l = namespace(a=ns.l, b=ns.l) %}{% endfor %}{{ ns.l }}",
        "a value of more than 1,000,000 characters)",
    ),
    "a cycler of itself twice": (
        NS + "{% for i in range(60) %}{% set ns.c = cycler(*(ns.c.items + ns.c.items)) %}{% endfor %}",
        "a call with 16,385 arguments; at most 10,000)",
    ),
    "macro arguments doubled": (
        NS + "{% macro f() %}{% set ns.v = varargs %}{% endmacro %}"
        "{% for i in range(60) %}{{ f(*(ns.v + ns.v)) }}{% endfor %}",
        "a call with 16,385 arguments; at most 10,000)",
    ),
    "an integer squared": (
        NS + "{% for i in range(60) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
        "a number of 103,874 bits; at most 100,000)",
    ),
    "a power of a power": ("{{ (9 ** 999) ** 999 }}", "a number of 3,163,833 bits; at most 100,000)"),
    "batch filled": ("{{ [1]|batch(3000000000, 'x')|list }}", "a list of 3,000,000,000 items;"),
    "slice into many": ("{{ [1]|slice(3000000000)|list }}", "a list of 3,000,000,000 items;"),
    "int.to_bytes": ("{{ (1).to_bytes(3000000000, 'big') }}", "a value of 3,000,000,000 bytes;"),
    "dict.fromkeys": (S + "{{ {}.fromkeys(range(100000), s) }}", "a dict of 100,000,200,000 characters;"),
    "lipsum": ("{{ lipsum(1000000000) }}", "lipsum gives at most 100 paragraphs of at most 1,000 words)"),
    "tojson indent": ("{{ [[[[1]]]]|tojson(indent=3000000000) }}", "an indent of 3,000,000,000 characters;"),
    "indent of many lines": ("{{ ('\n' * 1000000)|indent(100) }}", "a text of 101,000,100 characters;"),
    "wordwrap's wrapstring": ("{{ ('a ' * 400000)|wordwrap(1, true, 'b' * 1000) }}", "a text of 800,801,000"),
    "map to a filter": ("{{ range(10)|map('center', 3000000000)|list }}", "a text of 3,000,000,000 characters;"),
    "attr to a method": ("{{ ('a'|attr('center'))(3000000000) }}", "a text of 3,000,000,000 characters;"),
    "a macro calling itself": (
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "w: the template's calls nest more than 100 deep",
    ),
    "a recursive loop": (
        "{% for x in [1] recursive %}{{ loop([1, 1]) }}{% endfor %}",
        "w: the template's calls nest more than 100 deep",
    ),
    "a macro's loop of constant text": (
        "{% macro f() %}{% for i in range(100000) %}" + "x" * 1000 + "{% endfor %}{% endmacro %}{{ f()|length }}",
        "more than 10,000,000 characters made by one render)",
    ),
    "a block set": (
        S + "{% set x %}{% for i in range(100000) %}{{ s }}{% endfor %}{% endset %}{{ x|length }}",
        "more than 10,000,000 characters made by one render)",
    ),
    "a filter block": (
        S + "{% filter length %}{% for i in range(100000) %}{{ s }}{% endfor %}{% endfilter %}",
        "more than 10,000,000 characters made by one render)",
    ),
    "a list grown one item at a time": (
        NS + "{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
        "more than 10,000,000 characters made by one render)",
    ),
    "the output": ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "a text of more than 1,000,000"),
    "a list nested 100,000 deep": (
        NS + "{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l|length }}",
        f"w: the template ran for more than {MAX_SECONDS:g} s",
    ),
}

CHILD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from evalcore.solver.templates import TemplateError, Templates
def high_water():
    status = open("/proc/self/status").read().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
for name, source in json.loads(sys.stdin.read()).items():
    before = high_water()
    started = time.monotonic()
    try:
        said = "rendered: " + Templates().render(source, "w", sample={{}}, messages=[])[:80]
    except TemplateError as exc:
        said = str(exc)
    except BaseException as exc:
        said = f"{{type(exc).__name__}}: {{exc}}"
    seconds = time.monotonic() - started
    peak = high_water()
    print(json.dumps([name, said, seconds, before // 1024, peak // 1024]), flush=True)
"""


@pytest.fixture(scope="module")
def battery() -> dict[str, tuple[str, float, int, int]]:
    """Every bomb of ``BATTERY`` rendered in one child capped at 1 GiB: what it said, its seconds, peak MB before
    and after it."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(limit=LIMIT)],
        input=json.dumps({name: source for name, (source, _) in BATTERY.items()}),
        capture_output=True,
        text=True,
        timeout=240,
    )
    results = {}
    for line in proc.stdout.splitlines():
        name, said, seconds, before, after = json.loads(line)
        results[name] = (said, seconds, before, after)
        print(f"{name}: {seconds:.2f} s, peak {after} MB: {said}")
    assert proc.returncode == 0, proc.stderr
    return results


@pytest.mark.parametrize("name", list(BATTERY))
def test_each_bomb_of_the_battery_is_refused_in_time_and_memory(
    name: str, battery: dict[str, tuple[str, float, int, int]]
) -> None:
    said, seconds, _, peak = battery[name]
    expected = BATTERY[name][1]
    prefix = "" if expected.startswith("w:") else "w: the template asks for too large a value ("
    assert said.startswith(prefix + expected), said
    assert "MemoryError" not in said and "RecursionError" not in said
    deadline = "ran for more than" in expected
    assert seconds < (MAX_SECONDS + 1.5 if deadline else 4.0), seconds  # (a loaded CI machine: twice the time seen)
    assert peak < 200, f"{peak} MB"


def test_what_the_bounds_leave_alone_still_renders() -> None:
    """Templates a task means: loops over the conversation, filters, macros, format, a value at the bound."""
    from evalcore.solver.templates import Templates

    messages: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    sample = {"question": "Q", "trace": "t" * 3_000_000, "items": list(range(5))}
    render = Templates().render
    each = "{% for m in messages %}{{ m.role|upper }}: {{ m.content }}\n{% endfor %}"
    assert render(each, "w", sample=sample, messages=messages) == "USER: Hi\nASSISTANT: Hello\n"
    assert render("{{ sample.get('trace')|length }} {{ sample.trace[:3] }}", "w", sample=sample, messages=[]) == (
        "3000000 ttt"
    )  # a large value given is read, not refused: only what a template makes is bounded
    assert (
        render(
            "{% macro ask(q) %}Q: {{ q }}{% endmacro %}{{ ask(sample.question) }} {{ '%05d|%s' % (42, 'x') }} "
            "{{ '{:>4}'.format(7) }} {{ sample['items']|map('string')|join(',') }} {{ sample['items']|sum }} "
            "{{ [1, 2] + [3] }} {{ {'a': 1}|tojson }} {{ messages|selectattr('role', 'eq', 'user')|list|length }}",
            "w",
            sample=sample,
            messages=messages,
        )
        == 'Q: Q 00042|x    7 0,1,2,3,4 10 [1, 2, 3] {"a": 1} 1'
    )
    assert len(render("{{ 'a' * 1000000 }}", "w", sample={}, messages=[])) == 1_000_000  # at the bound: fine
    assert render("{{ [[1], [2]]|sum(start=[]) }} {{ 2 ** 1000 > 10 }}", "w", sample={}, messages=[]) == "[1, 2] True"
