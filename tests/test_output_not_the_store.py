"""No output may ever be the database or one of its files, however it is named (issue 23, item 0): every command
that writes a file refuses it with exit 2 and leaves the store exactly as it was."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from evalcore.errors import UsageError
from evalcore.exporting import export_dataset
from evalcore.importing import import_file
from evalcore.scoring import score_dataset, write_scores_jsonl
from evalcore.store import open_store

ROOT = Path(__file__).resolve().parent.parent
EVALCORE = str(Path(sys.executable).parent / "evalcore")


def _digest(db: Path) -> dict[str, str]:
    return {
        suffix: hashlib.sha256(Path(f"{db}{suffix}").read_bytes()).hexdigest()
        for suffix in ("", "-wal", "-shm")
        if Path(f"{db}{suffix}").exists()
    }


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with open_store(path) as store:
        import_file(store, ROOT / "sample_data" / "ragas.jsonl", "d", workers=1)
        score_dataset(store, "d", ["turn_count"])
    return path


def _names(db: Path) -> dict[str, Callable[[], str]]:
    """Ways of naming the database or one of its files, each made when asked for."""

    def link(target: str, name: str) -> str:
        path = db.parent / name
        if not path.is_symlink():
            path.symlink_to(target)
        return str(path)

    def hard(name: str) -> str:
        path = db.parent / name
        if not path.exists():
            os.link(db, path)
        return str(path)

    return {
        "the file": lambda: str(db),
        "its -wal": lambda: f"{db}-wal",
        "its -shm": lambda: f"{db}-shm",
        "another spelling": lambda: str(db.parent / "sub" / ".." / db.name),
        "a relative path": lambda: os.path.relpath(db),
        "a symbolic link": lambda: link(str(db), "link.jsonl"),
        "a link to its -wal": lambda: link(f"{db}-wal", "wal-link.jsonl"),
        "a hard link": lambda: hard("hard.jsonl"),
    }


@pytest.mark.parametrize("how", list(_names(Path("x"))))
def test_export_and_score_refuse_an_output_that_is_the_database(db: Path, how: str) -> None:
    (db.parent / "sub").mkdir(exist_ok=True)
    before = _digest(db)
    out = _names(db)[how]()
    for command in (
        ["export", "--dataset", "d", "--to", "ragas", "-o", out, "--db", str(db)],
        ["score", "--dataset", "d", "--metrics", "turn_count", "--output", out, "--db", str(db)],
        ["score", "--dataset", "d", "--metrics", "turn_count", "--output", out, "--db", f"sqlite:///{db}"],
    ):
        proc = subprocess.run([EVALCORE, *command], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "is the database" in proc.stderr and "Traceback" not in proc.stderr
        assert _digest(db) == before, command
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 5
    conn.close()


def test_an_export_whose_manifest_would_be_the_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "out.jsonl.manifest.json"  # (a store named as an export's manifest would be)
    with open_store(db) as store:
        import_file(store, ROOT / "sample_data" / "ragas.jsonl", "d", workers=1)
    before = _digest(db)
    proc = subprocess.run(
        [EVALCORE, "export", "--dataset", "d", "--to", "ragas", "-o", str(tmp_path / "out.jsonl"), "--db", str(db)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "is the database" in proc.stderr
    assert _digest(db) == before and not (tmp_path / "out.jsonl").exists()


def test_convert_never_writes_over_the_default_store(db: Path, tmp_path: Path) -> None:
    before = _digest(db)
    proc = subprocess.run(
        [EVALCORE, "convert", str(ROOT / "sample_data" / "ragas.jsonl"), "-o", "store.db", "--to", "ragas"],
        capture_output=True, text=True, timeout=120, cwd=db.parent, env={**os.environ, "EVALCORE_DB": str(db)},
    )  # fmt: skip
    assert proc.returncode == 2 and "is the database" in proc.stderr
    assert _digest(db) == before


def test_the_library_refuses_it_too(db: Path) -> None:
    with open_store(db) as store:
        before = _digest(db)
        with pytest.raises(UsageError, match="is the database"):
            export_dataset(store, "d", db, "ragas")
        with pytest.raises(UsageError, match="is the database"):
            write_scores_jsonl(store, store.runs.recent("d")[0].id, f"{db}-wal")
        assert store.datasets.get("d").sessions == 5
    assert _digest(db)[""] == before[""]  # (closing the store took its -wal and -shm away: they were empty)
