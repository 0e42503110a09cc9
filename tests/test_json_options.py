"""Options that take JSON (issue 23, item 8): ``score --metric '{...}'``, a ``name:key=value`` parameter, ``--prices``
of ``score`` and ``solve``. Nested past what Python's json reads (a ``RecursionError``), past ``MAX_DEPTH``, or
holding a number of more than 4,300 digits: a usage error naming the option, exit 2, never a traceback. Run as a
person runs them: the console script on a real SQLite file (one dataset imported from the sample data)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore._infra.jsonopt import MAX_DEPTH, NOT_JSON, json_option
from evalcore.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
EVALCORE = str(Path(sys.executable).parent / "evalcore")
DEEP = "[" * 20_000 + "]" * 20_000  # (an argument of the command line may hold 128 KiB)
JUST_TOO_DEEP = "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("opts") / "e.db"
    proc = subprocess.run(
        [EVALCORE, "import", str(ROOT / "sample_data" / "openai.jsonl"), "--dataset", "d", "--db", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return path


def evalcore(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ('{"name": "exact_match", "params": {"a": ' + DEEP + "}}", "is nested more than 100 deep"),
        ('{"name": "exact_match", "params": {"a": ' + JUST_TOO_DEEP + "}}", "is nested more than 100 deep"),
        ("exact_match:a=" + DEEP, "is nested more than 100 deep"),
        ("exact_match:a=" + "1" * 5000, "holds a number of more than 4,300 digits"),
        ('{"name": "exact_match", "params": {"a": ' + "9" * 5000 + "}}", "holds a number of more than 4,300 digits"),
        ('{"name": ', "is not valid JSON: Expecting value (line 1, column 10)"),
    ],
    ids=["spec 20,000 deep", "spec 102 deep", "parameter 20,000 deep", "parameter of 5,000 digits",
         "spec with 5,000 digits", "spec not JSON"],
)  # fmt: skip
def test_a_metric_given_as_json_that_cannot_be_read_is_a_usage_error(db: Path, spec: str, said: str) -> None:
    proc = evalcore("score", "--dataset", "d", "--metric", spec, "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("evalcore: error: metric ") and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr) < 300  # (the spec is quoted cut short)


@pytest.mark.parametrize("command", ["score", "solve"])
@pytest.mark.parametrize(
    ("prices", "said"),
    [
        ('{"m": ' + "[" * 100_000 + "]" * 100_000 + "}", "(the file is nested more than 100 deep)"),
        ('{"m": [' + "1" * 5000 + ", 2]}", "(the file holds a number of more than 4,300 digits)"),
    ],
    ids=["100,000 deep", "5,000 digits"],
)
def test_a_prices_file_that_cannot_be_read_is_a_usage_error(
    db: Path, tmp_path: Path, command: str, prices: str, said: str
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(prices)
    tasks = ROOT / "sample_data" / "tasks"
    if command == "score":
        env = {**os.environ, "EVALCORE_JUDGE_MODEL": "m"}
        proc = evalcore(
            "score", "--dataset", "d", "--metrics", "safety", "--prices", str(path), "--db", str(db), env=env
        )
    else:
        proc = evalcore(
            "solve", str(tasks / "clarification.yaml"), "--samples", str(tasks / "clarification.jsonl"),
            "--dataset", "s", "--model", "m", "--config", "judge_model=j", "--prices", str(path), "--db", str(db),
        )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"cannot read prices from {path}" in proc.stderr and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_json_option_reads_what_json_reads_and_names_what_it_cannot() -> None:
    assert json_option('{"a": [1, 2.5, "x", null]}', "w") == {"a": [1, 2.5, "x", None]}
    assert json_option("[" * MAX_DEPTH + "]" * MAX_DEPTH, "w") is not None  # at the bound: fine
    assert json_option("plain words", "w", text_if_not_json=True) is NOT_JSON
    for text, said in [
        (JUST_TOO_DEEP, "w is nested more than 100 deep"),
        (DEEP * 5, "w is nested more than 100 deep"),
        ("9" * 5000, "w holds a number of more than 4,300 digits"),
    ]:
        with pytest.raises(UsageError) as caught:
            json_option(text, "w", text_if_not_json=True)  # (JSON too deep is JSON: an error, not a text)
        assert str(caught.value) == said
    with pytest.raises(UsageError) as caught:
        json_option("{", "w")
    assert str(caught.value) == (
        "w is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"
    )
