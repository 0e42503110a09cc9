"""Where two transcripts part ways (Side by side's summary): hand-built conversations differing in one place each."""

from __future__ import annotations

from typing import Any

import pytest

from evalcore.schema import Session
from evalcore.views.review import transcript
from evalcore.views.side_by_side import divergence


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"role": "assistant", "tool_calls": [{"id": call_id, "name": name, "args": args}]}


def result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def conversation(**change: Any) -> list[dict[str, Any]]:
    """Two turns, three calls; ``change`` replaces a message by its position."""
    messages = [
        {"role": "user", "content": "Book me a flight to Paris"},
        call("search", "c1", to="CDG", day=1),
        result("c1", "AF12"),
        call("book", "c2", flight="AF12"),
        result("c2", "ok"),
        {"role": "assistant", "content": "Booked AF12."},
        {"role": "user", "content": "And a hotel?"},
        call("hotel", "c3", city="Paris"),
        result("c3", "Ritz"),
        {"role": "assistant", "content": "The Ritz."},
    ]
    for at, message in change.items():
        messages[int(at[1:])] = message
    return [m for m in messages if m is not None]


def views(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[Any, Any]:
    return transcript(Session.model_validate({"messages": a})), transcript(Session.model_validate({"messages": b}))


def test_identical_runs_say_so() -> None:
    found = divergence(*views(conversation(), conversation()))
    assert found.same_calls and found.turn is None
    assert found.summary == (
        "Identical call sequences: A and B make the same 3 tool calls (names and arguments, in order) over 2 turns. "
        "Their results and the assistant's words are the same too."
    )


def test_same_calls_other_ids_results_and_words() -> None:
    """τ-bench's pairs: the same calls (other call ids), a result and the last answer different."""
    b = conversation(m1=call("search", "x9", day=1, to="CDG"), m2=result("x9", "AF12"), m8=result("c3", "Hilton"),
                     m9={"role": "assistant", "content": "The Hilton."})  # fmt: skip
    found = divergence(*views(conversation(), b))
    assert found.same_calls and found.turn is None
    assert found.summary.endswith(
        "over 2 turns. The tool results differ first at turn 2; the assistant's words differ first at turn 2."
    )


def test_a_different_call() -> None:
    found = divergence(*views(conversation(), conversation(m3=call("cancel", "c2", flight="AF12"))))
    assert not found.same_calls and found.turn == 1
    assert found.summary == (
        'A and B part at turn 1, call 2: A calls book {"flight": "AF12"}, B calls cancel {"flight": "AF12"}, '
        "after 1 call in common."
    )


def test_the_same_tool_with_other_arguments_in_a_later_turn() -> None:
    found = divergence(*views(conversation(), conversation(m7=call("hotel", "c3", city="Lyon"))))
    assert found.turn == 2
    assert found.summary.startswith('A and B part at turn 2, call 1: A calls hotel {"city": "Paris"}, B calls hotel')
    assert found.summary.endswith("after 2 calls in common.")


def test_a_call_one_side_does_not_make() -> None:
    found = divergence(*views(conversation(), conversation(m3=None, m4=None)))
    assert found.turn == 1
    assert found.summary == (
        'A and B part at turn 1, call 2: A calls book {"flight": "AF12"}, B makes no further call in that turn, '
        "after 1 call in common."
    )


def test_the_user_says_something_else() -> None:
    found = divergence(*views(conversation(), conversation(m6={"role": "user", "content": "And a car?"})))
    assert found.turn == 2
    assert found.summary == "A and B part at turn 2: the user's message differs, after 2 calls in common."


def test_one_side_goes_on_longer() -> None:
    found = divergence(*views(conversation()[:6], conversation()))
    assert found.turn == 2 and not found.same_calls
    assert found.summary == (
        "A and B part at turn 2: A ends before turn 2, B goes on for 1 more turn, after 2 calls in common."
    )


def test_a_preamble_on_one_side_only() -> None:
    system_call = [call("warmup", "w"), result("w", "ok")]
    found = divergence(*views(system_call + conversation(), conversation()))
    assert found.turn == 0
    assert found.summary.startswith("A and B part before the first user message, call 1: A calls warmup {}, B makes")


@pytest.mark.parametrize("args", [{"note": "x" * 500}, {"where": "gnp\u202eexe"}])
def test_long_and_hostile_arguments_are_cut_and_made_visible(args: dict[str, Any]) -> None:
    found = divergence(*views(conversation(), conversation(m1=call("search", "c1", **args))))
    assert len(found.summary) < 400
    assert "\u202e" not in found.summary


def test_empty_sessions() -> None:
    found = divergence(*views([], []))
    assert found.same_calls
    assert found.summary.startswith("Identical call sequences: A and B make the same 0 tool calls")
