"""The judge against a hostile OpenAI-compatible endpoint: every run ends, memory stays bounded, every
failure is kept with its item, and the API key (and any credential in the base URL) is found nowhere.

``HostileOpenAI`` (tests/openai_server.py) is a real HTTP server on 127.0.0.1 that trickles a byte a
second, streams forever, sends huge or gzip-bomb bodies, echoes the key and reports absurd usage; each
behaviour bounded in bytes and seconds and stopped with the server. The runs go through
``score_dataset`` and through the ``evalcore score`` command, whose peak memory is measured.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
import os
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from dbutil import own_connection, query
from openai_server import HOSTILE, HostileOpenAI
from pydantic import BaseModel

from evalcore.importing import import_file
from evalcore.judge import Judge, JudgeConfig, JudgeError
from evalcore.metrics.base import MAX_REASON_CHARS
from evalcore.model.redact import REDACTED, public_url
from evalcore.scoring import RunReport, score_dataset
from evalcore.store import open_store
from evalcore.store.runs import ScoreRow

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DATA = ROOT / "sample_data"
EVALCORE = str(Path(sys.executable).parent / "evalcore")
DATASET = "dbx"
N_SESSIONS = 6  # sample_data/databricks.jsonl

KEY = "hk-Q7f2LmZp9XcV4bN8rT1yW6uE3oI0aSdF"  # the API key, found nowhere (not "sk-"-shaped: found by value)
USER, PASSWORD = "judge-user", "pw-Hostile-7xq2Lk9Zr4"  # credentials written into --base-url
QUERY_KEY = "qk-Hostile-4Rt8Yp2Wm6"  # ...and a key given as a query parameter
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()  # what user:pass@ sends on the wire
SECRETS = [KEY, PASSWORD, QUERY_KEY, BASIC]
CAP = 4 * 1024 * 1024  # JudgeConfig.max_response_bytes by default
TOO_LARGE = f"JudgeError: the endpoint's answer is larger than the limit of {CAP:,} bytes"
MAX_RSS_MB = 500


class Answer(BaseModel):
    verdict: Literal["yes", "no"]
    reason: str


def secret_forms(secret: str) -> list[bytes]:
    """The ways a secret could be written into a file: as is, JSON-escaped, URL-encoded, UTF-16."""
    forms = {secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, safe="")}
    return [f.encode() for f in forms] + [secret.encode("utf-16-le")]


def assert_nowhere(where: str, data: bytes | str) -> None:
    blob = data.encode() if isinstance(data, str) else data
    for secret in SECRETS:
        for form in secret_forms(secret):
            assert form not in blob, f"a secret ({secret[:6]}...) found in {where}"


def assert_no_file_holds_a_secret(folder: Path) -> int:
    """No file under ``folder`` (the database, its WAL, the score file...) holds a secret; the files read."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    for path in files:
        assert_nowhere(str(path.name), path.read_bytes())
    return len(files)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store file holding the six Databricks sample sessions as dataset ``dbx``."""
    path = tmp_path / "evalcore.db"
    with open_store(path) as store:
        report = import_file(store, SAMPLE_DATA / "databricks.jsonl", DATASET)
        assert report.new == N_SESSIONS and report.failed == 0
    return path


def config(url: str, **options: Any) -> JudgeConfig:
    settings: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "base_url": url,
        "api_key": KEY,
        "timeout": 5.0,  # far beyond what a good answer takes on a busy machine; the trickle tests set less
        "max_retries": 1,
        "backoff": 0.01,
        "concurrency": 8,
    }
    return JudgeConfig(**{**settings, **options})


def credentialed(url: str) -> str:
    """``url`` with a user and password and a secret query parameter written into it."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{USER}:{PASSWORD}@{rest}?api-key={QUERY_KEY}&api-version=2024-06-01"


def score(db: Path, specs: list[str], judge: JudgeConfig, output: Path | None = None) -> tuple[RunReport, float]:
    """Score the dataset; the report and the seconds it took."""
    with open_store(db) as store:
        started = time.monotonic()
        report = score_dataset(store, DATASET, list(specs), judge=judge, output=output)
        return report, time.monotonic() - started


def session_rows(db: Path, run_id: int, *, turns: bool = False) -> list[ScoreRow]:
    with open_store(db) as store:
        return list(store.runs.scores(run_id, turns=turns))


