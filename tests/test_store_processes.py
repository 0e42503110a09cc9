"""The store's guarantees, checked with real processes on real SQLite files.

* a SIGKILL in the middle of ``evalcore import`` (while a batch's write transaction is open,
  after earlier batches committed) leaves a valid database, and running the same import
  again finishes the job with no duplicates and no lost reviewer edits;
* two reviewers saving the same version: one wins, the other gets a ``ConflictError``
  naming who changed what, and nothing is lost once the loser reloads;
* a writer waits for another process's write lock instead of failing;
* many processes saving in a loop: versions and history account for every successful save.

Children are started with the ``spawn`` method (a fresh interpreter each) or as the real
command line; every wait is bounded and every child is killed in a ``finally``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from evalcore.errors import ConflictError
from evalcore.importing import import_file
from evalcore.store import SCHEMA_VERSION, open_store

EVALCORE = str(Path(sys.executable).parent / "evalcore")
SPAWN = multiprocessing.get_context("spawn")
DATASET = "qa"


# -- helpers ------------------------------------------------------------------------------


def _ragas_rows(ragas_reference: Path) -> list[dict[str, Any]]:
    with open(ragas_reference / "ragas_samples.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _write_sessions(path: Path, rows: list[dict[str, Any]], n: int) -> Path:
    """``n`` ragas samples cycled from ``rows``, each made distinct by a marker in its first message."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            messages = [dict(m) for m in row["user_input"]]
            messages[0]["content"] = f"[s{i}] {messages[0]['content']}"
            row["user_input"] = messages
            f.write(json.dumps(row) + "\n")
    return path


def _one_session_store(tmp_path: Path, ragas_reference: Path) -> tuple[Path, int, str]:
    """A store holding a few sessions; returns its path, one session's pk and its reference."""
    db = tmp_path / "store.db"
    source = _write_sessions(tmp_path / "few.jsonl", _ragas_rows(ragas_reference), 3)
    with open_store(db) as store:
        report = import_file(store, source, DATASET)
        assert report.new == 3
        pk = store.sessions.pks(DATASET)[1]
        stored = store.sessions.get(pk)
        assert stored.version == 1
        reference = stored.session.reference
    assert reference
    return db, pk, reference


@contextmanager
def _children(*procs: BaseProcess) -> Iterator[None]:
    """Start the processes; however the block ends, none of them outlives it."""
    try:
        for p in procs:
            p.start()
        yield
    finally:
        for p in procs:
            if p.pid is not None and p.is_alive():
                p.kill()
        for p in procs:
            if p.pid is not None:
                p.join(timeout=10)


