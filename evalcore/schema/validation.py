"""Checks on a session beyond its types, reported as problems a reviewer understands.

Errors make a record unusable (it is reported and skipped); warnings are reported
and the record is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from evalcore.schema.message import Message, ToolCall
from evalcore.schema.session import ContextChunk, Session, tool_links

__all__ = ["MAX_DEPTH", "SHALLOW", "Problem", "check_storable", "resolve_weights", "validate_session"]

#: The deepest a session may nest (arrays and objects, counted in evalcore's own JSON form of it,
#: ``Session.model_dump_json``) to be read, written and stored. The store reads sessions back with
#: pydantic's JSON parser, which stops at 200 levels; pydantic and orjson write at most about 255,
#: and writers wrap values a level or two deeper than the model does. 128 leaves room for all.
MAX_DEPTH = 128
#: Nesting a reader may add around the values it takes from a record, with the model's own levels,
#: at most (a Gaussia tool's parameters sit at level 6 of a session; readers wrap what they keep in
#: ``metadata`` two or three levels deep). A record whose text bounds its nesting
#: (``evalcore.formats.jsonio.nesting_bound``) to ``SHALLOW`` needs no measuring.
SHALLOW = MAX_DEPTH - 16

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


def validate_session(session: Session, *, shallow: bool = False, conversation: bool = True) -> list[Problem]:
    """Return every problem with ``session`` (an empty list when it is sound).

    This is the one set of checks of every path: ``validate``, ``convert`` and ``import`` read
    files through it, and the store checks reviewers' saves with it, so a session one accepts,
    the others accept too (see ``check_storable``). ``shallow`` says the caller knows the session
    cannot nest deeper than ``SHALLOW`` (the file reader knows it from the text it read), so its
    nesting need not be measured. ``conversation=False`` leaves out the checks of the conversation alone (the
    order and links of tool calls and results): for a caller comparing two states of one conversation.
    """
    problems = [] if shallow else check_storable(session)
    if not session.messages:  # read from any format: nothing to review or score, never silently
        problems.append(Problem("warning", "messages", "no messages: an empty conversation"))
    if conversation:
        problems += _check_tool_order(session)
        problems += _check_tool_links(session)
    problems += _check_turns(session)
    # A reference answer and expected facts may both be set: the formats that hold only one (databricks)
    # write the facts and count the reference as dropped (``Format.kept_truth``, ``evalcore.convert``).
    return problems


def check_storable(session: Session) -> list[Problem]:
    """Problems that would stop ``session`` from being written or stored: nesting deeper than
    ``MAX_DEPTH``, each reported on the field that holds it.

    Strings need no check here: every JSON parser of evalcore (``evalcore.formats.jsonio.loads``
    and the file reader) refuses lone surrogates, the one thing a Python string can hold that
    JSON, SQLite and UTF-8 files cannot, so no session read from a file has one. Only the
    free-form values (``dict[str, Any]`` and ``Any`` fields) can nest at will; the model's own
    structure is a few levels deep, and each value is measured from where it sits in it.
    (This runs for every session read that may be deep: it is written for speed.)
    """
    found: list[str] = []
    for name in ("metadata", "scores", "trace"):
        value = getattr(session, name)
        if value and _deeper(value, MAX_DEPTH - 1):
            found.append(name)
    for i, message in enumerate(session.messages):
        if message.metadata and _deeper(message.metadata, MAX_DEPTH - 3):
            found.append(f"messages[{i}].metadata")
        content = message.content
        if content.__class__ is list and _deeper(content, MAX_DEPTH - 3):
            found.append(f"messages[{i}].content")
        if message.tool_calls:
            _find_deep_calls(message.tool_calls, MAX_DEPTH - 5, f"messages[{i}].tool_calls", found)
    if session.reference_tool_calls:
        _find_deep_calls(session.reference_tool_calls, MAX_DEPTH - 3, "reference_tool_calls", found)
    _find_deep_truth(session, found)
    reason = (
        f"nested more than {MAX_DEPTH} levels deep (arrays and objects, counted from the session); "
        f"evalcore keeps at most {MAX_DEPTH}"
    )
    return [Problem("error", where, reason) for where in found]


def _find_deep_calls(calls: list[ToolCall], room: int, where: str, found: list[str]) -> None:
    for j, call in enumerate(calls):
        if call.args and _deeper(call.args, room):
            found.append(f"{where}[{j}].args")
        if call.metadata and _deeper(call.metadata, room):
            found.append(f"{where}[{j}].metadata")


def _find_deep_truth(session: Session, found: list[str]) -> None:
    for field in ("retrieved_context", "expected_retrieved_context"):
        chunks: list[ContextChunk] | None = getattr(session, field)
        for j, chunk in enumerate(chunks or ()):
            if chunk.metadata and _deeper(chunk.metadata, MAX_DEPTH - 3):
                found.append(f"{field}[{j}].metadata")
    for j, truth in enumerate(session.turn_truth):
        for name in ("expected_tool_usage", "logprobs", "metadata"):
            value = getattr(truth, name)
            if value and _deeper(value, MAX_DEPTH - 3):
                found.append(f"turns[{j}].{name}")


_NESTED = (dict, list, tuple)


def _deeper(value: Any, room: int) -> bool:
    """Whether ``value`` nests more than ``room`` levels of arrays and objects (a scalar nests 0)."""
    children: Any
    if value.__class__ is dict:
        children = value.values()
    elif isinstance(value, _NESTED):
        children = value
    else:
        return False
    if room <= 0:
        return True
    return any(isinstance(child, _NESTED) and _deeper(child, room - 1) for child in children)


def _check_tool_order(session: Session) -> list[Problem]:
    problems: list[Problem] = []
    seen_assistant = False
    previous = None
    for i, message in enumerate(session.messages):
        role = message.role
        if role == "system":
            continue
        if role == "tool":
            reason = None
            if not seen_assistant:
                reason = RAGAS_TOOL_BEFORE_AI
            elif previous is not None and previous.role == "assistant" and not previous.tool_calls:
                reason = RAGAS_TOOL_AFTER_NO_CALLS
            elif previous is not None and previous.role == "user":
                reason = RAGAS_TOOL_AFTER_HUMAN
            if reason:
                problems.append(Problem("error", f"messages[{i}]", reason))
        elif role == "assistant":
            seen_assistant = True
        previous = message
    return problems


def _check_tool_links(session: Session) -> list[Problem]:
    """Parallel calls sharing an id (one made while another of that id still waits for its result), and results
    naming no call (or one answered already): warnings, each naming the message and the id (the Review page
    pairs them as ``tool_links`` says, and says so)."""
    messages = session.messages
    if _plainly_linked(messages):  # (most sessions: this runs for every one read)
        return []
    links = tool_links(messages)
    problems = [
        Problem(
            "warning",
            f"messages[{i}].tool_calls[{j}].id",
            f"{call_id!r} is also the id of messages[{first_i}].tool_calls[{first_j}], which still waits for its "
            "result: ambiguous; the results are paired with these calls in the order they come",
        )
        for i, j, call_id, first_i, first_j in links.duplicates
    ]
    for i, why in links.unlinked.items():
        call_id = messages[i].tool_call_id
        if why == "unknown":
            reason = f"{call_id!r} names no tool call: the result of an unknown call, linked to none"
        elif why == "answered":
            reason = f"{call_id!r} names a tool call that has its result already: a second result, linked to none"
        else:
            continue  # a result naming no call with none waiting: the tool order rules above speak of it
        problems.append(Problem("warning", f"messages[{i}].tool_call_id", reason))
    return problems


def _plainly_linked(messages: list[Message]) -> bool:
    """Whether ``tool_links`` would surely find nothing to warn of, seen in one cheap pass: no call id used twice
    (so no calls share one), and either no result names a call (ragas', formats without ids: each takes the first
    call waiting, or none, which the tool order rules speak of) or every result names an earlier call no other
    result named (each goes to its own call). Anything else is left to ``tool_links``."""
    call_ids: set[str] = set()
    named: set[str] = set()
    unnamed = False
    for m in messages:
        role = m.role
        if role == "assistant":
            for call in m.tool_calls or ():
                if call.id:
                    if call.id in call_ids:
                        return False
                    call_ids.add(call.id)
        elif role == "tool":
            call_id = m.tool_call_id
            if not call_id:
                unnamed = True
            elif call_id in named or call_id not in call_ids:
                return False
            else:
                named.add(call_id)
    return not (unnamed and named)


def _check_turns(session: Session) -> list[Problem]:
    if not session.turn_truth:  # (most sessions: this runs for every one read)
        return []
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
