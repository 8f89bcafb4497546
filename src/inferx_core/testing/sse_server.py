"""A scripted OpenAI-compatible streaming server for tests and benchmarks.

It answers ``/v1/completions`` and ``/v1/chat/completions`` (streamed or
not), ``/v1/models``, ``/health`` and ``/tokenize`` with fixed timing:
the first content chunk ``ttft_ms`` after the request arrived, then one
chunk every ``itl_ms`` (chunk ``i`` is scheduled at ``t0 + ttft + i*itl``
on the loop clock, so delays do not drift). The output length is
``max_tokens`` (or ``natural_len`` when ``ignore_eos`` is off), in chunks of
``tokens_per_chunk`` tokens. Failures are scripted per server or per
request.

Per-request knobs: a JSON object under the body key ``x_test`` overrides
any :class:`ServerKnobs` field for that request, e.g.
``{"x_test": {"ttft_ms": 40, "fail": "drop", "fail_after": 3}}``.

It is an ``asyncio.Protocol`` that writes pre-encoded frames, so it costs
little CPU. Use it

* in-process on a background thread: ``with SSETestServer(ttft_ms=40) as s: s.base_url``
* as a separate process (keeps its CPU and GIL out of the measured client):
  ``with ServerProcess(itl_ms=10) as s: s.base_url``, or
  ``python -m inferx_core.testing.sse_server --port 8000 --ttft-ms 40 --itl-ms 10``
  (prints ``SSE_SERVER_READY <base_url>`` once listening).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["FAIL_MODES", "SSETestServer", "ServerKnobs", "ServerProcess", "main"]

FailMode = Literal["http_500", "http_429", "error_mid", "drop", "malformed", "no_done", "hang"]
FAIL_MODES: tuple[str, ...] = (
    "http_500",
    "http_429",
    "error_mid",
    "drop",
    "malformed",
    "no_done",
    "hang",
)
UsageMode = Literal["final", "finish", "none", "continuous"]
READY_LINE = "SSE_SERVER_READY"


@dataclass(slots=True)
class ServerKnobs:
    """Behaviour of the server (defaults for every request)."""

    ttft_ms: float = 0.0  # request received -> first content chunk
    itl_ms: float = 0.0  # between content chunks
    tokens_per_chunk: int = 1
    # Where usage goes: a final chunk with empty choices ("final"), the
    # finish_reason chunk ("finish"), nowhere ("none"), or every chunk
    # cumulatively plus the final chunk ("continuous", like vLLM's
    # continuous_usage_stats).
    usage: UsageMode = "final"
    fail: FailMode | None = None
    # Content chunks sent before a mid-stream failure (default: half).
    fail_after: int | None = None
    # Output length when the request does not set ignore_eos (None: max_tokens).
    natural_len: int | None = None
    role_chunk: bool = True  # chat: a role-only chunk right away, before TTFT
    comments: bool = False  # a ": ping" comment line right away
    # Put the server's perf_counter_ns() in every content chunk ("x_sent_ns",
    # right before the write; "x_recv_ns", when the request arrived), so a
    # client on the same host can split a latency into its parts.
    stamp: bool = False
    model: str = "test-model"
    max_model_len: int = 131072

    def merged(self, overrides: Any) -> ServerKnobs:
        """These knobs with a request's ``x_test`` overrides applied."""
        if not isinstance(overrides, dict) or not overrides:
            return self
        names = {f.name for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if k in names})


def _words(text: str) -> list[str]:
    return text.split()


def _prompt_tokens(body: dict[str, Any]) -> int:
    prompt = body.get("prompt")
    if prompt is not None:
        if isinstance(prompt, str):
            return len(_words(prompt))
        if isinstance(prompt, list):
            if prompt and isinstance(prompt[0], str):
                return len(_words(prompt[0]))
            if prompt and isinstance(prompt[0], list):
                return len(prompt[0])
            return len(prompt)
        return 0
    return len(_words(_messages_text(body.get("messages"))))


