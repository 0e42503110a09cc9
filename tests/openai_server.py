"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, for tests and benchmarks.

It answers deterministically: it reads the JSON schema the judge put in its system message and
returns an object that fits it, its choices derived from a hash of the request. Faults can be
queued (``429`` with Retry-After, ``500``, ``timeout``, ``malformed`` content, a ``garbage``
body), and a fixed latency can be added to every answer.

``HostileOpenAI`` adds what a misbehaving or malicious endpoint does: trickling a byte a second,
streaming forever, huge and compressed (gzip-bomb) bodies, echoing the API key, absurd ``usage``
figures. Every such behaviour is bounded in bytes and seconds, ends when the client goes away,
and is stopped when the server is.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

SCHEMA_MARK = "matches this JSON schema:\n"


def fake_value(schema: dict[str, Any], defs: dict[str, Any], seed: int, name: str = "", suffix: str = "") -> Any:
    """A value that fits ``schema``, chosen by ``seed`` (free texts end with ``suffix``)."""
    if "$ref" in schema:
        return fake_value(defs[schema["$ref"].split("/")[-1]], defs, seed, name, suffix)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
        return fake_value(options[0], defs, seed, name, suffix)
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: fake_value(v, defs, seed + i, k, suffix) for i, (k, v) in enumerate(props.items())}
    if kind == "array":
        low, high = schema.get("minItems", 1), schema.get("maxItems", 2)  # as structured output honours them
        count = low + seed % (high - low + 1)
        return [fake_value(schema.get("items", {}), defs, seed + i, name, suffix) for i in range(count)]
    if kind == "boolean":
        return seed % 2 == 0
    if kind == "integer":
        low, high = schema.get("minimum", 0), schema.get("maximum", 10)
        return low + seed % (high - low + 1)
    if kind == "number":
        low, high = schema.get("minimum", 0), schema.get("maximum", 1)
        return low + (high - low) * ((seed % 5) / 4)
    return f"{name or 'text'} {seed % 97}{suffix}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # 16 clients connecting at once must not overflow the listen backlog

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return  # a client that gave up (a deadline, a size cap): expected, not worth a traceback
        super().handle_error(request, client_address)


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
        self.answered: list[int] = []  # indexes (in ``requests``) of the requests answered, in the order answered
        #: A ``timeout`` fault holds its answer until this is set (or ``timeout_sleep`` passes).
        self.release = threading.Event()
        self.lock = threading.Lock()

    def queue(self, *faults: str) -> None:
        """Faults for the next requests, in order: 400 (never retried), 429, 500, timeout, malformed, garbage,
        no_usage."""
        with self.lock:
            self.faults.extend(faults)

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if handler.path.split("?", 1)[0] != "/v1/chat/completions":
            self._send(handler, 404, {"error": {"message": "not found"}})
            return
        request = json.loads(body)
        with self.lock:
            self.requests.append(request)
            index = len(self.requests) - 1
            fault = self.faults.popleft() if self.faults else None
        if self.latency:
            time.sleep(self.latency)
        self.respond(handler, request, fault)
        with self.lock:
            self.answered.append(index)

    def respond(self, handler: BaseHTTPRequestHandler, request: dict[str, Any], fault: str | None) -> None:
        """Answer ``request``, with ``fault`` (None: a good answer)."""
        if fault == "429":
            self._send(handler, 429, {"error": {"message": "rate limited"}}, {"Retry-After": "0.05"})
        elif fault == "500":
            self._send(handler, 500, {"error": {"message": "boom"}})
        elif fault == "400":
            self._send(handler, 400, {"error": {"message": "bad request"}})
        elif fault == "timeout":
            self.release.wait(self.timeout_sleep)
            self._send(handler, 500, {"error": {"message": "too late"}})
        elif fault == "garbage":
            self._send_raw(handler, 200, b"<html>oops</html>")
        else:
            content = "this is not JSON {" if fault == "malformed" else json.dumps(self.answer(request))
            completion = self.completion(request, content)
            if fault == "no_usage":  # some servers report no token usage
                del completion["usage"]
            self._send(handler, 200, completion)

    def answer(self, request: dict[str, Any], suffix: str = "") -> Any:
        system = request["messages"][0]["content"]
        schema = json.loads(system.split(SCHEMA_MARK, 1)[1]) if SCHEMA_MARK in system else {"type": "object"}
        seed = int(hashlib.sha256(json.dumps(request["messages"][1:], sort_keys=True).encode()).hexdigest()[:8], 16)
        return fake_value(schema, schema.get("$defs", {}), seed, suffix=suffix)

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


