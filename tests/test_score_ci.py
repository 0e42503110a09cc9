"""``evalcore score`` in CI, run as a real process on τ-bench's data imported as two assistants: every scores output
names the assistant and the dataset (the Export page's download the same bytes), ``--fail-under`` gates (pass,
fail, malformed, a metric that applied to nothing), ``--summary-json``, and standard output that holds only JSON
when the scores (or the summary) go there."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from formats_util import write_jsonl

from evalcore.store import open_store
from evalcore.views.export import ScoresDownload

EVALCORE = str(Path(sys.executable).parent / "evalcore")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def tau_db(tmp_path_factory: pytest.TempPathFactory, tau_bench_file: Path) -> Path:
    """τ-bench's 40 airline conversations imported twice, as assistants A and B, into dataset ``tau`` (a template:
    each test scores a copy)."""
    db = tmp_path_factory.mktemp("tau") / "template.db"
    for name in ("A", "B"):
        proc = cli("import", str(tau_bench_file), "--dataset", "tau", "--assistant", name, "--db", str(db))
        assert proc.returncode == 0, proc.stderr
    return db


@pytest.fixture
def db(tau_db: Path, tmp_path: Path) -> str:
    copy = tmp_path / "tau.db"
    shutil.copyfile(tau_db, copy)
    return str(copy)


def score(db: str, *args: str, metrics: str = "tool_call_f1,turn_count") -> subprocess.CompletedProcess[str]:
    return cli("score", "--dataset", "tau", "--metrics", metrics, "--db", db, "--new-run", *args)


def lines_of(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def mean_of(records: list[dict[str, object]], metric: str) -> float:
    values = [float(r["value"]) for r in records if r["metric"] == metric and r["value"] is not None]  # type: ignore[arg-type]
    return math.fsum(values) / len(values)


def test_every_scores_output_names_the_assistant_and_the_dataset(db: str, tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    proc = score(db, "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    records = lines_of(out.read_text())
    assert len(records) == 2 * 80
    assert {r["dataset"] for r in records} == {"tau"}
    by_assistant = {name: [r for r in records if r["assistant_id"] == name] for name in ("A", "B")}
    assert [len(rows) for rows in by_assistant.values()] == [80, 80]
    # One task, two assistants: two rows per metric, told apart by assistant_id.
    task0 = [r for r in records if r["session_id"] == "task-0-trial-0" and r["metric"] == "tool_call_f1"]
    assert sorted(str(r["assistant_id"]) for r in task0) == ["A", "B"]
    assert list(records[0])[:8] == [
        "session_id",
        "assistant_id",
        "dataset",
        "position",
        "metric",
        "value",
        "reason",
        "error",
    ]
    # The Export page's download of the run's scores is the CLI's file, byte for byte; its CSV has the columns too.
    with open_store(db) as store:
        run = store.runs.recent("tau")[0]
        assert ScoresDownload(store, run, "jsonl").data() == out.read_bytes()
        header = ScoresDownload(store, run, "csv").data().split(b"\r\n", 1)[0]
    assert header == b"session_id,assistant_id,dataset,position,metric,value,reason,error,parts,not_applicable"


@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
def test_scores_on_standard_output_leave_it_pure_json_lines(db: str, target: str) -> None:
    proc = score(db, "--output", target)
    assert proc.returncode == 0, proc.stderr
    records = lines_of(proc.stdout)  # every line of standard output is JSON
    assert len(records) == 160 and all(r["dataset"] == "tau" for r in records)
    mean = mean_of(records, "tool_call_f1")
    summary = [line for line in proc.stderr.splitlines() if line.startswith("tool_call_f1: ")]
    assert summary == [next(line for line in summary if line.startswith(f"tool_call_f1: {mean:.3f} ["))]
    assert summary[0].endswith("n=80") and "turn_count: " in proc.stderr


def test_the_summary_stays_on_standard_output_when_the_scores_do_not(db: str, tmp_path: Path) -> None:
    proc = score(db, "--output", str(tmp_path / "s.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tool_call_f1: ") and "turn_count: " in proc.stdout
    assert "tool_call_f1: " not in proc.stderr


def test_fail_under_passes_and_fails_naming_metric_mean_and_floor(db: str, tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    passed = score(db, "--output", str(out), "--fail-under", "tool_call_f1=0.25", "--fail-under", "turn_count=8")
    assert passed.returncode == 0, passed.stderr
    assert "evalcore: fail-under: every floor reached (tool_call_f1 >= 0.25, turn_count >= 8)" in passed.stderr
    records = lines_of(out.read_text())
    f1, turns = mean_of(records, "tool_call_f1"), mean_of(records, "turn_count")
    assert 0.25 <= f1 < 0.5 and 8 <= turns < 100  # (what the floors below rest on)

    failed = score(db, "--fail-under", "tool_call_f1=0.5", "--fail-under", "turn_count=8")
    assert failed.returncode == 1, failed.stderr
    lines = [line for line in failed.stderr.splitlines() if line.startswith("evalcore: fail-under:")]
    assert lines == [f"evalcore: fail-under: tool_call_f1: mean {f1:.6g} is below its floor 0.5"]

    both = score(db, "--fail-under", "tool_call_f1=0.5", "--fail-under", "turn_count=100")
    assert both.returncode == 1
    lines = [line for line in both.stderr.splitlines() if line.startswith("evalcore: fail-under:")]
    assert lines == [
        f"evalcore: fail-under: tool_call_f1: mean {f1:.6g} is below its floor 0.5",
        f"evalcore: fail-under: turn_count: mean {turns:.6g} is below its floor 100",
    ]


def test_a_floor_names_a_metric_by_its_key_or_its_name(db: str) -> None:
    specs = "string_similarity:measure=jaro,string_similarity:measure=jaro_winkler"
    # (τ-bench sessions have no reference answer: string similarity applies to none of them)
    proc = score(db, "--fail-under", "string_similarity:measure=jaro=0", metrics=specs)
    assert proc.returncode == 1
    assert (
        "evalcore: fail-under: string_similarity:measure=jaro: no mean (applied to no session), below its floor 0"
    ) in proc.stderr
    ambiguous = score(db, "--fail-under", "string_similarity=0", metrics=specs)
    assert ambiguous.returncode == 2 and "which is 2 metrics here" in ambiguous.stderr


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("tool_call_f1", "wants METRIC=X"),
        ("=0.8", "wants METRIC=X"),
        ("tool_call_f1=", "the floor '' is not a number"),
        ("tool_call_f1=high", "the floor 'high' is not a number"),
        ("tool_call_f1=nan", "the floor must be a finite number"),
        ("tool_call_f1=inf", "the floor must be a finite number"),
    ],
)
def test_a_malformed_floor_is_a_usage_error_before_anything_runs(db: str, given: str, said: str) -> None:
    proc = score(db, "--fail-under", given)
    assert proc.returncode == 2, proc.stderr
    assert "--fail-under" in proc.stderr and said in proc.stderr and "Traceback" not in proc.stderr
    with open_store(db) as store:
        assert [r for r in store.runs.recent("tau") if not r.imported] == []  # (the rewards came with the data)


def test_a_floor_on_a_metric_not_scored_is_a_usage_error(db: str) -> None:
    proc = score(db, "--fail-under", "exact_match=0.5")
    assert proc.returncode == 2
    assert "--fail-under names 'exact_match', which this command does not score" in proc.stderr
    with open_store(db) as store:
        assert [r for r in store.runs.recent("tau") if not r.imported] == []  # (the rewards came with the data)


def test_a_metric_that_applied_to_nothing_says_so_and_fails_its_floor(tmp_path: Path) -> None:
    db = str(tmp_path / "n.db")
    sessions = [
        {"schema_version": 1, "session_id": f"s{i}", "messages": [{"role": "user", "content": "hi"}]} for i in range(3)
    ]
    assert cli("import", str(write_jsonl(tmp_path / "n.jsonl", sessions)), "--dataset", "n", "--db", db).returncode == 0
    plain = cli("score", "--dataset", "n", "--metrics", "tool_call_f1,turn_count", "--db", db)
    assert plain.returncode == 0, plain.stderr  # no floor: said, not failed
    assert "tool_call_f1: applied to no session (all 3 not applicable)" in plain.stdout.splitlines()
    summary = tmp_path / "summary.json"
    gated = cli(
        "score", "--dataset", "n", "--metrics", "tool_call_f1,turn_count", "--db", db,
        "--fail-under", "tool_call_f1=0", "--summary-json", str(summary),
    )  # fmt: skip
    assert gated.returncode == 1
    assert "evalcore: fail-under: tool_call_f1: no mean (applied to no session), below its floor 0" in gated.stderr
    document = json.loads(summary.read_text())
    [f1] = [m for m in document["metrics"] if m["metric"] == "tool_call_f1"]
    assert (f1["applied"], f1["not_applicable"], f1["mean"], f1["below_floor"]) == (0, 3, None, True)
    assert document["below_floor"] == ["tool_call_f1"] and document["exit_code"] == 1


def test_summary_json_describes_the_run(db: str, tmp_path: Path) -> None:
    out, summary = tmp_path / "s.jsonl", tmp_path / "summary.json"
    proc = score(db, "--output", str(out), "--summary-json", str(summary), "--fail-under", "tool_call_f1=0.5")
    assert proc.returncode == 1
    assert f"summary written to {summary}" in proc.stderr
    document = json.loads(summary.read_text())
    records = lines_of(out.read_text())
    with open_store(db) as store:
        run = store.runs.recent("tau")[0]
    assert {k: document[k] for k in ("schema", "dataset", "run", "status", "resumed", "sessions")} == {
        "schema": "evalcore.score-summary/1", "dataset": "tau", "run": run.id, "status": "done", "resumed": False,
        "sessions": 80,
    }  # fmt: skip
    assert document["scores_output"] == str(out) and document["judge_model"] is None
    assert [m["metric"] for m in document["metrics"]] == ["tool_call_f1", "turn_count"]
    for entry in document["metrics"]:
        rows = [r for r in records if r["metric"] == entry["metric"]]
        assert entry["sessions"] == len(rows) == 80
        assert (
            entry["applied"] == sum(1 for r in rows if not r.get("not_applicable")) == entry["scored"] + entry["failed"]
        )
        assert entry["failed"] == sum(1 for r in rows if r["error"] is not None) == 0
        assert entry["mean"] == pytest.approx(mean_of(records, entry["metric"]), abs=1e-12)
        assert entry["ci_low"] <= entry["mean"] <= entry["ci_high"]
    f1, turns = document["metrics"]
    assert (f1["floor"], f1["below_floor"], turns["floor"], turns["below_floor"]) == (0.5, True, None, None)
    assert document["below_floor"] == ["tool_call_f1"] and document["exit_code"] == proc.returncode == 1


def test_summary_json_on_standard_output_is_the_only_thing_there(db: str, tmp_path: Path) -> None:
    proc = score(db, "--output", str(tmp_path / "s.jsonl"), "--summary-json", "-")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)  # all of standard output is the one document
    assert document["exit_code"] == 0 and document["below_floor"] == []
    assert "tool_call_f1: " in proc.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--output", "-", "--summary-json", "/dev/stdout"], "name the same place"),
        (["--output", "same.json", "--summary-json", "same.json"], "name the same place"),
        (["--summary-json", "no/such/folder/s.json"], "does not exist"),
    ],
)
def test_outputs_are_checked_before_the_run(db: str, tmp_path: Path, args: list[str], said: str) -> None:
    args = [str(tmp_path / a) if a.startswith(("same", "no/")) else a for a in args]
    proc = score(db, *args)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    with open_store(db) as store:
        assert [r for r in store.runs.recent("tau") if not r.imported] == []  # (the rewards came with the data)
