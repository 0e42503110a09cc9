"""The judge, for real: the client against an OpenAI-compatible server on loopback, its cache in a real
store, judge metrics through ``score_dataset`` with faults injected, resumed runs and the command line.

No mocks: ``FakeOpenAI`` (tests/openai_server.py) is a real HTTP server on 127.0.0.1; ``ScriptedServer``
below is a smaller one whose answers are scripted byte for byte (for what FakeOpenAI cannot say: a 400,
odd Retry-After headers, fenced or schema-breaking answers) and which records headers and concurrency.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Literal

import pytest
from dbutil import query
from openai_server import FakeOpenAI, LoopbackServer
from pydantic import BaseModel

import evalcore.model.client as judge_client
from evalcore.errors import UsageError
from evalcore.importing import import_file
from evalcore.judge import Judge, JudgeCache, JudgeConfig, JudgeError, MemoryCache, StoreJudgeCache, Verdict
from evalcore.metrics import Metric, create_metric
from evalcore.scoring import RunReport, save_results, score_dataset
from evalcore.store import Store, open_store
from evalcore.store.runs import ScoreRow

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DATA = ROOT / "sample_data"
EVALCORE = str(Path(sys.executable).parent / "evalcore")
DATASET = "mix"
PRICE_IN, PRICE_OUT = 0.15, 0.60  # gpt-4o-mini, $ per million tokens
SYSTEM = "Decide whether the answer is correct."
USER = "Question: 2 + 2?\nAnswer: 4"

DATABRICKS_IDS = [
    json.loads(line)["request_id"]
    for line in (SAMPLE_DATA / "databricks.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
GAUSSIA_IDS = [s["session_id"] for s in json.loads((SAMPLE_DATA / "gaussia.json").read_text(encoding="utf-8"))]

#: Every judge metric family, with parameters where the metric takes some.
JUDGE_SPECS: list[str | dict[str, Any] | Metric] = [
    "correctness",
    "relevance_to_query",
    "groundedness",
    'guideline_adherence:global_guidelines=["Be polite"]',
    "topic_adherence",
    "rubric_score",
    {
        "name": "aspect_critique",
        "params": {"aspect": "politeness", "definition": "The assistant is polite and respectful throughout."},
    },
    "gaussia_context",
    "gaussia_conversational",
    "agent_goal_accuracy",
]
SPECS: list[str | dict[str, Any] | Metric] = [*JUDGE_SPECS, "tool_call_count"]  # and one metric that needs no judge


class Answer(BaseModel):
    verdict: Literal["yes", "no"]
    reason: str


GOOD = json.dumps({"verdict": "yes", "reason": "4 is right"})
#: Judge calls in flight against FakeOpenAI: its listen backlog is socketserver's default of 5, so more
#: connections opened at once can be dropped, and the client sees a connect timeout (a spurious retry).
CONCURRENCY = 4


# -- servers ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeOpenAI]:
    # A "timeout" fault holds its answer until the test ends (``release``), 30 s at most: the client,
    # whose timeout is 0.5 s, can only go on by giving up on it. One server for the module: stopping
    # one takes up to half a second (its poll interval).
    with FakeOpenAI(timeout_sleep=30.0) as fake:
        yield fake
        fake.release.set()


@pytest.fixture
def server(fake_openai: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The module's FakeOpenAI with no fault queued, no request recorded and no latency."""

    def reset() -> None:
        with fake_openai.lock:
            fake_openai.faults.clear()
            fake_openai.requests.clear()
            fake_openai.answered.clear()
        fake_openai.latency = 0.0

    reset()
    fake_openai.release.clear()
    yield fake_openai
    fake_openai.release.set()  # the answers held by "timeout" faults go out (to clients long gone)
    reset()


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the client asks for between tries, in order (not waited: the tests assert what was asked)."""
    asked: list[float] = []

    async def pause(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(judge_client, "_pause", pause)
    return asked


@pytest.fixture
def config(server: FakeOpenAI) -> JudgeConfig:
    return judge_config(server.url)


def judge_config(url: str, **options: Any) -> JudgeConfig:
    settings: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "base_url": url,
        "api_key": "test",
        "backoff": 0.01,
        "timeout": 0.5,
        "max_retries": 3,
        "concurrency": CONCURRENCY,
    }
    return JudgeConfig(**{**settings, **options})


def completion(content: str | None, prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }


Scripted = tuple[int, dict[str, str], Any]  # status, headers, body (a dict is sent as JSON, bytes as they are)


class ScriptedServer(LoopbackServer):
    """A chat-completions endpoint on 127.0.0.1 answering the scripted responses in order, then ``GOOD``."""

    def __init__(self, *responses: Scripted, latency: float = 0.0) -> None:
        super().__init__()
        self.responses: deque[Scripted] = deque(responses)
        self.latency = latency
        self.hits: list[dict[str, Any]] = []  # path, headers, body of every request
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        with self.lock:
            self.hits.append({"path": handler.path, "headers": dict(handler.headers), "body": json.loads(body)})
            scripted = self.responses.popleft() if self.responses else (200, {}, completion(GOOD))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.latency:
                time.sleep(self.latency)
            status, headers, payload = scripted
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send(handler, status, data, headers)
        finally:
            with self.lock:
                self.active -= 1


# -- helpers ------------------------------------------------------------------------------------


def ask(
    config: JudgeConfig,
    *,
    cache: JudgeCache | None = None,
    times: int = 1,
    user: str = USER,
    schema: type[BaseModel] = Answer,
) -> tuple[list[Verdict], int]:
    """Ask the same question ``times`` times with one client; the verdicts and the HTTP requests sent."""

    async def go() -> tuple[list[Verdict], int]:
        async with Judge(config, cache) as judge:
            verdicts = [await judge.ask(SYSTEM, user, schema) for _ in range(times)]
            return verdicts, judge.requests

    return asyncio.run(go())


def ask_failing(config: JudgeConfig) -> tuple[JudgeError, int]:
    """Ask once, expecting a JudgeError; the error and the HTTP requests sent."""
    judge = Judge(config)

    async def go() -> None:
        async with judge:
            await judge.ask(SYSTEM, USER, Answer)

    with pytest.raises(JudgeError) as caught:
        asyncio.run(go())
    return caught.value, judge.requests


def expected_cost(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * PRICE_IN + output_tokens * PRICE_OUT) / 1_000_000


def prompt_tokens(request: dict[str, Any]) -> int:
    """What FakeOpenAI reports as a request's prompt tokens."""
    return sum(len(str(m.get("content", ""))) for m in request["messages"]) // 4


def canonical(request: dict[str, Any]) -> str:
    return json.dumps(request, sort_keys=True, ensure_ascii=False)


