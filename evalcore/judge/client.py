"""One client for any OpenAI-compatible chat-completions endpoint, used by every judge metric.

Async with bounded concurrency; retries with backoff on rate limits (honouring
``Retry-After``), server errors and timeouts; temperature 0; the answer parsed as JSON and
validated against the metric's schema, with one repair attempt; every call's prompt, raw
answer, tokens and cost kept; identical calls answered from a cache.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from evalcore.errors import EvalcoreError
from evalcore.judge.config import JudgeConfig

__all__ = ["CachedCall", "Judge", "JudgeCache", "JudgeError", "MemoryCache", "Verdict"]

T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class JudgeError(EvalcoreError):
    """The judge could not give a usable answer (after retries and one repair).

    ``verdict`` holds what the calls made before the failure cost, when there were any.
    """

    def __init__(self, message: str, verdict: Verdict | None = None) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.model: str | None = None


@dataclass(frozen=True)
class CachedCall:
    """A judge call as the cache keeps it."""

    key: str
    model: str
    request: dict[str, Any]
    response: str
    input_tokens: int
    output_tokens: int


class JudgeCache(Protocol):
    """Where judge answers are kept so an identical call is never paid twice."""

    def get(self, key: str) -> CachedCall | None:
        """The call stored under ``key``."""

    def put(self, call: CachedCall) -> None:
        """Keep a call."""


class MemoryCache:
    """A judge cache in memory (the store provides one in SQLite)."""

    def __init__(self) -> None:
        self.calls: dict[str, CachedCall] = {}

    def get(self, key: str) -> CachedCall | None:
        return self.calls.get(key)

    def put(self, call: CachedCall) -> None:
        self.calls[call.key] = call


@dataclass
class Verdict:
    """A parsed answer with what it cost."""

    answer: Any
    raw: str
    keys: list[str] = field(default_factory=list)  # cache keys of the calls behind it
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0
    latency_ms: float = 0.0


class Judge:
    """Asks the judge model questions whose answers must fit a pydantic schema."""

    def __init__(self, config: JudgeConfig, cache: JudgeCache | None = None) -> None:
        self.config = config
        self.cache = cache if cache is not None else MemoryCache()
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self.requests = 0  # HTTP requests actually sent

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
            self._client = httpx.AsyncClient(
                base_url=self.config.base_url, headers=headers, timeout=self.config.timeout
            )
            self._semaphore = asyncio.Semaphore(max(1, self.config.concurrency))
        return self._client

    async def ask(self, system: str, user: str, schema: type[T]) -> Verdict:
        """Ask, parse the JSON answer into ``schema``; on a bad answer, ask once more to repair it.

        Only exchanges that end in a usable answer are cached (a repaired one with its bad first
        answer, so that a new run replays it for free); a new run asks again what failed before.
        """
        instructions = (
            f"{system}\n\nAnswer with a single JSON object, and nothing else, that matches this JSON schema:\n"
            f"{json.dumps(schema.model_json_schema(), ensure_ascii=False)}"
        )
        messages = [{"role": "system", "content": instructions}, {"role": "user", "content": user}]
        verdict = Verdict(answer=None, raw="")
        try:
            raw, first = await self._complete(messages, verdict)
            try:
                verdict.answer = _parse(raw, schema)
                self._keep(first)
                return verdict
            except (ValueError, ValidationError) as exc:
                problem = _explain(exc)
            messages += [
                {"role": "assistant", "content": raw},
                {
                    "role": "user",
                    "content": f"That answer is not usable: {problem}. Reply with only the corrected JSON object.",
                },
            ]
            raw, call = await self._complete(messages, verdict)
            try:
                verdict.answer = _parse(raw, schema)
            except (ValueError, ValidationError) as exc:
                message = f"the judge's answer is not valid even after a repair: {_explain(exc)}; answer: {raw[:200]!r}"
                raise JudgeError(message) from exc
            self._keep(first)
            self._keep(call)
            return verdict
        except JudgeError as exc:
            exc.verdict = verdict  # what the calls made so far cost
            exc.model = self.config.model
            raise

    def _keep(self, call: CachedCall | None) -> None:
        if call is not None:
            self.cache.put(call)

    async def _complete(self, messages: list[dict[str, str]], verdict: Verdict) -> tuple[str, CachedCall | None]:
        """One call: the raw answer, and the call to cache once the answer proves usable
        (``None`` when it came from the cache)."""
        request: dict[str, Any] = {"model": self.config.model, "messages": list(messages), "temperature": 0}
        if self.config.json_mode:
            request["response_format"] = {"type": "json_object"}
        # The endpoint is part of the question: one model name on two servers can be two models.
        asked = {"endpoint": self.config.base_url.rstrip("/"), **request}
        key = hashlib.sha256(json.dumps(asked, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        verdict.keys.append(key)
        cached = self.cache.get(key)
        if cached is not None:
            verdict.cached += 1
            verdict.raw = cached.response
            return cached.response, None
        started = time.monotonic()
        body = await self._post(request)
        verdict.latency_ms += (time.monotonic() - started) * 1000
        try:
            raw = body["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise JudgeError(f"the endpoint's answer has no choices[0].message.content: {str(body)[:200]}") from exc
        usage = body.get("usage") or {}
        tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        verdict.calls += 1
        verdict.input_tokens += tokens_in
        verdict.output_tokens += tokens_out
        cost = self.config.cost(tokens_in, tokens_out) if usage else None  # no usage reported: cost unknown
        verdict.cost = None if cost is None or verdict.cost is None else verdict.cost + cost
        verdict.raw = raw
        return str(raw), CachedCall(key, self.config.model, request, raw, tokens_in, tokens_out)

    async def _post(self, request: dict[str, Any]) -> dict[str, Any]:
        client = self._http()
        assert self._semaphore is not None
        last = "no attempt"
        for attempt in range(self.config.max_retries + 1):
            wait: float | None = None
            async with self._semaphore:
                self.requests += 1
                try:
                    response = await client.post("/chat/completions", json=request)
                except httpx.TimeoutException:
                    last = f"timed out after {self.config.timeout:g} s"
                except httpx.TransportError as exc:
                    last = f"connection failed ({type(exc).__name__}: {exc})"
                else:
                    if response.status_code == 200:
                        try:
                            body: dict[str, Any] = response.json()
                            return body
                        except ValueError:
                            last = "the endpoint answered 200 with a body that is not JSON"
                    elif response.status_code == 429 or response.status_code >= 500:
                        last = f"HTTP {response.status_code}: {response.text[:200]}"
                        if response.status_code == 429:
                            wait = _retry_after(response.headers.get("retry-after"))
                    else:
                        raise JudgeError(
                            f"the endpoint refused the request: HTTP {response.status_code}: {response.text[:300]}"
                        )
            if attempt == self.config.max_retries:
                break
            delay = self.config.backoff * (2**attempt) * (0.5 + random.random() / 2)
            await asyncio.sleep(min(self.config.max_wait, wait if wait is not None else delay))
        raise JudgeError(f"gave up after {self.config.max_retries + 1} tries: {last}")


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unreadable: back off as usual
    return max(0.0, moment.timestamp() - time.time())


def _parse(raw: str, schema: type[T]) -> T:
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    if not text.startswith("{"):
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end < start:
            raise ValueError("no JSON object in the answer")
        text = text[start : end + 1]
    return schema.model_validate_json(text)


def _explain(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in error["loc"])
        return f"{where}: {error['msg']}" if where else str(error["msg"])
    return str(exc)
