"""The database's own faults, on real files: a full disk (a small tmpfs), a read-only file or folder, a
write lock held by another process, a damaged file, an SQL error. Each surfaces as ``DatabaseFaultError``
(a ``StoreError``) naming the file, what happened and what to do; the command line exits with 3 and
prints no traceback; the file stays intact (``PRAGMA integrity_check``). Also: the store's checks of
odd arguments (page sizes, run ids, scores), and the durability setting of every connection.

Root ignores file permissions, so as root a read-only file is made immutable (``chattr +i``) and a
read-only folder is a read-only bind mount; as another user, ``chmod`` does. Tests that need what this
machine does not allow (mounting a tmpfs, say) fail with the reason: a skipped test proves nothing.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, own_connection
from formats_util import write_jsonl

from evalcore.errors import DatabaseFaultError, NotFoundError, StoreError, UsageError
from evalcore.exporting import export_dataset
from evalcore.importing import import_file
from evalcore.store import open_store
from evalcore.store.queries import SessionFilter

EVALCORE = str(Path(sys.executable).parent / "evalcore")
IS_ROOT = os.geteuid() == 0
#: A fault test the machine cannot stage fails, never skips (a skipped test proves nothing): CI runs as root
#: with mount and chattr, as `make test` on the project's machines does.
_NEEDS = "this fault test cannot be staged here (it needs what CI has: root, mount, chattr): "


def _ragas(i: int, pad: int = 0) -> dict[str, Any]:
    return {
        "user_input": [
            {"content": f"question {i}", "type": "human"},
            {"content": f"answer {i} " + "x" * pad, "type": "ai"},
        ],
        "reference": f"reference {i}",
    }


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=120)


def _intact(db: Path) -> int:
    """Assert the file passes SQLite's checks; return its number of sessions."""
    conn = sqlite3.connect(db, timeout=10)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
    finally:
        conn.close()


def _made(tmp_path: Path, n: int = 5, name: str = "store.db") -> Path:
    db = tmp_path / name
    with open_store(db) as store:
        import_file(store, write_jsonl(tmp_path / f"{name}.jsonl", [_ragas(i) for i in range(n)]), "d")
    return db


def _sh(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, timeout=60)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, mounted for the test and unmounted after it."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if not IS_ROOT:
        pytest.fail(_NEEDS + "mounting a tmpfs (a real full disk) needs root", pytrace=False)
    done = _sh("mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mount))
    if done.returncode != 0:
        pytest.fail(_NEEDS + f"this machine does not allow mounting a tmpfs: {done.stderr.strip()}", pytrace=False)
    try:
        yield mount
    finally:
        if _sh("umount", str(mount)).returncode != 0:
            _sh("umount", "-l", str(mount))


@pytest.fixture
def read_only_file() -> Iterator[Any]:
    """Makes a file read-only for this process (root: immutable); undone after the test."""
    undo: list[Path] = []

    def make(path: Path) -> None:
        if IS_ROOT:
            done = _sh("chattr", "+i", str(path))
            if done.returncode != 0:
                reason = f"root ignores permissions and chattr +i is not allowed here: {done.stderr.strip()}"
                pytest.fail(_NEEDS + reason, pytrace=False)
        else:
            path.chmod(0o444)
        undo.append(path)

    yield make
    for path in undo:
        if IS_ROOT:
            _sh("chattr", "-i", str(path))
        else:
            path.chmod(0o644)


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Any]:
    """A read-only view of a folder (root: a read-only bind mount; else chmod 0555); undone after the test."""
    mounts: list[Path] = []
    chmods: list[Path] = []

    def make(folder: Path) -> Path:
        if not IS_ROOT:
            folder.chmod(0o555)
            chmods.append(folder)
            return folder
        view = tmp_path / f"{folder.name}-ro"
        view.mkdir()
        done = _sh("mount", "--bind", str(folder), str(view))
        if done.returncode != 0:
            reason = f"root ignores permissions and bind mounts are not allowed here: {done.stderr.strip()}"
            pytest.fail(_NEEDS + reason, pytrace=False)
        mounts.append(view)
        done = _sh("mount", "-o", "remount,ro,bind", str(view))
        if done.returncode != 0:
            pytest.fail(_NEEDS + f"cannot make a bind mount read-only here: {done.stderr.strip()}", pytrace=False)
        return view

    yield make
    for view in mounts:
        if _sh("umount", str(view)).returncode != 0:
            _sh("umount", "-l", str(view))
    for folder in chmods:
        folder.chmod(0o755)


