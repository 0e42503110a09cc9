"""Exports made in memory or into any stream (for the app's downloads) are, byte for byte, the files
``evalcore export`` writes: the real command line is run as a process on the same SQLite file.

Also: the manifest of a download (its SHA-256, count, size and filters), the preview, the
equivalent command line the page shows (run for real), and a run's scores as JSON Lines and CSV.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from apptest_util import XSS, shop_sessions, write_jsonl
from dbutil import as_user

from evalcore.errors import NotFoundError, UsageError
from evalcore.exporting import ExportStream, export_dataset, manifest_path, scores_csv, scores_jsonl
from evalcore.importing import import_file
from evalcore.scoring import score_dataset, write_scores_jsonl
from evalcore.store import Store, open_store
from evalcore.store.queries import SessionFilter
from evalcore.views.export import (
    ExportDownload,
    ScoresDownload,
    cli_command,
    download_name,
    export_preview,
)
from evalcore.views.sessions import page_filter

EVALCORE = str(Path(sys.executable).parent / "evalcore")
ODD = "line\u2028separator \u0085 next-line, emoji \U0001f600, accents éü, NUL-free\ttab"


def _long_sessions() -> list[dict[str, Any]]:
    """400 sessions of about 700 bytes each (more than one 64 KiB chunk), one with odd characters
    and hostile markup; every fifth approved, every seventh tagged ``t7``."""
    sessions = []
    for i in range(400):
        text = ODD + " " + " ".join(XSS) if i == 3 else f"long question {i} " + "lorem ipsum " * 50
        sessions.append({
            "session_id": f"long-{i:03d}",
            "assistant_id": "bot-x" if i % 2 else "bot-y",
            "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": f"answer {i}"}],
            "tags": ["t7"] if i % 7 == 0 else [],
            "status": "approved" if i % 5 == 0 else "todo",
            "reference": f"reference {i}",
        })  # fmt: skip
    return sessions


def _system_prompt_sessions() -> list[dict[str, Any]]:
    """Six sessions; the first three with a system prompt saying "vouchers", the others with none."""
    return [
        {
            "session_id": f"sys-{i}",
            "messages": [
                *([{"role": "system", "content": "Policy: vouchers after three hours."}] if i < 3 else []),
                {"role": "user", "content": f"Question {i}: a voucher?" if i == 5 else f"Question {i}"},
                {"role": "assistant", "content": "Yes."},
            ],
        }
        for i in range(6)
    ]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file with ``shop`` (30 sessions, scored by turn_count in run 1), ``long`` (400), and
    a reviewer's edit of a reference (the curated ground truth an export carries)."""
    folder = tmp_path_factory.mktemp("export")
    path = folder / "export.db"
    with open_store(path) as store:
        import_file(store, write_jsonl(folder / "shop.jsonl", shop_sessions()), "shop", workers=1)
        import_file(store, write_jsonl(folder / "long.jsonl", _long_sessions()), "long", workers=1)
        import_file(store, write_jsonl(folder / "sys.jsonl", _system_prompt_sessions()), "sys", workers=1)
        score_dataset(store, "shop", ["turn_count"])
        pk = store.sessions.find("shop", "shop-04")
        change = {"reference": "Edited by a reviewer: <b>bold</b>"}
        as_user(store, "ann").sessions.save(pk, change, base_version=store.sessions.get(pk).version)
    return path


@pytest.fixture
def store(db: Path) -> Any:
    with open_store(db) as s:
        yield s


