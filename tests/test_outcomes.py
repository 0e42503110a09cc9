"""The outcomes that came with the data are metrics (issue 21, item 1): τ-bench's ``reward`` (``Session.scores``)
becomes the metric of the dataset's *imported run*, kept in step by every import (a re-import changes nothing, a
changed score is changed, a score gone is gone), on both engines, and shown wherever a run's metrics are: Sessions
(a column, the score filter and sort), Review's scores, the Dashboard (first), comparisons and score exports.

The success rate is checked against a count made here from the file itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, execute, query
from formats_util import write_jsonl

from evalcore.exporting import score_records
from evalcore.importing import import_file
from evalcore.scoring import score_dataset, summarize_run
from evalcore.store import Store, open_store
from evalcore.store.copy import copy_store
from evalcore.store.rows import outcomes
from evalcore.views.dashboard import by_assistant, compare_runs, distribution, scored_runs
from evalcore.views.metrics import past_runs
from evalcore.views.review.tables import score_rows
from evalcore.views.sessions import page_filter, sessions_table


@pytest.fixture
def store(store_url: str) -> Any:
    with open_store(store_url) as s:
        yield as_user(s, "ann", "owner")


def _rewards(path: Path) -> dict[str, float]:
    """Each task's reward, read from the file here (not through evalcore): ``task-N-trial-T`` -> reward."""
    return {f"task-{row['task_id']}-trial-{row['trial']}": float(row["reward"]) for row in json.loads(path.read_text())}


def _values(store: Store, run_id: int) -> dict[str, float | None]:
    return {row.session_id or "": row.value for row in store.runs.scores(run_id)}


def test_the_reward_is_the_imported_runs_metric(store: Store, tau_bench_file: Path) -> None:
    rewards = _rewards(tau_bench_file)
    successes = sum(1 for r in rewards.values() if r == 1.0)
    assert (len(rewards), successes) == (40, 14)  # counted from the file: 14 of the 40 tasks succeeded
    import_file(store, tau_bench_file, "tau", workers=1)
    [run] = store.runs.recent("tau")
    assert run.imported and run.metrics == ["reward"] and run.status == "done" and run.created_by == "ann"
    assert "imported with the data" in run.label
    assert (run.n_items, run.n_done, run.n_failed, run.n_not_applicable) == (40, 40, 0, 0)
    assert _values(store, run.id) == rewards
    [summary] = summarize_run(store, run.id)
    assert summary.count == 40 and summary.mean == pytest.approx(successes / 40)  # the success rate, 0.35
    assert distribution(store, run.id, "reward").summary.mean == pytest.approx(0.35)
    # The exports of a run's scores have it, one record a session.
    records = list(score_records(store, run.id))
    assert {r["session_id"]: r["value"] for r in records} == rewards
    assert {r["metric"] for r in records} == {"reward"} and {r["dataset"] for r in records} == {"tau"}


def test_a_reimport_is_idempotent_and_a_changed_score_is_changed(
    store: Store, tau_bench_file: Path, tmp_path: Path
) -> None:
    import_file(store, tau_bench_file, "tau", workers=1)
    [run] = store.runs.recent("tau")
    again = import_file(store, tau_bench_file, "tau", workers=1)
    assert again.unchanged == 40
    assert [r.id for r in store.runs.recent("tau")] == [run.id]  # no second run
    assert _values(store, run.id) == _rewards(tau_bench_file)
    # task-0 failed (0.0) in the file; a corrected file says it succeeded; task-1's reward is gone from it.
    rows = json.loads(tau_bench_file.read_text())
    assert (rows[0]["task_id"], rows[0]["reward"]) == (0, 0.0)
    rows[0]["reward"] = 1.0
    del rows[1]["reward"]
    changed = tmp_path / tau_bench_file.name  # the same name: the same sessions
    changed.write_text(json.dumps(rows))
    report = import_file(store, changed, "tau", workers=1)
    assert (report.updated, report.unchanged) == (2, 38)
    [same] = store.runs.recent("tau")
    assert same.id == run.id and (same.n_items, same.n_done) == (39, 39)
    values = _values(store, run.id)
    assert values["task-0-trial-0"] == 1.0 and "task-1-trial-0" not in values
    assert summarize_run(store, run.id)[0].mean == pytest.approx(15 / 39)


