"""Where tools fail (issue 21, item 4): per tool name, calls expected, made, missing, extra, with wrong arguments
(which) and out of order — counted by hand on five small sessions, and the same figures from a stored dataset;
on τ-bench's file, the totals checked against a count of the file's own actions and calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user
from formats_util import write_jsonl

from evalcore.importing import import_file
from evalcore.metrics.calls import Call, SessionCalls
from evalcore.store import Store, open_store
from evalcore.views.tools import dataset_tool_failures, tool_failures, tool_rows


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[Call]:
    return [Call(name, args) for name, args in calls]


#: pk -> (made, reference): worked by hand in the test below.
SESSIONS = {
    1: (
        _calls(
            ("get_user", {"id": 1}),
            ("pay", {"amount": 10}),
            ("book", {"flight": "A", "seat": 2}),
            ("search", {"q": "x"}),
        ),
        _calls(("get_user", {"id": 1}), ("book", {"flight": "A", "seat": 1}), ("pay", {"amount": 10})),
    ),  # fmt: skip
    2: ([], _calls(("book", {"flight": "B", "seat": 3}))),
    3: (_calls(("book", {"flight": "D", "seat": 1, "note": "x"})), _calls(("book", {"flight": "C", "seat": 1}))),
    4: (_calls(("search", {"q": "z"})), None),  # no reference calls: not counted
    5: (_calls(("search", {"q": "y"})), []),
}


def _figures(found: Any) -> dict[str, tuple[int, ...]]:
    return {t.tool: tuple(t.counts[c] for c in ("expected", "made", "missing", "extra", "wrong_arguments",
                                                "out_of_order")) for t in found.tools}  # fmt: skip


def test_per_tool_figures_worked_by_hand() -> None:
    found = tool_failures((pk, SessionCalls(made, ref)) for pk, (made, ref) in SESSIONS.items())
    assert (found.sessions, found.skipped) == (4, 1)
    # Session 1: get_user and pay match exactly, book matches with another seat, search is extra; the made order
    # is get_user, book, pay -> positions 0, 2, 1: pay is the one call out of order.
    # Session 2: book missing. Session 3: book with another flight and a note never asked for. Session 5: extra.
    assert _figures(found) == {
        "book": (3, 2, 1, 0, 2, 0),
        "search": (0, 2, 0, 2, 0, 0),
        "pay": (1, 1, 0, 0, 0, 1),
        "get_user": (1, 1, 0, 0, 0, 0),
    }
    assert [t.tool for t in found.tools] == ["book", "search", "pay", "get_user"]  # the most failed first
    book = found.tools[0]
    assert dict(book.arguments) == {"seat": 1, "flight": 1, "note": 1}
    assert dict(book.sessions) == {"expected": [1, 2, 3], "made": [1, 3], "wrong_arguments": [1, 3], "missing": [2]}
    assert found.tools[1].sessions["extra"] == [1, 5]
    assert found.tools[2].sessions["out_of_order"] == [1]
    assert found.failed == 1 + 2 + 2 + 1  # book: missing, wrong arguments ×2; search: extra ×2; pay: out of order
    rows = tool_rows(found)
    assert rows[0].tool == "book" and rows[0].which_arguments in ("seat, flight, note", "flight, seat, note")
    assert (rows[0].missing, rows[0].wrong_arguments) == (1, 2)


def test_a_swap_is_one_call_out_of_order_and_numbers_match_their_strings() -> None:
    made = _calls(("b", {}), ("a", {"n": "1"}), ("c", {}))
    ref = _calls(("a", {"n": 1}), ("b", {}), ("c", {}))  # 1 and "1" are the same as ragas compares them
    assert _figures(tool_failures([(9, SessionCalls(made, ref))])) == {
        "a": (1, 1, 0, 0, 0, 0),
        "b": (1, 1, 0, 0, 0, 1),
        "c": (1, 1, 0, 0, 0, 0),
    }


@pytest.fixture
def store(store_url: str) -> Any:
    with open_store(store_url) as s:
        yield as_user(s, "ann", "owner")


def _session(made: list[Call], ref: list[Call] | None, n: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"question {n}"}]
    if made:
        messages.append({"role": "assistant", "tool_calls": [{"name": c.name, "args": c.args} for c in made]})
    messages.append({"role": "assistant", "content": "done"})
    data: dict[str, Any] = {"session_id": f"s{n}", "assistant_id": "bot-a" if n != 3 else "bot-b"}
    if ref is not None:
        data["reference_tool_calls"] = [{"name": c.name, "args": c.args} for c in ref]
    return {**data, "messages": messages}


def test_nothing_failed_when_every_call_matches() -> None:
    ref = _calls(("get_user", {"id": 1}), ("pay", {"sum": 3}))
    found = tool_failures([(1, SessionCalls(list(ref), ref))])
    assert found.failed == 0 and [t.tool for t in found.tools] == ["get_user", "pay"]


def test_the_same_figures_from_the_store(store: Store, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "calls.jsonl", [_session(m, r, pk) for pk, (m, r) in SESSIONS.items()])
    import_file(store, path, "calls", fmt="evalcore", workers=1)
    found = dataset_tool_failures(store, "calls")
    assert _figures(found) == _figures(tool_failures((pk, SessionCalls(m, r)) for pk, (m, r) in SESSIONS.items()))
    refs = store.sessions.links(found.tools[0].sessions["missing"])
    assert list(refs.values()) == ["s2"]  # the cell opens the session it counts
    only_a = dataset_tool_failures(store, "calls", assistant="bot-a")  # session 3 is bot-b's
    assert _figures(only_a)["book"] == (2, 1, 1, 0, 1, 0)


def test_tau_bench_totals_equal_the_files_own(store: Store, tau_bench_file: Path) -> None:
    rows = json.loads(tau_bench_file.read_text())
    actions = sum(len(r["info"]["task"]["actions"]) for r in rows)
    calls = sum(len(m.get("tool_calls") or []) for r in rows for m in r["traj"] if m.get("role") == "assistant")
    import_file(store, tau_bench_file, "tau", workers=1)
    found = dataset_tool_failures(store, "tau")
    total = {c: sum(t.counts[c] for t in found.tools) for c in ("expected", "made", "missing", "extra")}
    assert (total["expected"], total["made"]) == (actions, calls)
    for t in found.tools:  # every expected call is matched or missing, every made one matched or extra
        c = t.counts
        assert c["expected"] - c["missing"] == c["made"] - c["extra"]
        assert c["wrong_arguments"] <= c["expected"] - c["missing"]