def _max_tokens(body: dict[str, Any]) -> int:
    for key in ("max_tokens", "max_completion_tokens"):
        if body.get(key) is not None:
            return max(int(body[key]), 0)
    return 16


def _messages_text(messages: Any) -> str:
    parts: list[str] = []
    for m in messages or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return " ".join(parts)


def _frame(payload: bytes) -> bytes:
    """One HTTP chunk holding one SSE event."""
    event = b"data: " + payload + b"\n\n"
    return b"%x\r\n%b\r\n" % (len(event), event)


_DONE_FRAME = _frame(b"[DONE]")
_LAST_CHUNK = b"0\r\n\r\n"
_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class _Stream:
    """The scripted answer to one streamed generation request."""

    __slots__ = (
        "chat",
        "fail_at",
        "finish",
        "handle",
        "i",
        "knobs",
        "n_chunks",
        "n_tokens",
        "prefix",
        "prompt_tokens",
        "proto",
        "recv_ns",
        "rid",
        "sent_tokens",
        "t0",
    )

    def __init__(
        self, proto: _ServerProtocol, knobs: ServerKnobs, body: dict[str, Any], chat: bool
    ) -> None:
        self.proto = proto
        self.knobs = knobs
        self.chat = chat
        self.rid = proto.server.next_id()
        self.recv_ns = proto.recv_ns
        max_tokens = _max_tokens(body)
        n = max_tokens
        self.finish = "length"
        if (
            not body.get("ignore_eos")
            and knobs.natural_len is not None
            and knobs.natural_len < max_tokens
        ):
            n = knobs.natural_len
            self.finish = "stop"
        self.n_tokens = max(n, 0)
        tpc = max(int(knobs.tokens_per_chunk), 1)
        self.n_chunks = -(-self.n_tokens // tpc)
        self.prompt_tokens = _prompt_tokens(body)
        self.i = 0
        self.sent_tokens = 0
        self.handle: asyncio.Handle | None = None
        self.fail_at = -1
        if knobs.fail in ("error_mid", "drop", "malformed", "hang"):
            self.fail_at = knobs.fail_after if knobs.fail_after is not None else self.n_chunks // 2
        # Every content chunk is prefix + text + suffix; only the last one
        # (finish_reason, maybe usage) and stamped/continuous ones differ.
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{self.rid}"
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = f'{{"id":"{rid}","object":"{obj}","created":{int(time.time())},'
        head += f'"model":{json.dumps(knobs.model)},"choices":[{{"index":0,'
        self.prefix = head.encode()

    def start(self) -> None:
        proto = self.proto
        k = self.knobs
        first = _SSE_HEAD
        if k.comments:
            first += b"%x\r\n: ping\n\n\r\n" % len(b": ping\n\n")
        if self.chat and k.role_chunk:
            role = (
                b'"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}'
            )
            first += _frame(self.prefix + role)
        proto.write(first)
        self.t0 = proto.loop.time()
        self._schedule()

    def _schedule(self) -> None:
        k = self.knobs
        loop = self.proto.loop
        if k.ttft_ms <= 0 and k.itl_ms <= 0:
            # Zero-delay mode: one chunk per loop iteration, so concurrent
            # streams interleave instead of one stream flooding the socket.
            self.handle = loop.call_soon(self._send_next)
        else:
            when = self.t0 + (k.ttft_ms + self.i * k.itl_ms) / 1000.0
            self.handle = loop.call_at(when, self._send_next)

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _usage(self, completion: int) -> bytes:
        return b'"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}' % (
            self.prompt_tokens,
            completion,
            self.prompt_tokens + completion,
        )

    def _send_next(self) -> None:
        self.handle = None
        proto = self.proto
        if proto.closed:
            return
        k = self.knobs
        i = self.i
        if i == self.fail_at:
            self._fail_mid()
            return
        if i >= self.n_chunks:  # nothing to generate (max_tokens 0)
            self._finish(b"")
            return
        tpc = max(int(k.tokens_per_chunk), 1)
        ntok = min(tpc, self.n_tokens - self.sent_tokens)
        self.sent_tokens += ntok
        text = b"tok " * ntok
        last = i == self.n_chunks - 1
        body = self.prefix
        if self.chat:
            body += b'"delta":{"content":"' + text + b'"},"logprobs":null,'
        else:
            body += b'"text":"' + text + b'","logprobs":null,'
        if last:
            body += b'"finish_reason":"' + self.finish.encode() + b'"}]'
            if k.usage in ("finish", "continuous"):
                body += b"," + self._usage(self.sent_tokens)
        else:
            body += b'"finish_reason":null}]'
            if k.usage == "continuous":
                body += b"," + self._usage(self.sent_tokens)
        if k.stamp:
            body += b',"x_sent_ns":%d,"x_recv_ns":%d' % (time.perf_counter_ns(), self.recv_ns)
        body += b"}"
        self.i = i + 1
        if last:
            self._finish(_frame(body))
        else:
            proto.write(_frame(body))
            self._schedule()

    def _finish(self, last_frame: bytes) -> None:
        k = self.knobs
        out = last_frame
        if k.usage in ("final", "continuous"):
            out += _frame(
                self.prefix[: self.prefix.rfind(b'"choices"')]
                + b'"choices":[],'
                + self._usage(self.sent_tokens)
                + b"}"
            )
        if k.fail != "no_done":
            out += _DONE_FRAME
        out += _LAST_CHUNK
        self.proto.write(out)
        self.proto.response_done()

    def _fail_mid(self) -> None:
        proto = self.proto
        mode = self.knobs.fail
        if mode == "drop":
            proto.abort()
        elif mode == "hang":
            pass  # send nothing more; the client's timeout must end it
        elif mode == "error_mid":
            err = {
                "error": {
                    "message": "scripted mid-stream failure",
                    "type": "InternalServerError",
                    "code": 500,
                }
            }
            proto.write(_frame(_dumps(err)) + _DONE_FRAME + _LAST_CHUNK)
            proto.response_done()
        elif mode == "malformed":
            proto.write(_frame(b'{"choices":[{"text":"tok ", "index"') + _DONE_FRAME + _LAST_CHUNK)
            proto.response_done()


class _ServerProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive connection of the test server (no pipelining)."""

    def __init__(self, server: SSETestServer) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.busy = False
        self.closed = False
        self.keep_alive = True
        self.stream: _Stream | None = None
        self.recv_ns = 0  # when the last request bytes arrived (stamp mode)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.stream is not None:
            self.stream.cancel()
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
            self._simple(500, _dumps({"error": {"message": repr(exc), "code": 500}}))

    def _simple(
        self, status: int, body: bytes, ctype: str = "application/json", extra: str = ""
    ) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}.get(
            status, "Internal Server Error"
        )
        conn = "" if self.keep_alive else "connection: close\r\n"
        head = (
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\n"
            f"content-length: {len(body)}\r\n{conn}{extra}\r\n"
        )
        self.write(head.encode() + body)
        self.response_done()

    def _route(self, method: str, path: str, raw: bytes) -> None:
        srv = self.server
        if path == "/health":
            self._simple(200, b"", "text/plain")
            return
        if path == "/v1/models":
            k = srv.knobs
            models = {
                "object": "list",
                "data": [{"id": k.model, "object": "model", "max_model_len": k.max_model_len}],
            }
            self._simple(200, _dumps(models))
            return
        if method != "POST":
            self._simple(404, b'{"error":{"message":"not found","code":404}}')
            return
        try:
            body = json.loads(raw) if raw else {}
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._simple(400, _dumps({"error": {"message": f"bad JSON: {exc}", "code": 400}}))
            return
        if path == "/tokenize":
            text = (
                body["prompt"]
                if isinstance(body.get("prompt"), str)
                else _messages_text(body.get("messages"))
            )
            words = _words(text)
            tokens = [zlib.crc32(w.encode()) % 32000 for w in words]
            self._simple(
                200,
                _dumps(
                    {
                        "tokens": tokens,
                        "count": len(tokens),
                        "max_model_len": srv.knobs.max_model_len,
                    }
                ),
            )
            return
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self._simple(404, b'{"error":{"message":"not found","code":404}}')
            return
        knobs = srv.knobs.merged(body.get("x_test"))
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
        chat = path == "/v1/chat/completions"
        if not body.get("stream"):
            self._non_streamed(knobs, body, chat)
            return
        self.stream = _Stream(self, knobs, body, chat)
        self.stream.start()

    def _non_streamed(self, knobs: ServerKnobs, body: dict[str, Any], chat: bool) -> None:
        n = _max_tokens(body)
        text = "tok " * n
        p = _prompt_tokens(body)
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
        self.loop.call_later(delay, self._simple, 200, _dumps(out))


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

    async def start(self) -> None:
        """Listen on the running loop (port 0 picks a free port)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _ServerProtocol(self), self.host, self.port, backlog=1024, ssl=self.ssl_context
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


def _src_root() -> str:
    # .../src/inferx_core/testing/sse_server.py -> .../src, so a child
    # process finds the package even when it is not installed.
    return str(Path(__file__).resolve().parents[2])


class ServerProcess:
    """The server in a child process (its own interpreter, CPU and GIL)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **knobs: Any) -> None:
        self.host = host
        self.port = port
        self.knobs = dataclasses.replace(ServerKnobs(), **knobs)
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def argv(self) -> list[str]:
        k = self.knobs
        argv = [
            sys.executable,
            "-m",
            "inferx_core.testing.sse_server",
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        argv += [
            "--ttft-ms",
            str(k.ttft_ms),
            "--itl-ms",
            str(k.itl_ms),
            "--tokens-per-chunk",
            str(k.tokens_per_chunk),
        ]
        argv += ["--usage", k.usage, "--model", k.model]
        if k.fail:
            argv += ["--fail", k.fail]
        if k.fail_after is not None:
            argv += ["--fail-after", str(k.fail_after)]
        if k.natural_len is not None:
            argv += ["--natural-len", str(k.natural_len)]
        if not k.role_chunk:
            argv.append("--no-role-chunk")
        if k.comments:
            argv.append("--comments")
        if k.stamp:
            argv.append("--stamp")
        return argv

    def __enter__(self) -> ServerProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_src_root(), env.get("PYTHONPATH", "")) if p
        )
        self.proc = subprocess.Popen(
            self.argv(), stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith(READY_LINE):
            self.__exit__()
            raise RuntimeError(f"test server did not start (got {line!r})")
        self.base_url = line.split()[1]
        self.port = int(self.base_url.rsplit(":", 1)[1])
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()
        self.proc = None


def main(argv: list[str] | None = None) -> None:
    """CLI entry point: serve until SIGINT/SIGTERM."""
    ap = argparse.ArgumentParser(
        prog="python -m inferx_core.testing.sse_server", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    ap.add_argument("--ttft-ms", type=float, default=0.0)
    ap.add_argument("--itl-ms", type=float, default=0.0)
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    ap.add_argument("--usage", choices=["final", "finish", "none", "continuous"], default="final")
    ap.add_argument("--fail", choices=FAIL_MODES, default=None)
    ap.add_argument("--fail-after", type=int, default=None)
    ap.add_argument("--natural-len", type=int, default=None)
    ap.add_argument("--no-role-chunk", action="store_true")
    ap.add_argument("--comments", action="store_true")
    ap.add_argument("--stamp", action="store_true")
    ap.add_argument("--model", default="test-model")
    a = ap.parse_args(argv)
    knobs = ServerKnobs(
        ttft_ms=a.ttft_ms,
        itl_ms=a.itl_ms,
        tokens_per_chunk=a.tokens_per_chunk,
        usage=a.usage,
        fail=a.fail,
        fail_after=a.fail_after,
        natural_len=a.natural_len,
        role_chunk=not a.no_role_chunk,
        comments=a.comments,
        stamp=a.stamp,
        model=a.model,
    )
    server = SSETestServer(a.host, a.port, knobs)

    async def run() -> None:
        await server.start()
        print(f"{READY_LINE} {server.base_url}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(run())


if __name__ == "__main__":
    main()