def metrics_by_key(specs: list[str | dict[str, Any] | Metric]) -> dict[str, Metric]:
    return {m.key(): m for m in (create_metric(s) for s in specs)}


def all_rows(store: Store, run_id: int) -> dict[tuple[int, str, int | None], ScoreRow]:
    """Every score of a run, turns included, by (session, metric, turn)."""
    rows = list(store.runs.scores(run_id, turns=True))
    keyed = {(r.session_pk, r.metric, r.turn): r for r in rows}
    assert len(keyed) == len(rows), "a (session, metric, turn) scored twice"
    return keyed


def usage_columns(store: Store, run_id: int) -> list[tuple[str, str, int | None, int | None]]:
    """(metric, status, calls, cached) of the run's session-level scores."""
    return query(store, "SELECT metric, status, calls, cached FROM scores WHERE run_id = ? AND turn = -1", [run_id])


def check_complete_run(store: Store, report: RunReport, specs: list[str | dict[str, Any] | Metric]) -> list[ScoreRow]:
    """The run is done and every (session, metric) has exactly one session-level score, consistently counted."""
    metrics = metrics_by_key(specs)
    run = report.run
    assert run.status == "done" and run.finished_at is not None
    assert run.metrics == list(metrics)
    n_sessions = len(DATABRICKS_IDS) + len(GAUSSIA_IDS)
    assert report.sessions == n_sessions
    rows = list(store.runs.scores(run.id))
    pairs = Counter((r.session_id, r.metric) for r in rows)
    assert set(pairs) == {(s, k) for s in DATABRICKS_IDS + GAUSSIA_IDS for k in metrics}
    assert set(pairs.values()) == {1}
    statuses = Counter(r.status for r in rows)
    assert set(statuses) <= {"ok", "error", "not_applicable"}
    assert run.n_items == len(rows) == n_sessions * len(metrics)
    assert (run.n_done, run.n_failed, run.n_not_applicable) == (
        statuses["ok"],
        statuses["error"],
        statuses["not_applicable"],
    )
    assert run.n_done + run.n_failed + run.n_not_applicable == run.n_items
    for row in rows:
        if row.status == "ok":
            assert row.value is not None and row.error is None
            if metrics[row.metric].uses_judge:
                assert row.reason, f"{row.session_id} {row.metric}: an ok judge score without its reason"
        elif row.status == "error":
            assert row.value is None and row.error, f"{row.session_id} {row.metric}: a failure without its error"
        else:
            assert row.value is None and row.error is None
            assert row.reason and (row.reason.startswith("missing ") or row.reason.startswith("no turn to score"))
    by_metric = {s.metric: s for s in report.summaries}
    assert list(by_metric) == list(metrics)
    for key in metrics:
        mine = [r for r in rows if r.metric == key]
        summary = by_metric[key]
        assert summary.count == sum(r.status == "ok" for r in mine)
        assert summary.failed == sum(r.status == "error" for r in mine)
        assert summary.not_applicable == sum(r.status == "not_applicable" for r in mine)
    # What the sample data lacks is "not applicable", whatever the judge did.
    na = {(r.session_id, r.metric) for r in rows if r.status == "not_applicable"}
    everyone = DATABRICKS_IDS + GAUSSIA_IDS
    expected_na = {
        "topic_adherence": set(everyone),  # no reference topics anywhere
        "gaussia_context": set(DATABRICKS_IDS),  # Databricks records carry no context
        "correctness": set(),  # Gaussia's sessions: the last turn's ground truth is the expected response
        "agent_goal_accuracy": set(),  # ... and the desired outcome
        "gaussia_conversational": set(),
        "relevance_to_query": set(),
        "rubric_score": set(),
        "tool_call_count": set(),
    }
    for key, metric in metrics.items():
        if metric.name in expected_na:
            assert {s for s, k in na if k == key} == expected_na[metric.name], key
    return rows


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """A real store with the Databricks and Gaussia samples in one dataset (6 + 4 sessions)."""
    with open_store(store_url) as opened:
        for name in ("databricks.jsonl", "gaussia.json"):
            report = import_file(opened, SAMPLE_DATA / name, DATASET)
            assert report.failed == 0 and report.new > 0
        assert opened.datasets.get(DATASET).sessions == len(DATABRICKS_IDS) + len(GAUSSIA_IDS) == 10
        yield opened