def check_all_failed(report: RunReport, rows: list[ScoreRow], error: str) -> None:
    """The run ended, and each of its items failed, with ``error`` (the start of its message) kept."""
    assert report.run.status == "done" and report.run.finished_at is not None
    assert len(rows) == report.run.n_items == N_SESSIONS
    assert report.run.n_failed == N_SESSIONS and report.summaries[0].failed == N_SESSIONS
    for row in rows:
        assert row.status == "error" and row.value is None
        assert row.error and row.error.startswith(error), row.error


# -- the deadline ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["trickle", "trickle_head"])
def test_a_trickling_endpoint_is_cut_off_at_the_deadline(db: Path, behaviour: str) -> None:
    # A byte a second: each read is quick, the answer never comes. Each attempt has one deadline in all.
    with HostileOpenAI(always=behaviour, trickle_interval=1.0) as server:
        report, seconds = score(db, ["correctness"], config(server.url, timeout=1.0, max_retries=1))
        assert server.hostile == 2 * N_SESSIONS  # one try and one retry per item, no more
    assert report.judge_requests == 2 * N_SESSIONS
    check_all_failed(report, session_rows(db, report.run.id), "JudgeError: gave up after 2 tries: timed out after 1 s")
    # Two attempts of 1 s each, all sessions at once: far below the ~300 s the trickle would take.
    assert seconds < 20, f"the run took {seconds:.1f} s"


def test_every_try_has_its_own_deadline_and_the_run_still_ends(db: Path) -> None:
    # Every try times out; each item ends after 1 + max_retries deadlines (and the waits between them).
    with HostileOpenAI(always="trickle") as server:
        report, _seconds = score(db, ["correctness"], config(server.url, timeout=0.5, max_retries=2, concurrency=3))
        assert server.hostile == 3 * N_SESSIONS
    check_all_failed(
        report, session_rows(db, report.run.id), "JudgeError: gave up after 3 tries: timed out after 0.5 s"
    )


# -- the size cap ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "how"),
    [
        ("forever", "more as sent"),
        ("huge", "more as sent"),
        ("huge_announced", "it announced"),
        ("gzip_bomb", "more once decompressed"),
        ("deflate_bomb", "more once decompressed"),
    ],
)
def test_an_endless_huge_or_compressed_answer_fails_its_item_without_retry(db: Path, behaviour: str, how: str) -> None:
    with HostileOpenAI(always=behaviour) as server:
        report, _seconds = score(db, ["correctness"], config(server.url, max_retries=3, timeout=10))
        assert server.hostile == N_SESSIONS  # not retried: the next answer would be as large
        wire = server.sent_bytes
    rows = session_rows(db, report.run.id)
    check_all_failed(report, rows, TOO_LARGE)
    assert all(how in (row.error or "") and "not retried" in (row.error or "") for row in rows)
    if "bomb" in behaviour:
        # A few KB on the wire per item, inflating to GBs were it all read: the cap stopped it at 4 MiB.
        assert wire < N_SESSIONS * 64 * 1024 * 16


def test_the_cap_is_configurable(db: Path) -> None:
    with HostileOpenAI(always="huge", huge_bytes=200_000) as server:
        small = config(server.url, max_response_bytes=100_000)
        report, _ = score(db, ["correctness"], small)
        check_all_failed(
            report,
            session_rows(db, report.run.id),
            "JudgeError: the endpoint's answer is larger than the limit of 100,000 bytes",
        )
        # Under a larger cap the same answer is read whole (and fails as the unusable answer it is).
        report, _ = score(db, ["correctness"], config(server.url, max_response_bytes=1_000_000))
        for row in session_rows(db, report.run.id):
            assert row.error and row.error.startswith("JudgeError: the judge's answer is not valid even after a repair")


def test_a_judges_long_reason_is_cut_and_marked(db: Path) -> None:
    with HostileOpenAI(always="long_reason") as server:
        server.long_text = 50_000
        report, _ = score(db, ["correctness", "gaussia_conversational"], config(server.url))
    rows = session_rows(db, report.run.id, turns=True)
    judged = [r for r in rows if r.metric == "correctness" or r.turn is not None]
    assert judged and all(r.status == "ok" for r in judged)
    for row in judged:
        assert row.reason is not None
        assert len(row.reason) <= MAX_REASON_CHARS + 60
        assert row.reason.endswith(" characters in all]") and "[cut: " in row.reason


# -- usage figures ----------------------------------------------------------------------------------------

