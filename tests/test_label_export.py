"""``evalcore export-labels``: every submitted answer and the gold of a dataset, as JSON Lines or CSV, with a
manifest — through the command line on both engines, and the same bytes the app's download gets."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbutil import as_user
from formats_util import write_jsonl

from evalcore.errors import PermissionDeniedError
from evalcore.importing import import_file
from evalcore.label_export import LABEL_COLUMNS, export_labels, label_bytes
from evalcore.store import Store, open_store
from evalcore.store.questions import QuestionDef

EVALCORE = str(Path(sys.executable).parent / "evalcore")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


def _labelled(store: Store, tmp_path: Path) -> None:
    """Two sessions of two turns; ann and bob answer, bob leaves a draft, ada settles one question."""
    records = [
        {"schema_version": 1, "session_id": f"t{i}", "assistant_id": "bot-a",
         "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                      {"role": "user", "content": "bye"}, {"role": "assistant", "content": "=1+1"}]}
        for i in range(2)
    ]  # fmt: skip
    admin = as_user(store, "admin")
    import_file(admin, write_jsonl(tmp_path / "d.jsonl", records), "d")
    a, b = store.sessions.pks("d")
    resolved = admin.questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    issues = admin.questions.define("d", QuestionDef("Issues", "multi", options=("tone", "tool")))
    why = admin.questions.define("d", QuestionDef("Why", "text", level="turn"))
    ann, bob = as_user(store, "ann", "reviewer"), as_user(store, "bob", "reviewer")
    ann.answers.save_draft(a, resolved.id, "yes")
    ann.answers.save_draft(a, issues.id, ["tool", "tone"])
    ann.answers.save_draft(a, why.id, "=SUM(A1)", turn=1)
    ann.answers.submit(a)
    bob.answers.save_draft(a, resolved.id, "no")
    bob.answers.submit(a)
    bob.answers.save_draft(b, resolved.id, "yes")  # a draft: not exported
    as_user(store, "ada", "admin").answers.set_gold(a, resolved.id, "no")


def test_labels_as_json_lines_and_csv_from_the_command_line(store: Store, store_url: str, tmp_path: Path) -> None:
    _labelled(store, tmp_path)
    out = tmp_path / "labels.jsonl"
    done = subprocess.run([EVALCORE, "export-labels", "--dataset", "d", "-o", str(out), "--db", store_url],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "5 answers and gold of 'd' written to" in done.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(list(r) == list(LABEL_COLUMNS) for r in rows)
    assert [(r["session_id"], r["turn"], r["question"], r["value"], r["user"], r["status"]) for r in rows] == [
        ("t0", None, "Resolved?", "yes", "ann", "submitted"),
        ("t0", None, "Resolved?", "no", "bob", "submitted"),
        ("t0", None, "Resolved?", "no", "ada", "gold"),
        ("t0", None, "Issues", ["tone", "tool"], "ann", "submitted"),
        ("t0", 1, "Why", "=SUM(A1)", "ann", "submitted"),
    ]
    assert all(r["assistant_id"] == "bot-a" and r["question_version"] == 1 and r["at"] for r in rows)
    manifest = json.loads((tmp_path / "labels.jsonl.manifest.json").read_text())
    assert (manifest["format"], manifest["count"], manifest["dataset"]) == ("labels-jsonl", 5, "d")
    assert manifest["exported_by"]["name"]
    assert out.read_bytes() == label_bytes(store, "d")[0]  # what the app's download holds

    csv_out = tmp_path / "labels.csv"
    done = subprocess.run([EVALCORE, "export-labels", "--dataset", "d", "-o", str(csv_out), "--db", store_url],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = list(csv.reader(io.StringIO(csv_out.read_text(encoding="utf-8"))))
    assert table[0] == list(LABEL_COLUMNS) and len(table) == 6
    assert table[4][4] == '["tone", "tool"]' and table[5][4] == "'=SUM(A1)"  # a formula opens as text
    assert table[1][2] == "" and table[5][2] == "1"
    assert csv_out.read_bytes() == label_bytes(store, "d", as_csv=True)[0]


def test_labels_export_errors(store: Store, store_url: str, tmp_path: Path) -> None:
    _labelled(store, tmp_path)
    with pytest.raises(PermissionDeniedError):
        export_labels(as_user(store, "ann", "reviewer"), "d", tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()
    done = subprocess.run([EVALCORE, "export-labels", "--dataset", "nope", "-o", str(tmp_path / "y.jsonl"),
                           "--db", store_url], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "no dataset named 'nope'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "y.jsonl").exists()