def cli_env(**extra: str) -> dict[str, str]:
    """The environment minus every evalcore/OpenAI setting and proxy, plus ``extra``."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("EVALCORE_", "OPENAI_")) and "proxy" not in k.lower()
    }
    return {**env, **extra}


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=60, env=env)


# -- 1. the client --------------------------------------------------------------------------------


def test_request_shape_answer_and_usage(server: FakeOpenAI, config: JudgeConfig) -> None:
    (verdict,), sent = ask(config)
    assert sent == 1 and len(server.requests) == 1
    request = server.requests[0]
    assert request["model"] == "gpt-4o-mini"
    assert request["temperature"] == 0
    assert request["response_format"] == {"type": "json_object"}
    system, user = request["messages"]
    assert system["role"] == "system" and system["content"].startswith(SYSTEM)
    schema = json.loads(system["content"].split("matches this JSON schema:\n", 1)[1])
    assert schema == Answer.model_json_schema()
    assert user == {"role": "user", "content": USER}
    assert isinstance(verdict.answer, Answer)
    assert verdict.answer == Answer.model_validate(server.answer(request))
    assert verdict.raw == json.dumps(server.answer(request))
    assert (verdict.calls, verdict.cached, len(verdict.keys)) == (1, 0, 1)
    # Tokens as the endpoint reported them, priced from the table (gpt-4o-mini: $0.15 / $0.60 per million).
    assert verdict.input_tokens == prompt_tokens(request) > 0
    assert verdict.output_tokens == len(verdict.raw) // 4 > 0
    assert verdict.cost == pytest.approx(expected_cost(verdict.input_tokens, verdict.output_tokens))
    assert verdict.cost is not None and verdict.cost > 0
    assert verdict.latency_ms > 0


def test_unpriced_model_has_tokens_but_no_cost(server: FakeOpenAI) -> None:
    (verdict,), _ = ask(judge_config(server.url, model="house-llm-7b"))
    assert server.requests[0]["model"] == "house-llm-7b"
    assert verdict.input_tokens > 0 and verdict.output_tokens > 0
    assert verdict.cost is None
    # A price given for it is used.
    (priced,), _ = ask(judge_config(server.url, model="house-llm-7b", prices={"house-llm-7b": (1.0, 2.0)}))
    assert priced.cost == pytest.approx((priced.input_tokens * 1.0 + priced.output_tokens * 2.0) / 1_000_000)


def test_json_mode_off_sends_no_response_format(server: FakeOpenAI) -> None:
    ask(judge_config(server.url, json_mode=False))
    assert "response_format" not in server.requests[0]
    assert server.requests[0]["temperature"] == 0


def test_api_key_is_sent_as_bearer_token() -> None:
    with ScriptedServer() as scripted:
        (verdict,), _ = ask(judge_config(scripted.url, api_key="sk-test-123"))
        (anonymous,), _ = ask(judge_config(scripted.url, api_key=None))
    assert verdict.answer == anonymous.answer == Answer(verdict="yes", reason="4 is right")
    assert [h["path"] for h in scripted.hits] == ["/v1/chat/completions"] * 2
    assert scripted.hits[0]["headers"]["Authorization"] == "Bearer sk-test-123"
    assert "Authorization" not in scripted.hits[1]["headers"]


def test_429_honours_retry_after_then_succeeds(server: FakeOpenAI, config: JudgeConfig, pauses: list[float]) -> None:
    server.queue("429")
    (verdict,), sent = ask(config)
    assert sent == 2 and len(server.requests) == 2
    assert server.requests[0] == server.requests[1]  # the same request, sent again
    assert isinstance(verdict.answer, Answer) and verdict.calls == 1
    # The server said Retry-After: 0.05; the backoff alone would have waited 0.005-0.01 s.
    assert pauses == [0.05]


def test_backoff_doubles_between_tries(server: FakeOpenAI, pauses: list[float]) -> None:
    server.queue("500", "500", "500")
    (verdict,), sent = ask(judge_config(server.url, backoff=1.0, max_wait=3.0))
    assert sent == 4 and isinstance(verdict.answer, Answer)
    # 1, 2, 4 s, each with up to half of it taken off at random (jitter), never more than max_wait.
    assert len(pauses) == 3
    assert 0.5 <= pauses[0] <= 1.0 and 1.0 <= pauses[1] <= 2.0 and 2.0 <= pauses[2] <= 3.0


def test_two_500s_then_success(server: FakeOpenAI, config: JudgeConfig) -> None:
    server.queue("500", "500")
    (verdict,), sent = ask(config)
    assert sent == 3 and len(server.requests) == 3
    assert verdict.answer == Answer.model_validate(server.answer(server.requests[-1]))


def test_timeout_then_success(server: FakeOpenAI, config: JudgeConfig, pauses: list[float]) -> None:
    server.queue("timeout")  # the server holds its first answer until the test ends; the client waits 0.5 s
    (verdict,), sent = ask(config)
    assert sent == 2 and len(server.requests) == 2 and len(pauses) == 1
    assert isinstance(verdict.answer, Answer)
    # The client gave up on the held answer and was answered by its retry, before the first was sent.
    assert server.answered == [1]
    assert verdict.answer == Answer.model_validate(server.answer(server.requests[1]))


def test_garbage_body_is_retried(server: FakeOpenAI, config: JudgeConfig) -> None:
    server.queue("garbage")
    (verdict,), sent = ask(config)
    assert sent == 2
    assert isinstance(verdict.answer, Answer) and verdict.calls == 1


@pytest.mark.parametrize(
    ("faults", "last_problem"),
    [
        (["500", "500", "500", "500"], "HTTP 500: "),
        (["429", "429", "429", "429"], "HTTP 429: "),
        (["timeout", "429", "500", "garbage"], "the endpoint answered 200 with a body that is not JSON"),
        (["429", "garbage", "500", "timeout"], "timed out after 0.5 s"),
    ],
)
def test_more_faults_than_retries_names_the_last_problem(
    server: FakeOpenAI, config: JudgeConfig, faults: list[str], last_problem: str
) -> None:
    server.queue(*faults, "500")  # one more than it should ever ask for
    error, sent = ask_failing(config)
    assert str(error).startswith(f"gave up after 4 tries: {last_problem}"), str(error)
    assert sent == 4 and len(server.requests) == 4  # 1 try + max_retries=3, no fifth
    assert list(server.faults) == ["500"]


def test_malformed_answer_is_repaired(server: FakeOpenAI, config: JudgeConfig) -> None:
    server.queue("malformed")
    (verdict,), sent = ask(config)
    assert sent == 2 and len(server.requests) == 2
    first, repair = server.requests
    assert repair["messages"][:2] == first["messages"]
    bad, instruction = repair["messages"][2:]
    assert bad == {"role": "assistant", "content": "this is not JSON {"}
    assert instruction["role"] == "user"
    assert "not usable" in instruction["content"] and "no JSON object in the answer" in instruction["content"]
    assert "Reply with only the corrected JSON object" in instruction["content"]
    assert repair["model"] == "gpt-4o-mini" and repair["temperature"] == 0
    assert verdict.answer == Answer.model_validate(server.answer(repair))
    # Both calls are paid for, and kept.
    assert (verdict.calls, verdict.cached, len(verdict.keys)) == (2, 0, 2)
    assert verdict.input_tokens == prompt_tokens(first) + prompt_tokens(repair)
    assert verdict.output_tokens == len("this is not JSON {") // 4 + len(verdict.raw) // 4
    assert verdict.cost == pytest.approx(expected_cost(verdict.input_tokens, verdict.output_tokens))


def test_malformed_twice_is_a_judge_error(server: FakeOpenAI, config: JudgeConfig) -> None:
    server.queue("malformed", "malformed")
    error, sent = ask_failing(config)
    assert sent == 2
    assert "not valid even after a repair" in str(error)
    assert "this is not JSON {" in str(error)


def test_answer_breaking_the_schema_is_repaired_with_the_reason() -> None:
    with ScriptedServer((200, {}, completion(json.dumps({"verdict": "maybe", "reason": "unsure"})))) as scripted:
        (verdict,), sent = ask(judge_config(scripted.url))
    assert sent == 2 and verdict.answer == Answer(verdict="yes", reason="4 is right")
    instruction = scripted.hits[1]["body"]["messages"][-1]["content"]
    assert instruction.startswith("That answer is not usable: verdict: ")


@pytest.mark.parametrize(
    "content",
    [f"```json\n{GOOD}\n```", f"Here is my verdict:\n{GOOD}\nHope it helps."],
    ids=["fenced", "with-prose"],
)
def test_json_wrapped_in_fences_or_prose_needs_no_repair(content: str) -> None:
    with ScriptedServer((200, {}, completion(content))) as scripted:
        (verdict,), sent = ask(judge_config(scripted.url))
    assert sent == 1 and len(scripted.hits) == 1
    assert verdict.answer == Answer(verdict="yes", reason="4 is right")


def test_client_error_fails_at_once_without_retries(server: FakeOpenAI, pauses: list[float]) -> None:
    # A wrong base URL: the server answers 404, which no retry can fix.
    error, sent = ask_failing(judge_config(server.url + "/nope"))
    assert sent == 1 and pauses == []  # no wait, no second try
    assert str(error).startswith("the endpoint refused the request: HTTP 404")
    assert server.requests == []  # it never reached /v1/chat/completions


@pytest.mark.parametrize("status", [400, 401, 422])
def test_4xx_fails_at_once_with_the_endpoints_message(status: int) -> None:
    refusal: Scripted = (status, {}, {"error": {"message": "model 'gpt-4o-mini' does not exist"}})
    with ScriptedServer(refusal) as scripted:
        error, sent = ask_failing(judge_config(scripted.url))
    assert sent == 1 and len(scripted.hits) == 1
    assert str(error).startswith(f"the endpoint refused the request: HTTP {status}: ")
    assert "does not exist" in str(error)


def test_answer_without_choices_is_a_judge_error() -> None:
    with ScriptedServer((200, {}, {"object": "chat.completion", "choices": []})) as scripted:
        error, _ = ask_failing(judge_config(scripted.url))
    assert "no choices[0].message.content" in str(error)


def test_retry_after_as_an_http_date(pauses: list[float]) -> None:
    past = email.utils.format_datetime(datetime.now(UTC) - timedelta(seconds=30), usegmt=True)
    future = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    limited = (429, {"Retry-After": past}, {"error": {"message": "slow down"}})
    later = (429, {"Retry-After": future}, {"error": {"message": "come back in 20 s"}})
    with ScriptedServer(limited, later) as scripted:
        (verdict,), sent = ask(judge_config(scripted.url, max_wait=30))
    assert sent == 3 and verdict.answer == Answer(verdict="yes", reason="4 is right")
    # A date gone by: no wait; a date 20 s ahead: those 20 s (within max_wait).
    assert pauses[0] == 0.0 and 18 < pauses[1] <= 20


def test_a_retry_after_longer_than_max_wait_fails_the_call_at_once_and_the_next_ones_too(pauses: list[float]) -> None:
    """The endpoint will not answer for an hour: the call is not retried (it says why), and the calls after it are
    not even sent (a circuit breaker): twenty more items end at once, each with that reason."""
    very_long = (429, {"Retry-After": "3600"}, {"error": {"message": "come back in an hour"}})

    async def go(config: JudgeConfig) -> list[BaseException | Verdict]:
        async with Judge(config) as judge:
            first = await asyncio.gather(judge.ask(SYSTEM, USER, Answer), return_exceptions=True)
            more = await asyncio.gather(*(judge.ask(SYSTEM, f"{USER} {i}", Answer) for i in range(20)),
                                        return_exceptions=True)  # fmt: skip
            return [*first, *more]

    with ScriptedServer(very_long) as scripted:
        started = time.monotonic()
        got = asyncio.run(go(judge_config(scripted.url, max_wait=60)))
        assert time.monotonic() - started < 5 and pauses == []
        assert len(scripted.hits) == 1  # the first call only: the twenty were never sent
    assert all(isinstance(g, JudgeError) for g in got), got
    assert "asks to wait 3,600 s before the next call (HTTP 429, Retry-After), longer than the 60 s" in str(got[0])
    assert all("not sent: the endpoint asks to wait 3,600 s" in str(g) for g in got[1:])


def test_a_storm_of_failures_stops_the_calls_after_five_given_up(pauses: list[float]) -> None:
    """An endpoint answering 500 to everything: five calls are given up on (each after its retries), and the calls
    after them fail at once without being sent, saying why."""
    from evalcore.model.client import BREAKER_AFTER

    failing = [(500, {}, {"error": {"message": "down"}})] * 100

    async def go(config: JudgeConfig) -> list[BaseException | Verdict]:
        async with Judge(config) as judge:
            return [await _settled(judge.ask(SYSTEM, f"{USER} {i}", Answer)) for i in range(12)]

    with ScriptedServer(*failing) as scripted:
        got = asyncio.run(go(judge_config(scripted.url, max_retries=1)))
        assert len(scripted.hits) == BREAKER_AFTER * 2  # five calls, each tried twice; the seven after: not sent
    assert all(isinstance(g, JudgeError) for g in got)
    assert all("gave up after 2 tries: HTTP 500" in str(g) for g in got[:BREAKER_AFTER])
    assert all("not sent: 5 calls in a row were given up on" in str(g) for g in got[BREAKER_AFTER:])


async def _settled(call: Any) -> Any:
    try:
        return await call
    except Exception as exc:
        return exc


def test_unreadable_retry_after_falls_back_to_backoff() -> None:
    # Retry-After is delay-seconds or an HTTP-date (RFC 9110); anything else should be ignored, not fatal.
    odd = (429, {"Retry-After": "soon"}, {"error": {"message": "rate limited"}})
    with ScriptedServer(odd) as scripted:
        (verdict,), sent = ask(judge_config(scripted.url))
    assert sent == 2 and verdict.answer == Answer(verdict="yes", reason="4 is right")


def test_concurrency_is_bounded() -> None:
    async def go(config: JudgeConfig) -> list[Verdict]:
        async with Judge(config) as judge:
            return await asyncio.gather(*(judge.ask(SYSTEM, f"{USER} #{i}", Answer) for i in range(8)))

    with ScriptedServer(latency=0.05) as scripted:
        verdicts = asyncio.run(go(judge_config(scripted.url, concurrency=2)))
    assert len(verdicts) == 8 and len(scripted.hits) == 8
    assert scripted.max_active == 2


# -- 2. the cache -----------------------------------------------------------------------------------


def test_same_question_twice_is_answered_from_the_cache(server: FakeOpenAI, config: JudgeConfig) -> None:
    cache = MemoryCache()
    (first, second), sent = ask(config, cache=cache, times=2)
    assert sent == 1 and len(server.requests) == 1
    assert (first.calls, first.cached) == (1, 0)
    assert (second.calls, second.cached) == (0, 1)
    assert second.answer == first.answer and second.raw == first.raw and second.keys == first.keys
    assert (second.input_tokens, second.output_tokens, second.cost) == (0, 0, 0.0)  # never paid twice
    assert len(cache.calls) == 1
    # Another question, or another model, is another call.
    ask(config, cache=cache, user="Question: 3 + 3?\nAnswer: 6")
    ask(judge_config(server.url, model="gpt-4.1-mini"), cache=cache)
    assert len(server.requests) == 3 and len(cache.calls) == 3


def test_failed_calls_are_not_cached(server: FakeOpenAI, config: JudgeConfig) -> None:
    cache = MemoryCache()
    server.queue("500", "500", "500", "500")
    with pytest.raises(JudgeError):
        ask(config, cache=cache)
    assert cache.calls == {}
    (verdict,), sent = ask(config, cache=cache)
    assert sent == 1 and verdict.calls == 1 and isinstance(verdict.answer, Answer)


def test_store_cache_survives_closing_the_store(server: FakeOpenAI, config: JudgeConfig, tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    server.queue("malformed")  # a repaired answer: two calls, both kept
    with open_store(path) as store:
        (first,), sent = ask(config, cache=StoreJudgeCache(store))
    assert sent == 2 and first.calls == 2
    with open_store(path) as store:
        rows = query(store, "SELECT key, model, request, response FROM judge_cache ORDER BY created_at")
        assert sorted(r[0] for r in rows) == sorted(first.keys)
        assert {r[1] for r in rows} == {"gpt-4o-mini"}
        assert sorted(canonical(json.loads(r[2])) for r in rows) == sorted(canonical(q) for q in server.requests)
        assert "this is not JSON {" in {r[3] for r in rows}
        (again,), sent = ask(config, cache=StoreJudgeCache(store))
    assert sent == 0 and len(server.requests) == 2
    assert (again.calls, again.cached) == (0, 2)
    assert again.answer == first.answer and again.keys == first.keys


# -- 3. end to end through score_dataset ----------------------------------------------------------


def test_score_dataset_rides_out_faults_and_a_rerun_costs_nothing(
    server: FakeOpenAI, config: JudgeConfig, store: Store, tmp_path: Path, pauses: list[float]
) -> None:
    # Three transport faults at most: no call can run out of its four tries; one malformed answer to repair.
    server.queue("429", "500", "timeout", "malformed")
    output = tmp_path / "scores.jsonl"
    # A deadline of 2 s (the held "timeout" answer costs that much): an ordinary answer on a busy machine
    # never runs out of it, so that the only resends are the faults'.
    config = judge_config(server.url, timeout=2.0)
    first = score_dataset(store, DATASET, SPECS, judge=config, concurrency=CONCURRENCY, output=output)
    assert not server.faults  # every fault was served
    # Each transport fault cost exactly one resend of the same request (and one wait): no more.
    asked = Counter(canonical(q) for q in server.requests)
    assert sum(asked.values()) - len(asked) == 3, (sorted(asked.values())[-5:], pauses)
    assert len(pauses) == 3 and 0.05 in pauses  # the 429's Retry-After among them
    rows = check_complete_run(store, first, SPECS)
    assert all(r.status != "error" for r in rows)
    assert first.judge_requests == len(server.requests) > 0
    # The malformed answer was sent back with the repair instruction.
    repairs = [q for q in server.requests if len(q["messages"]) == 4]
    assert len(repairs) == 1 and repairs[0]["messages"][2]["content"] == "this is not JSON {"
    assert "corrected JSON" in repairs[0]["messages"][3]["content"]
    assert all(q["temperature"] == 0 and q["model"] == "gpt-4o-mini" for q in server.requests)

    metrics = metrics_by_key(SPECS)
    ok_judged = [r for r in rows if r.status == "ok" and metrics[r.metric].uses_judge]
    assert {r.metric for r in ok_judged} == {k for k, m in metrics.items() if m.uses_judge} - {"topic_adherence"}
    for row in ok_judged:
        assert row.input_tokens and row.output_tokens, f"{row.session_id} {row.metric}: no tokens stored"
        assert row.cost == pytest.approx(expected_cost(row.input_tokens, row.output_tokens))
    for row in rows:
        if not metrics[row.metric].uses_judge or row.status != "ok":
            assert (row.input_tokens, row.output_tokens, row.cost) == (None, None, None)
    # The turn-level judges kept each turn's score and reason.
    turns = [r for r in store.runs.scores(first.run.id, turns=True) if r.turn is not None]
    assert {r.metric for r in turns} == {"gaussia_context", "gaussia_conversational"}
    assert all(r.reason for r in turns if r.status == "ok")
    dimensions = {"memory", "language", "quality_maxim", "quantity_maxim", "relation_maxim", "manner_maxim"}
    conversational = [r for r in turns if r.metric == "gaussia_conversational" and r.status == "ok"]
    assert conversational and all(set(r.sub) == {*dimensions, "sensibleness"} for r in conversational)

    # --output: one line per (session, metric), the same as the store.
    lines = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert first.output == str(output)
    assert len(lines) == len(rows)
    for line, row in zip(lines, rows, strict=True):
        assert {"session_id", "position", "metric", "value", "reason", "error"} <= set(line)
        assert (line["session_id"], line["position"], line["metric"]) == (row.session_id, row.position, row.metric)
        assert (line["value"], line["reason"], line["error"]) == (row.value, row.reason, row.error)
        assert line.get("not_applicable", False) == (row.status == "not_applicable")
    assert {line["session_id"] for line in lines} == set(DATABRICKS_IDS + GAUSSIA_IDS)

    # A new run of the same metrics: every call answered from the store's cache, not one request.
    before = len(server.requests)
    second = score_dataset(store, DATASET, SPECS, judge=config, resume=False)
    assert second.run.id != first.run.id and not second.resumed
    assert second.judge_requests == 0 and len(server.requests) == before
    check_complete_run(store, second, SPECS)
    old, new = all_rows(store, first.run.id), all_rows(store, second.run.id)
    assert old.keys() == new.keys()
    for key, row in old.items():
        again = new[key]
        assert (again.status, again.value, again.reason, again.error, again.sub) == (
            row.status,
            row.value,
            row.reason,
            row.error,
            row.sub,
        ), key
    for metric, status, calls, cached in usage_columns(store, second.run.id):
        if status == "ok" and metrics[metric].uses_judge:
            assert calls == 0 and cached and cached >= 1, (metric, calls, cached)
    assert [s.describe() for s in second.summaries] == [s.describe() for s in first.summaries]


def test_score_dataset_keeps_judge_failures_as_data(server: FakeOpenAI, config: JudgeConfig, store: Store) -> None:
    # Four judge calls in flight at most and eight sessions in progress (each asking one thing at a time):
    # 25 transport faults in a row are more than eight calls can absorb with four tries each (24), so at
    # least one call gives up.
    server.queue("garbage", "429", "timeout", *["500"] * 22)
    first = score_dataset(store, DATASET, SPECS, judge=config, concurrency=CONCURRENCY)
    assert not server.faults
    rows = check_complete_run(store, first, SPECS)
    every = all_rows(store, first.run.id)
    failed = [r for r in every.values() if r.status == "error"]
    assert failed, "25 faults in a row should exhaust some call's retries"
    for row in failed:
        assert row.value is None
        assert row.error and row.error.removeprefix("every turn failed; first: ").startswith(
            "JudgeError: gave up after 4 tries: "
        ), row.error
    session_failed = [r for r in rows if r.status == "error"]
    assert first.run.n_failed == len(session_failed)
    assert sum(s.failed for s in first.summaries) == len(session_failed)

    # A new run asks again only what failed (failures are never cached) and now succeeds everywhere.
    before = len(server.requests)
    second = score_dataset(store, DATASET, SPECS, judge=config, resume=False)
    assert 0 < second.judge_requests == len(server.requests) - before <= 2 * len(failed)
    check_complete_run(store, second, SPECS)
    redone = all_rows(store, second.run.id)
    assert redone.keys() == every.keys()
    groups_failed = {(pk, metric) for pk, metric, _turn in (k for k, r in every.items() if r.status == "error")}
    for key, row in every.items():
        again = redone[key]
        assert again.status != "error", key
        if row.status != "error" and (key[0], key[1]) not in groups_failed:
            assert (again.status, again.value, again.reason) == (row.status, row.value, row.reason), key

    # And the run after that is answered entirely from the cache.
    before = len(server.requests)
    third = score_dataset(store, DATASET, SPECS, judge=config, resume=False)
    assert third.judge_requests == 0 and len(server.requests) == before
    final = all_rows(store, third.run.id)
    assert {k: (r.status, r.value, r.reason) for k, r in final.items()} == {
        k: (r.status, r.value, r.reason) for k, r in redone.items()
    }


# -- 4. resuming -------------------------------------------------------------------------------------------

RESUME_SPECS: list[str | dict[str, Any] | Metric] = ["correctness", "gaussia_conversational", "tool_call_count"]


def test_resume_skips_sessions_already_scored(server: FakeOpenAI, config: JudgeConfig, store: Store) -> None:
    # A run that stopped part-way: three sessions fully scored, the fourth with only its first metric.
    metrics = [create_metric(s) for s in RESUME_SPECS]
    runs = store.runs
    pks = store.sessions.pks(DATASET)
    run = runs.create(
        DATASET,
        [m.key() for m in metrics],
        {m.key(): {"name": m.name, **m.params()} for m in metrics},
        judge_model="gpt-4o-mini",
        judge_base_url=config.base_url,
        n_items=len(pks) * len(metrics),
    )

    async def partial() -> None:
        async with Judge(config, StoreJudgeCache(store)) as judge:
            for stored in store.sessions.get_many(pks[:4]):
                chosen = metrics if stored.pk != pks[3] else metrics[:1]
                for metric in chosen:
                    results = await metric.evaluate_async(stored.session, judge)
                    save_results(store, run.id, [(stored.pk, metric.key(), r) for r in results])

    asyncio.run(partial())
    assert runs.done_sessions(run.id, run.metrics) == set(pks[:3])
    n_before = len(server.requests)
    asked_before = {canonical(q) for q in server.requests}
    kept = query(
        store,
        "SELECT session_pk, metric, turn, created_at FROM scores WHERE run_id = ? AND session_pk IN (?, ?, ?) "
        "ORDER BY session_pk, metric, turn",
        [run.id, *pks[:3]],
    )

    report = score_dataset(store, DATASET, RESUME_SPECS, judge=config, concurrency=CONCURRENCY, resume=True)
    assert report.resumed and report.run.id == run.id
    assert report.skipped == 3 and report.sessions == 10
    assert [r.id for r in runs.recent(DATASET)] == [run.id]  # no new run
    check_complete_run(store, report, RESUME_SPECS)
    all_rows(store, run.id)  # no (session, metric, turn) twice
    # The sessions already scored were left alone; the fourth one's first metric came from the cache.
    assert (
        query(
            store,
            "SELECT session_pk, metric, turn, created_at FROM scores WHERE run_id = ? AND session_pk IN (?, ?, ?) "
            "ORDER BY session_pk, metric, turn",
            [run.id, *pks[:3]],
        )
        == kept
    )
    assert not asked_before & {canonical(q) for q in server.requests[n_before:]}
    assert report.judge_requests == len(server.requests) - n_before

    # The resumed run scores as a run done in one go would.
    fresh = score_dataset(store, DATASET, RESUME_SPECS, judge=config, resume=False)
    assert fresh.judge_requests == 0
    resumed_rows, fresh_rows = all_rows(store, run.id), all_rows(store, fresh.run.id)
    assert {k: (r.status, r.value, r.reason) for k, r in resumed_rows.items()} == {
        k: (r.status, r.value, r.reason) for k, r in fresh_rows.items()
    }


def test_resume_after_the_cli_is_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "evalcore.db"
    with open_store(db) as store:
        for name in ("databricks.jsonl", "gaussia.json"):
            import_file(store, SAMPLE_DATA / name, DATASET)
    with FakeOpenAI(latency=0.05) as server:
        env = cli_env(EVALCORE_BASE_URL=server.url, EVALCORE_JUDGE_MODEL="gpt-4o-mini", EVALCORE_API_KEY="test")
        args = ["score", "--dataset", DATASET, "--metrics", ",".join(map(str, RESUME_SPECS)), "--concurrency", "1"]
        proc = subprocess.Popen(
            [EVALCORE, *args, "--db", str(db)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            # 27 judge calls in all, one at a time, at most 4 per session and 2 sessions in progress: once 16
            # have been asked, 15 are answered (and cached), at least three sessions are complete (two of them
            # surely collected) and 11 calls remain.
            deadline = time.monotonic() + 30
            while len(server.requests) < 16:
                assert proc.poll() is None, f"finished before it could be interrupted: {proc.communicate()}"
                assert time.monotonic() < deadline, "the CLI made no progress"
                time.sleep(0.005)
            proc.send_signal(signal.SIGINT)
            _out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        # Interrupted: a non-zero exit saying so (the CLI now reports it in a line, exit 130, not a traceback).
        assert proc.returncode != 0 and ("interrupted" in err or "KeyboardInterrupt" in err), err
        interrupted = len(server.requests)
        assert interrupted < 27

        with open_store(db) as store:
            runs = store.runs
            (run,) = runs.recent(DATASET)
            assert run.status == "running" and run.finished_at is None
            done = runs.done_sessions(run.id, run.metrics)
            assert len(done) >= 2
            cached = {canonical(json.loads(r[0])) for r in query(store, "SELECT request FROM judge_cache")}
            assert len(cached) >= 15

            report = score_dataset(
                store, DATASET, RESUME_SPECS, judge=judge_config(server.url), concurrency=CONCURRENCY, resume=True
            )
            assert report.resumed and report.run.id == run.id
            assert report.skipped == len(done) and report.sessions == 10
            check_complete_run(store, report, RESUME_SPECS)
            all_rows(store, run.id)
            # No call answered before the interruption is paid for again.
            assert not cached & {canonical(q) for q in server.requests[interrupted:]}
            assert [r.id for r in runs.recent(DATASET)] == [run.id]


# -- 5. judge metrics without a judge ---------------------------------------------------------------------


def test_judge_metric_without_judge_is_a_usage_error(store: Store) -> None:
    with pytest.raises(UsageError) as caught:
        score_dataset(store, DATASET, ["tool_call_count", "correctness", "rubric_score"], judge=None)
    message = str(caught.value)
    assert "correctness" in message and "rubric_score" in message and "tool_call_count" not in message
    assert "EVALCORE_JUDGE_MODEL" in message
    assert store.runs.recent() == []  # nothing was started
    # Deterministic metrics need no judge.
    report = score_dataset(store, DATASET, ["tool_call_count"], judge=None)
    assert report.run.status == "done" and report.judge_requests == 0


def test_cli_judge_metric_without_judge_model_exits_2(tmp_path: Path) -> None:
    db = str(tmp_path / "evalcore.db")
    env = cli_env()
    imported = run_cli("import", str(SAMPLE_DATA / "databricks.jsonl"), "--dataset", "dbx", "--db", db, env=env)
    assert imported.returncode == 0, imported.stderr
    proc = run_cli("score", "--dataset", "dbx", "--metrics", "correctness,tool_call_count", "--db", db, env=env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("evalcore: error: correctness ")
    assert "EVALCORE_JUDGE_MODEL" in proc.stderr
    assert proc.stdout == ""
    with open_store(db) as store:
        assert store.runs.recent() == []


# -- 6. the command line end to end -------------------------------------------------------------------------


def test_cli_import_then_score_with_the_judge(server: FakeOpenAI, tmp_path: Path) -> None:
    db, out = str(tmp_path / "evalcore.db"), tmp_path / "scores.jsonl"
    env = cli_env(EVALCORE_BASE_URL=server.url, EVALCORE_JUDGE_MODEL="gpt-4o-mini", EVALCORE_API_KEY="test")
    imported = run_cli("import", str(SAMPLE_DATA / "databricks.jsonl"), "--dataset", "dbx", "--db", db, env=env)
    assert imported.returncode == 0, imported.stderr
    score = ["score", "--dataset", "dbx", "--metrics", "correctness,tool_call_count", "--concurrency", "4", "--db", db]
    proc = run_cli(*score, "--output", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = proc.stdout.splitlines()
    assert len(summary) == 2
    assert summary[0].startswith("correctness: ") and " n=6" in summary[0]
    assert summary[1].startswith("tool_call_count: ") and " n=6" in summary[1]
    assert "run 1: 6 sessions of 'dbx', 6 judge requests" in proc.stderr
    assert f"scores written to {out}" in proc.stderr
    assert len(server.requests) == 6
    assert all(q["model"] == "gpt-4o-mini" and q["temperature"] == 0 for q in server.requests)

    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 12
    assert Counter(line["metric"] for line in lines) == {"correctness": 6, "tool_call_count": 6}
    assert {line["session_id"] for line in lines} == set(DATABRICKS_IDS)
    assert {line["position"] for line in lines} == set(range(6))
    for line in lines:
        assert {"session_id", "position", "metric", "value", "reason", "error"} <= set(line)
        assert line["error"] is None and line["value"] is not None
        if line["metric"] == "correctness":
            assert line["value"] in (0.0, 1.0) and line["reason"]

    # Again: the finished run is not resumed; the new one is answered from the store's cache.
    again = run_cli(*score, env=env)
    assert again.returncode == 0, again.stderr
    assert "run 2: 6 sessions of 'dbx', 0 judge requests" in again.stderr
    assert again.stdout == proc.stdout
    assert len(server.requests) == 6


def test_cli_exits_1_when_judge_calls_fail_and_keeps_the_error(server: FakeOpenAI, tmp_path: Path) -> None:
    db, out = str(tmp_path / "evalcore.db"), tmp_path / "scores.jsonl"
    env = cli_env(EVALCORE_BASE_URL=server.url, EVALCORE_JUDGE_MODEL="gpt-4o-mini", EVALCORE_API_KEY="test")
    imported = run_cli("import", str(SAMPLE_DATA / "databricks.jsonl"), "--dataset", "dbx", "--db", db, env=env)
    assert imported.returncode == 0, imported.stderr
    server.queue("500")
    proc = run_cli(
        "score", "--dataset", "dbx", "--metrics", "correctness", "--max-retries", "0", "--concurrency", "4",
        "--output", str(out), "--db", db, env=env,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.startswith("correctness: ") and "n=5 (1 failed)" in proc.stdout
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    failed = [line for line in lines if line["error"]]
    assert len(lines) == 6 and len(failed) == 1
    assert failed[0]["value"] is None
    assert failed[0]["error"].startswith("JudgeError: gave up after 1 tries: HTTP 500: ")


def test_a_failed_exchange_is_not_cached_and_its_cost_is_kept(server: FakeOpenAI, config: JudgeConfig) -> None:
    server.queue("malformed", "malformed")
    cache = MemoryCache()
    judge = Judge(config, cache)

    async def go() -> None:
        async with judge:
            await judge.ask(SYSTEM, USER, Answer)

    with pytest.raises(JudgeError) as caught:
        asyncio.run(go())
    verdict = caught.value.verdict
    assert verdict is not None and verdict.calls == 2 and verdict.input_tokens > 0
    assert verdict.cost == pytest.approx(expected_cost(verdict.input_tokens, verdict.output_tokens))
    assert cache.calls == {}  # nothing kept: a new run asks again
    (again,), sent = ask(config, cache=cache)
    assert sent == 1 and again.answer is not None and len(cache.calls) == 1


def test_a_metric_that_fails_keeps_what_its_calls_cost(server: FakeOpenAI, config: JudgeConfig) -> None:
    from evalcore.schema import Message, Session

    session = Session(
        messages=[Message(role="user", content="hi"), Message(role="assistant", content="hello")],
        reference="hello",
    )
    server.queue("malformed", "malformed")

    async def go() -> Any:
        async with Judge(config) as judge:
            return await create_metric("correctness").evaluate_async(session, judge)

    (result,) = asyncio.run(go())
    assert result.status == "error" and "not valid even after a repair" in (result.error or "")
    assert result.usage is not None and result.usage.calls == 2 and result.usage.model == config.model


def test_a_turn_metric_whose_every_turn_fails_keeps_what_its_calls_cost(
    server: FakeOpenAI, config: JudgeConfig
) -> None:
    from evalcore.schema import Message, Session

    session = Session(messages=[Message(role="user", content="hi"), Message(role="assistant", content="hello")])
    server.queue("malformed", "malformed")

    async def go() -> Any:
        async with Judge(config) as judge:
            return await create_metric("gaussia_conversational").evaluate_async(session, judge)

    turn, whole = asyncio.run(go())
    assert turn.status == "error" and turn.usage is not None and turn.usage.calls == 2
    assert whole.status == "error" and whole.error and whole.error.startswith("every turn failed; first: ")
    assert whole.usage is not None and whole.usage.calls == 2 and whole.usage.input_tokens == turn.usage.input_tokens


def test_a_session_says_how_many_of_its_turns_failed(server: FakeOpenAI) -> None:
    from evalcore.schema import Message, Session
    from evalcore.scoring import score_sessions

    exchanges = [("Hi", "Hello!"), ("Capital of France?", "Paris."), ("Thanks", "You're welcome.")]
    session = Session(
        messages=[Message(role=r, content=c) for q, a in exchanges for r, c in (("user", q), ("assistant", a))]
    )
    # Turns are judged one after another: the first turn's only try fails, the other two are answered.
    server.queue("500")
    (scored,) = score_sessions([session], ["gaussia_conversational"], judge=judge_config(server.url, max_retries=0))
    first, second, third, whole = scored["gaussia_conversational"]
    assert (first.turn, second.turn, third.turn, whole.turn) == (0, 1, 2, None)
    assert first.status == "error" and (first.error or "").startswith("JudgeError: gave up after 1 tries: HTTP 500")
    assert second.status == third.status == whole.status == "ok"
    assert whole.reason == "weighted mean of 2 turns; 1 failed"
    assert whole.value == pytest.approx(((second.value or 0) + (third.value or 0)) / 2)
    # Two failed of three: the count follows.
    server.queue("500", "500")
    (scored,) = score_sessions([session], ["gaussia_conversational"], judge=judge_config(server.url, max_retries=0))
    assert scored["gaussia_conversational"][-1].reason == "weighted mean of 1 turn; 2 failed"
    # None failed: nothing said.
    (scored,) = score_sessions([session], ["gaussia_conversational"], judge=judge_config(server.url, max_retries=0))
    assert scored["gaussia_conversational"][-1].reason == "weighted mean of 3 turns"


def test_the_cache_tells_endpoints_apart(server: FakeOpenAI, config: JudgeConfig) -> None:
    # One model name on two servers (a local Ollama and a vLLM, say) can be two different models.
    cache = MemoryCache()
    with FakeOpenAI() as other:
        (first,), sent = ask(config, cache=cache)
        (second,), sent_other = ask(judge_config(other.url), cache=cache)
        assert sent == sent_other == 1 and len(other.requests) == 1 and second.cached == 0
        (again,), sent_again = ask(judge_config(other.url), cache=cache)
        assert sent_again == 0 and again.cached == 1 and len(cache.calls) == 2


def test_an_endpoint_that_reports_no_usage_gives_an_unknown_cost(server: FakeOpenAI, config: JudgeConfig) -> None:
    server.queue("no_usage")
    (verdict,), sent = ask(config)
    assert sent == 1 and verdict.answer is not None
    assert (verdict.calls, verdict.input_tokens, verdict.output_tokens, verdict.cost) == (1, 0, 0, None)


def test_a_turns_ground_truth_is_the_expected_response_of_session_judges(
    server: FakeOpenAI, config: JudgeConfig
) -> None:
    # Gaussia keeps the reference per turn (ground_truth_assistant): the last turn's is the session's.
    from evalcore.schema import Message, Session, TurnTruth
    from evalcore.scoring import score_sessions

    session = Session(
        messages=[Message(role="user", content="Capital of France?"), Message(role="assistant", content="Paris.")],
        turn_truth=[TurnTruth(ground_truth="Paris is the capital of France.")],
    )
    (scored,) = score_sessions([session], ["correctness", "agent_goal_accuracy", "rubric_score"], judge=config)
    assert all(results[-1].status == "ok" for results in scored.values()), scored
    asked = [r["messages"][1]["content"] for r in server.requests]
    assert "Expected response:\nParis is the capital of France." in asked[0]
    assert "Desired outcome:\nParis is the capital of France." in asked[1]
    assert "Reference answer:\nParis is the capital of France." in asked[2]


class ScriptedAnswers(FakeOpenAI):
    """Answers with the given JSON objects in turn (the last one from then on)."""

    def __init__(self, *answers: Any) -> None:
        super().__init__()
        self.answers = list(answers)

    def answer(self, request: dict[str, Any], suffix: str = "") -> Any:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_a_judge_that_skips_guidelines_or_chunks_is_asked_to_repair_then_fails() -> None:
    from evalcore.schema import ContextChunk, Message, Session
    from evalcore.scoring import score_sessions

    session = Session(
        messages=[Message(role="user", content="Tell me about Acme"), Message(role="assistant", content="ACME!!!")],
        guidelines=["Be polite", "No capital letters", "Answer in French"],
        retrieved_context=[ContextChunk(content=c) for c in ("Acme sells anvils", "Sunny today", "Cats")],
    )
    one = {"reason": "polite", "checks": [{"guideline": "Be polite", "followed": True}]}
    three = {"reason": "shouts", "checks": [{"guideline": g, "followed": g == "Be polite"} for g in session.guidelines]}
    with ScriptedAnswers(one, three) as server:
        (scored,) = score_sessions([session], ["guideline_adherence"], judge=judge_config(server.url))
        (result,) = scored["guideline_adherence"]
        assert len(server.requests) == 2 and "checks" in server.requests[1]["messages"][-1]["content"]
    assert result.value == 0.0 and result.sub == {"share_followed": pytest.approx(1 / 3)}
    assert "Not followed: No capital letters; Answer in French" in (result.reason or "")
    rating = {"reason": "one", "ratings": [{"chunk": 1, "relevant": True}]}
    with ScriptedAnswers(rating) as server:  # never all three: an error, not a precision of 1 of 1
        (scored,) = score_sessions([session], ["chunk_relevance_precision"], judge=judge_config(server.url))
        (result,) = scored["chunk_relevance_precision"]
    assert result.status == "error" and "not valid even after a repair" in (result.error or "")
    assert result.usage is not None and result.usage.calls == 2