def test_a_dataset_imported_before_gets_its_run_on_the_next_import(store: Store, tau_bench_file: Path) -> None:
    import_file(store, tau_bench_file, "tau", workers=1)
    [run] = store.runs.recent("tau")
    execute(store, "DELETE FROM scores WHERE run_id = ?", [run.id])  # as a store written before imported runs
    execute(store, "DELETE FROM runs WHERE id = ?", [run.id])
    assert store.runs.recent("tau") == []
    assert import_file(store, tau_bench_file, "tau", workers=1).unchanged == 40
    [back] = store.runs.recent("tau")
    assert back.imported and _values(store, back.id) == _rewards(tau_bench_file)


def test_what_counts_as_an_outcome(store: Store, tmp_path: Path) -> None:
    """Numbers, true/false and ``{"value": number}`` are metrics; text, lists and non-finite numbers are not.
    A file without scores makes no run, and a run whose scores are all gone from the data is deleted."""
    assert outcomes({"a": 1, "b": True, "c": {"value": 0.25}, "d": "yes", "e": [1], "f": None, " ": 1}) == (
        ("a", 1.0), ("b", 1.0), ("c", 0.25),
    )  # fmt: skip
    assert outcomes({"x": float("nan"), "y": float("inf"), "z": 10**400}) == ()
    plain = [
        {"schema_version": 1, "session_id": f"s{i}", "messages": [{"role": "user", "content": f"hi {i}"}]}
        for i in range(3)
    ]
    import_file(store, write_jsonl(tmp_path / "d.jsonl", plain), "plain", workers=1)
    assert store.runs.recent("plain") == []
    scored = [{**s, "scores": {"passed": i != 1, "grade": {"value": i}}} for i, s in enumerate(plain)]
    import_file(store, write_jsonl(tmp_path / "d.jsonl", scored), "plain", workers=1)
    [run] = store.runs.recent("plain")
    assert run.metrics == ["grade", "passed"] and run.n_done == 6
    by = {(r.session_id, r.metric): r.value for r in store.runs.scores(run.id)}
    assert by[("s1", "passed")] == 0.0 and by[("s2", "grade")] == 2.0
    import_file(store, write_jsonl(tmp_path / "d.jsonl", plain), "plain", workers=1)  # the scores taken out
    assert store.runs.recent("plain") == []
    assert query(store, "SELECT count(*) FROM scores WHERE run_id = ?", [run.id]) == [(0,)]


def test_deleting_the_dataset_deletes_its_imported_run(store: Store, tau_bench_file: Path) -> None:
    import_file(store, tau_bench_file, "tau", workers=1)
    [run] = store.runs.recent("tau")
    store.datasets.delete("tau", confirm="tau")
    assert query(store, "SELECT count(*) FROM scores WHERE run_id = ?", [run.id]) == [(0,)]
    assert query(store, "SELECT count(*) FROM runs") == [(0,)]


def test_two_assistants_rewards_side_by_side(store: Store, tau_bench_file: Path, tmp_path: Path) -> None:
    """Two assistants' runs of the same tasks in one dataset: one imported run, the reward by assistant; B's file
    says B solved the first ten tasks too."""
    rows = json.loads(tau_bench_file.read_text())
    better = [{**row, "reward": 1.0} if i < 10 else row for i, row in enumerate(rows)]
    hand_b = sum(1 for row in better if row["reward"] == 1.0)
    b_file = tmp_path / "b.json"
    b_file.write_text(json.dumps(better))
    import_file(store, tau_bench_file, "ab", workers=1, assistant="agent-A")
    import_file(store, b_file, "ab", workers=1, assistant="agent-B")
    [run] = store.runs.recent("ab")
    assert run.n_done == 80
    groups = {g.assistant: g.summary for g in by_assistant(store, run.id, "reward")}
    assert groups["agent-A"].mean == pytest.approx(14 / 40)
    assert groups["agent-B"].mean == pytest.approx(hand_b / 40)


