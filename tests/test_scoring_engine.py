"""The scoring engine: typed run specs and filters, live progress in the store, cancellation and resume.

Real stores on disk, real metrics, and for the judged path a real loopback OpenAI-protocol server
(``FakeOpenAI``) slow enough that a run can be watched from another connection while it goes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import pytest
from apptest_util import SAMPLE_DATA
from dbutil import own_connection, query
from openai_server import FakeOpenAI

from evalcore.errors import NotFoundError, UnknownNameError, UsageError, WorkerError
from evalcore.importing import import_file
from evalcore.judge import JudgeConfig
from evalcore.metrics import Metric, MetricResult, create_metric
from evalcore.metrics.calls import CallLike, SessionCalls
from evalcore.runspec import RUN_STATUSES, MetricSpec, run_specs
from evalcore.scoring import FLUSH_SECONDS, PARALLEL_MIN, RunProgress, run_progress, score_dataset, session_calls
from evalcore.store import Store, open_store
from evalcore.store.queries import SessionFilter
from evalcore.store.runs import Run

DATASET = "ref"
EVALCORE = str(Path(sys.executable).parent / "evalcore")


@pytest.fixture
def store(tmp_path: Path, ragas_reference: Path) -> Iterator[Store]:
    """A real store holding the 300 ragas reference sessions."""
    with open_store(tmp_path / "evalcore.db") as opened:
        report = import_file(opened, ragas_reference / "ragas_samples.jsonl", DATASET)
        assert report.new == 300 and report.failed == 0
        yield opened


# -- typed shapes -----------------------------------------------------------------------------------


def test_metric_spec_reads_every_way_of_naming_a_metric() -> None:
    plain = MetricSpec.of("tool_call_accuracy")
    assert plain == MetricSpec("tool_call_accuracy", {}) and plain.key == "tool_call_accuracy"
    typed = MetricSpec.of("string_similarity:measure=jaro")
    assert typed == MetricSpec.of({"name": "string_similarity", "params": {"measure": "jaro"}})
    assert typed == MetricSpec.of(create_metric("string_similarity:measure=jaro"))
    assert typed.key == "string_similarity:measure=jaro" and typed.metric().key() == typed.key
    assert "measure" in typed.metric_class.model_fields
    # A default given explicitly is the same metric as the default left out.
    assert MetricSpec.of("string_similarity:measure=levenshtein") == MetricSpec("string_similarity", {})
    with pytest.raises(UsageError, match="string_similarity: measure"):
        MetricSpec("string_similarity", {"measure": "nonsense"}).metric()
    with pytest.raises(UnknownNameError, match="no_such_metric"):
        MetricSpec.of("no_such_metric")


def test_a_run_reads_back_its_specs_filters_and_status_typed(store: Store) -> None:
    specs = [MetricSpec("tool_call_f1"), MetricSpec("string_similarity", {"measure": "jaro"}), "turn_count"]
    chosen = SessionFilter(status=["todo"], search="flight*")
    report = score_dataset(store, DATASET, specs, filters=chosen)
    again = store.runs.get(report.run.id)  # read back from the table, not the object the run returned
    assert run_specs(again) == [MetricSpec("tool_call_f1"), MetricSpec("string_similarity", {"measure": "jaro"}),
                           MetricSpec("turn_count")]  # fmt: skip
    assert [s.key for s in run_specs(again)] == again.metrics
    assert again.filters == chosen and again.status == "done" and again.status in RUN_STATUSES
    assert "__filters__" not in again.params
    matched = report.sessions
    assert 0 < matched < 300  # the filter chose some sessions, not all
    assert again.n_items == matched * 3 and again.items_done == again.n_items and again.fraction == 1.0
    # The same metrics over the whole dataset are another run: filters are part of what a run is.
    whole = score_dataset(store, DATASET, specs)
    assert whole.run.id != again.id and whole.sessions == 300 and whole.run.filters == SessionFilter()


def test_a_run_stored_with_filters_among_its_params_still_reads_and_resumes(store: Store) -> None:
    """Databases written before filters had a column kept them in ``params["__filters__"]``."""
    chosen = SessionFilter(search="flight*")
    dataset_id = store.datasets.id_of(DATASET)
    params = {"tool_call_f1": {"name": "tool_call_f1"}, "__filters__": chosen.as_dict()}
    with store._engine.write() as conn:
        cursor = conn.execute(
            "INSERT INTO runs (dataset_id, metrics, params, status, started_at, n_items) "
            "VALUES (?, ?, ?, 'running', '2026-01-01T00:00:00Z', 0)",
            [dataset_id, json.dumps(["tool_call_f1"]), json.dumps(params)],
        )
        old_id = int(cursor.lastrowid or 0)
    old = store.runs.get(old_id)
    assert old.filters == chosen and old.params == {"tool_call_f1": {"name": "tool_call_f1"}}
    assert run_specs(old) == [MetricSpec("tool_call_f1")] and old.status == "running"
    report = score_dataset(store, DATASET, ["tool_call_f1"], filters=chosen)
    assert report.resumed and report.run.id == old_id and report.run.status == "done"
    assert report.run.items_done == report.sessions > 0


# -- cancellation, resume, live counts -----------------------------------------------------------------


def test_should_stop_cancels_and_the_same_run_resumes(store: Store) -> None:
    asked = 0

    def stop_after_120() -> bool:
        nonlocal asked
        asked += 1
        return asked > 120

    started: list[Run] = []
    first = score_dataset(
        store, DATASET, ["tool_call_accuracy", "tool_call_f1"], should_stop=stop_after_120, on_start=started.append
    )
    assert first.cancelled and first.run.status == "cancelled" and first.run.finished_at is not None
    assert [r.id for r in started] == [first.run.id] and started[0].status == "running"
    # What was scored before the stop is saved, counted and summarised.
    assert first.run.n_done + first.run.n_failed + first.run.n_not_applicable == 120 * 2
    assert store.runs.done_sessions(first.run.id, first.run.metrics) == set(store.sessions.pks(DATASET)[:120])
    assert sum(s.count + s.failed + s.not_applicable for s in first.summaries) == 240
    progress = run_progress(store, first.run.id)
    assert isinstance(progress, RunProgress)
    assert (progress.status, progress.items_done, progress.n_items) == ("cancelled", 240, 600)
    assert progress.fraction == pytest.approx(0.4)

    seen: list[tuple[int, int]] = []
    second = score_dataset(
        store, DATASET, ["tool_call_accuracy", "tool_call_f1"], on_progress=lambda d, t: seen.append((d, t))
    )
    assert second.resumed and second.run.id == first.run.id and not second.cancelled
    assert second.skipped == 120 and second.sessions == 300 and second.run.status == "done"
    assert second.run.items_done == second.run.n_items == 600
    assert seen[0] == (120, 300) and seen[-1] == (300, 300)
    # A finished run is not resumed: scoring again starts a new one.
    third = score_dataset(store, DATASET, ["tool_call_accuracy", "tool_call_f1"])
    assert not third.resumed and third.run.id != first.run.id


def test_a_failed_run_says_why_and_resumes(store: Store) -> None:
    def broken() -> bool:
        raise RuntimeError("the caller's stop check broke")

    with pytest.raises(RuntimeError):
        score_dataset(store, DATASET, ["turn_count"], should_stop=broken)
    (run,) = store.runs.recent(DATASET)
    assert run.status == "failed" and run.error is not None and "stop check broke" in run.error
    assert run_progress(store, run.id).status == "failed"
    report = score_dataset(store, DATASET, ["turn_count"])
    assert report.resumed and report.run.id == run.id and report.run.status == "done" and report.run.error is None


def test_live_counts_move_in_the_store_while_a_judged_run_goes(tmp_path: Path, ragas_reference: Path) -> None:
    """A slow judge, one call at a time: another connection (as the app's page has) sees the run's
    counts grow between its start and its end, then a stop request cancels it with its scores kept."""
    db = tmp_path / "live.db"
    with open_store(db) as store:
        report = import_file(store, ragas_reference / "ragas_samples.jsonl", DATASET)
        assert report.new == 300
    stop = threading.Event()
    observed: list[RunProgress] = []
    run_ids: list[int] = []

    def watch() -> None:
        with open_store(db) as reader:  # a connection of its own, on another thread
            while not run_ids:
                time.sleep(0.02)
            while True:
                progress = run_progress(reader, run_ids[0])
                observed.append(progress)
                if progress.items_done >= 4:  # some items saved while the run goes: ask it to stop
                    stop.set()
                if progress.status != "running":
                    return
                time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    with FakeOpenAI(latency=0.25) as server, open_store(db) as store:
        config = JudgeConfig(model="m", base_url=server.url, api_key="k", concurrency=1)
        result = score_dataset(
            store,
            DATASET,
            ["relevance_to_query"],
            judge=config,
            should_stop=stop.is_set,
            on_start=lambda run: run_ids.append(run.id),
        )
    watcher.join(timeout=30)
    assert not watcher.is_alive()
    assert result.cancelled and result.run.status == "cancelled"
    running = [p for p in observed if p.status == "running"]
    assert running and running[0].items_done == 0 and running[0].n_items == 300
    moving = [p.items_done for p in running if 0 < p.items_done < 300]
    assert moving, f"no count seen between start and end: {[p.items_done for p in observed]}"
    assert observed[-1].status == "cancelled" and observed[-1].items_done == result.run.items_done < 300
    assert result.run.items_done >= max(moving)


def test_the_deterministic_path_saves_counts_every_two_seconds(store: Store) -> None:
    """A slow caller (its stop check takes FLUSH_SECONDS once, at the 100th session): the session after it
    results trigger a save, and a second connection sees the counts of the first 100 sessions before the end."""
    seen: list[int] = []
    run_ids: list[int] = []
    with open_store(store.url) as other:

        def peek() -> bool:
            seen.append(run_progress(other, run_ids[0]).items_done)
            if len(seen) == 100:
                time.sleep(FLUSH_SECONDS + 0.1)
            return False

        report = score_dataset(
            store, DATASET, ["turn_count"], should_stop=peek, on_start=lambda run: run_ids.append(run.id)
        )
    assert report.run.items_done == 300 and len(seen) == 300
    assert seen[:100] == [0] * 100  # nothing saved before the pause (fewer than FLUSH_RESULTS results)
    assert set(seen[100:]) == {100}  # saved once, with the session after the pause; the rest at the end
    assert run_progress(store, report.run.id).items_done == 300


# -- reading sessions to score -------------------------------------------------------------------------


def test_the_scorer_reads_sessions_exactly_as_the_store_gives_them(tmp_path: Path) -> None:
    """``Runs.sessions`` (the scorer's lean read) against ``Store.get_many``, over every sample file, a session
    edited by a reviewer, and JSON pydantic's own parser refuses (an integer beyond 64 bits) or must keep (NaN)."""
    odd = tmp_path / "odd.jsonl"
    lines = [
        '{"schema_version": 1, "session_id": "big", "messages": [{"role": "user", "content": "a"}], '
        '"metadata": {"n": 123456789012345678901234567890}}',
        '{"schema_version": 1, "session_id": "nan", "messages": [{"role": "user", "content": "b"}], '
        '"metadata": {"x": NaN, "y": Infinity}}',
    ]
    odd.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open_store(tmp_path / "all.db") as store:
        for path in [*sorted(SAMPLE_DATA.iterdir()), odd]:
            if path.suffix in (".json", ".jsonl"):
                import_file(store, path, "all")
        pks = store.sessions.pks("all")
        assert len(pks) > 40
        first = store.sessions.get(pks[3])
        store.sessions.save(pks[3], {"reference": "edited by a reviewer"}, base_version=first.version, author="ann")
        store.sessions.set_status(pks[5], "approved", base_version=store.sessions.get(pks[5]).version, author="ann")
        lean = store.runs.sessions(list(reversed(pks)) + [10**9])  # in the order asked; a missing pk left out
        full = store.sessions.get_many(list(reversed(pks)))
    assert [pk for pk, _ in lean] == [s.pk for s in full] == list(reversed(pks))
    for (_, mine), theirs in zip(lean, full, strict=True):
        if mine.metadata.get("x") is not None:  # NaN is not equal to itself: compare the rest
            assert str(mine.metadata) == str(theirs.session.metadata) == "{'x': nan, 'y': inf}"
            continue
        assert mine.model_dump(exclude={"provenance"}) == theirs.session.model_dump(exclude={"provenance"})
    by_pk = dict(lean)
    assert by_pk[pks[3]].reference == "edited by a reviewer" and by_pk[pks[5]].status == "approved"
    assert any(s.metadata.get("n") == 123456789012345678901234567890 for _, s in lean)
    assert sum(1 for _, s in lean if s.metadata.get("x") is not None) == 1


def test_metrics_that_read_calls_score_the_stored_json_as_they_score_the_session(tmp_path: Path) -> None:
    """``session_calls`` (the calls read from the stored JSON, no models built) against the sessions the
    store gives, over every sample file and odd JSON (NaN and infinity, a big integer, calls without
    arguments or outside assistant messages, no reference calls and an empty list of them), with a reviewer's
    edit of the reference calls: the same calls, and every calls-reading metric's results the same."""
    odd = tmp_path / "odd.jsonl"
    call = {"name": "lookup", "args": {"q": "x", "n": 1.5, "deep": {"a": [1, None, True]}}}
    lines = [
        {
            "schema_version": 1,
            "session_id": "bare",
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "tool_calls": [{"name": "noargs"}, call]},
                {"role": "tool", "content": "r"},
                {"role": "assistant", "content": "done", "tool_calls": []},
            ],
            "reference_tool_calls": [{"name": "noargs"}, call],
        },
        {
            "schema_version": 1,
            "session_id": "empty",
            "messages": [{"role": "user", "content": "b"}],
            "reference_tool_calls": [],
        },
        {
            "schema_version": 1,
            "session_id": "none",
            "messages": [{"role": "user", "content": "c"}, {"role": "assistant", "tool_calls": [call]}],
        },
    ]
    text = [json.dumps(line) for line in lines] + [
        '{"schema_version": 1, "session_id": "big", "messages": [{"role": "user", "content": "d"}, {"role": '
        '"assistant", "tool_calls": [{"name": "f", "args": {"n": 123456789012345678901234567890}}]}], '
        '"reference_tool_calls": [{"name": "f", "args": {"n": 123456789012345678901234567890}}]}',
        '{"schema_version": 1, "session_id": "nan", "messages": [{"role": "user", "content": "e"}, {"role": '
        '"assistant", "tool_calls": [{"name": "f", "args": {"x": NaN}}]}], "reference_tool_calls": '
        '[{"name": "f", "args": {"x": Infinity}}]}',
    ]
    odd.write_text("\n".join(text) + "\n", encoding="utf-8")
    reading = [create_metric(name) for name in ("tool_call_accuracy", "tool_call_accuracy_flexible", "tool_call_f1")]
    assert all(m.reads_calls for m in reading)
    with open_store(tmp_path / "calls.db") as store:
        for path in [*sorted(SAMPLE_DATA.iterdir()), odd]:
            if path.suffix in (".json", ".jsonl"):
                import_file(store, path, "all")
        pks = store.sessions.pks("all")
        edited = next(s for s in store.sessions.get_many(pks) if s.session.reference_tool_calls)
        store.sessions.save(edited.pk, {"reference_tool_calls": [{"name": "edited", "args": {"by": "ann"}}]},
                   base_version=edited.version, author="ann")  # fmt: skip
        lean = session_calls(store.runs, list(reversed(pks)) + [10**9])  # in the order asked; a missing pk left out
        full = store.sessions.get_many(list(reversed(pks)))
    assert [pk for pk, _ in lean] == [s.pk for s in full] == list(reversed(pks))

    def named(calls: Sequence[CallLike] | None) -> str | None:  # as text: NaN is not equal to itself
        return None if calls is None else str([(call.name, call.args) for call in calls])

    assert named(dict(lean)[edited.pk].reference) == "[('edited', {'by': 'ann'})]"
    with_calls = 0
    for (_, calls), stored in zip(lean, full, strict=True):
        expected = SessionCalls.of(stored.session)
        assert named(calls.made) == named(expected.made) and named(calls.reference) == named(expected.reference)
        with_calls += bool(calls.made)
        for metric in reading:
            assert metric.evaluate_calls(calls) == metric.evaluate(stored.session), (stored.session.session_id, metric)
    assert with_calls > 20
    ids = {stored.session.session_id for stored in full}
    assert {"bare", "empty", "none", "big", "nan"} <= ids


