"""The scripted OpenAI-compatible server: its HTTP/1.1 connections and routes.

:class:`SSETestServer` listens on an event loop (or on a background thread as a
context manager); each connection is a :class:`ServerProtocol` that answers
one request at a time and hands streamed generations to
:class:`~inferx_core.testing.stream.ScriptedStream`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import ssl
import threading
import time
import zlib
from typing import Any, cast

from inferx_core.testing.knobs import ServerKnobs
from inferx_core.testing.spec_metrics import SpecCounters
from inferx_core.testing.stream import (
    ScriptedStream,
    compact_json,
    count_prompt_tokens,
    messages_text,
    requested_max_tokens,
    split_words,
)

__all__ = ["SSETestServer", "ServerProtocol"]

_NOT_FOUND = b'{"error":{"message":"not found","code":404}}'
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    429: "Too Many Requests",
    503: "Service Unavailable",
}
_OVERLOADED = {
    "http_503": (503, b'{"error":{"message":"scripted overload","code":503}}'),
    "http_429": (429, b'{"error":{"message":"scripted overload","code":429}}'),
}


class ServerProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive connection of the test server (no pipelining)."""

    def __init__(self, server: SSETestServer) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.busy = False
        self.closed = False
        self.keep_alive = True
        self.stream: ScriptedStream | None = None
        self.recv_ns = 0  # when the last request bytes arrived (stamp mode)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP transport here
        self.server.connections += 1
        self.server.open_connections.add(self)
        if self.server.dead:  # accepted as the listener closed: a dead server resets it
            self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.open_connections.discard(self)
        self.closed = True
        if self.stream is not None:
            self.stream.cancel()
            self.server.release(self.stream)
            self.stream = None

    def data_received(self, data: bytes) -> None:
        self.recv_ns = time.perf_counter_ns()
        self.buf += data
        if not self.busy:
            self._try_request()

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def response_done(self) -> None:
        if self.stream is not None:
            self.server.release(self.stream)
        self.stream = None
        self.busy = False
        if not self.keep_alive:
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            return
        if self.buf:
            self._try_request()

    def _try_request(self) -> None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buf[:end].decode("latin-1")
        lines = head.split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError:
            self._simple(400, b"bad request line", "text/plain")
            self.keep_alive = False
            return
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        if len(self.buf) < end + 4 + length:
            return  # body not complete yet
        body = self.buf[end + 4 : end + 4 + length]
        self.buf = self.buf[end + 4 + length :]
        self.keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        self.busy = True
        self.server.requests += 1
        try:
            self._route(method, target.split("?", 1)[0], body)
        except Exception as exc:  # a bug here must answer, not hang the client
            self._simple(500, compact_json({"error": {"message": repr(exc), "code": 500}}))

    def _simple(
        self, status: int, body: bytes, ctype: str = "application/json", extra: str = ""
    ) -> None:
        reason = _REASONS.get(status, "Internal Server Error")
        conn = "" if self.keep_alive else "connection: close\r\n"
        head = (
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\n"
            f"content-length: {len(body)}\r\n{conn}{extra}\r\n"
        )
        self.write(head.encode() + body)
        self.response_done()

    def _route(self, method: str, path: str, raw: bytes) -> None:
        if self.server.dead:  # a dead server answers nothing
            self.abort()
            return
        if path == "/health":
            self._simple(200, b"", "text/plain")
            return
        if path == "/v1/models":
            self._models()
            return
        if path == "/metrics":  # speculative-decoding counters (knob spec_tokens)
            self._simple(200, self.server.spec.text().encode(), "text/plain; version=0.0.4")
            return
        if method != "POST":
            self._simple(404, _NOT_FOUND)
            return
        body = self._json_body(raw)
        if body is None:
            return  # answered 400
        if path == "/tokenize":
            self._tokenize(body)
        elif path in ("/v1/completions", "/v1/chat/completions"):
            self._generate(body, chat=path == "/v1/chat/completions")
        else:
            self._simple(404, _NOT_FOUND)

    def _models(self) -> None:
        k = self.server.knobs
        models = {
            "object": "list",
            "data": [{"id": k.model, "object": "model", "max_model_len": k.max_model_len}],
        }
        self._simple(200, compact_json(models))

    def _json_body(self, raw: bytes) -> dict[str, Any] | None:
        """The request body as a JSON object, or None after answering 400."""
        try:
            body = json.loads(raw) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._simple(400, compact_json({"error": {"message": f"bad JSON: {exc}", "code": 400}}))
            return None
        return body

    def _tokenize(self, body: dict[str, Any]) -> None:
        """One made-up token id per whitespace word (stable: a CRC of the word)."""
        text = (
            body["prompt"]
            if isinstance(body.get("prompt"), str)
            else messages_text(body.get("messages"))
        )
        k = self.server.knobs
        tokens = [zlib.crc32(w.encode()) % 32000 for w in split_words(text)] * k.tokenize_factor
        if k.tokenize_id is not None:
            tokens = [k.tokenize_id] * len(tokens)
        reply = {
            "tokens": tokens,
            "count": len(tokens),
            "max_model_len": self.server.knobs.max_model_len,
        }
        self._simple(200, compact_json(reply))

    def _generate(self, body: dict[str, Any], *, chat: bool) -> None:
        """A completions or chat request: a scripted HTTP error, a plain reply or a stream."""
        knobs = self.server.knobs.merged(body.get("x_test"))
        if self.server.dying():
            self.abort()
            return
        if knobs.drift_ms:
            knobs = dataclasses.replace(
                knobs, ttft_ms=knobs.ttft_ms + knobs.drift_ms * self.server.generations
            )
        if knobs.fail == "http_500":
            err = b'{"error":{"message":"scripted internal error","type":"InternalServerError",'
            self._simple(500, err + b'"code":500}}')
            return
        if knobs.fail == "http_429":
            self._simple(
                429,
                b'{"error":{"message":"scripted rate limit","type":"RateLimitError","code":429}}',
                extra="retry-after: 1\r\n",
            )
            return
        if not body.get("stream"):
            self._non_streamed(knobs, body, chat)
            return
        if self.server.full() and knobs.overload in _OVERLOADED:
            self._simple(*_OVERLOADED[knobs.overload])
            return
        if self.server.full() and knobs.overload == "shed":
            # one token, finish_reason stop, at once, whatever ignore_eos asked
            fast = dataclasses.replace(knobs, ttft_ms=0.0, itl_ms=0.0, fail=None)
            self.stream = ScriptedStream(self, fast, {**body, "max_tokens": 1}, chat)
            self.stream.finish = "stop"
            self.stream.start()
            return
        self.stream = ScriptedStream(self, knobs, body, chat)
        self.server.admit(self.stream)

    def _non_streamed(self, knobs: ServerKnobs, body: dict[str, Any], chat: bool) -> None:
        n = requested_max_tokens(body)
        text = "tok " * n
        p = count_prompt_tokens(body)
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        out = {
            "id": f"cmpl-{self.server.next_id()}",
            "object": "chat.completion" if chat else "text_completion",
            "model": knobs.model,
            "choices": [choice],
            "usage": {"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n},
        }
        delay = (knobs.ttft_ms + max(n - 1, 0) * knobs.itl_ms) / 1000.0
        self.loop.call_later(delay, self._simple, 200, compact_json(out))


class SSETestServer:
    """The scripted server; a context manager that runs it on a background thread.

    Inside a running loop use ``await start()`` / ``await stop()`` instead.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        knobs: ServerKnobs | None = None,
        *,
        ssl_context: ssl.SSLContext | None = None,
        **kw: Any,
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context  # serve https with it
        self.knobs = dataclasses.replace(knobs or ServerKnobs(), **kw)
        self.requests = 0
        self.connections = 0
        self.spec = SpecCounters(self.knobs.spec_tokens)  # vLLM's spec_decode counters
        self.peak_active = 0  # the most generations that ran at once
        self.generations = 0  # generation requests received (die_after, drift_ms)
        self.dead = False
        self.open_connections: set[ServerProtocol] = set()  # reset when the server dies
        self._active = 0
        self._waiting: collections.deque[ScriptedStream] = collections.deque()
        self._ids = 0
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def full(self) -> bool:
        """Every ``max_concurrent`` slot is taken."""
        limit = self.knobs.max_concurrent
        return limit is not None and self._active >= limit

    def dying(self) -> bool:
        """Count one generation request; True once ``die_after`` is passed: the server
        then closes its listener and resets every connection it had accepted, as a dead
        process's are (verifier F9: an idle or half-read one left open made a client
        wait out its 300 s first-token timeout)."""
        self.generations += 1
        limit = self.knobs.die_after
        if limit is not None and self.generations > limit and not self.dead:
            self.dead = True
            for proto in list(self.open_connections):
                proto.abort()
            # Close the listener two loop turns later: a connection accepted this turn
            # gets its transport next turn, and asyncio (3.11) leaks its socket, never
            # reset, if the listener is closed first; connection_made resets it instead.
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._close_listener)
        return self.dead

    def _close_listener(self) -> None:
        if self._server is not None:
            self._server.close()

    def admit(self, stream: ScriptedStream) -> None:
        """Start ``stream`` now, or queue it while ``max_concurrent`` generations run."""
        limit = self.knobs.max_concurrent
        if limit is not None and self._active >= limit:
            self._waiting.append(stream)
            return
        self._start(stream)

    def release(self, stream: ScriptedStream) -> None:
        """``stream`` ended (or its client left): its slot goes to the longest waiting one."""
        if not stream.slot:
            with contextlib.suppress(ValueError):
                self._waiting.remove(stream)
            return
        stream.slot = False
        self._active -= 1
        while self._waiting and self._active < (self.knobs.max_concurrent or 0):
            nxt = self._waiting.popleft()
            if not nxt.proto.closed:
                self._start(nxt)

    def _start(self, stream: ScriptedStream) -> None:
        stream.slot = True
        self._active += 1
        self.peak_active = max(self.peak_active, self._active)
        stream.start()

    async def start(self) -> None:
        """Listen on the running loop (port 0 picks a free port)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ServerProtocol(self), self.host, self.port, backlog=1024, ssl=self.ssl_context
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def serve_forever(self) -> None:
        await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    def __enter__(self) -> SSETestServer:
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # report bind errors to the caller
                errors.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="sse-test-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