ABSURD: list[Any] = [
    {"prompt_tokens": -5, "completion_tokens": 3},
    {"prompt_tokens": 10, "completion_tokens": 1e30},
    {"prompt_tokens": math.nan, "completion_tokens": 3},
    {"prompt_tokens": 10, "completion_tokens": math.inf},
    {"prompt_tokens": 10.5, "completion_tokens": 3},
    {"prompt_tokens": "12", "completion_tokens": 3},
    {"prompt_tokens": True, "completion_tokens": 3},
    {"prompt_tokens": 10_000_001, "completion_tokens": 3},
    {"prompt_tokens": 10, "completion_tokens": 10**40},
    {"prompt_tokens": [1], "completion_tokens": {"n": 1}},
    "lots",
    [10, 3],
]


@pytest.mark.parametrize("usage", ABSURD, ids=[json.dumps(u)[:40] for u in ABSURD])
def test_absurd_usage_is_not_priced(usage: Any) -> None:
    async def ask(judge_config: JudgeConfig) -> Any:
        async with Judge(judge_config) as judge:
            return await judge.ask("Judge.", "Question?", Answer)

    with HostileOpenAI(always="absurd_usage") as server:
        server.absurd = usage
        verdict = asyncio.run(ask(config(server.url)))
    assert isinstance(verdict.answer, Answer) and verdict.calls == 1
    assert (verdict.input_tokens, verdict.output_tokens, verdict.cost) == (None, None, None)
    (warning,) = verdict.warnings
    assert "tokens and cost unknown" in warning and len(warning) < 300


def test_believable_usage_is_priced() -> None:
    async def ask(judge_config: JudgeConfig) -> Any:
        async with Judge(judge_config) as judge:
            return await judge.ask("Judge.", "Question?", Answer)

    with HostileOpenAI(always="absurd_usage") as server:
        server.absurd = {"prompt_tokens": 10_000_000, "completion_tokens": 0}  # the largest believed
        verdict = asyncio.run(ask(config(server.url)))
    assert (verdict.input_tokens, verdict.output_tokens, verdict.warnings) == (10_000_000, 0, [])
    assert verdict.cost == pytest.approx(10_000_000 * 0.15 / 1_000_000)


def test_absurd_usage_is_stored_as_unknown_with_a_warning(db: Path) -> None:
    with HostileOpenAI(always="absurd_usage") as server:
        report, _ = score(db, ["correctness", "gaussia_conversational"], config(server.url))
    rows = session_rows(db, report.run.id, turns=True)
    judged = [r for r in rows if r.status == "ok"]
    assert {r.metric for r in judged} == {"correctness", "gaussia_conversational"}
    for row in judged:
        assert (row.input_tokens, row.output_tokens, row.cost) == (None, None, None), row
        assert any("implausible token usage" in w for w in row.warnings), row
    assert all(s.warnings == N_SESSIONS for s in report.summaries)


# -- secrets ----------------------------------------------------------------------------------------------


def test_public_url_strips_credentials() -> None:
    assert public_url("https://api.openai.com/v1/") == "https://api.openai.com/v1"
    assert public_url("http://localhost:11434/v1") == "http://localhost:11434/v1"
    assert public_url("https://u:p%40ss@host:8443/v1") == "https://host:8443/v1"
    assert (
        public_url("https://host/v1?api-key=abcd&api-version=2024-06-01#x") == "https://host/v1?api-version=2024-06-01"
    )
    assert public_url("https://host/v1?access_token=abcd&code=zz99&sig=s1g9") == "https://host/v1"
    # Not a URL one can parse: credential-shaped parts are still removed.
    assert PASSWORD not in public_url(f"http://{USER}:{PASSWORD}@[::1/v1")
    shown = repr(config(credentialed("http://127.0.0.1:9/v1")))
    assert_nowhere("JudgeConfig's repr", shown)
    assert "127.0.0.1:9/v1?api-version=2024-06-01" in shown


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG)  # everything every library logs, httpx's request lines included
    yield caplog


