"""A real HTTP server on 127.0.0.1 speaking OpenAI chat completions, answering from a script: for the solver.

``ScriptedOpenAI(script)`` answers each request with ``script(model, messages)``: a text, or a ``Reply``
for an HTTP error, a latency or a timeout on that one call. Every request is kept (``requests``), and
each answer reports ``usage`` figures (a quarter of the characters in, a quarter out, at least 1).

``clarify`` is the seed's scenario as a script: the model under evaluation asks for confirmation of
questions about European countries (and answers once confirmed) and answers other questions directly;
the judge answers a question with "Yes" and anything else with "<done>".
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from openai_server import LoopbackServer


@dataclass(frozen=True)
class Reply:
    """One scripted answer: ``text``, or an HTTP ``status`` error, after ``latency`` seconds; ``timeout``
    holds the answer until the server's ``release`` is set (or ``timeout_sleep`` passes)."""

    text: str = ""
    status: int = 200
    latency: float = 0.0
    timeout: bool = False


Script = Callable[[str, list[dict[str, Any]]], "str | Reply"]


class ScriptedOpenAI(LoopbackServer):
    """Chat completions answered by ``script(model, messages)``; ``latency`` is added to every answer."""

    def __init__(self, script: Script, *, latency: float = 0.0, timeout_sleep: float = 5.0) -> None:
        super().__init__()
        self.script = script
        self.latency = latency
        self.timeout_sleep = timeout_sleep
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()

    def calls(self, model: str | None = None) -> list[list[dict[str, Any]]]:
        """The messages of each request (to ``model``, when given), in the order received."""
        with self.lock:
            return [r["messages"] for r in self.requests if model is None or r.get("model") == model]

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if handler.path.split("?", 1)[0] != "/v1/chat/completions":
            self.send(handler, 404, b'{"error": {"message": "not found"}}')
            return
        request = json.loads(body)
        with self.lock:
            self.requests.append(request)
        try:
            reply = self.script(str(request.get("model")), request["messages"])
        except Exception as exc:  # a script's bug shows in the test as the server's error
            reply = Reply(f"script failed: {type(exc).__name__}: {exc}", status=500)
        if isinstance(reply, str):
            reply = Reply(reply)
        if self.latency or reply.latency:
            time.sleep(self.latency + reply.latency)
        if reply.timeout:
            self.release.wait(self.timeout_sleep)
        if reply.status != 200:
            payload = {"error": {"message": reply.text or f"scripted HTTP {reply.status}"}}
            self.send(handler, reply.status, json.dumps(payload).encode())
            return
        self.send(handler, 200, json.dumps(self.completion(request, reply.text)).encode())

    @staticmethod
    def completion(request: dict[str, Any], text: str) -> dict[str, Any]:
        prompt = max(1, sum(len(str(m.get("content") or "")) for m in request["messages"]) // 4)
        output = max(1, len(text) // 4)
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output},
        }


#: The capitals the scripted model knows, and which countries are in Europe.
CAPITALS = {
    "Austria": ("Vienna", True),
    "France": ("Paris", True),
    "Portugal": ("Lisbon", True),
    "Japan": ("Tokyo", False),
    "Kenya": ("Nairobi", False),
    "Peru": ("Lima", False),
}
JUDGE = "judge-model"
MODEL = "eval-model"


def country_of(question: str) -> str:
    """The country a capital question is about."""
    for country in CAPITALS:
        if country in question:
            return country
    raise ValueError(f"no known country in {question!r}")


def confirmation(country: str) -> str:
    """What the scripted model says to confirm a question about ``country``."""
    return f"Just to confirm - you're asking about the capital city of {country}, correct?"


def clarify_model(messages: list[dict[str, Any]]) -> str:
    """The model under evaluation, following the seed's system prompt."""
    last = messages[-1]["content"]
    if last == "Yes":  # confirmed: answer the question asked before
        question = next(m["content"] for m in reversed(messages) if m["role"] == "user" and m["content"] != "Yes")
        return CAPITALS[country_of(question)][0]
    country = country_of(last)
    capital, european = CAPITALS[country]
    return confirmation(country) if european else capital


def clarify_judge(messages: list[dict[str, Any]]) -> str:
    """The judge: the message before its instructions is a question: "Yes"; else "<done>"."""
    return "Yes" if len(messages) >= 2 and messages[-2]["content"].rstrip().endswith("?") else "<done>"


def clarify(model: str, messages: list[dict[str, Any]]) -> str:
    """The seed's clarification scenario: ``JUDGE`` is the judge, any other model the model under evaluation."""
    return clarify_judge(messages) if model == JUDGE else clarify_model(messages)
