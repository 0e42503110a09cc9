"""Output paths (``evalcore._infra.outputs``): whole or nothing, written through links and streams, never over a
special file; the export manifest only ever beside the data it describes; no partial file left behind.

Real files, FIFOs, device nodes and processes: the command line runs as a child process, killed with
SIGKILL, SIGTERM or SIGINT where a test says so. Every wait is bounded; every child is killed in a
``finally``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import random
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import own_connection
from formats_util import load_output, write_jsonl

from evalcore._infra.outputs import PendingOutput, atomic_output, output_target, publish
from evalcore.errors import UsageError
from evalcore.exporting import check_export, export_dataset, manifest_path
from evalcore.formats import writer_for
from evalcore.importing import import_file
from evalcore.schema import Session
from evalcore.store import open_store

EVALCORE = str(Path(sys.executable).parent / "evalcore")
IS_ROOT = os.geteuid() == 0


def _ragas(i: int) -> dict[str, Any]:
    return {
        "user_input": [{"content": f"question {i}", "type": "human"}, {"content": f"answer {i}", "type": "ai"}],
        "reference": f"reference {i}",
    }


def _session(i: int = 0) -> Session:
    return Session.model_validate({"messages": [{"role": "user", "content": f"q{i}"}], "reference": f"r{i}"})


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=120, **kwargs)


@pytest.fixture
def store_db(tmp_path: Path) -> Path:
    """A store holding dataset ``d``: 60 sessions, the first 20 approved."""
    db = tmp_path / "store.db"
    with open_store(db) as store:
        import_file(store, write_jsonl(tmp_path / "in.jsonl", [_ragas(i) for i in range(60)]), "d")
        for pk in store.sessions.pks("d")[:20]:
            store.sessions.set_status(pk, "approved", base_version=store.sessions.get(pk).version, author="t")
    return db


# -- where a path leads ----------------------------------------------------------------------


def test_a_regular_file_is_replaced_whole_and_keeps_its_permissions(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    out.chmod(0o640)
    inode = out.stat().st_ino
    with atomic_output(out) as f:
        f.write("new\n")
        assert out.read_text() == "old\n"  # nothing seen before the end
        assert len(_leftovers(tmp_path)) == 1
    assert out.read_text() == "new\n" and out.stat().st_ino != inode
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


def test_a_failure_keeps_the_old_file_and_leaves_no_partial(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_output(out) as f:
        f.write("half" * 100_000)
        raise RuntimeError("boom")
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_writer_for_removes_its_partial_file_when_writing_fails(tmp_path: Path) -> None:
    """The partial-file cleanup of ``writer_for``: without it a failed write leaves ``.out.jsonl.*.partial``."""
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError), writer_for(out, "ragas") as writer:
        writer.write(_session())
        assert len(_leftovers(tmp_path)) == 1  # the writer did reach the file
        raise RuntimeError("the input broke")
    assert list(tmp_path.iterdir()) == []
    with writer_for(out, "ragas") as writer:
        writer.write(_session(1))
    assert [r["reference"] for r in load_output(out)] == ["r1"] and _leftovers(tmp_path) == []
    with pytest.raises(UsageError, match="read-only"), writer_for(tmp_path / "x.jsonl", "swarm"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "data" / "real.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with writer_for(link, "ragas") as writer:
        writer.write(_session())
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert [r["reference"] for r in load_output(real)] == ["r0"]
    assert _leftovers(tmp_path) == [] and _leftovers(real.parent) == []
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "data" / "new.jsonl")
    with atomic_output(dangling) as f:
        f.write("made\n")
    assert dangling.is_symlink() and (tmp_path / "data" / "new.jsonl").read_text() == "made\n"


def test_a_fifo_is_streamed_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        with writer_for(fifo, "ragas") as writer:
            for i in range(3):
                writer.write(_session(i))
    finally:
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert [json.loads(line)["reference"] for line in received[0].splitlines()] == ["r0", "r1", "r2"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifo"]


def test_the_command_line_streams_into_a_fifo(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [_ragas(i) for i in range(5)])
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [EVALCORE, "convert", str(source), "-o", str(fifo), "--to", "ragas"], stderr=subprocess.PIPE, text=True
    )
    try:
        with open(fifo, encoding="utf-8") as f:  # the child waits for this reader, then writes
            lines = f.read().splitlines()
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
    finally:
        proc.kill()
        proc.communicate()
    assert [json.loads(line)["reference"] for line in lines] == [f"reference {i}" for i in range(5)]
    assert stat.S_ISFIFO(fifo.stat().st_mode) and _leftovers(tmp_path) == []


@pytest.mark.skipif(not IS_ROOT, reason="only root can make device nodes (and only root could replace /dev/null)")
def test_a_device_node_is_written_through_never_replaced(tmp_path: Path) -> None:
    """As root the old writer renamed a regular file over the node: the device was gone."""
    null = os.stat("/dev/null")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, null.st_rdev)  # a node of the same device as /dev/null
    source = write_jsonl(tmp_path / "in.jsonl", [_ragas(1)])
    for target in (node, Path("/dev/null")):
        proc = run("convert", str(source), "-o", str(target), "--to", "ragas")
        assert proc.returncode == 0, proc.stderr
        after = os.stat(target)
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == null.st_rdev, target
    assert node.read_bytes() == b"" and _leftovers(tmp_path) == [] and _leftovers(Path("/dev")) == []
    with atomic_output("/dev/null") as f:
        f.write("nothing\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not IS_ROOT, reason="only root can make a block device node")
def test_a_block_device_is_refused(tmp_path: Path) -> None:
    node = tmp_path / "disk"
    os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))  # a loop device number; never opened
    with pytest.raises(UsageError, match="is a block device"):
        output_target(node)
    proc = run("convert", str(write_jsonl(tmp_path / "in.jsonl", [_ragas(1)])), "-o", str(node), "--to", "ragas")
    assert proc.returncode == 2 and "is a block device" in proc.stderr and "Traceback" not in proc.stderr
    assert stat.S_ISBLK(node.lstat().st_mode)


def test_a_folder_a_socket_an_empty_path_and_a_missing_folder_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    source = write_jsonl(tmp_path / "in.jsonl", [_ragas(1)])
    proc = run("convert", str(source), "-o", str(folder), "--to", "ragas")
    assert proc.returncode == 2 and f"{folder} is a folder" in proc.stderr and "Traceback" not in proc.stderr
    assert folder.is_dir() and [p.name for p in folder.iterdir()] == ["keep.txt"]
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(UsageError, match="is a socket"):
            output_target(sock_path)
    with pytest.raises(UsageError, match="the output path is empty"):
        output_target("")
    with pytest.raises(UsageError, match="NUL"):
        output_target("a\0b")
    with pytest.raises(UsageError, match="the folder .*missing does not exist"):
        output_target(tmp_path / "missing" / "out.jsonl")
    proc = run("convert", str(source), "-o", str(tmp_path / "missing" / "o.jsonl"), "--to", "ragas")
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_standard_output_is_shared_not_reopened(tmp_path: Path) -> None:
    """``-o /dev/stdout`` writes into the descriptor the shell gave: redirected to a file, that file keeps
    its inode and what the program printed before stays in front."""
    source = write_jsonl(tmp_path / "in.jsonl", [_ragas(i) for i in range(3)])
    proc = run("convert", str(source), "-o", "/dev/stdout", "--to", "ragas")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["reference"] for line in proc.stdout.splitlines()] == [f"reference {i}" for i in range(3)]
    captured = tmp_path / "captured.jsonl"
    with open(captured, "w") as f:
        f.write("already here\n")
        f.flush()
        inode = os.fstat(f.fileno()).st_ino
        code = subprocess.run(
            [EVALCORE, "convert", str(source), "-o", "/dev/stdout", "--to", "ragas"], stdout=f, timeout=120
        ).returncode
    assert code == 0 and captured.stat().st_ino == inode
    assert captured.read_text().splitlines()[0] == "already here" and len(captured.read_text().splitlines()) == 4


# -- partial files ---------------------------------------------------------------------------


def test_stale_partials_of_the_target_are_removed_live_ones_kept(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    stale = [tmp_path / ".out.jsonl.0badf00d.partial", tmp_path / ".out.jsonl.partial"]
    for path in stale:
        path.write_text("left by a SIGKILL")
    live = tmp_path / ".out.jsonl.1234abcd.partial"
    live.write_text("being written")
    other = tmp_path / ".other.jsonl.0badf00d.partial"  # another target's: not ours to judge
    other.write_text("x")
    holder = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # as its writer holds it
        with atomic_output(out) as f:
            f.write("new\n")
        assert _leftovers(tmp_path) == sorted([live.name, other.name])
    finally:
        os.close(holder)
    source = write_jsonl(tmp_path / "in.jsonl", [_ragas(1)])
    assert run("convert", str(source), "-o", str(out), "--to", "ragas").returncode == 0
    assert _leftovers(tmp_path) == [other.name]  # the lock is free: its writer is gone


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.02)


def _stop_waiting(proc: subprocess.Popen[str], feeder: Any) -> str:
    """The child's stderr once it has ended. A signal that lands just before the child enters ``read``
    is only acted on when that read returns (CPython runs handlers between bytecodes): one more line
    wakes it, as more input or a second Ctrl-C would for a person."""
    for _ in range(12):
        try:
            return proc.communicate(timeout=5)[1]
        except subprocess.TimeoutExpired:
            with contextlib.suppress(BrokenPipeError):
                feeder.write(json.dumps(_ragas(999)) + "\n")
                feeder.flush()
    raise AssertionError("the child did not end within 60 s of its signal")


@pytest.mark.parametrize(
    ("sig", "code", "word"), [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_terminated_or_interrupted_conversion_removes_its_partial_file(
    tmp_path: Path, sig: signal.Signals, code: int, word: str
) -> None:
    """The input is a FIFO fed by the test: the conversion is caught mid-way, its partial file open."""
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    proc = subprocess.Popen(
        [EVALCORE, "convert", str(fifo), "-o", str(out), "--to", "openai"], stderr=subprocess.PIPE, text=True
    )
    feeder = None
    try:
        feeder = open(fifo, "w", encoding="utf-8")  # noqa: SIM115  (kept open: the child waits for more)
        feeder.write("".join(json.dumps(_ragas(i)) + "\n" for i in range(50)))
        feeder.flush()
        _wait_for(lambda: _leftovers(tmp_path), 60, "partial file")
        proc.send_signal(sig)
        stderr = _stop_waiting(proc, feeder)
    finally:
        if feeder is not None:
            with contextlib.suppress(BrokenPipeError):
                feeder.close()
        proc.kill()
        proc.communicate()
    assert proc.returncode == code, stderr
    assert word in stderr and "Traceback" not in stderr
    assert _leftovers(tmp_path) == [] and out.read_text() == "previous\n"


# -- exports and their manifests -------------------------------------------------------------


def test_export_to_a_link_a_fifo_and_a_folder(tmp_path: Path, store_db: Path) -> None:
    with open_store(store_db) as store:
        real = tmp_path / "real.jsonl"
        link = tmp_path / "link.jsonl"
        link.symlink_to(real)
        report = export_dataset(store, "d", link, "ragas")
        assert link.is_symlink() and report.count == 60 and report.manifest == str(manifest_path(link))
        assert check_export(link) is None and check_export(real) is not None  # the manifest is the link's
        fifo = tmp_path / "out.fifo"
        os.mkfifo(fifo)
        received: list[bytes] = []
        thread = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
        thread.start()
        try:
            streamed = export_dataset(store, "d", fifo, "ragas")
        finally:
            thread.join(timeout=30)
        assert streamed.manifest is None and not manifest_path(fifo).exists()
        assert len(received[0].splitlines()) == 60 and streamed.sha256 == hashlib.sha256(received[0]).hexdigest()
        with pytest.raises(UsageError, match="is a folder"):
            export_dataset(store, "d", tmp_path, "ragas")
    assert _leftovers(tmp_path) == []


def test_a_manifest_and_its_data_cannot_be_one_file(tmp_path: Path, store_db: Path) -> None:
    data = tmp_path / "a.jsonl"
    data.write_text("old\n")
    manifest_path(data).symlink_to(data)
    with open_store(store_db) as store, pytest.raises(UsageError, match="are the same file"):
        export_dataset(store, "d", data, "ragas")
    assert data.read_text() == "old\n" and _leftovers(tmp_path) == []


def test_the_manifest_carries_the_data_files_digest(tmp_path: Path, store_db: Path) -> None:
    out = tmp_path / "o.jsonl"
    with open_store(store_db) as store:
        report = export_dataset(store, "d", out, "ragas")
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest() == report.sha256
    assert manifest["bytes"] == out.stat().st_size and check_export(out) is None
    out.write_text(out.read_text() + "\n")
    assert "SHA-256 differs" in (check_export(out) or "")
    manifest_path(out).unlink()
    assert "did not finish" in (check_export(out) or "")


def _export(db: Path, out: Path, *extra: str, pause: str | None = None) -> subprocess.Popen[str]:
    """``evalcore export`` of dataset ``d`` as a process; with ``pause``, stopped at that step of putting its files
    in place (``tests/pause_at.py``)."""
    command = [EVALCORE] if pause is None else [sys.executable, str(Path(__file__).parent / "pause_at.py"), pause]
    return subprocess.Popen(
        [*command, "export", "--dataset", "d", "--to", "ragas", "-o", str(out), "--db", str(db), *extra],
        stderr=subprocess.PIPE,
        text=True,
    )


def _invariant(out: Path) -> None:
    """A manifest present describes the data file beside it."""
    where = manifest_path(out)
    if where.exists():
        assert json.loads(where.read_text())["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("point", "after"),
    [("before-publish", "previous"), ("removed-last", "previous data, no manifest"), ("renamed-others", "new data")],
)
def test_a_kill_between_data_and_manifest_never_leaves_a_manifest_of_another_export(
    tmp_path: Path, store_db: Path, point: str, after: str
) -> None:
    """SIGKILL at each step of putting the export in place (the process waits there, told by
    tests/pause_at.py). The old writer left the previous export's manifest beside the new data."""
    out = tmp_path / "o.jsonl"
    first = run("export", "--dataset", "d", "--to", "ragas", "-o", str(out), "--db", str(store_db))
    assert first.returncode == 0, first.stderr
    previous = out.read_bytes()
    assert json.loads(manifest_path(out).read_text())["count"] == 60
    proc = _export(store_db, out, "--status", "approved", pause=point)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and "paused at" not in line:
            line = proc.stderr.readline()
        assert f"paused at {point}" in line
        proc.kill()
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate()
    _invariant(out)
    if after == "previous":
        assert out.read_bytes() == previous and check_export(out) is None
    elif after == "previous data, no manifest":
        assert out.read_bytes() == previous and not manifest_path(out).exists()
    else:
        assert len(out.read_text().splitlines()) == 20 and not manifest_path(out).exists()
        assert "did not finish" in (check_export(out) or "")
    assert _leftovers(tmp_path)  # the killed run's partial file(s)
    again = run(
        "export", "--dataset", "d", "--to", "ragas", "-o", str(out), "--status", "approved", "--db", str(store_db)
    )
    assert again.returncode == 0, again.stderr
    assert _leftovers(tmp_path) == [] and check_export(out) is None
    assert json.loads(manifest_path(out).read_text())["count"] == 20


