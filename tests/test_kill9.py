"""SIGKILL at random moments, a hundred times, then the same command again (issue 23, item 1): of ``evalcore
score`` (on two worker processes), of ``evalcore import``, and of a scoring job started the way the app starts one
(``evalcore.background``, in a process then killed whole, as an app server is). After each: the database is whole
(SQLite's ``integrity_check``), the counts exact, and no process of the killed one left running (read in /proc).
On SQLite and PostgreSQL. Also: the reader process of a big import killed — the import ends with a clear error.

``EVALCORE_KILLS`` sets how many kills each test makes (100 by default).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from dbutil import query

from evalcore.store import open_store

EVALCORE = str(Path(sys.executable).parent / "evalcore")
KILLS = int(os.environ.get("EVALCORE_KILLS", "100"))
SESSIONS = 2_000
METRICS = "tool_call_f1,turn_count"


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "schema_version": 1,
            "session_id": f"s{i:06d}",
            "reference_tool_calls": [{"name": "lookup", "args": {"id": i}}],
            "messages": [
                {"role": "user", "content": f"Where is order {i}? " + "please " * (i % 40)},
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


def _children(pid: int) -> list[int]:
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


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _killed(command: list[str], rng: random.Random, within: float) -> list[int]:
    """Start ``command``, SIGKILL it at a random moment, and return the processes it had started then."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + rng.uniform(0.05, within)
    seen: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        seen.update(_tree(proc.pid))
        time.sleep(0.02)
    seen.update(_tree(proc.pid))
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return sorted(seen)


def _left(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [p for p in pids if _alive(p)]


def _whole(url: str) -> None:
    if url.startswith("postgresql://"):
        return  # (PostgreSQL keeps its own files whole: what is checked is the counts)
    conn = sqlite3.connect(url)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def _done(url: str, command: list[str]) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_kill_9_of_evalcore_score_a_hundred_times(store_url: str, tmp_path: Path) -> None:
    source = _write(tmp_path / "s.jsonl", _rows(SESSIONS))
    _done(store_url, [EVALCORE, "import", str(source), "--dataset", "d", "--db", store_url])
    rng = random.Random(23)
    score = [EVALCORE, "score", "--dataset", "d", "--metrics", METRICS, "--workers", "2", "--db", store_url]
    orphans: list[int] = []
    for n in range(KILLS):
        started = _killed([*score, "--new-run"], rng, within=1.2)
        orphans += _left(started)
        _whole(store_url)
        _done(store_url, score)  # the same command: resumes the run the kill left, or starts one
        _whole(store_url)
        with open_store(store_url) as store:
            run = store.runs.recent("d", limit=1)[0]
            assert run.status == "done" and run.n_items == run.items_done == 2 * SESSIONS, (n, run)
            counted = "SELECT count(*), count(DISTINCT session_pk) FROM scores WHERE run_id = ? AND turn = -1"
            assert query(store, counted, [run.id]) == [(2 * SESSIONS, SESSIONS)], n
    assert not orphans, f"processes left running after their parent was killed: {orphans}"


def test_kill_9_of_evalcore_import_a_hundred_times(store_url: str, tmp_path: Path) -> None:
    source = _write(tmp_path / "s.jsonl", _rows(1_000))
    rng = random.Random(9)
    orphans: list[int] = []
    for n in range(KILLS):
        command = [EVALCORE, "import", str(source), "--dataset", f"d{n}", "--db", store_url]
        orphans += _left(_killed(command, rng, within=1.0))
        _whole(store_url)
        _done(store_url, command)
        with open_store(store_url) as store:
            assert store.datasets.get(f"d{n}").sessions == 1_000, n
    with open_store(store_url) as store:
        assert query(store, "SELECT count(*), count(DISTINCT dataset_id || ':' || key) FROM sessions") == [
            (1_000 * KILLS, 1_000 * KILLS)
        ]
    _whole(store_url)
    assert not orphans, f"processes left running after their parent was killed: {orphans}"


_APP_JOB = """
import sys, time
from evalcore import background
from evalcore.store import open_store
store = open_store(sys.argv[1])
job = background.start_scoring(store, "d", sys.argv[2].split(","), author="ann", new_run=sys.argv[3] == "new")
print(job, flush=True)
background.wait_for(store, job, timeout=300)
"""


def test_kill_9_of_a_scoring_job_started_as_the_app_starts_one(store_url: str, tmp_path: Path) -> None:
    source = _write(tmp_path / "s.jsonl", _rows(SESSIONS))
    _done(store_url, [EVALCORE, "import", str(source), "--dataset", "d", "--db", store_url])
    rng = random.Random(20)
    for n in range(KILLS):
        killed = _killed([sys.executable, "-c", _APP_JOB, store_url, METRICS, "new"], rng, within=2.0)
        assert not _left(killed)
        _whole(store_url)
        with open_store(store_url) as store:  # the killed job is failed, not "running" (its process is gone)
            assert all(job.status != "running" for job in store.jobs.recent("d", limit=1000)), n
        again = subprocess.run([sys.executable, "-c", _APP_JOB, store_url, METRICS, "resume"], capture_output=True,
                               text=True, timeout=300)  # fmt: skip
        assert again.returncode == 0, again.stderr
        with open_store(store_url) as store:
            job = store.jobs.get(int(again.stdout.split()[0]))
            assert job.status == "done", (n, job.error)
            run = store.runs.get(job.run_id or 0)
            assert run.status == "done" and run.items_done == run.n_items == 2 * SESSIONS, (n, run)
        _whole(store_url)


def test_a_killed_reader_ends_the_import_with_a_clear_error(tmp_path: Path) -> None:
    """The second process reading a big file (and the workers it forked) killed: the import stops within seconds
    and says why, keeping what it stored; nothing is left running."""
    source = _write(tmp_path / "big.jsonl", _rows(20_000))
    assert source.stat().st_size > 4 << 20  # (read on a second process)
    db = tmp_path / "s.db"
    proc = subprocess.Popen([EVALCORE, "import", str(source), "--dataset", "d", "--db", str(db), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    reader = None
    deadline = time.monotonic() + 30
    while reader is None and time.monotonic() < deadline:
        for child in _children(proc.pid):
            if b"evalcore.reading" in Path(f"/proc/{child}/cmdline").read_bytes():
                reader = child
        time.sleep(0.01)
    assert reader is not None, "no reader process was seen"
    time.sleep(0.3)
    family = [reader, *_tree(reader)]
    os.kill(reader, signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 2, err
    assert "the process reading it stopped early" in err and "Traceback" not in err
    assert not _left(family)
    with open_store(db) as store:
        stored = store.datasets.get("d").sessions
    assert f"the {stored} sessions before it are stored" in err
