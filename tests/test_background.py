"""Background imports and scoring runs on real SQLite files, their progress seen through the jobs
table from other Store objects; and the sample data loaded once per database."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, execute, own_connection, query

from evalcore.background import start_import, start_scoring, wait_for
from evalcore.errors import NotFoundError
from evalcore.samples import SAMPLE_METRICS, ensure_samples, load_samples, sample_dataset_name, sample_files
from evalcore.store import Store, open_store
from evalcore.store.jobs import STALLED_AFTER

SAMPLE_DATA = Path(__file__).resolve().parent.parent / "sample_data"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


def _ragas(i: int) -> dict[str, Any]:
    return {
        "user_input": [
            {"content": f"Is order {i} shipped?", "type": "human"},
            {"content": "", "type": "ai", "tool_calls": [{"name": "get_order", "args": {"id": i}}]},
            {"content": '{"status": "shipped"}', "type": "tool"},
            {"content": f"Yes, order {i} shipped yesterday.", "type": "ai"},
        ],
        "reference": f"Order {i} shipped.",
    }


def _jsonl(rows: list[dict[str, Any]], *, bad_at: int | None = None) -> bytes:
    lines = [json.dumps(r) for r in rows]
    if bad_at is not None:
        lines.insert(bad_at - 1, "{not json")  # becomes line ``bad_at``
    return ("\n".join(lines) + "\n").encode()


def test_a_background_import_reports_progress_to_every_tab(store: Store, tmp_path: Path) -> None:
    n = 6000
    data = _jsonl([_ragas(i) for i in range(n)], bad_at=3001)
    other = open_store(store.url)  # another browser tab (or process) on the same file
    try:
        job_id = start_import(as_user(store, "ann", role="admin"), data, "uploads/x.jsonl", "ds")
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            job = other.jobs.get(job_id)
            seen.append(job)
            if job.status != "running":
                break
            time.sleep(0.002)
        job = wait_for(store, job_id)
        assert job.status == "done" and job.error is None, job.error
        assert (job.kind, job.dataset, job.label, job.author, job.unit) == (
            "import",
            "ds",
            "import x.jsonl",  # the file name alone, as the sessions record it
            "ann",
            "bytes",
        )
        assert job.done == job.total == len(data) and job.fraction == 1.0 and job.finished_at
        assert job.started_at <= job.updated_at == job.finished_at
        assert not job.stalled and not job.active
        result = job.result
        assert result is not None
        assert (result["new"], result["updated"], result["unchanged"], result["failed"]) == (n, 0, 0, 1)
        assert result["format"] == "ragas" and result["dataset"] == "ds"
        assert [(p["file"], p["line"], p["level"]) for p in result["problems"]] == [("x.jsonl", 3001, "error")]
        assert "JSON" in result["problems"][0]["message"]

        # Progress was written while the work ran, and read by the other store.
        running = [j for j in seen if j.status == "running"]
        assert running, "the job was never seen running"
        assert all(j.total == len(data) for j in seen)
        dones = [j.done for j in seen]
        assert dones == sorted(dones)  # never goes back
        partial = [j for j in running if 0 < j.done < j.total]
        if not partial:  # a machine fast enough to finish between two polls: the job was still updated
            assert len({j.updated_at for j in seen}) > 1
        else:
            assert 0 < partial[0].fraction < 1 and partial[0].active

        assert other.jobs.get(job_id) == job
        assert [j.id for j in other.jobs.recent("ds")] == [job_id] and other.jobs.active() == []
        assert other.datasets.get("ds").sessions == n
        (overview,) = other.datasets.overviews()
        assert overview.last_import_source == "x.jsonl"

        again = wait_for(store, start_import(store, data, "x.jsonl", "ds"))
        assert again.status == "done" and again.result is not None
        assert (again.result["new"], again.result["unchanged"], again.result["failed"]) == (0, n, 1)
        assert [j.id for j in store.jobs.recent("ds")] == [again.id, job_id]
    finally:
        other.close()


def test_a_job_whose_work_fails_ends_as_failed(store: Store) -> None:
    data = _jsonl([_ragas(0)])
    job_id = start_import(store, data, "x.jsonl", "ds", fmt="nope")  # does not raise
    job = wait_for(store, job_id)
    assert job.status == "failed" and job.result is None and job.finished_at
    assert job.error is not None and "nope" in job.error and "unexpected" not in job.error
    assert not job.active and not job.stalled and job.fraction == 0.0
    with open_store(store.url) as other:
        assert other.jobs.get(job_id).status == "failed"
        assert other.jobs.active("ds") == []
    assert store.sessions.browse("ds").total == 0

    job = wait_for(store, start_scoring(store, "nowhere", ["tool_call_count"]))
    assert job.status == "failed" and "nowhere" in (job.error or "")
    job = wait_for(store, start_scoring(store, "ds", ["no_such_metric"]))
    assert job.status == "failed" and "no_such_metric" in (job.error or "")
    with pytest.raises(NotFoundError):
        wait_for(store, 999_999)


def test_a_background_scoring_run(store: Store) -> None:
    wait_for(store, start_import(store, _jsonl([_ragas(i) for i in range(30)]), "x.jsonl", "ds"))
    job_id = start_scoring(as_user(store, "ann", role="admin"), "ds", ["tool_call_count"])
    job = wait_for(store, job_id)
    assert job.status == "done", job.error
    assert (job.kind, job.label, job.unit, job.author) == ("score", "score tool_call_count", "items", "ann")
    assert job.done == job.total == 30
    (run,) = store.runs.recent("ds")
    assert job.result is not None and job.result["run"] == run.id
    assert job.result["sessions"] == 30 and job.result["skipped"] == 0 and len(job.result["summaries"]) == 1
    assert run.status == "done" and run.metrics == ["tool_call_count"] and run.n_done == 30
    assert set(store.runs.latest_values(store.sessions.pks("ds"))[store.sessions.pks("ds")[0]].values()) == {1.0}
    # A finished run is not resumed: scoring again makes a run of its own, named in the result.
    again = wait_for(store, start_scoring(store, "ds", ["tool_call_count"], new_run=True))
    assert again.status == "done" and again.result is not None
    assert again.result["run"] == store.runs.recent("ds")[0].id != run.id and again.result["skipped"] == 0


def test_a_running_job_that_stopped_reporting_is_stalled(store: Store) -> None:
    jobs = store.jobs
    quiet = jobs.create("import", "ds", "import a.jsonl", total=100, unit="bytes")
    busy = jobs.create("score", "ds", "score x", unit="items")
    ended = jobs.create("score", "other", "score y", unit="items")
    jobs.progress(quiet, 40, 100)
    jobs.finish(ended, {"run": 1})
    assert jobs.get(quiet).fraction == 0.4 and jobs.get(busy).fraction == 0.0
    assert [j.id for j in jobs.active()] == [busy, quiet] and [j.id for j in jobs.active("other")] == []
    old = (datetime.now(UTC) - STALLED_AFTER - timedelta(seconds=30)).isoformat(timespec="microseconds")
    execute(store, "UPDATE jobs SET updated_at = ? WHERE id IN (?, ?)", [old, quiet, ended])
    assert jobs.get(quiet).stalled and not jobs.get(quiet).active and jobs.get(quiet).status == "running"
    assert not jobs.get(busy).stalled and jobs.get(busy).active
    assert not jobs.get(ended).stalled and jobs.get(ended).fraction == 1.0  # a finished job never stalls
    assert [j.id for j in jobs.active()] == [busy] and [j.id for j in jobs.active("ds")] == [busy]
    jobs.progress(quiet, 50, 100)  # it reports again: no longer stalled
    assert not jobs.get(quiet).stalled
    jobs.fail(busy, "stopped", {"done": 3})
    failed = jobs.get(busy)
    assert (failed.status, failed.error, failed.result) == ("failed", "stopped", {"done": 3})
    with pytest.raises(NotFoundError):
        jobs.get(999_999)


# -- the sample data ------------------------------------------------------------------------


def test_ensure_samples_loads_every_sample_file_once(store: Store) -> None:
    files = sample_files(SAMPLE_DATA)
    assert files
    loads = ensure_samples(store, SAMPLE_DATA)
    names = [sample_dataset_name(p) for p in files]
    assert [load.dataset for load in loads] == names and all(n.startswith("sample-") for n in names)
    assert sample_dataset_name("x/gaussia_stream.jsonl") == "sample-gaussia-stream"
    assert store.datasets.names() == sorted(names)
    for load in loads:
        assert load.scored and load.report.failed == 0 and load.report.new > 0
        assert store.datasets.get(load.dataset).sessions == load.report.new
        (run,) = [r for r in store.runs.recent(load.dataset) if not r.imported]
        assert run.status == "done" and set(run.metrics) == set(SAMPLE_METRICS)
        # The τ-bench samples came with their rewards: the dataset's imported run.
        imported = [r.metrics for r in store.runs.recent(load.dataset) if r.imported]
        assert imported == ([["reward"]] if "tau" in load.dataset else []), load.dataset
        assert run.n_items == load.report.new * len(SAMPLE_METRICS)
    assert store.meta.get("samples_loaded") == ",".join(names)

    runs = len(store.runs.recent())
    assert ensure_samples(store, SAMPLE_DATA) == []  # done once per database
    with open_store(store.url) as other:  # also from a fresh start of the app
        assert ensure_samples(other, SAMPLE_DATA) == []
    assert len(store.runs.recent()) == runs
    # A sample dataset the reviewer deleted does not come back.
    store.datasets.delete(names[0], confirm=names[0])
    assert ensure_samples(store, SAMPLE_DATA) == [] and names[0] not in store.datasets.names()


def test_load_samples_is_idempotent_and_scores_once(store: Store) -> None:
    first = load_samples(store, SAMPLE_DATA)
    counts = {d.name: d.sessions for d in store.datasets.all()}
    runs = {load.dataset: [r.id for r in store.runs.recent(load.dataset)] for load in first}
    assert all(load.scored for load in first)
    # One run each, and the τ-bench samples' imported run (their rewards) beside it.
    assert all(len(ids) == (2 if "tau" in name else 1) for name, ids in runs.items()), runs
    assert store.meta.get("samples_loaded") is None  # only ensure_samples marks the database

    second = load_samples(store, SAMPLE_DATA)
    assert [load.dataset for load in second] == [load.dataset for load in first]
    for before, after in zip(first, second, strict=True):
        assert not after.scored
        assert (after.report.new, after.report.updated, after.report.failed) == (0, 0, 0)
        assert after.report.unchanged == before.report.new
    assert {d.name: d.sessions for d in store.datasets.all()} == counts
    assert {d: [r.id for r in store.runs.recent(d)] for d in runs} == runs
    assert all(store.sessions.get(pk).version == 1 for name in counts for pk in store.sessions.pks(name))

    unscored = load_samples(store, SAMPLE_DATA, score=False)
    assert not any(load.scored for load in unscored)
    assert load_samples(store, SAMPLE_DATA.parent / "no-such-folder") == []


def test_migration_0007_moves_the_jobs_notes_into_their_rows(tmp_path: Path) -> None:
    """A store whose jobs kept their run and cancel request as notes in ``meta`` (before 0007): the notes become
    the jobs' ``run_id`` and ``cancel_by``, a job stopped on request is ``cancelled``, and the notes are gone."""
    from sqlite_utils import Database

    from evalcore.store.migrations import migration_set

    path = tmp_path / "v6.db"
    db = Database(path)
    migration_set().apply(db, stop_before="0007_jobs_run_and_cancel")
    stamp = "2026-01-01T00:00:00+00:00"
    rows = [("score", "failed", "cancelled by ann"), ("score", "done", None), ("import", "failed", "disk full")]
    for kind, status, error in rows:
        db.conn.execute(
            "INSERT INTO jobs (kind, dataset, label, status, error, started_at, updated_at) VALUES (?, 'd', 'x', ?, ?, "
            "?, ?)",
            [kind, status, error, stamp, stamp],
        )
    notes = [("job:1:run", "7"), ("job:1:cancel", "ann"), ("job:2:run", "8"), ("samples_loaded", "a,b")]
    db.conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", notes)
    db.conn.commit()
    db.conn.close()
    with open_store(path) as store:
        jobs = {job.id: job for job in store.jobs.recent()}
        assert (jobs[1].status, jobs[1].run_id, jobs[1].cancel_by, jobs[1].error) == (
            "cancelled",
            7,
            "ann",
            "cancelled by ann",
        )
        assert (jobs[2].status, jobs[2].run_id, jobs[2].cancel_by) == ("done", 8, None)
        assert (jobs[3].status, jobs[3].run_id, jobs[3].error) == ("failed", None, "disk full")
        assert query(store, "SELECT key FROM meta") == [("samples_loaded",)]
        indexes = {
            name for (name,) in own_connection(store).execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
        assert {"idx_scores_warned", "idx_scores_judged", "idx_sessions_format"} <= indexes  # 0006, 0008, 0009


def test_a_job_whose_process_was_killed_is_failed_not_running(store: Store) -> None:
    """The app (or a command) killed in the middle of a job: the job is failed the next time anyone reads it, with
    why, instead of "running" (and a page polling it) until it looks stalled."""
    import subprocess
    import sys

    code = (
        "import sys, time; from evalcore.store import open_store; "
        "s = open_store(sys.argv[1]); print(s.jobs.create('import', 'ds', 'import big.jsonl', "
        "unit='bytes'), flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, store.url], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    job_id = int(proc.stdout.readline())
    assert store.jobs.get(job_id).status == "running" and [j.id for j in store.jobs.active("ds")] == [job_id]
    proc.kill()
    proc.wait(10)
    proc.stdout.close()
    job = store.jobs.get(job_id)
    assert job.status == "failed" and job.error is not None
    assert f"the process running it (pid {proc.pid}) ended before it finished" in job.error
    assert store.jobs.active("ds") == [] and store.jobs.recent("ds")[0].status == "failed"