# -- a full disk -------------------------------------------------------------------------------


def test_a_full_disk_is_a_store_error_and_the_database_stays_intact(tmp_path: Path, tmpfs: Path) -> None:
    filler = tmpfs / "filler"
    filler.write_bytes(b"\0" * 200_000)
    db = tmpfs / "full.db"
    big = write_jsonl(tmp_path / "big.jsonl", [_ragas(i, pad=1500) for i in range(1_500)])
    with open_store(db) as store:
        with pytest.raises(DatabaseFaultError) as caught:
            import_file(store, big, "d")
        assert caught.value.code == "SQLITE_FULL"
        message = str(caught.value)
        assert str(db) in message and "disk holding it is full" in message and "free some space" in message
        assert not own_connection(store).in_transaction
        stored = store.datasets.get("d").sessions  # what the batches committed before the disk filled
        # What was kept is said, beside "nothing of the failed change was saved" (the batch that met the full disk).
        assert f"{stored:,} sessions of big.jsonl were stored before it and are kept" in message
        assert 0 <= stored < 1_500
    assert _intact(db) == stored
    proc = run("import", str(big), "--dataset", "d", "--db", str(db))
    assert proc.returncode == 3, proc.stderr
    assert "is full" in proc.stderr and "Traceback" not in proc.stderr
    assert _intact(db) == stored
    filler.unlink()  # space again: the store carries on from where it was
    with open_store(db) as store:
        pk = store.sessions.pks("d")[0] if stored else None
        if pk is not None:
            assert (
                as_user(store, "t").sessions.save(
                    pk, {"reference": "after"}, base_version=store.sessions.get(pk).version
                )
                == 2
            )
    assert _intact(db) == stored


def test_a_commit_refused_for_space_rolls_back_and_the_store_carries_on(tmp_path: Path) -> None:
    """SQLITE_FULL without a small disk: the connection may not grow the file (max_page_count)."""
    db = _made(tmp_path)
    with open_store(db) as store:
        pk = store.sessions.pks("d")[0]
        pages = own_connection(store).execute("PRAGMA page_count").fetchone()[0]
        own_connection(store).execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(DatabaseFaultError, match="disk holding it is full") as caught:
            as_user(store, "t").sessions.save(pk, {"reference": "y" * 500000}, base_version=1)
        assert caught.value.code == "SQLITE_FULL" and isinstance(caught.value, StoreError)
        assert not own_connection(store).in_transaction  # rolled back, the write lock released
        assert store.sessions.get(pk).version == 1 and store.sessions.history(pk) == []
        own_connection(store).execute("PRAGMA max_page_count = 1073741823")
        assert as_user(store, "t").sessions.save(pk, {"reference": "y" * 500000}, base_version=1) == 2
    assert _intact(db) == 5


# -- read-only -------------------------------------------------------------------------------


def test_a_read_only_database_file_reads_and_refuses_writes_clearly(tmp_path: Path, read_only_file: Any) -> None:
    db = _made(tmp_path)
    read_only_file(db)
    with open_store(db) as store:
        assert store.datasets.get("d").sessions == 5  # reading works
        pk = store.sessions.pks("d")[0]
        with pytest.raises(DatabaseFaultError) as caught:
            as_user(store, "t").sessions.save(pk, {"reference": "x"}, base_version=1)
        assert caught.value.code is not None and caught.value.code.startswith("SQLITE_READONLY")
        assert "read-only" in str(caught.value) and "permissions" in str(caught.value)
        assert not own_connection(store).in_transaction
    source = write_jsonl(tmp_path / "more.jsonl", [_ragas(9)])
    proc = run("import", str(source), "--dataset", "e", "--db", str(db))
    assert proc.returncode == 3 and "read-only" in proc.stderr and "Traceback" not in proc.stderr
    assert _intact(db) == 5