def test_the_key_echoed_back_is_found_nowhere(
    db: Path, tmp_path: Path, logs: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "scores.jsonl"
    with HostileOpenAI() as server:
        # One call per session (no retry): two are refused with the key in the message, two get an HTTP 500
        # echoing it, two get answers whose every text holds it.
        server.queue("echo_key_401", "echo_key_401", "echo_key", "echo_key")
        server.always = "echo_key_content"
        report, _ = score(db, ["correctness"], config(server.url, max_retries=0), output=output)
        assert any(KEY in seen for seen in server.seen)  # the key was sent, and echoed
    rows = session_rows(db, report.run.id)
    errors = sorted(r.error or "" for r in rows if r.status == "error")
    assert len(errors) == 4 and all(REDACTED in e for e in errors)
    assert sum(e.startswith("JudgeError: gave up after 1 tries: HTTP 500: ") for e in errors) == 2
    assert sum(e.startswith("JudgeError: the endpoint refused the request: HTTP 401: ") for e in errors) == 2
    ok = [r for r in rows if r.status == "ok"]
    assert len(ok) == 2 and all(r.reason and "(your key: [REDACTED]" in r.reason for r in ok)
    with open_store(db) as store:
        cached = query(store, "SELECT request, response FROM judge_cache")
        columns = {r[1] for r in query(store, "PRAGMA table_info(judge_cache)")}
    assert len(cached) == 2 and all(REDACTED in response for _request, response in cached)
    assert not {"headers", "authorization"} & columns  # what was sent is kept, never how
    assert output.exists()
    captured = capsys.readouterr()
    assert_nowhere("stdout", captured.out)
    assert_nowhere("stderr", captured.err)
    assert "HTTP Request: POST" in logs.text  # httpx did log each request...
    assert_nowhere("the logs", logs.text)  # ...without a secret
    assert assert_no_file_holds_a_secret(tmp_path) >= 2  # the database (and its WAL) and the score file


def test_credentials_in_the_base_url_are_used_but_never_stored_or_shown(
    db: Path, tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    output = tmp_path / "scores.jsonl"
    with HostileOpenAI() as server:
        server.queue("echo_key", "echo_key")  # two items (one call each, no retry); the others answered
        server.always = "echo_key_content"
        url = credentialed(server.url)
        report, _ = score(db, ["correctness"], config(url, max_retries=0), output=output)
        # Sent as httpx sends them: user:pass as basic auth (replacing the bearer key), the query kept.
        assert f"Basic {BASIC}" in server.seen
        assert f"api-key={QUERY_KEY}&api-version=2024-06-01" in server.seen
    with open_store(db) as store:
        (stored,) = own_connection(store).execute("SELECT judge_base_url FROM runs").fetchone()
    assert stored == f"{server.url}?api-version=2024-06-01"
    rows = session_rows(db, report.run.id)
    assert [r.status for r in rows].count("error") == 2 and [r.status for r in rows].count("ok") == 4
    assert all(REDACTED in (r.error or r.reason or "") for r in rows)
    assert "HTTP Request: POST" in logs.text
    assert_nowhere("the logs", logs.text)
    assert_no_file_holds_a_secret(tmp_path)


def test_the_client_redacts_what_it_raises() -> None:
    async def ask(judge_config: JudgeConfig) -> Any:
        async with Judge(judge_config) as judge:
            return await judge.ask("Judge.", "Question?", Answer)

    with HostileOpenAI(always="echo_key_401") as server, pytest.raises(JudgeError) as caught:
        asyncio.run(ask(config(server.url)))
    assert str(caught.value).startswith("the endpoint refused the request: HTTP 401: ")
    assert REDACTED in str(caught.value)
    assert_nowhere("the error", str(caught.value))
    assert caught.value.__cause__ is None  # no HTTP exception (with the request's headers) hangs off it
    # An unusable URL fails the item with its text redacted too.
    bad = config(f"http://{USER}:{PASSWORD}@127.0.0.1:notaport/v1")
    with pytest.raises(JudgeError) as caught:
        asyncio.run(ask(bad))
    assert_nowhere("the error", str(caught.value))


# -- all at once, per item ----------------------------------------------------------------------------------


def test_every_hostile_answer_is_recorded_with_its_own_item(db: Path, tmp_path: Path) -> None:
    output = tmp_path / "scores.jsonl"
    behaviours = ["trickle", "forever", "gzip_bomb", "huge_announced", "echo_key_401", "absurd_usage"]
    with HostileOpenAI() as server:
        server.queue(*behaviours)
        report, _ = score(db, ["correctness"], config(server.url, max_retries=0, timeout=2.0), output=output)
        assert server.hostile == len(behaviours) and not server.faults
    rows = session_rows(db, report.run.id)
    assert report.run.status == "done" and len(rows) == N_SESSIONS
    kinds = sorted(r.error or "" for r in rows if r.error)
    assert report.run.n_failed == 5 and len(kinds) == 5, kinds
    assert sum(k.startswith(TOO_LARGE) for k in kinds) == 3
    assert sum(k.startswith("JudgeError: gave up after 1 tries: timed out after 2 s") for k in kinds) == 1
    assert sum(k.startswith("JudgeError: the endpoint refused the request: HTTP 401: ") for k in kinds) == 1
    (ok,) = [r for r in rows if r.status == "ok"]
    assert ok.cost is None and ok.input_tokens is None and ok.warnings
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["error"] or "" for line in lines) == sorted(r.error or "" for r in rows)
    assert_no_file_holds_a_secret(tmp_path)


# -- the command line, its memory measured ------------------------------------------------------------------


def cli_env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("EVALCORE_", "OPENAI_")) and "proxy" not in k.lower()
    }
    return {**env, **extra}