#: A completion's JSON around its content, for bodies written piece by piece.
_HEAD = (
    b'{"id": "chatcmpl-hostile", "object": "chat.completion", '
    b'"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
)
_TAIL = b'"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
_BLOCK = b"a" * (1 << 20)

#: What ``HostileOpenAI`` can do, beyond FakeOpenAI's faults.
HOSTILE = (
    "trickle",  # a good answer, its body sent one byte every ``trickle_interval`` s
    "trickle_head",  # the status line and headers too, a byte at a time
    "forever",  # a 200 whose content never ends (chunked)
    "huge",  # a 200 of ``huge_bytes`` (chunked: no length announced)
    "huge_announced",  # the same with its Content-Length
    "gzip_bomb",  # Content-Encoding: gzip, a few KB per MB of content, ``bomb_bytes`` in all, made lazily
    "deflate_bomb",  # the same as Content-Encoding: deflate
    "echo_key",  # HTTP 500 whose body repeats the Authorization header, the bare key and the query string
    "echo_key_401",  # the same as a refusal (401)
    "echo_key_content",  # a good answer whose every text holds the key (and the header, and the query)
    "absurd_usage",  # a good answer reporting ``usage`` (set ``absurd``)
    "long_reason",  # a good answer whose every text is ``long_text`` characters long
)