# -- worker processes ---------------------------------------------------------------------------------


def distinct_ragas_file(path: Path, reference: Path, sessions: int) -> Path:
    """``sessions`` distinct ragas lines cycled from the reference file (each first human message numbered)."""
    rows = [json.loads(line) for line in reference.read_text(encoding="utf-8").splitlines() if line.strip()]
    with open(path, "w", encoding="utf-8") as out:
        for i in range(sessions):
            row = json.loads(json.dumps(rows[i % len(rows)]))
            first = next(m for m in row["user_input"] if m["type"] == "human")
            first["content"] = f"{first['content']} (session {i})"
            out.write(json.dumps(row) + "\n")
    return path


def test_worker_processes_score_exactly_as_one_process_does(tmp_path: Path, ragas_reference: Path) -> None:
    sessions = 2 * PARALLEL_MIN  # six batches: more than the four in flight at a time
    src = distinct_ragas_file(tmp_path / "many.jsonl", ragas_reference / "ragas_samples.jsonl", sessions)
    specs = ["tool_call_accuracy", "tool_call_f1", "string_similarity:measure=jaro"]
    with open_store(tmp_path / "many.db") as store:
        assert import_file(store, src, "many").new == sessions
        seen: list[tuple[int, int]] = []
        one = score_dataset(store, "many", specs, workers=1)
        two = score_dataset(store, "many", specs, workers=2, resume=False, on_progress=lambda d, t: seen.append((d, t)))
        runs = store.runs

        def rows(run_id: int) -> list[tuple[object, ...]]:
            return [(r.session_pk, r.metric, r.turn, r.status, r.value, r.reason, r.error, r.sub, r.warnings)
                    for r in runs.scores(run_id, turns=True)]  # fmt: skip

        assert len(rows(one.run.id)) >= sessions * 3 and rows(one.run.id) == rows(two.run.id)
        assert one.summaries == two.summaries and two.run.items_done == two.run.n_items == sessions * 3
        assert seen[0] == (0, sessions) and seen[-1] == (sessions, sessions)
        assert 3 < len(seen) < 10  # once a batch of 500 sessions: the worker processes did the scoring

        # Stopped after the first batch: the batches the workers had begun are scored and saved (by the workers
        # themselves), those not begun are not; the run resumes where it stopped.
        def stop_soon() -> bool:
            return True

        stopped = score_dataset(store, "many", specs, workers=2, resume=False, should_stop=stop_soon)
        assert stopped.cancelled and 0 < stopped.run.items_done < sessions * 3
        assert stopped.run.items_done % 3 == 0  # whole sessions
        resumed = score_dataset(store, "many", specs, workers=2)
        assert resumed.resumed and resumed.run.id == stopped.run.id and resumed.run.status == "done"
        assert rows(resumed.run.id) == rows(one.run.id) and resumed.summaries == one.summaries


