"""The LLM judge: questions whose answers must fit a pydantic schema, asked through the one model client.

Temperature 0; the answer parsed as JSON and validated against the metric's schema, with one repair
attempt; every call's prompt, raw answer, tokens and cost kept; identical calls answered from a cache.
Retries, deadlines, size caps and redaction are the client's (``evalcore.model.ModelClient``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from evalcore.judge.config import JudgeConfig
from evalcore.model.client import ModelClient, ModelError, request_key

__all__ = ["CachedCall", "Judge", "JudgeCache", "JudgeError", "MemoryCache", "Verdict"]

T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class JudgeError(ModelError):
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
    input_tokens: int | None  # None: the endpoint's figures were not believable
    output_tokens: int | None


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
    """A parsed answer with what it cost.

    Tokens and cost are ``None`` (unknown) once a call reported figures that cannot be true;
    ``warnings`` says so.
    """

    answer: Any
    raw: str
    keys: list[str] = field(default_factory=list)  # cache keys of the calls behind it
    calls: int = 0
    cached: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost: float | None = 0.0
    latency_ms: float = 0.0
    warnings: list[str] = field(default_factory=list)


class Judge:
    """Asks the judge model questions whose answers must fit a pydantic schema."""

    def __init__(self, config: JudgeConfig, cache: JudgeCache | None = None) -> None:
        self.config = config
        self.cache = cache if cache is not None else MemoryCache()
        self.client = ModelClient(config)
        #: Removes the API key and the base URL's credentials from a text (see ``evalcore.model.redact``).
        self.redact = self.client.redact

    @property
    def requests(self) -> int:
        """HTTP requests actually sent (retries included)."""
        return self.client.requests

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self.client.aclose()

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
                raise JudgeError(self.redact(message)) from None
            self._keep(first)
            self._keep(call)
            return verdict
        except JudgeError as exc:
            exc.verdict = verdict  # what the calls made so far cost
            exc.model = self.config.model
            raise
        except ModelError as exc:  # the client's: the same words, as the judge's error
            error = JudgeError(str(exc), verdict)
            error.model = self.config.model
            raise error from None
        except Exception as exc:  # anything else (an unusable URL, say) fails this item, its text redacted
            error = JudgeError(self.redact(f"{type(exc).__name__}: {exc}"), verdict)
            error.model = self.config.model
            raise error from None

    def _keep(self, call: CachedCall | None) -> None:
        if call is not None:
            self.cache.put(call)

    async def _complete(self, messages: list[dict[str, str]], verdict: Verdict) -> tuple[str, CachedCall | None]:
        """One call: the raw answer, and the call to cache once the answer proves usable
        (``None`` when it came from the cache)."""
        request: dict[str, Any] = {"model": self.config.model, "messages": list(messages), "temperature": 0}
        if self.config.json_mode:
            request["response_format"] = {"type": "json_object"}
        key = request_key(self.config, request)
        verdict.keys.append(key)
        cached = self.cache.get(key)
        if cached is not None:
            verdict.cached += 1
            verdict.raw = cached.response
            return cached.response, None
        answer = await self.client.send(request)
        verdict.latency_ms += answer.latency_ms
        verdict.calls += 1
        if answer.warning is not None:  # figures not believable: tokens and cost unknown from here on
            verdict.warnings.append(answer.warning)
            verdict.input_tokens = verdict.output_tokens = verdict.cost = None
        else:
            assert answer.input_tokens is not None and answer.output_tokens is not None
            if verdict.input_tokens is not None and verdict.output_tokens is not None:
                verdict.input_tokens += answer.input_tokens
                verdict.output_tokens += answer.output_tokens
            verdict.cost = None if answer.cost is None or verdict.cost is None else verdict.cost + answer.cost
        verdict.raw = answer.text
        call = CachedCall(key, self.config.model, request, answer.text, answer.input_tokens, answer.output_tokens)
        return answer.text, call


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
