"""``evalcore solve`` as a person runs it (the console script, a real SQLite file, a scripted OpenAI-compatible
server on 127.0.0.1): the seed's clarification task into a dataset, re-runs that skip what is solved, two
models side by side, failed samples stored with their error, and bad input reported with the right exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from solver_server import JUDGE, Reply, ScriptedOpenAI, clarify

from evalcore.store import open_store
from evalcore.views.review.transcript import run_error

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "sample_data" / "tasks"
EVALCORE = Path(sys.executable).parent / "evalcore"


def solve(
    db: Path, url: str, model: str, *extra: str, samples: Path = TASKS / "clarification.jsonl"
) -> subprocess.CompletedProcess[str]:
    """``evalcore solve`` of the clarification task on ``samples`` into the dataset ``capitals``."""
    command = [
        str(EVALCORE), "solve", str(TASKS / "clarification.yaml"), "--samples", str(samples),
        "--dataset", "capitals", "--model", model, "--config", f"judge_model={JUDGE}", "--base-url", url,
        "--api-key", "sk-test", "--db", str(db), "--max-retries", "1", *extra,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _sessions(db: Path) -> dict[tuple[str | None, str | None], Any]:
    with open_store(db) as store:
        return {
            (s.session_id, s.assistant_id): store.sessions.get(s.pk).session
            for s in store.sessions.browse("capitals").items
        }


def test_the_clarification_task_into_a_dataset_then_skipped_then_a_second_model(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    with ScriptedOpenAI(clarify) as server:
        proc = solve(db, server.url, "eval-model")
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "6 samples of clarification with eval-model -> dataset 'capitals': 6 solved, 0 failed" in proc.stderr
        sessions = _sessions(db)
        austria = sessions[("clarification-1", "eval-model")]
        # The seed's table, turn for turn.
        assert [(m.role, m.text) for m in austria.messages][1:] == [
            ("user", "What is the capital city of Austria?"),
            ("assistant", "Just to confirm - you're asking about the capital city of Austria, correct?"),
            ("user", "Yes"),
            ("assistant", "Vienna"),
        ]
        assert austria.messages[0].role == "system" and austria.reference == "Vienna"
        assert austria.metadata["sample"] == {"question": "What is the capital city of Austria?", "target": "Vienna"}
        solver = austria.metadata["solver"]
        assert solver["task"] == "clarification" and solver["models"] == ["eval-model", JUDGE]
        assert solver["input_tokens"] > 0 and len(solver["calls"]) == 3
        calls = len(server.requests)

        again = solve(db, server.url, "eval-model")
        assert again.returncode == 0 and "6 already solved" in again.stderr
        assert len(server.requests) == calls  # nothing asked again

        other = solve(db, server.url, "other-model")
        assert other.returncode == 0, other.stderr
        sessions = _sessions(db)
        assert len(sessions) == 12 and ("clarification-1", "other-model") in sessions  # side by side


def test_a_failed_sample_is_stored_with_its_error_and_tried_again(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    failing = {"on": True}

    def script(model: str, messages: list[dict[str, Any]]) -> str | Reply:
        if failing["on"] and model == JUDGE and "Portugal" in json.dumps(messages):
            return Reply(status=400, text="the judge refuses")
        return clarify(model, messages)

    with ScriptedOpenAI(script) as server:
        proc = solve(db, server.url, "eval-model")
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert "5 solved, 1 failed" in proc.stderr
        assert "evalcore: sample clarification-3: " in proc.stderr and "HTTP 400" in proc.stderr
        portugal = _sessions(db)[("clarification-3", "eval-model")]
        assert [m.role for m in portugal.messages] == ["system", "user", "assistant"]  # the conversation so far
        error = run_error(portugal)
        assert error is not None and "HTTP 400" in error  # what Review shows at the top
        failing["on"] = False
        again = solve(db, server.url, "eval-model")
        assert again.returncode == 0 and "1 solved, 0 failed, 5 already solved" in again.stderr
        assert run_error(_sessions(db)[("clarification-3", "eval-model")]) is None


def test_bad_input_is_reported_with_the_right_exit_code(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    bad = tmp_path / "bad.yaml"
    bad.write_text("definition:\n  solver:\n    type: multi_turn_solver\n    message_builders:\n      - type: nope\n")
    with ScriptedOpenAI(clarify) as server:
        proc = subprocess.run(
            [str(EVALCORE), "solve", str(bad), "--samples", str(TASKS / "clarification.jsonl"), "--dataset", "d",
             "--model", "m", "--base-url", server.url, "--db", str(db)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert "message_builders[0]: type: unknown builder type 'nope'" in proc.stderr
        missing = subprocess.run(
            [str(EVALCORE), "solve", str(TASKS / "clarification.yaml"), "--samples", str(TASKS / "clarification.jsonl"),
             "--dataset", "d", "--model", "m", "--base-url", server.url, "--db", str(db)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert missing.returncode == 2 and "judge_model" in missing.stderr and "--config" in missing.stderr
        assert not server.requests


def test_two_models_runs_of_a_task_scored_and_compared_by_assistant(tmp_path: Path) -> None:
    """What the Dashboard's "by assistant" chart shows once both runs are scored: one group per model."""
    from evalcore.scoring import score_dataset
    from evalcore.views.dashboard import by_assistant

    def worse(model: str, messages: list[dict[str, Any]]) -> str:  # a model that gets Austria wrong
        answer = clarify(model, messages)
        return "Salzburg" if model == "weak-model" and answer == "Vienna" else answer

    db = tmp_path / "e.db"
    with ScriptedOpenAI(worse) as server:
        assert solve(db, server.url, "eval-model").returncode == 0
        assert solve(db, server.url, "weak-model").returncode == 0
    with open_store(db) as store:
        report = score_dataset(store, "capitals", ["exact_match"], workers=1)
        groups = {g.assistant: g.summary for g in by_assistant(store, report.run.id, "exact_match")}
    assert set(groups) == {"eval-model", "weak-model"}
    assert groups["eval-model"].mean == 1.0 and groups["weak-model"].mean == 5 / 6


