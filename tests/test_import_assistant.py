"""``import --assistant NAME`` (and the library's ``assistant=``, and the Datasets page's "Assistant" field): every
session imported is that assistant's, whatever the file or its name says, and the assistant is part of the
session's identity, so that two assistants' runs of the same tasks, imported from two files, are two sets."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    app,
    db_fixture,
    person,
    run,
    shop_sessions,
    store_fixture,
    template_db_fixture,
    texts,
)
from formats_util import write_jsonl

from evalcore.background import wait_for
from evalcore.errors import UsageError
from evalcore.importing import import_file, import_stream
from evalcore.store import Store, open_store

EVALCORE = str(Path(sys.executable).parent / "evalcore")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=120)


def assistants(store: Store, dataset: str) -> dict[str | None, int]:
    """How many sessions of ``dataset`` each assistant has."""
    counts: dict[str | None, int] = {}
    for pk in store.sessions.pks(dataset):
        name = store.sessions.get(pk).session.assistant_id
        counts[name] = counts.get(name, 0) + 1
    return counts


def test_import_assistant_overrides_the_file_names_convention(tmp_path: Path, tau_bench_file: Path) -> None:
    """τ-bench's file name says "gpt-4o"; --assistant says otherwise, and a second assistant's import of the same
    tasks adds sessions beside the first's instead of replacing them."""
    db = str(tmp_path / "a.db")
    proc = cli("import", str(tau_bench_file), "--dataset", "plain", "--db", db)
    assert proc.returncode == 0, proc.stderr
    proc = cli("import", str(tau_bench_file), "--dataset", "ab", "--assistant", "agent-A", "--db", db)
    assert proc.returncode == 0, proc.stderr
    assert "-> dataset 'ab' as assistant 'agent-A'" in proc.stderr and "40 new, 0 updated" in proc.stderr
    proc = cli("import", str(tau_bench_file), "--dataset", "ab", "--assistant", "agent-B", "--db", db)
    assert "40 new, 0 updated, 0 unchanged" in proc.stderr, proc.stderr
    again = cli("import", str(tau_bench_file), "--dataset", "ab", "--assistant", "agent-A", "--db", db)
    assert "0 new, 0 updated, 40 unchanged" in again.stderr, again.stderr
    with open_store(db) as store:
        assert assistants(store, "plain") == {"gpt-4o": 40}  # the file's name, without --assistant
        assert assistants(store, "ab") == {"agent-A": 40, "agent-B": 40}


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_assistant_is_a_usage_error(tmp_path: Path, tau_bench_file: Path, name: str) -> None:
    db = tmp_path / "a.db"
    proc = cli("import", str(tau_bench_file), "--dataset", "d", "--assistant", name, "--db", str(db))
    assert proc.returncode == 2 and "--assistant: an assistant needs a name" in proc.stderr
    assert "Traceback" not in proc.stderr and not db.exists()
    with open_store(tmp_path / "b.db") as store, pytest.raises(UsageError, match="assistant's name is empty"):
        import_file(store, tau_bench_file, "d", assistant=" ")


def test_the_session_s_own_assistant_is_replaced_in_every_reading_path(tmp_path: Path) -> None:
    """Sessions that name their own assistant (bot-a, bot-b) all become the one given: read here, read by the
    second process (workers > 1), and read from a stream (an upload)."""
    source = write_jsonl(tmp_path / "shop.jsonl", [{"schema_version": 1, **s} for s in shop_sessions()[:6]])
    with open_store(tmp_path / "a.db") as store:
        import_file(store, source, "own", workers=1)
        assert assistants(store, "own") == {"bot-a": 3, "bot-b": 3}
        report = import_file(store, source, "here", workers=1, assistant="bot-z")
        assert report.new == 6 and assistants(store, "here") == {"bot-z": 6}
        report = import_file(store, source, "process", workers=2, assistant="bot-z")  # the reader process's path
        assert report.new == 6 and assistants(store, "process") == {"bot-z": 6}
        data = source.read_bytes()
        report = import_stream(store, io.BytesIO(data), "up.jsonl", "stream", size=len(data), assistant="bot-y")
        assert report.new == 6 and assistants(store, "stream") == {"bot-y": 6}


def test_the_upload_form_s_assistant_field(db: Path, store: Store) -> None:
    data = "".join(json.dumps({"schema_version": 1, **s}) + "\n" for s in shop_sessions()[:4]).encode()
    at = run(app(dataset="shop"))
    person(at, "ann", "admin")
    at.file_uploader(key="upload").upload("mine.jsonl", data, "application/json")
    run(at)
    at.selectbox(key="import_target").select("+ new dataset")
    run(at)
    at.text_input(key="import_new_name").input("mine")
    at.text_input(key="import_assistant").input("  candidate-7 ")
    run(at)
    at.button(key="import").click()
    run(at)
    job = next(j for j in store.jobs.recent("mine") if j.kind == "import")
    assert wait_for(store, job.id).status == "done"
    assert assistants(store, "mine") == {"candidate-7": 4}  # (what was typed, its spaces trimmed)
    # Left empty, each session keeps its own.
    at.file_uploader(key="upload").upload("again.jsonl", data, "application/json")
    run(at)
    at.selectbox(key="import_target").select("+ new dataset")
    run(at)
    at.text_input(key="import_new_name").input("own")
    at.text_input(key="import_assistant").input("")
    run(at)
    at.button(key="import").click()
    run(at)
    job = next(j for j in store.jobs.recent("own") if j.kind == "import")
    assert wait_for(store, job.id).status == "done"
    assert assistants(store, "own") == {"bot-a": 2, "bot-b": 2}
    assert not [t for t in texts(at, "error") if "Something went wrong" in t]
