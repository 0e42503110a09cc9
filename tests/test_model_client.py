"""The one model client (``evalcore.model``), against a real HTTP server on 127.0.0.1 speaking chat completions:
plain completions of any model on the endpoint, with retries, tokens and each model's own price; the judge
asks through it (``tests/test_judge*.py`` cover its hostile-endpoint bounds through the judge)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from openai_server import FakeOpenAI
from pydantic import BaseModel

from evalcore.errors import EvalcoreError
from evalcore.judge import Judge, JudgeConfig, JudgeError
from evalcore.model import Completion, ModelClient, ModelConfig, ModelError

SECRET = "sk-model-client-secret"


class Rating(BaseModel):
    score: int


def _config(url: str, **options: Any) -> ModelConfig:
    prices = {"small": (1.0, 2.0), "judge": (10.0, 20.0)}
    return ModelConfig(model="small", base_url=url, api_key=SECRET, backoff=0.01, prices=prices, **options)


def test_a_plain_completion_of_the_default_model_and_of_another() -> None:
    async def go(client: ModelClient) -> tuple[Completion, Completion]:
        async with client:
            first = await client.complete([{"role": "user", "content": "What is the capital of Austria?"}])
            other = await client.complete([{"role": "user", "content": "Yes"}], model="judge", temperature=0)
            return first, other

    with FakeOpenAI() as server:
        first, other = asyncio.run(go(ModelClient(_config(server.url))))
        assert [r["model"] for r in server.requests] == ["small", "judge"]
        assert "temperature" not in server.requests[0] and server.requests[1]["temperature"] == 0
    assert first.model == "small" and other.model == "judge" and first.text == "{}"
    assert first.input_tokens == len("What is the capital of Austria?") // 4 and first.output_tokens == 0
    # Each model at its own price.
    assert first.cost == pytest.approx(first.input_tokens * 1.0 / 1e6)
    assert other.cost == pytest.approx(other.input_tokens * 10.0 / 1e6)
    assert first.latency_ms > 0 and first.warning is None


def test_retries_then_an_answer_and_errors_that_name_the_cause() -> None:
    async def one(config: ModelConfig) -> Completion:
        async with ModelClient(config) as client:
            return await client.complete([{"role": "user", "content": "hi"}])

    with FakeOpenAI() as server:
        server.queue("500", "429")
        answer = asyncio.run(one(_config(server.url)))
        assert answer.text == "{}" and len(server.requests) == 3
        server.queue("500", "500", "500")
        with pytest.raises(ModelError, match=r"gave up after 3 tries: HTTP 500") as caught:
            asyncio.run(one(_config(server.url, max_retries=2)))
        assert isinstance(caught.value, EvalcoreError) and SECRET not in str(caught.value)
        server.queue("no_usage")
        unpriced = asyncio.run(one(_config(server.url)))
        assert unpriced.cost is None and unpriced.input_tokens == 0


def test_the_judge_asks_through_the_client_and_its_errors_are_model_errors() -> None:
    with FakeOpenAI() as server:
        server.queue("500", "500")
        config = JudgeConfig(model="judge", base_url=server.url, api_key=SECRET, backoff=0.01, max_retries=1)

        async def ask() -> None:
            async with Judge(config) as judge:
                await judge.ask("Rate it.", "text", Rating)

        with pytest.raises(JudgeError) as caught:
            asyncio.run(ask())
        assert isinstance(caught.value, ModelError) and "gave up after 2 tries" in str(caught.value)


def test_an_unusable_key_is_the_calls_error_never_a_crash() -> None:
    async def one(config: ModelConfig) -> Completion:
        async with ModelClient(config) as client:
            return await client.complete([{"role": "user", "content": "hi"}])

    with FakeOpenAI() as server:
        with pytest.raises(ModelError) as caught:
            asyncio.run(one(ModelConfig(model="m", base_url=server.url, api_key="clé-secrète", max_retries=0)))
        assert "clé-secrète" not in str(caught.value) and not server.requests


def test_the_key_is_redacted_in_every_form_an_endpoint_might_echo_it() -> None:
    """An endpoint echoing the key upper-cased, lower-cased, reversed or in base64 (with or without its padding,
    standard or URL-safe) still leaves no trace of it in what evalcore keeps."""
    import base64

    from evalcore.model.redact import REDACTED, Redactor

    key = "sk-test-AbCdEf0123456789+/xyz"
    redact = Redactor([key])
    raw = key.encode()
    forms = [key, key.upper(), key.lower(), key[::-1], key.upper()[::-1], base64.b64encode(raw).decode(),
             base64.b64encode(raw).decode().rstrip("="), base64.urlsafe_b64encode(raw).decode()]  # fmt: skip
    for form in forms:
        shown = redact(f"401: the key {form} is not valid")
        assert form not in shown and REDACTED in shown, form
    assert redact("nothing secret here") == "nothing secret here"
