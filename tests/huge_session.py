"""Large sessions for the tests of Review's paged reading (``evalcore.store.parts``) and its benchmark: records of
evalcore's own format, written to a file a message at a time (a session of a million messages is never held)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Every this many turns, a turn of ``LONG_TURN`` messages: longer than a part, cut inside it.
LONG_EVERY = 997
LONG_TURN = 2_600


def messages(n_messages: int) -> Iterator[dict[str, Any]]:
    """About ``n_messages`` messages: a system prompt and a greeting, then turns of a question, a tool call (two
    parallel ones every 7th turn, a result naming no call every 11th), its result and an answer; every
    ``LONG_EVERY``-th turn a long run of calls and results."""
    yield {"role": "system", "content": "You are a support agent. Use the tools."}
    yield {"role": "assistant", "content": "Hello, how can I help?"}
    n, turn = 2, 0
    while n < n_messages:
        yield {"role": "user", "content": f"Question {turn}: where is order {turn * 7 % 1000}?"}
        n += 1
        calls = LONG_TURN // 2 if turn % LONG_EVERY == LONG_EVERY - 1 else (2 if turn % 7 == 3 else 1)
        if calls > 2:
            for c in range(calls):
                call = {"name": "lookup", "args": {"order": c}, "id": f"t{turn}-c{c}"}
                yield {"role": "assistant", "tool_calls": [call]}
                yield {"role": "tool", "content": json.dumps({"status": "ok", "n": c}), "tool_call_id": f"t{turn}-c{c}"}
            n += 2 * calls
        else:
            ids = [f"t{turn}-c{c}" for c in range(calls)]
            yield {
                "role": "assistant",
                "tool_calls": [{"name": "lookup", "args": {"order": turn}, "id": i} for i in ids],
            }
            for i in ids:
                yield {"role": "tool", "content": json.dumps({"order": turn, "status": "shipped"}), "tool_call_id": i}
            if turn % 11 == 5:
                yield {"role": "tool", "content": "stray", "tool_call_id": "nobody"}
                n += 1
            n += 1 + calls
        yield {"role": "assistant", "content": f"Order {turn * 7 % 1000} has shipped (turn {turn})."}
        n += 1
        turn += 1


def header(session_id: str, turns: int) -> dict[str, Any]:
    """The session's own fields and its ground truth: a reference, and truth for some turns (a weight on every
    fifth, a ground truth on every third)."""
    truth: list[dict[str, Any]] = []
    for t in range(turns):
        entry: dict[str, Any] = {}
        if t % 3 == 0:
            entry["ground_truth"] = f"shipped {t}"
        if t % 5 == 0:
            entry["weight"] = 0.001
        if t == 4:
            entry["qa_id"] = "q-4"
        truth.append(entry)
    return {
        "schema_version": 1, "session_id": session_id, "assistant_id": "bot", "reference": "Order has shipped.",
        "goal": "Find the order", "metadata": {"source": "generated"}, "turn_truth": truth,
    }  # fmt: skip


def record(session_id: str, n_messages: int) -> dict[str, Any]:
    """A whole record (for the smaller sessions of the tests)."""
    found = list(messages(n_messages))
    turns = sum(1 for m in found if m["role"] == "user")
    return {**header(session_id, turns), "messages": found}


def write(path: Path, session_id: str, n_messages: int, *, others: list[dict[str, Any]] | None = None) -> Path:
    """A JSON Lines file of ``others`` then the large session, written a message at a time."""
    turns = sum(1 for m in messages(n_messages) if m["role"] == "user")
    head = json.dumps(header(session_id, turns))
    with path.open("w", encoding="utf-8") as out:
        for other in others or []:
            out.write(json.dumps(other) + "\n")
        out.write(head[:-1] + ', "messages": [')
        for i, message in enumerate(messages(n_messages)):
            out.write(("," if i else "") + json.dumps(message))
        out.write("]}\n")
    return path