def _results(q: Any, n: int, timeout: float) -> list[dict[str, Any]]:
    """``n`` messages from the queue, within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    out = []
    for _ in range(n):
        try:
            out.append(q.get(timeout=max(0.1, deadline - time.monotonic())))
        except queue.Empty:
            raise AssertionError(f"only {len(out)} of {n} results within {timeout}s: {out}") from None
    return out


def _count_read_only(db: Path) -> int | None:
    """``count(*)`` of sessions through a read-only connection; None while there is no table yet."""
    try:
        conn = sqlite3.connect(db.as_uri() + "?mode=ro", uri=True, timeout=1)
    except sqlite3.OperationalError:
        return None
    try:
        return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()


def _write_locked(db: Path) -> bool:
    """Whether another connection holds the write lock; probed without waiting, released at once."""
    conn = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc):
            return True
        raise
    else:
        conn.execute("ROLLBACK")
        return False
    finally:
        conn.close()


def _check_database(db: Path) -> int:
    """Assert the file is sound (pages, foreign keys, full-text index); return the number of sessions."""
    conn = sqlite3.connect(db, timeout=10)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # Internal consistency of the index, then (rank 1) its agreement with the sessions table.
        conn.execute("INSERT INTO sessions_fts(sessions_fts) VALUES('integrity-check')")
        conn.execute("INSERT INTO sessions_fts(sessions_fts, rank) VALUES('integrity-check', 1)")
        conn.commit()
        n = int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
        assert conn.execute("SELECT count(*) FROM sessions_fts_docsize").fetchone()[0] == n
        duplicates = conn.execute("SELECT key FROM sessions GROUP BY dataset_id, key HAVING count(*) > 1").fetchall()
        assert duplicates == []
        return n
    finally:
        conn.close()


def _fts_hits(db: Path, word: str) -> list[int]:
    conn = sqlite3.connect(db, timeout=10)
    try:
        return [r[0] for r in conn.execute("SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?", [word])]
    finally:
        conn.close()


_SUMMARY = re.compile(r"(\d+) new, (\d+) updated, (\d+) unchanged, (\d+) failed")


# -- 1. SIGKILL in the middle of an import -----------------------------------------------


def test_sigkill_mid_import_leaves_a_valid_store_and_the_rerun_finishes(tmp_path: Path, ragas_reference: Path) -> None:
    total = 20_000
    source = _write_sessions(tmp_path / "sessions.jsonl", _ragas_rows(ragas_reference), total)
    db = tmp_path / "store.db"
    command = [EVALCORE, "import", str(source), "--dataset", DATASET, "--db", str(db)]

    log = tmp_path / "first-run.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    seen: int | None = None
    killed_in_transaction = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if seen is None or not 0 < seen < total:
                seen = _count_read_only(db)
            elif _write_locked(db):
                # Some batches are committed and the next one is being written: kill it right there.
                os.kill(proc.pid, signal.SIGKILL)
                killed_in_transaction = True
                break
            time.sleep(0.002)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    assert killed_in_transaction, (
        f"never caught the import inside a batch after a partial import (count {seen}, exit {proc.returncode}): "
        f"{log.read_text()}"
    )
    assert seen is not None
    assert proc.returncode == -signal.SIGKILL, f"the import was not killed: {log.read_text()}"

    # The crashed file is sound and holds a prefix of the file; the open batch left no trace.
    stored = _check_database(db)
    assert seen <= stored < total, f"{stored} sessions stored after the kill; expected fewer than {total}"
    conn = sqlite3.connect(db, timeout=10)
    try:
        assert conn.execute("SELECT min(position), max(position) FROM sessions").fetchone() == (0, stored - 1)
        before = dict(conn.execute("SELECT key, id FROM sessions").fetchall())
    finally:
        conn.close()
    assert _fts_hits(db, f"s{stored - 1}") == [before[f"pos:sessions.jsonl:{stored - 1}"]]
    assert _fts_hits(db, f"s{stored}") == []

    # A reviewer edits a stored session before anyone resumes the import.
    edited_key = f"pos:sessions.jsonl:{stored - 1}"
    edited_pk = before[edited_key]
    with open_store(db) as store:
        base = store.sessions.get(edited_pk)
        assert base.version == 1
        version = store.sessions.save(
            edited_pk, {"reference": "curated before the resume"}, base_version=1, author="alice"
        )
        assert version == 2

    rerun = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    summary = _SUMMARY.search(rerun.stderr)
    assert summary, rerun.stderr
    new, updated, unchanged, failed = map(int, summary.groups())
    assert (new, updated, unchanged, failed) == (total - stored, 0, stored, 0), rerun.stderr

    assert _check_database(db) == total
    conn = sqlite3.connect(db, timeout=10)
    try:
        positions = conn.execute("SELECT count(DISTINCT position), min(position), max(position) FROM sessions")
        assert positions.fetchone() == (total, 0, total - 1)
        after = dict(conn.execute("SELECT key, id FROM sessions").fetchall())
    finally:
        conn.close()
    assert len(after) == total
    assert all(after[key] == pk for key, pk in before.items()), "sessions stored before the crash changed pk"
    with open_store(db) as store:
        assert len(store.sessions.pks(DATASET)) == total
        kept = store.sessions.get(edited_pk)
        assert kept.version == 2
        assert kept.session.reference == "curated before the resume"
        (edit,) = store.sessions.history(edited_pk)
        assert (edit.author, edit.field, edit.new, edit.version) == ("alice", "reference", kept.session.reference, 2)
    assert _fts_hits(db, "curated") == [edited_pk]
    assert _fts_hits(db, f"s{total - 1}") == [after[f"pos:sessions.jsonl:{total - 1}"]]


# -- 2. two reviewers save the same version ------------------------------------------------


def _rival(db: str, pk: int, author: str, value: str, barrier: Any, retry: Any, results: Any) -> None:
    try:
        with open_store(db) as store:
            base = store.sessions.get(pk).version
            barrier.wait(timeout=30)
            try:
                version = store.sessions.save(pk, {"reference": value}, base_version=base, author=author)
            except ConflictError as exc:
                results.put(
                    {"author": author, "outcome": "conflict", "message": str(exc), "current": exc.current_version}
                )
                if not retry.wait(timeout=30):
                    results.put({"author": author, "outcome": "error", "message": "no go-ahead to retry"})
                    return
                fresh = store.sessions.get(pk)
                version = store.sessions.save(pk, {"reference": value}, base_version=fresh.version, author=author)
                results.put({"author": author, "outcome": "retried", "base": fresh.version, "version": version})
                return
            results.put({"author": author, "outcome": "saved", "base": base, "version": version})
    except BaseException as exc:  # reported to the test, which fails on it
        results.put({"author": author, "outcome": "error", "message": f"{type(exc).__name__}: {exc}"})


def test_two_writers_on_one_version_one_wins_the_other_is_told_and_loses_nothing(
    tmp_path: Path, ragas_reference: Path
) -> None:
    db, pk, original = _one_session_store(tmp_path, ragas_reference)
    values = {"alice": "Alice's reference answer", "bob": "Bob's reference answer"}
    barrier = SPAWN.Barrier(2)
    retry = SPAWN.Event()
    results = SPAWN.Queue()
    procs = [
        SPAWN.Process(target=_rival, args=(str(db), pk, author, value, barrier, retry, results))
        for author, value in values.items()
    ]
    with _children(*procs):
        first = {r["author"]: r for r in _results(results, 2, timeout=30)}
        outcomes = sorted(r["outcome"] for r in first.values())
        assert outcomes == ["conflict", "saved"], first
        winner = next(a for a, r in first.items() if r["outcome"] == "saved")
        loser = next(a for a, r in first.items() if r["outcome"] == "conflict")
        assert first[winner]["base"] == 1 and first[winner]["version"] == 2
        message = first[loser]["message"]
        assert winner in message and "reference" in message, message
        assert loser not in message, message
        assert first[loser]["current"] == 2

        with open_store(db) as store:
            stored = store.sessions.get(pk)
            assert stored.version == 2
            assert stored.session.reference == values[winner]
            (edit,) = store.sessions.history(pk)
            assert (edit.author, edit.field, edit.old, edit.new) == (winner, "reference", original, values[winner])

        retry.set()
        (again,) = _results(results, 1, timeout=30)
        assert again == {"author": loser, "outcome": "retried", "base": 2, "version": 3}, again
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0

    with open_store(db) as store:
        stored = store.sessions.get(pk)
        assert stored.version == 3
        assert stored.session.reference == values[loser]
        history = store.sessions.history(pk)
        assert [(e.author, e.field, e.old, e.new, e.version) for e in history] == [
            (winner, "reference", original, values[winner], 2),
            (loser, "reference", values[winner], values[loser], 3),
        ]


# -- 3. a writer waits for the lock ----------------------------------------------------------

HOLD = 1.0


def _locker(db: str, saver_ready: Any, locked: Any, results: Any) -> None:
    try:
        if not saver_ready.wait(timeout=30):
            raise TimeoutError("the saver never got ready")
        conn = sqlite3.connect(db, timeout=10, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            taken = time.monotonic()
            locked.set()
            time.sleep(HOLD)
            released = time.monotonic()
            conn.execute("COMMIT")
        finally:
            conn.close()
        results.put({"who": "locker", "outcome": "ok", "taken": taken, "released": released})
    except BaseException as exc:
        results.put({"who": "locker", "outcome": "error", "message": f"{type(exc).__name__}: {exc}"})


def _patient_saver(db: str, pk: int, saver_ready: Any, locked: Any, results: Any) -> None:
    try:
        with open_store(db) as store:
            base = store.sessions.get(pk).version
            saver_ready.set()
            if not locked.wait(timeout=30):
                raise TimeoutError("the lock was never taken")
            start = time.monotonic()
            version = store.sessions.save(pk, {"reference": "saved after waiting"}, base_version=base, author="carol")
            end = time.monotonic()
        results.put({"who": "saver", "outcome": "ok", "start": start, "end": end, "version": version})
    except BaseException as exc:
        results.put({"who": "saver", "outcome": "error", "message": f"{type(exc).__name__}: {exc}"})


def test_a_save_waits_for_another_process_write_lock(tmp_path: Path, ragas_reference: Path) -> None:
    db, pk, _ = _one_session_store(tmp_path, ragas_reference)
    saver_ready = SPAWN.Event()
    locked = SPAWN.Event()
    results = SPAWN.Queue()
    procs = [
        SPAWN.Process(target=_locker, args=(str(db), saver_ready, locked, results)),
        SPAWN.Process(target=_patient_saver, args=(str(db), pk, saver_ready, locked, results)),
    ]
    with _children(*procs):
        got = {r["who"]: r for r in _results(results, 2, timeout=30)}
    assert got["locker"]["outcome"] == "ok", got
    assert got["saver"]["outcome"] == "ok", got
    saver, locker = got["saver"], got["locker"]
    waited = saver["end"] - saver["start"]
    assert saver["end"] >= locker["released"], got  # finished only once the lock was given back
    assert HOLD - 0.3 <= waited <= HOLD + 2.0, f"the save took {waited:.3f}s with the lock held {HOLD}s"
    assert saver["version"] == 2
    with open_store(db) as store:
        stored = store.sessions.get(pk)
        assert (stored.version, stored.session.reference) == (2, "saved after waiting")


# -- 4. many savers in a loop -----------------------------------------------------------------

SAVERS = 4
SAVES_EACH = 25
MAX_TRIES = 200


def _busy_saver(db: str, pk: int, author: str, barrier: Any, results: Any) -> None:
    saved: list[tuple[str, int]] = []
    conflicts = 0
    try:
        with open_store(db) as store:
            barrier.wait(timeout=30)
            for i in range(SAVES_EACH):
                for attempt in range(MAX_TRIES):
                    value = f"{author} save {i} try {attempt}"
                    base = store.sessions.get(pk).version
                    try:
                        version = store.sessions.save(pk, {"reference": value}, base_version=base, author=author)
                    except ConflictError:
                        conflicts += 1
                        continue
                    saved.append((value, version))
                    break
                else:
                    raise AssertionError(f"save {i} still conflicting after {MAX_TRIES} tries")
        results.put({"author": author, "outcome": "ok", "saved": saved, "conflicts": conflicts})
    except BaseException as exc:
        results.put(
            {
                "author": author,
                "outcome": "error",
                "message": f"{type(exc).__name__}: {exc}",
                "saved": saved,
                "conflicts": conflicts,
            }
        )


def test_many_concurrent_savers_every_success_is_in_history(tmp_path: Path, ragas_reference: Path) -> None:
    db, pk, _ = _one_session_store(tmp_path, ragas_reference)
    barrier = SPAWN.Barrier(SAVERS)
    results = SPAWN.Queue()
    procs = [
        SPAWN.Process(target=_busy_saver, args=(str(db), pk, f"reviewer{n}", barrier, results)) for n in range(SAVERS)
    ]
    with _children(*procs):
        got = _results(results, SAVERS, timeout=60)
    saved = [(r["author"], value, version) for r in got for value, version in r["saved"]]
    errors = [r for r in got if r["outcome"] != "ok"]
    assert not errors, errors

    assert len(saved) == SAVERS * SAVES_EACH
    with open_store(db) as store:
        stored = store.sessions.get(pk)
        history = store.sessions.history(pk)
    assert stored.version == 1 + len(saved)
    assert len(history) == len(saved)
    in_history = {(e.author, e.new, e.version) for e in history}
    assert all(entry in in_history for entry in saved), set(saved) - in_history
    assert [e.version for e in history] == list(range(2, 2 + len(saved)))
    assert all(e.field == "reference" for e in history)
    # Each edit starts from the value the one before it left: no save was based on a stale read.
    assert [e.old for e in history[1:]] == [e.new for e in history[:-1]]
    assert stored.session.reference == history[-1].new
    for r in got:  # each process saw its own saves in increasing versions
        versions = [v for _, v in r["saved"]]
        assert versions == sorted(versions)


def test_a_new_database_opened_by_many_processes_at_once(tmp_path: Path) -> None:
    """Six processes creating and migrating the same new file: all succeed, migrations run once."""
    code = "import sys; from evalcore.store import open_store; open_store(sys.argv[1]).close()"
    for trial in range(2):
        db = tmp_path / f"new-{trial}.db"
        procs = [
            subprocess.Popen([sys.executable, "-c", code, str(db)], stderr=subprocess.PIPE, text=True) for _ in range(6)
        ]
        try:
            errors = [p.communicate(timeout=60)[1] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        assert [p.returncode for p in procs] == [0] * 6, errors
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("SELECT count(*) FROM _sqlite_migrations").fetchone()[0] == SCHEMA_VERSION
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            conn.close()
