"""Real processes at once on one store, on both engines: conflicting saves lose no update, two imports into one
dataset store each session once, and a command killed with SIGKILL (an import, a scoring run, a reviewer's
saves) leaves counts that a re-run makes exact — with no process of its left behind."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dbutil import query

from evalcore.errors import ConflictError
from evalcore.importing import import_file
from evalcore.store import open_store

EVALCORE = str(Path(sys.executable).parent / "evalcore")
SPAWN = multiprocessing.get_context("spawn")
SAVERS = 6
SAVES_EACH = 300


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "schema_version": 1,
            "session_id": f"s{i:06d}",
            "reference_tool_calls": [{"name": "lookup", "args": {"id": i}}],
            "messages": [
                {"role": "user", "content": f"Where is order {i}?"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "lookup", "args": {"id": i}}]},
                {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "shipped"},
                {"role": "assistant", "content": f"Order {i} has shipped."},
            ],
        }
        for i in range(start, start + n)
    ]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _saver(url: str, pk: int, author: str, barrier: Any, results: Any) -> None:
    """Save ``SAVES_EACH`` times, each based on the version just read; a conflict is read again and retried."""
    done: list[tuple[int, str]] = []
    conflicts = 0
    try:
        with open_store(url) as store:
            barrier.wait(timeout=60)
            for n in range(SAVES_EACH):
                value = f"{author} {n}"
                while True:
                    base = store.sessions.get(pk).version
                    try:
                        done.append(
                            (store.sessions.save(pk, {"reference": value}, base_version=base, author=author), value)
                        )
                        break
                    except ConflictError:
                        conflicts += 1
        results.put({"author": author, "done": done, "conflicts": conflicts})
    except BaseException as exc:  # reported, not lost in the child
        results.put({"author": author, "error": repr(exc)})


def test_conflicting_saves_from_many_processes_lose_no_update(store_url: str, tmp_path: Path) -> None:
    with open_store(store_url) as store:
        import_file(store, _write(tmp_path / "one.jsonl", _rows(1)), "d", workers=1)
        (pk,) = store.sessions.pks("d")
    barrier = SPAWN.Barrier(SAVERS)
    results = SPAWN.Queue()
    procs = [
        SPAWN.Process(target=_saver, args=(store_url, pk, f"reviewer{n}", barrier, results)) for n in range(SAVERS)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    assert not [g for g in got if "error" in g], got
    saved = {version: (g["author"], value) for g in got for version, value in g["done"]}
    assert len(saved) == SAVERS * SAVES_EACH  # every success got a version of its own
    assert sum(g["conflicts"] for g in got) > 0  # they did collide
    with open_store(store_url) as store:
        stored = store.sessions.get(pk)
        history = store.sessions.history(pk)
    assert stored.version == 1 + SAVERS * SAVES_EACH
    assert sorted(saved) == list(range(2, stored.version + 1))
    # Every accepted save is in the history, as its author saved it: 0 lost updates.
    assert {e.version: (e.author, e.new) for e in history} == saved
    assert stored.session.reference == saved[stored.version][1]


def _importer(url: str, path: str, results: Any) -> None:
    try:
        with open_store(url) as store:
            report = import_file(store, path, "d", workers=1)
        results.put((report.new, report.updated, report.unchanged, report.failed))
    except BaseException as exc:
        results.put(repr(exc))


def test_two_imports_into_one_dataset_at_once_store_each_session_once(store_url: str, tmp_path: Path) -> None:
    first = _write(tmp_path / "first.jsonl", _rows(6000))
    second = _write(tmp_path / "second.jsonl", _rows(6000, start=3000))  # half of it the first's sessions
    with open_store(store_url) as store:
        store.datasets.get("d", create=True)
    results = SPAWN.Queue()
    procs = [SPAWN.Process(target=_importer, args=(store_url, str(f), results)) for f in (first, second)]
    for p in procs:
        p.start()
    got = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    assert all(isinstance(g, tuple) for g in got), got
    assert sum(g[0] for g in got) == 9000 and sum(g[2] for g in got) == 3000, got  # 3,000 sessions in both
    assert all(g[1] == 0 and g[3] == 0 for g in got), got
    with open_store(store_url) as store:
        assert store.datasets.get("d").sessions == 9000
        assert query(store, "SELECT count(*), count(DISTINCT key) FROM sessions") == [(9000, 9000)]


# -- kill -9, then the same command again ---------------------------------------------------------------


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _kill_at_random(command: list[str], rng: random.Random, *, within: float) -> tuple[int, list[int]]:
    """Start ``command``, SIGKILL it after a random moment (its processes then seen), return its exit code and the
    processes it had started."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0.05, within))
    seen = _descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return proc.returncode, seen


def _no_orphans(pids: list[int]) -> None:
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    assert not left, f"processes left running after their parent was killed: {left}"


_SUMMARY = re.compile(r"(\d+) new, (\d+) updated, (\d+) unchanged, (\d+) failed")


@pytest.mark.parametrize("kills", [5])
def test_kill_9_of_import_score_and_saves_then_a_rerun_is_exact(store_url: str, tmp_path: Path, kills: int) -> None:
    rng = random.Random(19)
    total = 20_000
    source = _write(tmp_path / "big.jsonl", _rows(total))
    db = ["--db", store_url]
    orphans: list[int] = []
    for _ in range(kills):  # an import killed at random moments (its reader process and its workers with it)
        code, seen = _kill_at_random([EVALCORE, "import", str(source), "--dataset", "d", *db], rng, within=3.0)
        orphans += seen
        if code == 0:
            break
    _no_orphans(orphans)
    done = subprocess.run([EVALCORE, "import", str(source), "--dataset", "d", *db], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    new, updated, unchanged, failed = map(int, _SUMMARY.search(done.stderr).groups())  # type: ignore[union-attr]
    assert new + unchanged == total and updated == failed == 0
    score = [EVALCORE, "score", "--dataset", "d", "--metrics", "tool_call_f1,turn_count", "--workers", "2", *db]
    for _ in range(kills):  # a scoring run on two worker processes, killed at random moments
        code, seen = _kill_at_random(score, rng, within=1.5)
        orphans += seen
        if code in (0, 1):
            break
    _no_orphans(orphans)
    again = subprocess.run(score, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    with open_store(store_url) as store:
        assert store.datasets.get("d").sessions == total
        assert query(store, "SELECT count(*), count(DISTINCT key) FROM sessions") == [(total, total)]
        (run,) = [r for r in store.runs.recent("d") if r.status == "done"][:1]
        assert (run.n_items, run.n_done + run.n_failed + run.n_not_applicable) == (2 * total, 2 * total)
        scored = query(
            store, "SELECT count(*), count(DISTINCT session_pk) FROM scores WHERE run_id = ? AND turn = -1", [run.id]
        )
        assert scored == [(2 * total, total)]
        pk = store.sessions.pks("d")[0]
    # A reviewer's saves killed at random moments: the history always matches the version.
    saver = [sys.executable, "-c", _SAVES, store_url, str(pk)]
    for _ in range(kills):
        _kill_at_random(saver, rng, within=1.0)
        with open_store(store_url) as store:
            stored = store.sessions.get(pk)
            assert len(store.sessions.history(pk)) == stored.version - 1
    if store_url.endswith(".db"):
        import sqlite3

        conn = sqlite3.connect(store_url)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()


_SAVES = """
import sys
from evalcore.store import open_store
store = open_store(sys.argv[1])
pk = int(sys.argv[2])
for n in range(100000):
    store.sessions.save(pk, {"reference": f"save {n}"}, base_version=store.sessions.get(pk).version, author="ann")
"""
