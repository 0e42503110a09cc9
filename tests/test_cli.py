"""The evalcore command line, run as a real process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from formats_util import load_output, write_jsonl

EVALCORE = str(Path(sys.executable).parent / "evalcore")

GOOD = {"user_input": [{"content": "hi", "type": "human"}, {"content": "hello", "type": "ai"}], "reference": "greet"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=120)


def test_convert_reports_bad_records_and_keeps_good_ones(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    lines = [
        json.dumps(GOOD),
        '{"user_input": [{"content": "hi", "type": "human"}',  # broken JSON
        json.dumps({"user_input": [{"content": "x", "type": "robot"}]}),  # unknown message type
        json.dumps({"user_input": [{"content": "hi", "type": "human"}, {"content": "r", "type": "tool"}]}),
        json.dumps({"user_input": [GOOD["user_input"][0], GOOD["user_input"][1], {"content": "r", "type": "tool"}]}),
        json.dumps(GOOD),
    ]
    source.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    proc = run("convert", str(source), "-o", str(out), "--to", "openai")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if ": warning: " not in line]
    # What openai has no place for is said, on each record written: never dropped silently.
    assert [line for line in proc.stderr.splitlines() if ": warning: " in line] == [
        f"{source}:{n}: warning: reference not carried by openai: dropped" for n in (1, 6)
    ]
    assert errors[0] == (  # (said plainly, with the file's line and column: not Python's parser's words)
        f"{source}:2: not valid JSON at line 2, column 51: a comma or a closing bracket was expected"
    )
    assert errors[1] == f"{source}:3: user_input[0].type: unknown message type 'robot'; expected human, ai or tool"
    assert (
        errors[2]
        == f"{source}:4: messages[1]: ToolMessage must be preceded by an AIMessage somewhere in the conversation."
    )
    assert errors[3] == f"{source}:5: messages[2]: ToolMessage must follow an AIMessage where tools were called."
    assert "2 sessions written" in errors[-1]
    assert len(load_output(out)) == 2


def test_convert_clean_file_exits_zero(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    proc = run("convert", str(source), "-o", str(tmp_path / "g.json"), "--to", "gaussia")
    assert proc.returncode == 0, proc.stderr
    (dataset,) = json.loads((tmp_path / "g.json").read_text())
    assert dataset["conversation"][0]["ground_truth_assistant"] == "greet"


def test_validate_exit_codes_and_warnings(tmp_path: Path) -> None:
    assert run("validate", str(write_jsonl(tmp_path / "ok.jsonl", [GOOD]))).returncode == 0
    warn = {
        "session_id": "s", "assistant_id": "a", "context": "",
        "conversation": [{"qa_id": "1", "query": "q", "assistant": "a", "ground_truth_assistant": "", "weight": 2}],
    }  # fmt: skip
    proc = run("validate", str(write_jsonl(tmp_path / "w.jsonl", [warn])))
    assert proc.returncode == 0 and "warning: turns.weight: weights sum to 2" in proc.stderr
    both = {"request": "q", "expected_facts": ["x"], "expected_response": "y"}
    proc = run("validate", str(write_jsonl(tmp_path / "bad.jsonl", [both])))
    assert proc.returncode == 1 and ":1: expected_facts: give only one" in proc.stderr


def test_usage_errors_exit_two(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    assert run("convert", str(source), "-o", str(tmp_path / "o"), "--to", "swarm").returncode == 2  # read-only
    assert run("convert", str(source), "--to", "ragas").returncode == 2  # no -o
    proc = run("validate", str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 2 and "No such file" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("validate", str(source), "--from", "nope")
    assert proc.returncode == 2


def test_the_console_script_exits_quickly_with_everything_written(tmp_path: Path) -> None:
    """``entry`` skips Python's teardown once the command is done: what the command wrote to its pipes arrives
    whole, and its exit code is the command's. Two thousand problems on stderr, a summary on stdout."""
    lines = [json.dumps(GOOD)] + [json.dumps({"user_input": [{"content": "x", "type": "robot"}]})] * 2000
    source = tmp_path / "bad.jsonl"
    source.write_text("\n".join(lines) + "\n")
    proc = run("validate", str(source))
    assert proc.returncode == 1
    problems = [line for line in proc.stderr.splitlines() if "unknown message type 'robot'" in line]
    assert len(problems) == 2000 and proc.stderr.rstrip().endswith("2000 records with errors, 0 warnings")
    db = tmp_path / "s.db"
    assert (
        run("import", str(write_jsonl(tmp_path / "ok.jsonl", [GOOD])), "--dataset", "d", "--db", str(db)).returncode
        == 0
    )
    proc = run("score", "--dataset", "d", "--metrics", "turn_count", "--db", str(db))
    assert proc.returncode == 0 and proc.stdout.startswith("turn_count: ") and proc.stdout.endswith("n=1\n")


