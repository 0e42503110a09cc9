"""One client for any OpenAI-compatible chat-completions endpoint: the judge asks through it, and the solver
converses through it.

Async with bounded concurrency; retries with backoff on rate limits (honouring ``Retry-After``), server
errors and timeouts; each call's tokens, cost and latency.

A misbehaving endpoint is bounded: each attempt has one deadline for the whole exchange (not per read: a
byte a second cannot hold it open), the answer is read as a stream and given up past
``max_response_bytes`` (counted as sent and as decompressed here, so a gzip bomb inflates no further than
the cap), token counts that cannot be true are not priced, and the API key is redacted from every text
built from a response or an exception (an endpoint may echo it).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import random
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalcoreError
from evalcore.model.config import ModelConfig
from evalcore.model.redact import Redactor, install_log_filter, split_url

if TYPE_CHECKING:
    import httpx  # imported when the first request is made: scoring without a judge never pays for it

__all__ = ["Completion", "ModelClient", "ModelError", "request_key"]

#: More tokens than this in one call is not a count to price (the largest context windows hold ~1M).
MAX_TOKENS_PER_CALL = 10_000_000
#: What is read of an error answer (its message is shown cut to a few hundred characters anyway).
ERROR_BODY_BYTES = 64 * 1024


class ModelError(EvalcoreError):
    """A call that failed: the endpoint refused it, or gave no usable answer after the retries (its text redacted)."""


@dataclass(frozen=True)
class Completion:
    """A model's answer with what it cost. Tokens and cost are ``None`` when unknown: the model has no price,
    or the endpoint reported figures that cannot be true (``warning`` says so)."""

    text: str
    model: str
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost: float | None = None
    latency_ms: float = 0.0
    warning: str | None = None


class _TooLarge(Exception):
    """The answer went past the size cap."""


class _Unreadable(Exception):
    """The answer's encoding cannot be decoded."""