def test_exports_killed_at_random_moments_keep_manifest_and_data_together(tmp_path: Path) -> None:
    """Exports of 3,000 sessions alternating between two filters, killed (SIGKILL or SIGTERM) at random
    moments: after every kill a manifest present matches the data's SHA-256; after every SIGTERM no
    partial file is left."""
    db = tmp_path / "big.db"
    with open_store(db) as store:
        import_file(store, write_jsonl(tmp_path / "in.jsonl", [_ragas(i) for i in range(3_000)]), "d")
        for pk in store.sessions.pks("d")[::2]:
            own_connection(store).execute("UPDATE sessions SET status = 'approved' WHERE id = ?", [pk])
    out = tmp_path / "o.jsonl"
    started = time.monotonic()
    assert run("export", "--dataset", "d", "--to", "ragas", "-o", str(out), "--db", str(db)).returncode == 0
    whole = time.monotonic() - started
    rng = random.Random(12)
    trials = int(os.environ.get("EVALCORE_KILL_TRIALS", "8"))
    outcomes = {"killed": 0, "finished": 0}
    for trial in range(trials):
        sig = signal.SIGKILL if trial % 2 == 0 else signal.SIGTERM
        before = set(_leftovers(tmp_path))  # what SIGKILLs left: the next run may sweep them
        proc = _export(db, out, *(["--status", "approved"] if trial % 4 < 2 else []))
        try:
            time.sleep(rng.uniform(0.3, 1.1) * whole)
            proc.send_signal(sig)
            proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait()
        outcomes["finished" if proc.returncode == 0 else "killed"] += 1
        _invariant(out)
        if sig == signal.SIGTERM:  # its own partial files removed; none added
            assert set(_leftovers(tmp_path)) <= before, (trial, proc.returncode)
    print(f"random kills: {trials} trials, {outcomes}")
    assert outcomes["killed"] > 0
    assert run("export", "--dataset", "d", "--to", "ragas", "-o", str(out), "--db", str(db)).returncode == 0
    assert _leftovers(tmp_path) == [] and check_export(out) is None