def test_undetectable_input_names_the_formats_tried(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"hello": "world"}, 42])
    proc = run("validate", str(source))
    assert proc.returncode == 1
    assert f"{source}:1: no format recognises this record (tried evalcore, " in proc.stderr
    assert f"{source}:2: " in proc.stderr


def test_explicit_from_reports_the_wrong_shape(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    proc = run("validate", str(source), "--from", "gaussia")
    assert proc.returncode == 1 and ":1: conversation: expected an array, got null" in proc.stderr


def test_a_failed_conversion_leaves_no_partial_file(tmp_path: Path) -> None:
    # The writer fails halfway through real input: the process may write files of 64 KiB at most
    # (RLIMIT_FSIZE; Python ignores SIGXFSZ, so the write fails with EFBIG), and the converted file
    # is ten times that. Nothing of the new file may be left, and the one that was there stays.
    resource = pytest.importorskip("resource")
    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "reference": f"greet {i} " + "x" * 200} for i in range(2500)])
    out = tmp_path / "out.jsonl"
    out.write_text("the previous output\n")

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))

    command = [EVALCORE, "convert", str(source), "-o", str(out), "--to", "ragas"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    assert proc.returncode == 2, proc.stderr
    assert "File too large" in proc.stderr and "Traceback" not in proc.stderr
    assert out.read_text() == "the previous output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]
    # The same conversion with room to write gives the whole file: the failure was the writer's.
    assert run("convert", str(source), "-o", str(out), "--to", "ragas").returncode == 0
    assert len(load_output(out)) == 2500


def test_help_lists_every_command() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    for command in ("convert", "validate", "app"):
        assert command in proc.stdout


def test_import_then_export_through_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n{broken\n" + json.dumps({**GOOD, "reference": "other"}) + "\n")
    proc = run("import", str(source), "--dataset", "demo", "--db", str(db))
    assert proc.returncode == 1, proc.stderr
    assert f"{source}:2: not valid JSON" in proc.stderr
    assert "2 new, 0 updated, 0 unchanged, 1 failed" in proc.stderr
    again = run("import", str(source), "--dataset", "demo", "--db", str(db))
    assert "0 new, 0 updated, 2 unchanged, 1 failed" in again.stderr
    out = tmp_path / "out.jsonl"
    proc = run("export", "--dataset", "demo", "--to", "ragas", "-o", str(out), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["reference"] for line in out.read_text().splitlines()] == ["greet", "other"]
    assert json.loads((tmp_path / "out.jsonl.manifest.json").read_text())["count"] == 2
    proc = run("export", "--dataset", "demo", "--to", "ragas", "-o", str(out), "--status", "approved", "--db", str(db))
    assert proc.returncode == 0 and out.read_text() == ""
    assert "0 sessions of 'demo'" in proc.stderr


def test_db_defaults_to_the_environment(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    env_db = tmp_path / "env.db"
    proc = subprocess.run(
        [EVALCORE, "import", str(source), "--dataset", "d"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "EVALCORE_DB": str(env_db)},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert env_db.exists() and not (tmp_path / "evalcore.db").exists()


def test_export_errors_are_usage_errors(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    proc = run("export", "--dataset", "missing", "--to", "ragas", "-o", str(tmp_path / "o.jsonl"), "--db", str(db))
    assert proc.returncode == 2 and "no dataset named 'missing'" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("export", "--dataset", "x", "--to", "ragas", "-o", "o", "--min-score", "0.5", "--db", str(db))
    assert proc.returncode == 2 and "--min-score and --max-score need --run and --metric" in proc.stderr
    proc = run("export", "--dataset", "x", "--to", "ragas", "-o", "o", "--status", "done", "--db", str(db))
    assert proc.returncode == 2


def test_score_options_are_checked(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    proc = run("score", "--dataset", "d", "--metrics", "turn_count", "--max-retries", "-1", "--db", db)
    assert proc.returncode == 2 and "must be 0 or more" in proc.stderr
    proc = run("score", "--dataset", "d", "--metrics", "turn_count", "--timeout", "0", "--db", db)
    assert proc.returncode == 2 and "must be more than 0" in proc.stderr
    prices = tmp_path / "prices.json"
    prices.write_text('{"m": {"in": 1}}')
    env = {**os.environ, "EVALCORE_JUDGE_MODEL": "m"}
    proc = subprocess.run(
        [EVALCORE, "score", "--dataset", "d", "--metrics", "safety", "--prices", str(prices), "--db", db],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 2 and "cannot read prices" in proc.stderr and "Traceback" not in proc.stderr
    not_db = tmp_path / "x.txt"
    not_db.write_text("not a database\n" * 100)
    proc = run("export", "--dataset", "d", "--to", "ragas", "-o", str(tmp_path / "o"), "--db", str(not_db))
    # Not a database: the database failed (3), not a usage error.
    assert proc.returncode == 3 and "cannot open the database" in proc.stderr and "Traceback" not in proc.stderr


ODD_ARGUMENTS = [
    (["convert", "IN", "-o", "", "--to", "ragas"], "argument -o/--output: must not be empty"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", ""], "argument -o/--output: must not be empty"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--run", str(2**64)], "--run: must be at most"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--run", "9" * 5000], "--run: must be at most"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--run", "0"], "--run: must be 1 or more"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--run", "1.5"], "--run: must be a whole number"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--min-score", "nan"], "--min-score: must be a finite"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--min-score", "inf"], "--min-score: must be a finite"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--max-score=-inf"], "--max-score: must be a finite"),
    (["export", "--dataset", "d", "--to", "ragas", "-o", "o", "--max-score", "1e999"], "--max-score: must be a finite"),
    (["export", "--dataset", "", "--to", "ragas", "-o", "o"], "--dataset: a dataset needs a name"),
    (["import", "IN", "--dataset", ""], "--dataset: a dataset needs a name"),
    (["import", "IN", "--dataset", " "], "--dataset: a dataset needs a name"),
    (["import", "IN", "--dataset", "d", "--db", ""], "--db: must not be empty"),
    (["score", "--dataset", "", "--metrics", "exact_match"], "--dataset: a dataset needs a name"),
    (["score", "--dataset", "d", "--metrics", "m", "--timeout", "nan"], "--timeout: must be a finite number"),
    (["score", "--dataset", "d", "--metrics", "m", "--timeout", "inf"], "--timeout: must be a finite number"),
    (["score", "--dataset", "d", "--metrics", "m", "--timeout", "1e9"], "--timeout: must be at most 86400"),
    (["score", "--dataset", "d", "--metrics", "m", "--concurrency", str(2**70)], "--concurrency: must be at most"),
    (["score", "--dataset", "d", "--metrics", "m", "--max-retries", "nan"], "--max-retries: must be a whole number"),
    (["score", "--dataset", "d", "--metrics", "m", "--output", ""], "--output: must not be empty"),
    (["app", "--port", "99999999999999999999999"], "--port: must be at most 65535"),
]


def test_odd_arguments_are_named_with_exit_two_never_a_traceback(tmp_path: Path) -> None:
    """Every numeric option goes through one check (finite, in range, no overflow); names and paths are not empty.
    Each case runs in-process (a real process for each would take a minute); the last two run for real."""
    from evalcore.cli import main

    source = str(write_jsonl(tmp_path / "in.jsonl", [GOOD]))
    db = str(tmp_path / "odd.db")
    for argv, expected in ODD_ARGUMENTS:
        argv = [source if a == "IN" else a for a in argv]
        if argv[0] != "app" and "--db" not in argv:
            argv += ["--db", db]
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2, argv
        assert expected in stderr.getvalue(), (argv, stderr.getvalue())
    assert not Path(db).exists()  # refused before the database was opened
    for argv, expected in ODD_ARGUMENTS[2], ODD_ARGUMENTS[6]:
        proc = run(*argv, "--db", db)
        assert proc.returncode == 2 and expected in proc.stderr and "Traceback" not in proc.stderr


def test_export_to_standard_output_streams_without_a_manifest(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD, {**GOOD, "reference": "other"}])
    assert run("import", str(source), "--dataset", "demo", "--db", str(db)).returncode == 0
    proc = run("export", "--dataset", "demo", "--to", "ragas", "-o", "/dev/stdout", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["reference"] for line in proc.stdout.splitlines()] == ["greet", "other"]
    assert "no manifest" in proc.stderr and not Path("/dev/stdout.manifest.json").exists()
