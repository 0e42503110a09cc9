"""A/B by task (issue 21, item 3): two assistants' answers to the same τ-bench tasks, imported with ``assistant=``
from the repository's file and a copy of it with some rewards changed, paired by task id; the improved / regressed /
unchanged counts and the paired difference worked by hand from the changes made here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user
from formats_util import write_jsonl

from evalcore.errors import UsageError
from evalcore.importing import import_file
from evalcore.scoring import score_dataset
from evalcore.store import Store, open_store
from evalcore.store.queries import SessionFilter
from evalcore.views.ab import ABStart, Side, ab_metrics, ab_pairs, ab_rows, ab_start, pair_rows, same_side, task_of
from evalcore.views.dashboard import scored_runs

#: What B's copy changes: three tasks A failed that B solves, two A solved that B fails, one task B never ran.
IMPROVED, REGRESSED, DROPPED = (0, 1, 2), (6, 11), 39


@pytest.fixture
def store(store_url: str) -> Any:
    with open_store(store_url) as s:
        yield as_user(s, "ann", "owner")


def _b_copy(source: Path, folder: Path) -> Path:
    rows = json.loads(source.read_text())
    for row in rows:
        if row["task_id"] in IMPROVED:
            assert row["reward"] == 0.0
            row["reward"] = 1.0
        if row["task_id"] in REGRESSED:
            assert row["reward"] == 1.0
            row["reward"] = 0.0
    path = folder / "b.json"
    path.write_text(json.dumps([r for r in rows if r["task_id"] != DROPPED]))
    return path


def _imported(store: Store, tau_bench_file: Path, tmp_path: Path) -> int:
    import_file(store, tau_bench_file, "ab", workers=1, assistant="agent-A")
    import_file(store, _b_copy(tau_bench_file, tmp_path), "ab", workers=1, assistant="agent-B")
    [run] = [r for r in store.runs.recent("ab") if r.imported]
    return run.id


def test_two_assistants_compared_task_by_task(store: Store, tau_bench_file: Path, tmp_path: Path) -> None:
    run = _imported(store, tau_bench_file, tmp_path)
    a, b = Side(run, "agent-A"), Side(run, "agent-B")
    [reward] = ab_metrics(store, a, b)
    # By hand: 40 tasks in A, 39 in B (task 39 dropped) -> 39 pairs; 3 improved, 2 regressed, 34 unchanged.
    assert (reward.metric, reward.pairs, reward.improved, reward.regressed, reward.unchanged) == (
        "reward", 39, 3, 2, 34
    )  # fmt: skip
    assert (reward.only_a, reward.only_b) == (1, 0)
    # A solved 14 of 40, task 39 among them: 13 of the 39 paired; B: 13 + 3 - 2 = 14 of 39.
    assert reward.mean_a == pytest.approx(13 / 39) and reward.mean_b == pytest.approx(14 / 39)
    d = reward.difference
    assert d.mean == pytest.approx(1 / 39) and d.count == 39
    assert d.ci_low is not None and d.ci_high is not None and d.ci_low < 1 / 39 < d.ci_high

    pairs, only_a, only_b = ab_pairs(store, a, b, "reward")
    # Worst first: the two regressions (tasks 11 and 6, by task text), the unchanged, then the three improvements.
    assert [p.task for p in pairs[:2]] == ["task 11", "task 6"]
    assert [(p.a, p.b) for p in pairs[:2]] == [(1.0, 0.0), (1.0, 0.0)]
    assert sorted(p.task for p in pairs[-3:]) == ["task 0", "task 1", "task 2"]
    assert all(p.a_ref != p.b_ref for p in pairs)  # each side's own session
    assert {store.sessions.get(p.a_pk).session.assistant_id for p in pairs} == {"agent-A"}
    assert {store.sessions.get(p.b_pk).session.assistant_id for p in pairs} == {"agent-B"}

    [row] = ab_rows([reward])
    assert (row.tasks, row.improved, row.regressed, row.unchanged) == (39, 3, 2, 34)
    table = pair_rows(pairs, limit=3)
    assert [r.task for r in table] == ["task 11", "task 6", pairs[2].task] and table[0].change == -1.0


def test_two_runs_over_different_sessions(store: Store, tau_bench_file: Path, tmp_path: Path) -> None:
    """A run over A's sessions against another over B's: any metric both scored, paired the same way."""
    _imported(store, tau_bench_file, tmp_path)
    first = score_dataset(store, "ab", ["tool_call_f1"], filters=SessionFilter(assistant="agent-A")).run.id
    second = score_dataset(store, "ab", ["tool_call_f1"], filters=SessionFilter(assistant="agent-B")).run.id
    [f1] = ab_metrics(store, Side(first), Side(second))
    # The same trajectories on both sides: the same calls, so every task is unchanged.
    assert (f1.pairs, f1.improved, f1.regressed, f1.unchanged, f1.only_a) == (39, 0, 0, 39, 1)
    assert f1.difference.mean == 0.0
    with pytest.raises(UsageError, match="did not score 'reward'"):
        ab_metrics(store, Side(first), Side(second), ["reward"])


def test_without_a_task_id_the_first_user_message_is_the_task(store: Store, tmp_path: Path) -> None:
    def session(assistant: str, question: str, answer: str) -> dict[str, Any]:
        return {
            "assistant_id": assistant, "reference": "Paris",
            "messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
        }  # fmt: skip

    rows = [
        session("A", "Capital of  France?", "Paris"),
        session("A", "Capital of Italy?", "Rome"),
        session("B", "Capital of France?\n", "Lyon"),  # the same question, its whitespace folded
        session("B", "Capital of Spain?", "Madrid"),
    ]
    path = write_jsonl(tmp_path / "qa.jsonl", rows)
    import_file(store, path, "qa", fmt="evalcore", workers=1)
    run = score_dataset(store, "qa", ["exact_match"]).run.id
    [em] = ab_metrics(store, Side(run, "A"), Side(run, "B"))
    assert (em.pairs, em.regressed, em.only_a, em.only_b) == (1, 1, 1, 1)
    pairs, _, _ = ab_pairs(store, Side(run, "A"), Side(run, "B"), "exact_match")
    assert [(p.task, p.a, p.b) for p in pairs] == [("Capital of France?", 1.0, 0.0)]
    assert task_of(store.sessions.get(pairs[0].a_pk).session) == "Capital of France?"


def test_where_the_sides_start_and_when_they_are_one(store: Store, tau_bench_file: Path) -> None:
    """A labeler's finding: one assistant, and A/B compared the imported run with itself (every task unchanged), a
    row opening a session against itself."""
    import_file(store, tau_bench_file, "one", workers=1, assistant="gpt-4o")  # (its rewards: the imported run)
    f1 = score_dataset(store, "one", ["tool_call_f1"]).run
    f1_again = score_dataset(store, "one", ["tool_call_f1", "tool_call_accuracy"], resume=False).run
    runs = scored_runs(store, "one")  # (the imported run first, then the newest)
    assert [r.id for r in runs[1:]] == [f1_again.id, f1.id]
    # One assistant: the two newest runs with a metric in common, the older as A (the imported run shares none).
    start = ab_start(runs, 1)
    assert (runs[start.a_run].id, runs[start.b_run].id, start.a_who, start.b_who) == (f1.id, f1_again.id, 0, 0)
    assert ab_start(runs[:2], 1) == ABStart(0, 0, 0, 0)  # nothing in common: one side twice (said, not compared)
    assert ab_start(runs, 2) == ABStart(0, 1, 0, 2)  # two assistants on the first run
    facets = store.sessions.facets("one")
    assert facets.assistants == {"gpt-4o": 40}
    run = runs[0].id
    # Every assistant is the one there is: the same sessions, whichever side names it.
    assert same_side(Side(run), Side(run, "gpt-4o"), facets.assistants, facets.total)
    assert not same_side(Side(run), Side(f1.id), facets.assistants, facets.total)
    assert not same_side(Side(run, "a"), Side(run, "b"), {"a": 20, "b": 20}, 40)
    assert not same_side(Side(run), Side(run, "a"), {"a": 20}, 40)  # (20 sessions have no assistant)
    assert same_side(Side(run, "a"), Side(run, "a"), {"a": 20, "b": 20}, 40)
