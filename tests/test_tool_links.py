"""Tool results linked to their calls, from real files: parallel calls sharing one id get their own results in
the order given (never swapped) and are flagged; a result naming no call is shown on its own; ``evalcore
validate`` names both; an Open Responses -> OpenAI -> Open Responses round trip keeps each result with its call
(issue 23, item 10)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalcore import read_path
from evalcore.schema import Session, tool_links
from evalcore.views.review.transcript import CallView, MessageView, transcript

EVALCORE = str(Path(sys.executable).parent / "evalcore")
ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=120)


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_one(path: Path, fmt: str | None = None) -> Session:
    with read_path(path, fmt) as results:
        (result,) = list(results)
    assert result.session is not None, result.problems
    return result.session


def call(call_id: str, name: str, args: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


#: Two parallel calls that the provider gave one id, answered in order; then a result naming no call.
PARALLEL = {
    "messages": [
        {"role": "user", "content": "Weather in Paris and in Rome?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("call_1", "weather", '{"city": "Paris"}'),
                call("call_1", "weather", '{"city": "Rome"}'),
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris: 18 C"},
        {"role": "tool", "tool_call_id": "call_1", "content": "Rome: 24 C"},
        {"role": "tool", "tool_call_id": "call_9", "content": "a result of no call"},
        {"role": "assistant", "content": "Paris 18 C, Rome 24 C."},
    ]
}


def test_parallel_calls_sharing_an_id_keep_their_own_results_and_are_flagged(tmp_path: Path) -> None:
    session = read_one(write(tmp_path / "parallel.jsonl", [PARALLEL]), "openai")
    (turn,) = transcript(session).turns
    calls = turn.calls
    assert [(c.call.args["city"], c.result_text) for c in calls] == [("Paris", "Paris: 18 C"), ("Rome", "Rome: 24 C")]
    assert [c.shared_by for c in calls] == [2, 2]
    assert (
        calls[0].shared_note is not None
        and "ambiguous: 2 parallel calls have the id ` call_1 `" in calls[0].shared_note
    )
    # The result naming call_9 stands alone, after the calls, saying so; it is under no call.
    orphan = [item for item in turn.items if isinstance(item, MessageView) and item.kind == "tool"]
    assert [(o.text, o.unlinked, o.unlinked_note) for o in orphan] == [
        ("a result of no call", "unknown", ":material/link_off: result of an unknown call ` call_9 `")
    ]
    assert all(c.result is None or c.result.text != "a result of no call" for c in calls)


def test_validate_names_the_message_and_the_id_of_both(tmp_path: Path) -> None:
    source = write(tmp_path / "parallel.jsonl", [PARALLEL])
    proc = run("validate", str(source))
    assert proc.returncode == 0, proc.stderr  # warnings: the record is kept
    assert proc.stderr.splitlines() == [
        f"{source}:1: warning: messages[1].tool_calls[1].id: 'call_1' is also the id of messages[1].tool_calls[0], "
        "which still waits for its result: ambiguous; the results are paired with these calls in the order they come",
        f"{source}:1: warning: messages[4].tool_call_id: 'call_9' names no tool call: the result of an unknown "
        "call, linked to none",
        f"{source}: 1 sessions read as openai; 0 records with errors, 2 warnings",
    ]


def test_an_id_used_again_after_its_result_is_not_ambiguous() -> None:
    # tau-bench's gpt-4o trajectories reuse a call id once its result is in: 40 real sessions, no warning, and
    # each reused id's result is the one that follows its call.
    path = ROOT / "tests" / "data" / "tau_bench" / "gpt-4o-airline-first40.json"
    proc = run("validate", str(path))
    assert proc.returncode == 0 and proc.stderr.strip().endswith("0 records with errors, 0 warnings"), proc.stderr
    with read_path(path) as results:
        sessions = [r.session for r in results if r.session is not None]
    reused = 0
    for session in sessions:
        links = tool_links(session.messages)
        assert not links.duplicates and not links.shared
        for i, message in enumerate(session.messages):
            if message.role == "tool":
                before = session.messages[i - 1]
                (answered,) = [c for c, r in links.pairs if r is message]
                assert before.role == "assistant" and answered in before.calls  # the call just before it
        ids = [c.id for c, _ in links.pairs if c.id]
        reused += len(ids) - len(set(ids))
    assert reused == 17  # ids the file uses a second time, once the first call had its result


def test_an_id_used_again_in_a_later_turn_names_that_turn_s_call(tmp_path: Path) -> None:
    row = {
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": None, "tool_calls": [call("c", "lookup")]},  # never answered
            {"role": "assistant", "content": "It timed out."},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": None, "tool_calls": [call("c", "lookup")]},
            {"role": "tool", "tool_call_id": "c", "content": "found"},
        ]
    }
    first, second = transcript(read_one(write(tmp_path / "again.jsonl", [row]), "openai")).turns
    assert [c.result_text for c in first.calls] == [""] and first.n_missing_results == 1
    assert [c.result_text for c in second.calls] == ["found"]
    assert run("validate", str(tmp_path / "again.jsonl")).stderr.count("warning:") == 0


OPEN_RESPONSES = {
    "items": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Stock of A and price of B?"}]},
        {"type": "function_call", "call_id": "fc", "name": "stock", "arguments": '{"item": "A"}'},
        {"type": "function_call", "call_id": "fc", "name": "price", "arguments": '{"item": "B"}'},
        {"type": "function_call_output", "call_id": "fc", "output": "12 in stock"},
        {"type": "function_call_output", "call_id": "fc", "output": "9.99"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "12, at 9.99."}]},
    ]
}


def _pairs(session: Session) -> list[tuple[str, str, str | None]]:
    """Each call's tool name, its result's text, and the tool name the result carries."""
    return [(c.name, r.text if r else "", r.name if r else None) for c, r in tool_links(session.messages).pairs]


@pytest.mark.parametrize("target", ["openai", "anthropic", "databricks"])
def test_an_open_responses_round_trip_keeps_each_result_with_its_call(tmp_path: Path, target: str) -> None:
    source = write(tmp_path / "trace.jsonl", [OPEN_RESPONSES])
    expected = [("stock", "12 in stock", "stock"), ("price", "9.99", "price")]
    assert _pairs(read_one(source, "open-responses")) == expected  # the second result is no longer named "price"
    middle = tmp_path / f"trace.{target}.jsonl"
    proc = run("convert", str(source), "-o", str(middle), "--to", target, "--from", "open-responses")
    assert proc.returncode == 0, proc.stderr
    there = read_one(middle, target)
    assert [(name, text) for name, text, _ in _pairs(there)] == [(n, t) for n, t, _ in expected]
    if target == "openai":  # each tool message named after its own call (both were "price")
        (row,) = [json.loads(line) for line in middle.read_text().splitlines()]
        assert [m.get("name") for m in row["messages"] if m["role"] == "tool"] == ["stock", "price"]
    back = tmp_path / "back.jsonl"
    proc = run("convert", str(middle), "-o", str(back), "--to", "open-responses", "--from", target)
    assert proc.returncode == 0, proc.stderr
    assert [(n, t) for n, t, _ in _pairs(read_one(back, "open-responses"))] == [(n, t) for n, t, _ in expected]


def test_anthropic_results_of_tool_uses_sharing_an_id_are_named_in_order(tmp_path: Path) -> None:
    request = {
        "messages": [
            {"role": "user", "content": "Stock of A and price of B?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "stock", "input": {"item": "A"}},
                    {"type": "tool_use", "id": "toolu_1", "name": "price", "input": {"item": "B"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "12 in stock"},
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "9.99"},
                ],
            },
        ]
    }
    session = read_one(write(tmp_path / "anthropic.jsonl", [request]), "anthropic")
    assert _pairs(session) == [("stock", "12 in stock", "stock"), ("price", "9.99", "price")]
    view = transcript(session)
    assert [c.shared_by for c in view.turns[0].calls] == [2, 2]
    assert all(isinstance(c, CallView) for c in view.turns[0].calls)


def test_the_quick_check_of_plain_links_never_hides_a_warning() -> None:
    """``validate_session`` skips ``tool_links`` for a session whose links are plain (ids unique, results naming
    none or each its own earlier call): on 20,000 random conversations (ids drawn from a few, some empty or
    missing, results before and after their calls) it says plain only where ``tool_links`` finds nothing to warn of,
    and the warnings of every conversation are those ``tool_links`` gives."""
    from evalcore.schema import Message, ToolCall, validate_session
    from evalcore.schema.validation import _plainly_linked

    rng = random.Random(19)
    plain = 0
    for _ in range(20_000):
        messages = [Message(role="user", content="q")]
        for _ in range(rng.randint(0, 7)):
            role = rng.choice(["user", "assistant", "assistant", "tool", "tool", "system"])
            if role == "assistant":
                ids = [rng.choice([None, "", "a", "b", "c"]) for _ in range(rng.randint(0, 3))]
                calls = [ToolCall(name="f", args={}, id=i) for i in ids]
                messages.append(Message(role="assistant", content="x", tool_calls=calls or None))
            elif role == "tool":
                messages.append(Message(role="tool", content="r", tool_call_id=rng.choice([None, "", "a", "b", "d"])))
            else:
                messages.append(Message(role=role, content="u"))
        links = tool_links(messages)
        warned = bool(links.duplicates) or any(why in ("unknown", "answered") for why in links.unlinked.values())
        expected = len(links.duplicates) + sum(why in ("unknown", "answered") for why in links.unlinked.values())
        said = [p for p in validate_session(Session(messages=messages)) if p.level == "warning"]
        linking = [p for p in said if "still waits for its result" in p.message or "linked to none" in p.message]
        assert len(linking) == expected, messages
        if _plainly_linked(messages):
            plain += 1
            assert not warned, messages
    assert 2_000 < plain < 18_000  # both ways taken
