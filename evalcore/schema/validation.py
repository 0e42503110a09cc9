"""Checks on a session beyond its types, reported as problems a reviewer understands.

Errors make a record unusable (it is reported and skipped); warnings are reported
and the record is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from evalcore.schema.session import Session

__all__ = ["Problem", "resolve_weights", "validate_session"]

# ragas' own wording, so that users coming from ragas recognise the rules.
RAGAS_TOOL_BEFORE_AI = "ToolMessage must be preceded by an AIMessage somewhere in the conversation."
RAGAS_TOOL_AFTER_NO_CALLS = "ToolMessage must follow an AIMessage where tools were called."
RAGAS_TOOL_AFTER_HUMAN = "ToolMessage must follow an AIMessage or another ToolMessage."


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a record: how bad, which field, and why."""

    level: Literal["error", "warning"]
    field: str | None
    message: str

    def __str__(self) -> str:
        text = f"{self.field}: {self.message}" if self.field else self.message
        return text if self.level == "error" else f"warning: {text}"


def validate_session(session: Session) -> list[Problem]:
    """Return every problem with ``session`` (an empty list when it is sound)."""
    problems = _check_tool_order(session)
    problems += _check_turns(session)
    if session.expected_facts is not None and session.reference is not None:
        problems.append(
            Problem(
                "error",
                "expected_facts",
                "expected_facts and reference (expected_response) are both set; give only one",
            )
        )
    return problems


def _check_tool_order(session: Session) -> list[Problem]:
    problems: list[Problem] = []
    seen_assistant = False
    previous = None
    for i, message in enumerate(session.messages):
        if message.role == "system":
            continue
        if message.role == "tool":
            reason = None
            if not seen_assistant:
                reason = RAGAS_TOOL_BEFORE_AI
            elif previous is not None and previous.role == "assistant" and not previous.tool_calls:
                reason = RAGAS_TOOL_AFTER_NO_CALLS
            elif previous is not None and previous.role == "user":
                reason = RAGAS_TOOL_AFTER_HUMAN
            if reason:
                problems.append(Problem("error", f"messages[{i}]", reason))
        elif message.role == "assistant":
            seen_assistant = True
        previous = message
    return problems


def _check_turns(session: Session) -> list[Problem]:
    problems: list[Problem] = []
    n_user = sum(1 for m in session.messages if m.role == "user")
    if len(session.turn_truth) > n_user:
        problems.append(
            Problem(
                "error",
                "turns",
                f"{len(session.turn_truth)} turns of ground truth but only {n_user} user messages",
            )
        )
    first_use: dict[str, int] = {}
    for i, turn in enumerate(session.turn_truth):
        if turn.qa_id is None:
            continue
        if turn.qa_id in first_use:
            problems.append(
                Problem(
                    "error",
                    f"turns[{i}].qa_id",
                    f"{turn.qa_id!r} is already the qa_id of turns[{first_use[turn.qa_id]}]; "
                    "qa_ids must be unique in a session",
                )
            )
        else:
            first_use[turn.qa_id] = i
    _weights, warning = resolve_weights([t.weight for t in session.turn_truth])
    if warning:
        problems.append(Problem("warning", "turns.weight", warning))
    return problems


def resolve_weights(weights: list[float | None]) -> tuple[list[float], str | None]:
    """Gaussia's weight rules: the weight of each turn, and a warning when it fell back.

    - no weight given: 1/n each;
    - every weight given: used as given if they sum to 1 (within 1e-6), else 1/n each;
    - some given: if they sum to 1 or more, 1/n each; else the rest of 1 is shared
      equally among the turns without one.
    """
    n = len(weights)
    if n == 0:
        return [], None
    equal = [1.0 / n] * n
    given = [w for w in weights if w is not None]
    if not given:
        return equal, None
    assigned = math.fsum(given)
    if len(given) == n:
        if abs(assigned - 1.0) <= 1e-6:
            return [float(w) for w in given], None
        return equal, f"weights sum to {assigned:g}, not 1.0; equal weights 1/{n} are used instead"
    if assigned >= 1.0:
        return equal, (
            f"the {len(given)} weights given already sum to {assigned:g} (>= 1.0) while "
            f"{n - len(given)} turns have none; equal weights 1/{n} are used instead"
        )
    share = (1.0 - assigned) / (n - len(given))
    return [share if w is None else float(w) for w in weights], None