def test_a_database_in_a_read_only_folder_is_a_clear_error(tmp_path: Path, read_only_folder: Any) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    _made(folder)
    view = read_only_folder(folder)
    with pytest.raises(DatabaseFaultError, match="cannot open the database .*its folder") as caught:
        open_store(view / "store.db")
    assert caught.value.code is not None and caught.value.code.startswith("SQLITE_CANTOPEN")
    proc = run(
        "export", "--dataset", "d", "--to", "ragas", "-o", str(tmp_path / "o.jsonl"), "--db", str(view / "store.db")
    )
    assert proc.returncode == 3 and "cannot open the database" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()
    proc = run("import", str(tmp_path / "data" / "store.db.jsonl"), "--dataset", "d", "--db", str(view / "new.db"))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert _intact(folder / "store.db") == 5


# -- a write lock held by another process ----------------------------------------------------


def test_a_write_lock_held_past_the_busy_timeout_is_a_clear_error(tmp_path: Path) -> None:
    db = _made(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable, "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE')\n"
            "print('holding', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with open_store(db, busy_timeout=0.3) as store:
            assert store.datasets.get("d").sessions == 5  # WAL: readers do not wait for the writer
            pk = store.sessions.pks("d")[0]
            started = time.monotonic()
            with pytest.raises(DatabaseFaultError) as caught:
                as_user(store, "t").sessions.save(pk, {"reference": "x"}, base_version=1)
            assert time.monotonic() - started < 10
            assert caught.value.code == "SQLITE_BUSY"
            assert "another process has held its write lock for more than 0.3 s" in str(caught.value)
            holder.kill()
            holder.wait(timeout=30)
            assert as_user(store, "t").sessions.save(pk, {"reference": "x"}, base_version=1) == 2
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert _intact(db) == 5


# -- a damaged file, an SQL error --------------------------------------------------------------


def test_a_damaged_database_is_a_clear_error(tmp_path: Path) -> None:
    db = _made(tmp_path, n=200)
    conn = sqlite3.connect(db)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sessions'").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(db, "r+b") as f:  # the sessions table's first page: garbage
        f.seek((root - 1) * page_size)
        f.write(bytes(range(256)) * (page_size // 256))
    with pytest.raises(DatabaseFaultError) as caught, open_store(db) as store:
        [s.session.reference for s in store.sessions.get_many(store.sessions.pks("d"))]
    message = str(caught.value)
    assert caught.value.code == "SQLITE_CORRUPT" and "is damaged" in message and ".recover" in message
    out = tmp_path / "o.jsonl"
    proc = run("export", "--dataset", "d", "--to", "ragas", "-o", str(out), "--db", str(db))
    assert proc.returncode == 3 and "damaged" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_an_sql_error_is_translated_at_the_write_boundary_and_by_the_command_line(tmp_path: Path) -> None:
    db = _made(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE meta")
    conn.execute("DROP TABLE sessions_fts")
    conn.commit()
    conn.close()
    with open_store(db) as store:
        with pytest.raises(DatabaseFaultError, match="no such table: meta"):
            store.meta.set("k", "v")
        assert not own_connection(store).in_transaction
    proc = run(
        "export", "--dataset", "d", "--to", "ragas", "-o", str(tmp_path / "o"), "--search", "hi", "--db", str(db)
    )
    assert proc.returncode == 3 and "no such table: sessions_fts" in proc.stderr and "Traceback" not in proc.stderr
    assert _intact(db) == 5


# -- durability --------------------------------------------------------------------------------


def test_every_connection_syncs_each_commit(tmp_path: Path) -> None:
    """``synchronous = FULL`` (2) in WAL mode: a reviewer's save survives a power cut (see store.py)."""
    db = _made(tmp_path)
    with open_store(db) as store:
        assert own_connection(store).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert own_connection(store).execute("PRAGMA synchronous").fetchone()[0] == 2
        seen: list[int] = []
        thread = threading.Thread(
            target=lambda: seen.append(own_connection(store).execute("PRAGMA synchronous").fetchone()[0])
        )
        thread.start()
        thread.join(timeout=30)
        assert seen == [2]


# -- odd arguments at the store's boundary -----------------------------------------------------


def test_odd_page_sizes_run_ids_and_scores_are_named_not_tracebacks(tmp_path: Path) -> None:
    db = _made(tmp_path)
    with open_store(db) as store:
        for limit, offset in ((2**63, 0), (-1, 0), (10, -1), (10, 2**64), (1.5, 0), (True, 0)):
            with pytest.raises(UsageError, match="must be"):
                store.sessions.browse("d", limit=limit, offset=offset)  # type: ignore[arg-type]
        assert store.sessions.browse("d", limit=2**63 - 1, offset=2**63 - 1).items == []
        assert store.sessions.browse("d", limit=0).total == 5
        for bad in (SessionFilter(run_id=2**64, metric="m"), SessionFilter(run_id=0, metric="m")):
            with pytest.raises(UsageError, match="the run must be from 1"):
                store.sessions.count("d", bad)
        for score in (float("nan"), float("inf"), -float("inf")):
            with pytest.raises(UsageError, match="must be a finite number"):
                store.sessions.browse("d", SessionFilter(run_id=1, metric="m", min_score=score))
            with pytest.raises(UsageError, match="must be a finite number"):
                store.sessions.browse("d", SessionFilter(run_id=1, metric="m", max_score=score))
        with pytest.raises(UsageError, match="the session must be from 1"):
            store.sessions.neighbours("d", 2**70)
        with pytest.raises(NotFoundError, match="no session"):
            store.sessions.get(2**64)
        with pytest.raises(NotFoundError, match="no run"):
            store.runs.get(2**64)
        with pytest.raises(NotFoundError, match="no run"):
            export_dataset(store, "d", tmp_path / "o.jsonl", "ragas", SessionFilter(run_id=2**64, metric="m"))
        with pytest.raises(UsageError, match="a dataset needs a name"):
            store.datasets.get("", create=True)
        with pytest.raises(UsageError, match="a dataset needs a name"):
            import_file(store, write_jsonl(tmp_path / "x.jsonl", [_ragas(1)]), "  ")
        assert store.datasets.names() == ["d"]
    assert _intact(db) == 5


def test_a_first_start_on_a_full_disk_opens_the_app_and_says_why_the_samples_are_missing(
    tmpfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's first start loads the sample data; on a full disk that fails. The pages open all the same (the
    load is not tried again on every page load), and the Datasets page says why there are no samples."""
    import apptest_util

    db = tmpfs / "first.db"
    open_store(db).close()
    free = os.statvfs(tmpfs).f_bavail * os.statvfs(tmpfs).f_frsize
    (tmpfs / "filler").write_bytes(b"\0" * (free - 300_000))  # room to open the store, not for the samples
    monkeypatch.setenv("EVALCORE_DB", str(db))
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(Path(__file__).resolve().parent.parent / "sample_data"))
    at = apptest_util.run(apptest_util.app())
    warnings = [str(w.value) for w in at.warning]
    assert any(w.startswith("The sample data could not be loaded:") and "is full" in w for w in warnings), warnings
    at.switch_page("app_pages/sessions.py")
    apptest_util.run(at)  # the next page opens (no new attempt, no error)
    assert not [e for e in at.error if "could not be loaded" in str(e.value)]