# -- score --output --------------------------------------------------------------------------


def test_score_output_is_written_whole_or_not_at_all(
    tmp_path: Path, store_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalcore.scoring import score_dataset, write_scores_jsonl
    from evalcore.store.runs import Runs

    out = tmp_path / "scores.jsonl"
    with open_store(store_db) as store:
        report = score_dataset(store, "d", ["exact_match"], output=out)
        lines = out.read_text().splitlines()
        assert len(lines) == 60 and _leftovers(tmp_path) == []
        real_scores = Runs.scores

        def failing(self: Runs, run_id: int, *, turns: bool = False) -> Iterator[Any]:
            for n, row in enumerate(real_scores(self, run_id, turns=turns)):
                if n == 30:
                    raise OSError(errno.ENOSPC, "No space left on device")
                yield row

        monkeypatch.setattr(Runs, "scores", failing)
        with pytest.raises(OSError, match="No space"):
            write_scores_jsonl(store, report.run.id, out)
    assert out.read_text().splitlines() == lines and _leftovers(tmp_path) == []


def test_score_output_onto_a_folder_is_refused_before_scoring(tmp_path: Path, store_db: Path) -> None:
    proc = run("score", "--dataset", "d", "--metrics", "exact_match", "--output", str(tmp_path), "--db", str(store_db))
    assert proc.returncode == 2 and "is a folder" in proc.stderr and "Traceback" not in proc.stderr
    with open_store(store_db) as store:
        assert own_connection(store).execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # no run started


def test_publish_puts_the_last_file_in_place_last(tmp_path: Path) -> None:
    data, seal = tmp_path / "d.txt", tmp_path / "d.txt.seal"
    data.write_text("old data")
    seal.write_text("old seal")
    with PendingOutput(data) as a, PendingOutput(seal) as b:
        a.file.write("new data")
        b.file.write("new seal")
        publish(a, b)
    assert data.read_text() == "new data" and seal.read_text() == "new seal" and _leftovers(tmp_path) == []


def test_a_path_that_became_special_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    pending = PendingOutput(out)
    try:
        pending.file.write("data\n")
        os.mkfifo(out)  # made after the path was checked
        with pytest.raises(UsageError, match="no longer a regular file"):
            publish(pending)
    finally:
        pending.discard()
    assert stat.S_ISFIFO(out.lstat().st_mode) and _leftovers(tmp_path) == []


def test_concurrent_exports_to_one_path_leave_a_matching_pair(tmp_path: Path, store_db: Path) -> None:
    """Publications into one folder take turns: whichever export finishes last, its manifest is the one
    beside its data."""
    out = tmp_path / "o.jsonl"
    for _ in range(3):
        procs = [_export(store_db, out), _export(store_db, out, "--status", "approved")]
        try:
            for proc in procs:
                _, stderr = proc.communicate(timeout=120)
                assert proc.returncode == 0, stderr
        finally:
            for proc in procs:
                proc.kill()
                proc.communicate()
        _invariant(out)
        assert check_export(out) is None and _leftovers(tmp_path) == []