def test_worker_batches_cover_the_work_in_order_big_first() -> None:
    """Guided batches: every session once, in order; from WORKER_BATCH_MAX down to BATCH sessions, so the
    workers end together; no crumb of a batch at the end."""
    from evalcore.scoring import BATCH, WORKER_BATCH_MAX, _worker_batches

    for total, workers in [(2_000, 2), (2_100, 2), (20_000, 2), (100_000, 2), (20_000, 4), (501, 2), (300, 2)]:
        batches = _worker_batches(list(range(total)), workers)
        assert [pk for batch in batches for pk in batch] == list(range(total))
        sizes = [len(batch) for batch in batches]
        assert all(BATCH <= size <= WORKER_BATCH_MAX for size in sizes[:-1])
        assert sizes[-1] < 2 * BATCH  # what is left at the end, never a crumb of its own
        assert sizes[:-1] == sorted(sizes[:-1], reverse=True)
    assert [len(b) for b in _worker_batches(list(range(20_000)), 2)][:3] == [5000, 3750, 2812]


def test_the_command_scores_on_worker_processes_as_on_one(tmp_path: Path, ragas_reference: Path) -> None:
    """``evalcore score`` uses worker processes by default; ``--workers 1`` keeps to its own. Same output."""
    sessions = PARALLEL_MIN + 100
    src = distinct_ragas_file(tmp_path / "many.jsonl", ragas_reference / "ragas_samples.jsonl", sessions)
    db = tmp_path / "cli.db"
    with open_store(db) as store:
        assert import_file(store, src, "many").new == sessions
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"scores-{workers}.jsonl"
        proc = subprocess.run(
            [EVALCORE, "score", "--dataset", "many", "--metrics", "tool_call_accuracy,tool_call_f1", "--db", str(db),
             "--new-run", "--workers", workers, "--output", str(out)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert f"{sessions} sessions of 'many'" in proc.stderr and f"n={sessions}" in proc.stdout
        outputs.append((proc.stdout, out.read_text(encoding="utf-8")))
    assert outputs[0] == outputs[1]
    assert len(outputs[0][1].splitlines()) == sessions * 2
    with open_store(db) as store:
        assert [r.status for r in store.runs.recent("many")] == ["done", "done"]


class _DiesInAWorker(Metric):
    """A metric whose worker process dies (as one killed, or out of memory, does) on the sessions it scores."""

    name: ClassVar[str] = "dies_in_a_worker"
    description: ClassVar[str] = "exits the worker process"
    parent: int = 0

    def score_session(self, session: object) -> MetricResult:
        if os.getpid() != self.parent:
            os._exit(3)
        return self.result(1.0)


def test_a_worker_that_dies_fails_the_run_with_a_clear_error(tmp_path: Path, ragas_reference: Path) -> None:
    sessions = PARALLEL_MIN + 100
    src = distinct_ragas_file(tmp_path / "many.jsonl", ragas_reference / "ragas_samples.jsonl", sessions)
    with open_store(tmp_path / "dies.db") as store:
        assert import_file(store, src, "many").new == sessions
        with pytest.raises(WorkerError, match="a worker process stopped without finishing its work"):
            score_dataset(store, "many", [_DiesInAWorker(parent=os.getpid())], workers=2, resume=False)
        (run,) = store.runs.recent("many")
        assert run.status == "failed" and run.error is not None and run.error.startswith("WorkerError: a worker")
        assert score_dataset(store, "many", [_DiesInAWorker(parent=os.getpid())], workers=1).run.status == "done"


class _DeletesItsDataset(Metric):
    """A metric that, in a worker process, deletes the dataset it scores (as a reviewer might meanwhile)."""

    name: ClassVar[str] = "deletes_its_dataset"
    description: ClassVar[str] = "deletes the dataset from another connection"
    path: str = ""

    def score_session(self, session: object) -> MetricResult:

        with open_store(self.path) as other:
            if "many" in other.datasets.names():
                other.datasets.delete("many", confirm="many")
        return self.result(1.0)


def test_workers_write_no_score_of_a_dataset_deleted_while_they_score(tmp_path: Path, ragas_reference: Path) -> None:
    """The workers' connections leave foreign keys to each batch's own check: a dataset deleted meanwhile is a
    clear error, and no score is left pointing at a deleted run or session."""
    sessions = PARALLEL_MIN + 100
    src = distinct_ragas_file(tmp_path / "many.jsonl", ragas_reference / "ragas_samples.jsonl", sessions)
    db = tmp_path / "deleted.db"
    with open_store(db) as store:
        assert import_file(store, src, "many").new == sessions
        with pytest.raises(NotFoundError, match=r"run #1 or sessions it scored were deleted while it ran"):
            score_dataset(store, "many", [_DeletesItsDataset(path=str(db))], workers=2)
        assert query(store, "SELECT count(*) FROM scores") == [(0,)]
        assert own_connection(store).execute("PRAGMA foreign_key_check").fetchall() == []
