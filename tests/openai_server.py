"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, for tests and benchmarks.

It answers deterministically: it reads the JSON schema the judge put in its system message and
returns an object that fits it, its choices derived from a hash of the request. Faults can be
queued (``429`` with Retry-After, ``500``, ``timeout``, ``malformed`` content, a ``garbage``
body), and a fixed latency can be added to every answer.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

SCHEMA_MARK = "matches this JSON schema:\n"


def fake_value(schema: dict[str, Any], defs: dict[str, Any], seed: int, name: str = "") -> Any:
    """A value that fits ``schema``, chosen by ``seed``."""
    if "$ref" in schema:
        return fake_value(defs[schema["$ref"].split("/")[-1]], defs, seed, name)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
        return fake_value(options[0], defs, seed, name)
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: fake_value(v, defs, seed + i, k) for i, (k, v) in enumerate(props.items())}
    if kind == "array":
        low, high = schema.get("minItems", 1), schema.get("maxItems", 2)  # as structured output honours them
        count = low + seed % (high - low + 1)
        return [fake_value(schema.get("items", {}), defs, seed + i, name) for i in range(count)]
    if kind == "boolean":
        return seed % 2 == 0
    if kind == "integer":
        low, high = schema.get("minimum", 0), schema.get("maximum", 10)
        return low + seed % (high - low + 1)
    if kind == "number":
        low, high = schema.get("minimum", 0), schema.get("maximum", 1)
        return low + (high - low) * ((seed % 5) / 4)
    return f"{name or 'text'} {seed % 97}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # 16 clients connecting at once must not overflow the listen backlog


class LoopbackServer:
    """An HTTP server on 127.0.0.1 in a thread; subclasses answer POSTs in ``handle``.

    Start with ``with Server() as server:``; ``server.url`` is the base URL (``.../v1``).
    """

    def __init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between headers and body

            def log_message(self, *args: object) -> None:  # quiet
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.handle(self, body)

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        """Answer with ``data`` (JSON content type)."""
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


class FakeOpenAI(LoopbackServer):
    """A deterministic chat-completions endpoint with queueable faults (see the module doc)."""

    def __init__(self, *, latency: float = 0.0, timeout_sleep: float = 5.0) -> None:
        super().__init__()
        self.latency = latency
        self.timeout_sleep = timeout_sleep
        self.faults: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def queue(self, *faults: str) -> None:
        """Faults for the next requests, in order: 429, 500, timeout, malformed, garbage, no_usage."""
        with self.lock:
            self.faults.extend(faults)

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if handler.path != "/v1/chat/completions":
            self._send(handler, 404, {"error": {"message": "not found"}})
            return
        request = json.loads(body)
        with self.lock:
            self.requests.append(request)
            fault = self.faults.popleft() if self.faults else None
        if self.latency:
            time.sleep(self.latency)
        if fault == "429":
            self._send(handler, 429, {"error": {"message": "rate limited"}}, {"Retry-After": "0.05"})
        elif fault == "500":
            self._send(handler, 500, {"error": {"message": "boom"}})
        elif fault == "timeout":
            time.sleep(self.timeout_sleep)
            self._send(handler, 500, {"error": {"message": "too late"}})
        elif fault == "garbage":
            self._send_raw(handler, 200, b"<html>oops</html>")
        else:
            content = "this is not JSON {" if fault == "malformed" else json.dumps(self.answer(request))
            completion = self.completion(request, content)
            if fault == "no_usage":  # some servers report no token usage
                del completion["usage"]
            self._send(handler, 200, completion)

    def answer(self, request: dict[str, Any]) -> Any:
        system = request["messages"][0]["content"]
        schema = json.loads(system.split(SCHEMA_MARK, 1)[1]) if SCHEMA_MARK in system else {"type": "object"}
        seed = int(hashlib.sha256(json.dumps(request["messages"][1:], sort_keys=True).encode()).hexdigest()[:8], 16)
        return fake_value(schema, schema.get("$defs", {}), seed)

    @staticmethod
    def completion(request: dict[str, Any], content: str) -> dict[str, Any]:
        prompt = sum(len(str(m.get("content", ""))) for m in request["messages"]) // 4
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": len(content) // 4,
                "total_tokens": prompt + len(content) // 4,
            },
        }

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> None:
        self.send(handler, status, json.dumps(payload).encode(), headers)

    def _send_raw(self, handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
        self.send(handler, status, data)