def _cli(db: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [EVALCORE, "export", "--db", str(db), "-o", str(out), *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc


# (dataset, format, file suffix, CLI filter options, the same filter as the page makes it)
CASES: list[tuple[str, str, str, list[str], dict[str, Any]]] = [
    ("long", "evalcore", ".jsonl", [], {}),
    ("long", "openai", ".json", ["--status", "approved"], {"status": ["approved"]}),
    ("long", "ragas", ".jsonl", ["--tag", "t7", "--assistant", "bot-y"], {"tags": ["t7"], "assistant": "bot-y"}),
    ("long", "databricks", ".jsonl", ["--search", "lorem question"], {"search": "lorem question"}),
    ("shop", "gaussia", ".jsonl", ["--run", "1", "--metric", "turn_count", "--min-score", "2"],
     {"run_id": 1, "metric": "turn_count", "min_score": 2.0}),
    ("shop", "open-responses", ".json", ["--status", "approved,flagged", "--tag", "refund"],
     {"status": ["approved", "flagged"], "tags": ["refund"]}),
    ("shop", "evalcore", ".jsonl", ["--search", "nowhere"], {"search": "nowhere"}),  # empty
    ("sys", "evalcore", ".jsonl", ["--search", "voucher*"], {"search": "voucher*"}),  # 1: not the system prompt
    ("sys", "openai", ".jsonl", ["--search", "voucher*", "--search-system-prompt"],
     {"search": "voucher*", "search_system_prompt": True}),  # 4: the system prompt too
]  # fmt: skip


@pytest.mark.parametrize(("dataset", "to", "suffix", "options", "page"), CASES, ids=[f"{c[1]}{c[2]}" for c in CASES])
def test_streamed_bytes_are_the_cli_file(
    db: Path, store: Store, tmp_path: Path, dataset: str, to: str, suffix: str, options: list[str], page: dict[str, Any]
) -> None:
    out = tmp_path / f"cli{suffix}"
    _cli(db, out, "--dataset", dataset, "--to", to, *options)
    written = out.read_bytes()
    cli_manifest = json.loads(manifest_path(out).read_text())
    filters = page_filter(**page)
    array = suffix == ".json"

    streamed = ExportStream(store, dataset, to, filters, array=array)
    assert streamed.read_all() == written
    assert (streamed.count, streamed.size, streamed.sha256) == (
        cli_manifest["count"], len(written), hashlib.sha256(written).hexdigest(),
    )  # fmt: skip
    sink = io.BytesIO()
    assert ExportStream(store, dataset, to, filters, array=array).write_to(sink) == cli_manifest["count"]
    assert sink.getvalue() == written

    download = ExportDownload(store, dataset, to, filters, array=array)
    assert download.data() == written
    manifest = json.loads(download.manifest())
    assert manifest["sha256"] == cli_manifest["sha256"] == hashlib.sha256(written).hexdigest()
    assert manifest["file"] == download.file_name == download_name(dataset, to, array=array)
    same = ("dataset", "format", "filters", "count", "bytes", "store_schema_version", "session_schema_version")
    assert {k: manifest[k] for k in same} == {k: cli_manifest[k] for k in same}
    if dataset == "sys":
        assert cli_manifest["count"] == (4 if "--search-system-prompt" in options else 1)
        command = cli_command(dataset, to, filters, out.name) or ""
        words = ["evalcore", "export", "--dataset", dataset, "--to", to, "-o", out.name, *options]
        assert shlex.split(command) == words


def test_large_exports_come_in_several_chunks(store: Store) -> None:
    chunks = list(ExportStream(store, "long", "evalcore"))
    assert len(chunks) >= 4 and all(len(c) >= 1 << 16 for c in chunks[:-1])
    assert b"".join(chunks).count(b"\n") == 400


def test_the_page_command_line_writes_the_same_file(db: Path, store: Store, tmp_path: Path) -> None:
    """The command the page shows, run as it is shown (in the output's folder), writes the download."""
    filters = page_filter(status=["approved"], tags=["t7"], search="lorem*", run_id=None)
    download = ExportDownload(store, "long", "ragas", filters)
    command = cli_command("long", "ragas", filters, download.file_name)
    assert command is not None
    words = shlex.split(command)
    assert words[:2] == ["evalcore", "export"]
    proc = subprocess.run([EVALCORE, *words[1:], "--db", str(db)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / download.file_name).read_bytes()
    assert written and written == download.data()
    scored = page_filter(run_id=1, metric="turn_count", min_score=1.5, max_score=3.0)
    assert "--run 1 --metric turn_count --min-score 1.5 --max-score 3.0" in str(
        cli_command("shop", "openai", scored, "x")
    )
    assert cli_command("shop", "openai", page_filter(truth="present"), "x") is None  # no CLI option for it


def test_the_manifest_describes_the_file_downloaded_last(store: Store, db: Path) -> None:
    """Downloaded first, the data fixes the manifest; a change in the store after it does not change
    the manifest of that file. Asked for before any data, the manifest describes the export as it is."""
    filters = SessionFilter(status=["approved"])
    first = ExportDownload(store, "shop", "evalcore", filters)
    before = json.loads(first.manifest())
    body = first.data()
    assert json.loads(first.manifest())["sha256"] == hashlib.sha256(body).hexdigest() == before["sha256"]
    with open_store(db) as other:  # another reviewer approves one more session
        pk = other.sessions.find("shop", "shop-20")
        as_user(other, "bob").sessions.set_status(pk, "approved", base_version=other.sessions.get(pk).version)
    try:
        assert json.loads(first.manifest())["sha256"] == hashlib.sha256(body).hexdigest()  # the file downloaded
        again = first.data()
        assert again != body and json.loads(first.manifest())["count"] == before["count"] + 1
    finally:
        with open_store(db) as other:
            as_user(other, "bob").sessions.set_status(pk, "todo", base_version=other.sessions.get(pk).version)


def test_edited_ground_truth_is_exported(store: Store) -> None:
    body = ExportStream(store, "shop", "evalcore", SessionFilter(search="shop 4")).read_all().decode()
    assert "Edited by a reviewer: <b>bold</b>" in body


def test_preview_counts_and_shows_the_first_records_literally(store: Store) -> None:
    preview = export_preview(store, "long", "openai", SessionFilter(), limit=5)
    assert preview.count == 400 and len(preview.records) == 5
    assert json.loads(preview.records[0])["messages"][0]["content"].startswith("long question 0")
    odd = json.loads(preview.records[3])  # one record, though it holds U+2028 and U+0085
    assert ODD in odd["messages"][0]["content"] and XSS[0] in preview.records[3]
    # Shown as JSON's escapes (the same JSON), never applied: U+2028 breaks no line, a bidi control reorders nothing.
    assert "\u2028" not in preview.records[3] and "\\u2028" in preview.records[3]
    assert "The first 5 records of the file (400 sessions)" in preview.caption
    short = export_preview(store, "long", "evalcore", SessionFilter(), limit=1, max_lines=6)
    assert short.records[0].count("\n") == 6 and "more lines in the file" in short.records[0]
    empty = export_preview(store, "shop", "ragas", SessionFilter(search="nowhere"))
    assert empty.count == 0 and empty.records == [] and "No session matches" in empty.caption
    one = export_preview(store, "shop", "ragas", SessionFilter(search="zebra"))
    assert one.count == 1 and "The first record of the file (1 session)" in one.caption


def test_unknown_and_bad_exports_are_refused_with_a_reason(store: Store) -> None:
    with pytest.raises(NotFoundError):
        ExportStream(store, "nope", "evalcore")
    with pytest.raises(UsageError, match="read-only"):
        ExportStream(store, "shop", "langchain")
    with pytest.raises(NotFoundError, match="no run #99"):
        ExportDownload(store, "shop", "evalcore", SessionFilter(run_id=99, metric="m"))
    with pytest.raises(UsageError, match="needs a run and a metric"):
        page_filter(min_score=1.0)
    with pytest.raises(UsageError, match="ground truth"):
        page_filter(truth="maybe")
    with pytest.raises(UsageError, match="limit"):
        ExportStream(store, "shop", "evalcore", limit=-1)
    stream = ExportStream(store, "shop", "evalcore")
    stream.read_all()
    with pytest.raises(UsageError, match="read once"):
        stream.read_all()
    with pytest.raises(UsageError, match="unknown status"):
        ExportStream(store, "shop", "evalcore", SessionFilter(status=["done"])).read_all()


def test_download_names_are_safe_file_names() -> None:
    assert download_name("shop", "openai") == "shop.openai.jsonl"
    assert download_name("shop", "openai", array=True) == "shop.openai.json"
    assert download_name("../../etc/passwd <x>", "ragas") == "etc-passwd-x.ragas.jsonl"
    assert download_name("...", "ragas") == "export.ragas.jsonl"


def test_the_file_export_still_puts_its_manifest_beside_it(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    report = export_dataset(store, "long", out, "openai", SessionFilter(tags=["t7"]))
    assert report.count == 58 and out.read_bytes().startswith(b"[\n{")
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest() and manifest["file"] == "o.json"


# -- a run's scores -------------------------------------------------------------------------------


def test_scores_jsonl_is_what_write_scores_jsonl_writes(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    n = write_scores_jsonl(store, 1, out)
    assert n == 30 and scores_jsonl(store, 1) == out.read_bytes()
    run = store.runs.get(1)
    assert ScoresDownload(store, run, "jsonl").data() == out.read_bytes()


def test_scores_csv_has_the_same_rows(store: Store) -> None:
    run = store.runs.get(1)
    download = ScoresDownload(store, run, "csv")
    assert download.file_name == "shop.run-1.scores.csv" and download.mime == "text/csv"
    rows = list(csv.DictReader(io.StringIO(download.data().decode("utf-8"))))
    lines = [json.loads(line) for line in scores_jsonl(store, 1).decode().splitlines()]
    assert len(rows) == len(lines) == 30
    assert list(rows[0]) == [
        "session_id", "assistant_id", "dataset", "position", "metric", "value", "reason", "error", "parts",
        "not_applicable",
    ]  # fmt: skip
    for row, line in zip(rows, lines, strict=True):
        assert row["session_id"] == line["session_id"] and row["metric"] == line["metric"]
        assert row["assistant_id"] == line["assistant_id"] in ("bot-a", "bot-b") and row["dataset"] == "shop"
        assert float(row["value"]) == line["value"] and int(row["position"]) == line["position"]
        assert row["not_applicable"] == ("true" if line.get("not_applicable") else "")
    assert scores_csv(store, 1).startswith(
        b"session_id,assistant_id,dataset,position,metric,value,reason,error,parts,not_applicable\r\n"
    )
    with pytest.raises(NotFoundError):
        scores_csv(store, 99)
    with pytest.raises(UsageError, match="scores format"):
        ScoresDownload(store, run, "xlsx")


def test_scores_csv_opens_formulas_as_text_and_jsonl_keeps_them(tmp_path: Path) -> None:
    from evalcore.metrics import MetricResult
    from evalcore.scoring import save_results

    hostile = ['=HYPERLINK("http://evil.example","click")', "+1+2", "-2+3", "@SUM(A1)", "\tlead", "plain = fine"]
    with open_store(tmp_path / "f.db") as store:
        shop = write_jsonl(tmp_path / "shop.jsonl", shop_sessions()[: len(hostile)])
        import_file(store, shop, "shop", workers=1, assistant="=cmd|' /C calc'!A0")  # an assistant's name too
        runs = store.runs
        run = runs.create("shop", ["judge"], {})
        pks = [pk for pk, _ in runs.sessions(list(range(1, len(hostile) + 1)))]
        save_results(
            store,
            run.id,
            [(pk, "judge", MetricResult("judge", None, 0.5, reason)) for pk, reason in zip(pks, hostile, strict=True)],
        )
        rows = list(csv.reader(io.StringIO(scores_csv(store, run.id).decode("utf-8"))))[1:]
        assert [row[6] for row in rows] == ["'" + r for r in hostile[:5]] + ["plain = fine"]
        assert all(row[5] == "0.5" for row in rows)  # numbers are numbers
        assert {row[1] for row in rows} == {"'=cmd|' /C calc'!A0"} and {row[2] for row in rows} == {"shop"}
        lines = [json.loads(line) for line in scores_jsonl(store, run.id).decode().splitlines()]
        assert [line["reason"] for line in lines] == hostile
        assert {line["assistant_id"] for line in lines} == {"=cmd|' /C calc'!A0"}