#: Started by the test, it starts the CLI and reports the CLI's peak memory. The kernel's figure for a
#: child counts the memory of the image it was forked from (until its ``exec``): forked from pytest, the
#: CLI would be charged with pytest's hundreds of MB; forked from this small program, only with its own.
MEASURE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(args: list[str], env: dict[str, str], folder: Path, limit: float) -> tuple[int, str, str, float, int]:
    """Run the CLI; its exit code, stdout, stderr, seconds and peak resident memory in MB (the kernel's
    maximum for the CLI's process, see ``MEASURE``)."""
    out, err, peak = folder / "cli.out", folder / "cli.err", folder / "cli.peak"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", MEASURE, str(peak), EVALCORE, *args],
            env=env, stdout=stdout, stderr=stderr, start_new_session=True,
        )  # fmt: skip
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI too: it is in the measurer's session
            proc.wait()
            raise AssertionError(f"the CLI ran past {limit} s") from None
        seconds = time.monotonic() - started
    return proc.returncode, out.read_text(), err.read_text(), seconds, int(peak.read_text()) // 1024


@pytest.mark.parametrize("behaviour", ["forever", "gzip_bomb", "huge", "trickle"])
def test_cli_against_a_hostile_endpoint_ends_with_bounded_memory(db: Path, tmp_path: Path, behaviour: str) -> None:
    output = tmp_path / "scores.jsonl"
    with HostileOpenAI(always=behaviour) as server:
        env = cli_env(EVALCORE_BASE_URL=server.url, EVALCORE_JUDGE_MODEL="gpt-4o-mini", EVALCORE_API_KEY=KEY)
        args = ["score", "--dataset", DATASET, "--metrics", "correctness", "--timeout", "2", "--max-retries", "1"]
        args += ["--concurrency", "8", "--output", str(output), "--db", str(db)]
        code, out, err, seconds, peak_mb = run_measured(args, env, tmp_path, limit=90)
    print(f"\n{behaviour}: exit {code} in {seconds:.1f} s, peak RSS {peak_mb} MB")  # shown with -s
    assert code == 1, err
    assert "Traceback" not in err
    assert out.startswith("correctness: ") and f"({N_SESSIONS} failed)" in out
    assert peak_mb < MAX_RSS_MB, f"{behaviour}: peak RSS {peak_mb} MB"
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == N_SESSIONS and all(line["error"] for line in lines)
    expected = "JudgeError: gave up after 2 tries: timed out after 2 s" if behaviour == "trickle" else TOO_LARGE
    assert all(line["error"].startswith(expected) for line in lines), lines[0]["error"]
    assert_nowhere("the CLI's stdout", out)
    assert_nowhere("the CLI's stderr", err)
    assert_no_file_holds_a_secret(tmp_path)


def test_cli_with_the_key_echoed_and_credentials_in_the_url_shows_none(db: Path, tmp_path: Path) -> None:
    output = tmp_path / "scores.jsonl"
    with HostileOpenAI() as server:
        server.queue("echo_key_401", "echo_key", "echo_key")
        server.always = "echo_key_content"
        for url, key in ((server.url, KEY), (credentialed(server.url), KEY)):
            env = cli_env(EVALCORE_JUDGE_MODEL="gpt-4o-mini", OPENAI_API_KEY=key)
            args = ["score", "--dataset", DATASET, "--metrics", "correctness", "--base-url", url, "--new-run"]
            args += ["--concurrency", "1", "--max-retries", "1", "--output", str(output), "--db", str(db)]
            code, out, err, _seconds, _peak = run_measured(args, env, tmp_path, limit=60)
            assert code in (0, 1) and "Traceback" not in err, err
            assert_nowhere("the CLI's stdout", out)
            assert_nowhere("the CLI's stderr", err)
            assert_no_file_holds_a_secret(tmp_path)
        assert any(KEY in seen for seen in server.seen) and f"Basic {BASIC}" in server.seen


def test_the_hostile_server_knows_every_behaviour() -> None:
    # Each behaviour the module doc promises exists, and each is exercised above.
    source = Path(__file__).read_text(encoding="utf-8")
    for behaviour in HOSTILE:
        assert f'"{behaviour}"' in source, behaviour