def request_key(config: ModelConfig, request: dict[str, Any]) -> str:
    """The identity of a request to the endpoint, for caches. The endpoint is part of the question: one model
    name on two servers can be two models (its credentials are not: the key is made from the URL without them)."""
    asked = {"endpoint": config.public_url, **request}
    return hashlib.sha256(json.dumps(asked, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


#: Calls given up on in a row (each after its retries) before the client stops calling the endpoint for a while.
BREAKER_AFTER = 5
#: How long it stops then, in seconds.
BREAKER_SECONDS = 300.0


class ModelClient:
    """Chat completions from the endpoint of ``config``, at most ``config.concurrency`` at a time."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self.requests = 0  # HTTP requests actually sent
        self._endpoint = split_url(config.base_url)
        # The circuit breaker: once the endpoint has made it plain it will not answer for a while (a Retry-After
        # longer than evalcore waits, or BREAKER_AFTER calls in a row given up on), the calls that follow fail at
        # once, saying why, instead of each waiting out its retries.
        self._given_up_in_a_row = 0
        self._open_until = 0.0
        self._open_why = ""
        #: Removes the API key and the base URL's credentials from a text (see ``evalcore.model.redact``).
        self.redact = Redactor([config.api_key, *self._endpoint.secrets])

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def complete(self, messages: list[dict[str, Any]], *, model: str | None = None, **params: Any) -> Completion:
        """The answer of ``model`` (default: the config's) to ``messages`` (chat-completions messages), with
        ``params`` (``temperature``, ``response_format``, ...) as the request's other fields."""
        return await self.send({"model": model or self.config.model, "messages": list(messages), **params})

    async def send(self, request: dict[str, Any]) -> Completion:
        """Send a chat-completions ``request``, with retries; its answer's text, tokens, cost and latency.
        Raises ``ModelError`` naming what went wrong (redacted)."""
        model = str(request.get("model") or self.config.model)
        started = time.monotonic()
        try:
            body = await self._post(request)
        except ModelError:
            raise
        except Exception as exc:  # an unusable URL or key (not ASCII, say): this call's error, its text redacted
            raise ModelError(self.redact(f"{type(exc).__name__}: {exc}")) from None
        latency = (time.monotonic() - started) * 1000
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            shown = self.redact(_preview(body))[:200]
            raise ModelError(f"the endpoint's answer has no choices[0].message.content: {shown}") from None
        if content is not None and not isinstance(content, str):
            raise ModelError(f"the endpoint's choices[0].message.content is not text but {type(content).__name__}")
        # Redacted before anything keeps it: an answer echoing the key must not reach a reason or a cache.
        text = self.redact(content or "")
        tokens_in, tokens_out, problem = _usage_figures(body.get("usage"))
        if problem is not None:  # not believable: tokens and cost unknown, and said so
            return Completion(text, model, None, None, None, latency, self.redact(problem))
        assert tokens_in is not None and tokens_out is not None
        # No usage reported: cost unknown.
        cost = self.config.cost(tokens_in, tokens_out, model) if body.get("usage") else None
        return Completion(text, model, tokens_in, tokens_out, cost, latency)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            install_log_filter(self.redact)  # httpx logs each request's URL, query included
            # Decompressed here, under the cap: only what this module can decode is asked for.
            headers = {"Accept-Encoding": "gzip, deflate"}
            if self.config.api_key:
                headers["Authorization"] = f"Bearer {self.config.api_key}"
            # Credentials in the URL go as httpx would send them (user:pass as basic auth, the query
            # on every request), but the client's base URL holds none, so that nothing shows it.
            endpoint = self._endpoint
            self._client = httpx.AsyncClient(
                base_url=endpoint.base,
                params=list(endpoint.params) or None,
                auth=endpoint.auth,
                headers=headers,
                timeout=self.config.timeout,
            )
            self._semaphore = asyncio.Semaphore(max(1, self.config.concurrency))
        return self._client

    async def _post(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request``, with retries; the answer's JSON object. Each attempt has ``timeout`` for
        everything (connecting, sending, the whole answer); waiting for a free slot is not counted."""
        import httpx

        client = self._http()
        assert self._semaphore is not None
        if time.monotonic() < self._open_until:
            raise ModelError(f"not sent: {self._open_why}")
        timeout = self.config.timeout
        last = "no attempt"
        for attempt in range(self.config.max_retries + 1):
            wait: float | None = None
            async with self._semaphore:
                self.requests += 1
                try:
                    async with asyncio.timeout(timeout):
                        status, headers, data = await self._exchange(client, request)
                except (TimeoutError, httpx.TimeoutException):
                    last = f"timed out after {timeout:g} s"
                except httpx.TransportError as exc:
                    last = self.redact(f"connection failed ({type(exc).__name__}: {exc})")
                except _Unreadable as exc:
                    last = self.redact(str(exc))
                except _TooLarge as exc:  # would be as large again: not retried
                    raise ModelError(self.redact(str(exc))) from None
                else:
                    body, last, wait = self._outcome(status, headers, data)
                    if body is not None:
                        self._given_up_in_a_row = 0
                        return body
            if wait is not None and wait > self.config.max_wait:  # it will not answer for longer than we would wait
                self._open(
                    wait,
                    f"the endpoint asks to wait {wait:,.0f} s before the next call (HTTP 429, "
                    f"Retry-After), longer than the {self.config.max_wait:g} s evalcore waits; {last}",
                )
                raise ModelError(self._open_why)
            if attempt == self.config.max_retries:
                break
            delay = self.config.backoff * (2**attempt) * (0.5 + random.random() / 2)
            await _pause(min(self.config.max_wait, wait if wait is not None else delay))
        self._given_up_in_a_row += 1
        if self._given_up_in_a_row >= BREAKER_AFTER:
            self._open(BREAKER_SECONDS, f"{self._given_up_in_a_row} calls in a row were given up on (the last: {last})")
        raise ModelError(f"gave up after {self.config.max_retries + 1} tries: {last}")

    def _outcome(
        self, status: int, headers: httpx.Headers, data: bytes
    ) -> tuple[dict[str, Any] | None, str, float | None]:
        """An answer read: its JSON object (None when there is none to use), what went wrong, how long the endpoint
        asks to wait (``Retry-After`` of a 429). A refusal that retrying cannot change raises ``ModelError``."""
        if status == 200:
            try:
                body = json.loads(data)
            except (ValueError, RecursionError):
                return None, "the endpoint answered 200 with a body that is not JSON", None
            if isinstance(body, dict):
                return body, "", None
            return None, "the endpoint answered 200 with JSON that is not an object", None
        text = self.redact(data.decode("utf-8", "replace"))
        if status == 429 or status >= 500:
            wait = _retry_after(headers.get("retry-after")) if status == 429 else None
            return None, f"HTTP {status}: {text[:200]}", wait
        raise ModelError(f"the endpoint refused the request: HTTP {status}: {text[:300]}")

    def _open(self, seconds: float, why: str) -> None:
        """Stop calling the endpoint for ``seconds`` (the calls meanwhile fail at once, with ``why``)."""
        self._open_until = max(self._open_until, time.monotonic() + seconds)
        self._open_why = why + "; no call is sent to it until then (run again later: what was done is kept)"

    async def _exchange(self, client: httpx.AsyncClient, request: dict[str, Any]) -> tuple[int, httpx.Headers, bytes]:
        """One HTTP exchange: status, headers and the body, decompressed, read as a stream under the caps.

        A 200's body larger than ``max_response_bytes`` (as sent or decoded) raises ``_TooLarge``;
        an error's body is read up to ``ERROR_BODY_BYTES`` and the rest left unread.
        """
        async with client.stream("POST", "/chat/completions", json=request) as response:
            ok = response.status_code == 200
            cap = self.config.max_response_bytes if ok else min(self.config.max_response_bytes, ERROR_BODY_BYTES)
            declared = response.headers.get("content-length", "")
            if ok and declared.isdigit() and int(declared) > cap:
                raise _TooLarge(_too_large(cap, f"it announced {int(declared):,} bytes"))
            decoder = _Decoder(response.headers.get("content-encoding"))
            body = bytearray()
            sent = 0
            async for chunk in response.aiter_raw():
                sent += len(chunk)
                body += decoder.feed(chunk, cap - len(body))
                if sent > cap or len(body) > cap:
                    if not ok:  # enough of an error message: the rest is not read
                        del body[cap:]
                        break
                    what = "as sent" if sent > cap else "once decompressed"
                    raise _TooLarge(_too_large(cap, f"more {what}"))
            else:
                body += decoder.flush(cap - len(body))
                if len(body) > cap:
                    if ok:
                        raise _TooLarge(_too_large(cap, "more once decompressed"))
                    del body[cap:]
            return response.status_code, response.headers, bytes(body)


async def _pause(seconds: float) -> None:
    """Wait before a retry (one place, so that tests can see the waits asked for)."""
    await asyncio.sleep(seconds)


def _too_large(cap: int, what: str) -> str:
    return f"the endpoint's answer is larger than the limit of {cap:,} bytes ({what}; max_response_bytes); not retried"


class _Decoder:
    """Decompresses a body chunk by chunk, never producing more than asked for (a gzip bomb stops at the cap)."""

    def __init__(self, encoding: str | None) -> None:
        codings = [c.strip().lower() for c in (encoding or "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        self._zlib: Any = None
        self._deflate = False
        if not codings:
            return
        if codings in (["gzip"], ["x-gzip"]):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif codings == ["deflate"]:  # zlib-wrapped as the RFC says, or raw as some servers send it
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)
            self._deflate = True
        else:
            raise _Unreadable(
                f"the endpoint answered in an encoding this client cannot read: {(encoding or '')[:100]!r}"
            )

    def feed(self, chunk: bytes, room: int) -> bytes:
        """At most ``room + 1`` bytes decoded from ``chunk`` (one more than room: the caller sees it overflow)."""
        if self._zlib is None:
            return chunk
        try:
            return bytes(self._zlib.decompress(chunk, max(0, room) + 1))
        except zlib.error as exc:
            if self._deflate:  # the first chunk tells zlib-wrapped from raw deflate
                self._deflate = False
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.feed(chunk, room)
            raise _Unreadable(f"the endpoint's compressed answer is corrupt ({exc})") from None
        finally:
            self._deflate = False

    def flush(self, room: int) -> bytes:
        if self._zlib is None:
            return b""
        try:
            return bytes(self._zlib.flush(max(0, room) + 1))
        except zlib.error as exc:
            raise _Unreadable(f"the endpoint's compressed answer is corrupt ({exc})") from None


def _usage_figures(usage: Any) -> tuple[int | None, int | None, str | None]:
    """Prompt and completion tokens from a ``usage`` object, or a problem when they cannot be true.

    Absent figures count as 0 (some servers report none); believable ones are whole numbers from 0
    to ``MAX_TOKENS_PER_CALL``. Negative, fractional, NaN, textual or absurd figures are not priced.
    """
    if usage is None or usage == {}:
        return 0, 0, None
    if not isinstance(usage, dict):
        problem = f"the endpoint reported usage that is not an object ({_shown(usage)}): tokens and cost unknown"
        return None, None, problem
    figures: list[int] = []
    bad: list[str] = []
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        if value is None:
            figures.append(0)
        elif type(value) is int and 0 <= value <= MAX_TOKENS_PER_CALL:
            figures.append(value)
        else:
            bad.append(f"{name}={_shown(value)}")
    if bad:
        return None, None, f"the endpoint reported implausible token usage ({', '.join(bad)}): tokens and cost unknown"
    return figures[0], figures[1], None


def _preview(value: Any) -> str:
    """The start of a JSON value as text (a few thousand characters at most, whatever its size or depth)."""
    try:
        return json.dumps(value, ensure_ascii=False)[:10_000]
    except (ValueError, RecursionError):
        return f"a {type(value).__name__} that cannot be shown"


def _shown(value: Any) -> str:
    """A short, safe rendering of a reported figure (it may be anything: a long text, an object...)."""
    if value is None or isinstance(value, bool | int | float):
        text = repr(value)
    elif isinstance(value, str):
        text = repr(value[:41])
    else:
        return f"a JSON {'object' if isinstance(value, dict) else 'array' if isinstance(value, list) else 'value'}"
    return text if len(text) <= 40 else text[:40] + "..."


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