class HostileOpenAI(FakeOpenAI):
    """FakeOpenAI with hostile behaviours (``HOSTILE``), queued like faults or set for every request (``always``).

    Bounds: each behaviour writes at most ``limit_bytes`` and lasts at most ``limit_seconds``; it ends
    when the client goes away (a write fails) or the server stops; ``__exit__`` waits for them all.
    ``peak_handlers`` is the most hostile answers in progress at once, ``hostile`` how many were started.
    """

    def __init__(
        self,
        *,
        always: str | None = None,
        trickle_interval: float = 1.0,
        huge_bytes: int = 64 << 20,
        bomb_bytes: int = 8 << 30,
        limit_bytes: int = 256 << 20,
        limit_seconds: float = 30.0,
    ) -> None:
        super().__init__()
        self.always = always
        self.trickle_interval = trickle_interval
        self.huge_bytes = huge_bytes
        self.bomb_bytes = bomb_bytes
        self.limit_bytes = limit_bytes
        self.limit_seconds = limit_seconds
        self.absurd: Any = {"prompt_tokens": -5, "completion_tokens": 10**12}
        self.long_text = 100_000
        self.stop = threading.Event()
        self.active = 0
        self.peak_handlers = 0
        self.hostile = 0
        self.sent_bytes = 0  # bytes written by hostile answers, in all
        self.seen: set[str] = set()  # Authorization headers and query strings received (what an echo repeats)
        self.idle = threading.Condition(self.lock)

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if self.always is not None:
            with self.lock:
                if not self.faults:
                    self.faults.append(self.always)
        super().handle(handler, body)

    def respond(self, handler: BaseHTTPRequestHandler, request: dict[str, Any], fault: str | None) -> None:
        if fault not in HOSTILE:
            super().respond(handler, request, fault)
            return
        with self.lock:
            self.active += 1
            self.hostile += 1
            self.peak_handlers = max(self.peak_handlers, self.active)
        # A client that stops reading cannot hold a write (or this thread) for long.
        handler.connection.settimeout(5.0)
        try:
            self._hostile(handler, request, fault)
        except (OSError, _Budget):  # the client went away, or the bounds were reached
            handler.close_connection = True
        finally:
            with self.lock:
                self.active -= 1
                self.idle.notify_all()

    def _hostile(self, handler: BaseHTTPRequestHandler, request: dict[str, Any], fault: str) -> None:
        out = _Writer(handler.connection, self)
        key = handler.headers.get("Authorization", "")
        bare = key.split(" ", 1)[-1]
        query = handler.path.partition("?")[2]
        with self.lock:
            self.seen |= {key, query} - {""}
        if fault in ("trickle", "trickle_head"):
            self._trickle(out, request, fault)
        elif fault == "forever":
            out.write(_head(200, {"Transfer-Encoding": "chunked"}))
            out.chunk(_HEAD)
            while True:
                out.chunk(_BLOCK[: 64 << 10])
        elif fault in ("huge", "huge_announced"):
            self._huge(out, chunked=fault == "huge")
        elif fault in ("gzip_bomb", "deflate_bomb"):
            gzip = fault == "gzip_bomb"
            out.write(_head(200, {"Transfer-Encoding": "chunked", "Content-Encoding": "gzip" if gzip else "deflate"}))
            for piece in _compressed(self.bomb_bytes, 31 if gzip else 15):
                out.chunk(piece)
            out.write(b"0\r\n\r\n")
        elif fault in ("echo_key", "echo_key_401"):
            message = f"Incorrect API key provided: {bare}. You sent {key!r} to ?{query}"
            payload = {"error": {"message": message, "headers": {"Authorization": key}, "key": bare}}
            self._send(handler, 500 if fault == "echo_key" else 401, payload)
        elif fault == "echo_key_content":
            answer = self.answer(request, suffix=f" (your key: {bare}; header: {key}; query: {query})")
            self._send(handler, 200, self.completion(request, json.dumps(answer)))
        elif fault == "long_reason":
            answer = self.answer(request, suffix=" " + "x" * self.long_text)
            self._send(handler, 200, self.completion(request, json.dumps(answer)))
        elif fault == "absurd_usage":
            completion = self.completion(request, json.dumps(self.answer(request)))
            completion["usage"] = self.absurd
            self._send(handler, 200, completion)

    def _trickle(self, out: _Writer, request: dict[str, Any], fault: str) -> None:
        """A good answer a byte at a time (``trickle_head``: its head too)."""
        body = json.dumps(self.completion(request, json.dumps(self.answer(request)))).encode()
        head = _head(200, {"Content-Length": str(len(body))})
        if fault == "trickle":
            out.write(head)
        for i, byte in enumerate((b"" if fault == "trickle" else head) + body):
            out.write(bytes([byte]))
            if self.stop.wait(self.trickle_interval if i else 0):
                raise _Budget

    def _huge(self, out: _Writer, *, chunked: bool) -> None:
        """An answer of ``huge_bytes``, chunked or with its length announced."""
        size = self.huge_bytes
        length = len(_HEAD) + size + len(_TAIL)
        out.write(_head(200, {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": str(length)}))
        send = out.chunk if chunked else out.write
        send(_HEAD)
        for start in range(0, size, len(_BLOCK)):
            send(_BLOCK[: min(len(_BLOCK), size - start)])
        send(_TAIL)
        if chunked:
            out.write(b"0\r\n\r\n")

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.release.set()
        super().__exit__(*exc)
        with self.lock:  # every hostile answer ends: the client went away, the bounds, or the stop
            self.idle.wait_for(lambda: self.active == 0, timeout=10)


class _Budget(Exception):
    """A hostile answer reached its bounds (bytes, seconds) or the server is stopping."""


class _Writer:
    """Writes to a client socket within the server's bounds."""

    def __init__(self, connection: socket.socket, server: HostileOpenAI) -> None:
        self.connection = connection
        self.server = server
        self.started = time.monotonic()
        self.written = 0

    def write(self, data: bytes) -> None:
        server = self.server
        if (
            server.stop.is_set()
            or self.written + len(data) > server.limit_bytes
            or time.monotonic() - self.started > server.limit_seconds
        ):
            raise _Budget
        self.connection.sendall(data)
        self.written += len(data)
        with server.lock:
            server.sent_bytes += len(data)

    def chunk(self, data: bytes) -> None:
        if data:
            self.write(b"%x\r\n%s\r\n" % (len(data), data))


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _compressed(size: int, wbits: int) -> Iterator[bytes]:
    """A completion whose content is ``size`` bytes of "a", compressed (gzip: wbits 31, zlib: 15), made as read."""
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    yield packer.compress(_HEAD)
    for start in range(0, size, len(_BLOCK)):
        piece = packer.compress(_BLOCK[: min(len(_BLOCK), size - start)])
        if piece:
            yield piece
    yield packer.compress(_TAIL) + packer.flush()