def test_an_imported_score_compared_with_evalcores_own(store: Store, tmp_path: Path) -> None:
    """A file that says each session's turn count (right for two sessions, one off for the third) against
    evalcore's own turn_count: the two runs pair on the same sessions."""
    sessions = []
    for i in range(3):
        turns = [m for t in range(i + 1) for m in ({"role": "user", "content": f"q{t}"},
                                                    {"role": "assistant", "content": f"a{t}"})]  # fmt: skip
        sessions.append(
            {"schema_version": 1, "session_id": f"s{i}", "messages": turns, "scores": {"turn_count": i + 1 + (i == 2)}}
        )
    import_file(store, write_jsonl(tmp_path / "t.jsonl", sessions), "turns", workers=1)
    score_dataset(store, "turns", ["turn_count"])
    runs = scored_runs(store, "turns")
    assert [r.imported for r in runs] == [True, False]  # the imported run first, though older
    cmp = compare_runs(store, runs[0].id, runs[1].id, "turn_count")
    assert (cmp.paired, cmp.n_same, cmp.n_worse, cmp.n_better) == (3, 2, 1, 0)  # s2: 3 turns, the file said 4
    assert [(p.a, p.b) for p in cmp.worse] == [(4.0, 3.0)]


def test_sessions_review_and_metrics_views_show_it(store: Store, tau_bench_file: Path) -> None:
    rewards = _rewards(tau_bench_file)
    import_file(store, tau_bench_file, "tau", workers=1)
    score_dataset(store, "tau", ["turn_count"])
    imported = next(r for r in store.runs.recent("tau") if r.imported)
    table = sessions_table(store, "tau", limit=50)
    assert "reward" in table.columns and table.metrics == ["reward", "turn_count"]
    assert {row.id: row.scores["reward"] for row in table.rows} == rewards
    succeeded = page_filter(run_id=imported.id, metric="reward", min_score=1.0)
    assert sessions_table(store, "tau", succeeded).total == 14
    ordered = sessions_table(store, "tau", page_filter(run_id=imported.id, metric="reward"), sort="score",
                             descending=True, limit=14)  # fmt: skip
    assert {row.id for row in ordered.rows} == {s for s, r in rewards.items() if r == 1.0}
    pk = store.sessions.find("tau", "task-0-trial-0")
    rows = [r for r in score_rows(store.runs.for_session(pk)) if r.metric == "reward"]
    assert [(r.value, r.run) for r in rows] == [(0.0, f"#{imported.id} · imported with the data")]
    listed = {row.run: row.status for row in past_runs(store, "tau")}
    assert listed[imported.id] == "imported"


def test_db_copy_keeps_the_imported_run(store: Store, tau_bench_file: Path, tmp_path: Path) -> None:
    """Copied into a new store of the other engine's kind (here: into a SQLite file), the run is still the imported
    one: an import there refreshes it, no second run made."""
    import_file(store, tau_bench_file, "tau", workers=1)
    with open_store(tmp_path / "copy.db") as raw:
        copy = as_user(raw, "bob", "owner")
        copy_store(store, copy)
        [run] = copy.runs.recent("tau")
        assert run.imported and _values(copy, run.id) == _rewards(tau_bench_file)
        assert import_file(copy, tau_bench_file, "tau", workers=1).unchanged == 40
        assert [r.id for r in copy.runs.recent("tau")] == [run.id]
