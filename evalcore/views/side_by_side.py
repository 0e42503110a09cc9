"""Where two transcripts shown side by side part ways: the first turn where their tool calls (or the user's words)
differ, or that both made the same calls — so a reader of two long runs knows where to look.

Calls are compared by name and arguments (as JSON with sorted keys; call ids are not compared: each run makes its
own), in conversation order, turn by turn; what came before the first user message counts as a turn of its own
(the preamble). When every call agrees, the summary says so and names the first turn whose tool results or
assistant's words differ, if any.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalcore.views.review.transcript import CallView, Item, MessageView, TranscriptView
from evalcore.views.text import plural, visible

__all__ = ["Divergence", "divergence"]

#: A call's arguments are quoted up to this many characters in the summary.
_ARGS_SHOWN = 80


@dataclass(frozen=True)
class Divergence:
    """Where A and B first differ. ``same_calls``: every tool call agrees (name and arguments, in order).
    ``turn``: the 1-based turn of the first difference in calls or in the user's words (0: the preamble;
    ``None``: none). ``summary``: plain text."""

    same_calls: bool
    turn: int | None
    summary: str


@dataclass(frozen=True)
class _Step:
    user: str | None  # None: the preamble
    calls: list[tuple[str, str]]  # (name, arguments as JSON)
    results: list[str]
    words: list[str]  # what the assistant wrote, in order


def _args(args: Any) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def _step(user: str | None, items: list[Item]) -> _Step:
    calls = [item for item in items if isinstance(item, CallView)]
    words = [item.text for item in items if isinstance(item, MessageView) and item.kind == "assistant" and item.text]
    return _Step(user, [(c.name, _args(c.call.args)) for c in calls], [c.result_text for c in calls], words)


def _steps(view: TranscriptView) -> list[_Step]:
    steps = [_step(None, view.preamble)] if view.preamble else []
    return steps + [_step(turn.query, turn.items) for turn in view.turns]


def _where(n: int, preamble: bool) -> tuple[int, str]:
    """The turn number of step ``n`` (0: the preamble) and its words."""
    number = n if preamble else n + 1
    return number, ("before the first user message" if number == 0 else f"at turn {number}")


def _call(call: tuple[str, str]) -> str:
    name, args = call
    shown = args if len(args) <= _ARGS_SHOWN else args[: _ARGS_SHOWN - 1] + "…"
    return f"{visible(name)} {visible(shown)}"


def divergence(a: TranscriptView, b: TranscriptView) -> Divergence:
    """Where transcript ``a`` and transcript ``b`` part ways (see the module's docstring)."""
    steps_a, steps_b = _steps(a), _steps(b)
    preamble = bool(a.preamble) or bool(b.preamble)
    if bool(a.preamble) != bool(b.preamble):  # line the turns up: the side without a preamble gets an empty one
        empty = _Step(None, [], [], [])
        steps_a, steps_b = ([empty] if not a.preamble else []) + steps_a, ([empty] if not b.preamble else []) + steps_b
    shared = 0
    for n, (sa, sb) in enumerate(zip(steps_a, steps_b, strict=False)):
        number, where = _where(n, preamble)
        if sa.user != sb.user:
            return Divergence(False, number, f"A and B part {where}: the user's message differs{_before(shared)}.")
        for k, (ca, cb) in enumerate(zip(sa.calls, sb.calls, strict=False)):
            if ca != cb:
                said = f"A calls {_call(ca)}, B calls {_call(cb)}"
                return Divergence(False, number, f"A and B part {where}, call {k + 1}: {said}{_before(shared + k)}.")
        if len(sa.calls) != len(sb.calls):
            k = min(len(sa.calls), len(sb.calls))
            more, fewer = ("A", "B") if len(sa.calls) > k else ("B", "A")
            extra = (sa.calls if more == "A" else sb.calls)[k]
            said = f"{more} calls {_call(extra)}, {fewer} makes no further call in that turn"
            return Divergence(False, number, f"A and B part {where}, call {k + 1}: {said}{_before(shared + k)}.")
        shared += len(sa.calls)
    if len(steps_a) != len(steps_b):
        longer, shorter = ("A", "B") if len(steps_a) > len(steps_b) else ("B", "A")
        number, where = _where(min(len(steps_a), len(steps_b)), preamble)
        turns = abs(len(steps_a) - len(steps_b))
        said = f"{shorter} ends before turn {number}, {longer} goes on for {plural(turns, 'more turn')}"
        return Divergence(False, number, f"A and B part {where}: {said}{_before(shared)}.")
    summary = (
        f"Identical call sequences: A and B make the same {plural(shared, 'tool call')} (names and arguments, in "
        f"order) over {plural(len(a.turns), 'turn')}."
    )
    notes = []
    pairs = list(zip(steps_a, steps_b, strict=True))
    for label, attr in (("tool results", "results"), ("assistant's words", "words")):
        first = next((n for n, (sa, sb) in enumerate(pairs) if getattr(sa, attr) != getattr(sb, attr)), None)
        if first is not None:
            notes.append(f"the {label} differ first {_where(first, preamble)[1]}")
    if notes:
        said = "; ".join(notes)
        summary += f" {said[0].upper()}{said[1:]}."
    else:
        summary += " Their results and the assistant's words are the same too."
    return Divergence(True, None, summary)


def _before(shared: int) -> str:
    return f", after {plural(shared, 'call')} in common" if shared else ""