def test_a_sample_keeps_its_session_when_a_bad_line_before_it_is_mended(tmp_path: Path) -> None:
    """Sessions are named by the samples' places in the file, bad lines counted: mending one renames nothing."""
    lines = (TASKS / "clarification.jsonl").read_text().splitlines()
    samples = tmp_path / "s.jsonl"
    samples.write_text("\n".join([lines[0], "{not json", *lines[2:]]) + "\n")
    db = tmp_path / "e.db"
    with ScriptedOpenAI(clarify) as server:
        first = solve(db, server.url, "m", samples=samples)
        assert first.returncode == 1 and f"{samples}: line 2: not valid JSON" in first.stderr
        assert ("clarification-3", "m") in _sessions(db)  # Portugal, third in the file
        assert _sessions(db)[("clarification-3", "m")].reference == "Lisbon"
        samples.write_text("\n".join(lines) + "\n")  # mended
        again = solve(db, server.url, "m", samples=samples)
        assert again.returncode == 0 and "1 solved, 0 failed, 5 already solved" in again.stderr
        sessions = _sessions(db)
        assert len(sessions) == 6 and sessions[("clarification-2", "m")].reference == "Paris"


def test_two_samples_with_one_id_keep_the_first_and_say_so(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (TASKS / "clarification.jsonl").read_text().splitlines()][:3]
    rows[0]["id"], rows[1]["id"], rows[2]["id"] = "q-1", 1, "1"  # 1 and "1" are one session id
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "e.db"
    with ScriptedOpenAI(clarify) as server:
        proc = solve(db, server.url, "m", samples=samples)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "evalcore: sample 1: the id of sample 3 is sample 2's too; left out" in proc.stderr
    assert "2 solved, 1 failed" in proc.stderr
    sessions = _sessions(db)
    assert set(sessions) == {("q-1", "m"), ("1", "m")} and sessions[("1", "m")].reference == "Paris"


def test_a_changed_sample_is_solved_again(tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    lines = (TASKS / "clarification.jsonl").read_text().splitlines()[:2]
    samples.write_text("\n".join(lines) + "\n")
    db = tmp_path / "e.db"
    with ScriptedOpenAI(clarify) as server:
        assert solve(db, server.url, "m", samples=samples).returncode == 0
        samples.write_text(lines[0] + "\n" + lines[1].replace("France", "Japan").replace("Paris", "Tokyo") + "\n")
        again = solve(db, server.url, "m", samples=samples)
    assert again.returncode == 0 and "1 solved, 0 failed, 1 already solved" in again.stderr
    assert _sessions(db)[("clarification-2", "m")].reference == "Tokyo"
