"""The hot-path streaming HTTP/1.1 client.

Why not httpx or aiohttp: measured client CPU per 1000 streamed chunks was
~108 ms (httpx) and ~25 ms (aiohttp); at high concurrency that CPU turns
into event-loop lag, which shows up as inflated TTFT/ITL. This client is an
``asyncio.Protocol``: the whole response (status line, headers, chunked
framing, SSE, JSON, record update) is handled inside ``data_received``, so
a streamed chunk costs one callback and no task wake-up, and every chunk is
stamped with ``perf_counter_ns()`` the moment its bytes are handed to
Python, before any parsing. The awaiting task wakes once per request.

Scope: ``POST`` of a JSON body, a streamed (SSE) answer, keep-alive
connections (one per in-flight request), ``Transfer-Encoding: chunked``,
``Content-Length`` and close-delimited bodies. ``https`` works through the
standard library's TLS transport (no fallback client needed).

Every failure (connect, timeout, non-200, malformed stream, error payload,
connection drop, cancellation) ends as a failed record with a reason; the
request function never raises except ``CancelledError``, which it re-raises
after marking the record.
"""

from __future__ import annotations

import asyncio
import json
import ssl as _ssl
from collections.abc import Mapping, Sequence
from time import perf_counter_ns
from typing import Any
from urllib.parse import urlsplit

from inferx_core.load.records import ErrorKind, RequestRecord
from inferx_core.load.sse import DONE, FAILED, StreamDecoder

__all__ = [
    "CHAT_PATH",
    "COMPLETIONS_PATH",
    "ConnectionPool",
    "build_chat_payload",
    "build_completions_payload",
    "send_streaming_request",
]

COMPLETIONS_PATH = "/v1/completions"
CHAT_PATH = "/v1/chat/completions"

_MAX_HEAD = 64 * 1024  # a status line + headers larger than this is malformed
_EXCERPT = 500  # characters of a non-200 body kept in ``record.error``
_MAX_BODY_KEEP = 64 * 1024  # bytes of a non-streamed body kept for the excerpt
_READ_SIZE = 256 * 1024  # bytes per socket read

# Parser states of a connection.
_IDLE = 0  # no request in flight
_HEAD = 1  # reading the status line and headers
_CHUNKED = 2  # reading a chunked body
_LENGTH = 3  # reading a Content-Length body
_EOF = 4  # reading a close-delimited body
_OVER = 5  # the request is settled; ignore what still arrives

# Futures resolve to one of these.
_SETTLED = 0
_RETRY = 1  # a reused keep-alive connection died before any reply byte


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _base_body(
    model: str,
    max_tokens: int,
    ignore_eos: bool,
    temperature: float,
    include_usage: bool,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": True,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if ignore_eos:
        # Forces the output length (vLLM, SGLang, TRT-LLM, llama.cpp accept it).
        body["ignore_eos"] = True
    return body


def build_completions_payload(
    model: str,
    prompt: str | Sequence[int],
    max_tokens: int,
    *,
    ignore_eos: bool = True,
    temperature: float = 0.0,
    include_usage: bool = True,
    extra_body: Mapping[str, Any] | None = None,
) -> bytes:
    """JSON body for a streamed ``/v1/completions`` request.

    ``prompt`` may be text or a list of token ids. ``extra_body`` keys are
    added last and override the defaults.
    """
    body = _base_body(model, max_tokens, ignore_eos, temperature, include_usage)
    body["prompt"] = prompt if isinstance(prompt, str) else list(prompt)
    if extra_body:
        body.update(extra_body)
    return _json_bytes(body)


def build_chat_payload(
    model: str,
    messages: str | Sequence[Mapping[str, Any]],
    max_tokens: int,
    *,
    ignore_eos: bool = True,
    temperature: float = 0.0,
    include_usage: bool = True,
    extra_body: Mapping[str, Any] | None = None,
) -> bytes:
    """JSON body for a streamed ``/v1/chat/completions`` request.

    A plain string becomes one user message.
    """
    body = _base_body(model, max_tokens, ignore_eos, temperature, include_usage)
    if isinstance(messages, str):
        body["messages"] = [{"role": "user", "content": messages}]
    else:
        body["messages"] = [dict(m) for m in messages]
    if extra_body:
        body.update(extra_body)
    return _json_bytes(body)


class _Connection(asyncio.BufferedProtocol):
    """One keep-alive connection and the response parser of its request.

    A BufferedProtocol: asyncio's plain Protocol path does ``recv(256 KiB)``
    per read, and allocating that buffer costs more than everything else we
    do per chunk (~17 us here); ``recv_into`` a reused buffer does not.
    """

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self._rbuf = pool._read_buffer
        self.transport: asyncio.Transport | None = None
        self.alive = True
        self.reused = False
        self.reusable = False  # set when a response ends cleanly on a keep-alive connection
        self._state = _IDLE
        self._record: RequestRecord | None = None
        self._decoder: StreamDecoder | None = None
        self._fut: asyncio.Future[int] | None = None
        self._buf = b""
        self._chunk_rem = 0  # >0 bytes left in chunk; 0 size line; -2 CRLF; -3 trailers
        self._length_rem = 0
        self._keep_alive = False
        self._got_bytes = False
        self._done_ns = 0  # arrival of [DONE]
        self._body_parts: list[bytes] = []
        self._body_len = 0
        self._content_type = ""
        self._total_handle: asyncio.TimerHandle | None = None
        self._idle_handle: asyncio.TimerHandle | None = None
        self._idle_ns = 0
        self._idle_s = 0.0
        self._rx_ns = 0
        self._timeout_s = 0.0

    # -- asyncio.Protocol ----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._rbuf

    def buffer_updated(self, nbytes: int) -> None:
        # The read buffer is shared by the pool's connections: copy out now.
        self.data_received(self._rbuf[:nbytes].tobytes())

    def data_received(self, data: bytes) -> None:
        """Handle bytes that just arrived (stamped first, before any parsing)."""
        t = perf_counter_ns()
        self._rx_ns = t
        state = self._state
        if state == _CHUNKED:
            self._feed_chunked(data, t)
        elif state == _HEAD:
            self._got_bytes = True
            self._feed_head(data, t)
        elif state == _LENGTH:
            self._feed_length(data, t)
        elif state == _EOF:
            self._body(data, t)
        elif state == _IDLE:
            # Bytes nobody asked for: the connection is out of sync.
            self.alive = False
            self._close()

    def eof_received(self) -> bool | None:
        return None  # let the transport close; connection_lost settles

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        self.reusable = False
        state = self._state
        if state in (_IDLE, _OVER):
            self.pool._forget(self)
            return
        t = perf_counter_ns()
        if state == _EOF and exc is None:
            self._body_end(t)  # a close-delimited body ends with the connection
            return
        if self._decoder is not None and self._decoder.done:
            self._settle(t)  # [DONE] seen: only the HTTP framing was cut short
            return
        if not self._got_bytes and self.reused:
            self._resolve(_RETRY)  # stale keep-alive connection: retry once
            return
        rec = self._record
        assert rec is not None
        where = "before the status line" if not self._got_bytes else "mid-stream"
        why = f": {exc!r}" if exc is not None else ""
        self._fail(
            t,
            "connection",
            f"connection closed {where} after {len(rec.chunk_ns)} content chunks{why}",
        )

    # -- request lifecycle -----------------------------------------------------

    def start(
        self,
        record: RequestRecord,
        request: bytes,
        deadline: float,
        timeout_s: float,
        idle_timeout_s: float | None,
    ) -> asyncio.Future[int]:
        """Write the request (stamping ``send_ns``) and return its future.

        ``deadline`` is on the loop clock; ``timeout_s`` is only for messages.
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[int] = loop.create_future()
        self._fut = fut
        self._record = record
        self._decoder = None
        self._state = _HEAD
        self._buf = b""
        self._got_bytes = False
        self._done_ns = 0
        self._body_parts = []
        self._body_len = 0
        self.reusable = False
        self._timeout_s = timeout_s
        self._total_handle = loop.call_at(deadline, self._on_total_timeout)
        if idle_timeout_s:
            self._idle_s = idle_timeout_s
            self._idle_ns = int(idle_timeout_s * 1e9)
            self._idle_handle = loop.call_later(idle_timeout_s, self._on_idle_check)
        assert self.transport is not None
        t = perf_counter_ns()
        record.send_ns = t
        self._rx_ns = t
        self.transport.write(request)
        return fut

    def cancel(self) -> None:
        """The awaiting task was cancelled: mark the record, drop the connection."""
        if self._state in (_IDLE, _OVER):
            return
        self._fail(perf_counter_ns(), "cancelled", "cancelled before the request finished")

    def _resolve(self, value: int) -> None:
        self._state = _OVER
        if self._total_handle is not None:
            self._total_handle.cancel()
            self._total_handle = None
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        fut = self._fut
        if fut is not None and not fut.done():
            fut.set_result(value)

    def _settle(self, t: int) -> None:
        """The request is over: final record fields, then wake the waiter."""
        rec = self._record
        assert rec is not None
        if self._decoder is not None:
            self._decoder.finish()
        rec.end_ns = self._done_ns or t
        if not self.reusable:
            self._close()
        self._resolve(_SETTLED)

    def _fail(self, t: int, kind: ErrorKind, message: str) -> None:
        rec = self._record
        assert rec is not None
        if rec.error is None:
            rec.error = message
            rec.error_kind = kind
        self.reusable = False
        self._settle(t)

    def _close(self) -> None:
        self.alive = False
        self.reusable = False
        if self.transport is not None:
            self.transport.close()

    def _on_total_timeout(self) -> None:
        self._total_handle = None
        if self._state in (_IDLE, _OVER):
            return
        t = perf_counter_ns()
        if self._decoder is not None and self._decoder.done:
            self._settle(t)
            return
        rec = self._record
        assert rec is not None
        self._fail(
            t,
            "timeout",
            f"no completion within {self._timeout_s:g} s ({len(rec.chunk_ns)} content chunks)",
        )

    def _on_idle_check(self) -> None:
        # One timer per idle period, re-armed from the last arrival, instead
        # of a new timer per chunk.
        self._idle_handle = None
        if self._state in (_IDLE, _OVER):
            return
        t = perf_counter_ns()
        quiet = t - self._rx_ns
        if quiet < self._idle_ns:
            loop = asyncio.get_running_loop()
            self._idle_handle = loop.call_later((self._idle_ns - quiet) / 1e9, self._on_idle_check)
            return
        if self._decoder is not None and self._decoder.done:
            self._settle(t)
            return
        rec = self._record
        assert rec is not None
        self._fail(
            t, "timeout", f"no data for {self._idle_s:g} s ({len(rec.chunk_ns)} content chunks)"
        )

    # -- response parsing ------------------------------------------------------

    def _feed_head(self, data: bytes, t: int) -> None:
        buf = self._buf + data if self._buf else data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD:
                self._fail(t, "malformed", "response header section too large")
            else:
                self._buf = buf
            return
        self._buf = b""
        head = buf[:end].decode("latin-1")
        rest = buf[end + 4 :]
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        rec = self._record
        assert rec is not None
        try:
            version = parts[0]
            status = int(parts[1])
            if not version.startswith("HTTP/1."):
                raise ValueError(version)
        except (IndexError, ValueError):
            self._fail(t, "malformed", f"bad status line: {lines[0][:200]!r}")
            return
        if 100 <= status < 200:  # interim reply (100 Continue): the real one follows
            if rest:
                self._feed_head(rest, t)
            return
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        rec.status_code = status
        conn_hdr = headers.get("connection", "").lower()
        self._keep_alive = version == "HTTP/1.1" and "close" not in conn_hdr
        self._content_type = headers.get("content-type", "")
        if status == 200 and "event-stream" in self._content_type:
            self._decoder = StreamDecoder(rec)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._state = _CHUNKED
            self._chunk_rem = 0
            if rest:
                self._feed_chunked(rest, t)
        elif "content-length" in headers:
            try:
                self._length_rem = int(headers["content-length"])
            except ValueError:
                self._fail(t, "malformed", f"bad Content-Length: {headers['content-length']!r}")
                return
            self._state = _LENGTH
            if self._length_rem == 0:
                self._body_end(t)
            elif rest:
                self._feed_length(rest, t)
        else:
            self._keep_alive = False
            self._state = _EOF
            if rest:
                self._body(rest, t)

    def _feed_length(self, data: bytes, t: int) -> None:
        rem = self._length_rem
        if len(data) >= rem:
            extra = len(data) > rem
            self._length_rem = 0
            self._body(data[:rem] if extra else data, t)
            if self._state == _LENGTH:
                if extra:
                    self._keep_alive = False  # bytes beyond the body: out of sync
                self._body_end(t)
        else:
            self._length_rem = rem - len(data)
            self._body(data, t)

    def _feed_chunked(self, data: bytes, t: int) -> None:
        if self._buf:
            data = self._buf + data
            self._buf = b""
        elif self._chunk_rem == 0 and data[-2:] == b"\r\n":
            # Fast path: the read is exactly one whole chunk (one SSE event
            # per chunk per read is what streaming servers send).
            idx = data.find(b"\r\n")
            if 0 < idx <= 8:
                try:
                    size = int(data[:idx], 16)
                except ValueError:
                    size = -1
                if size > 0 and idx + size + 4 == len(data):
                    self._body(data[idx + 2 : -2], t)
                    return
        pos = 0
        n = len(data)
        while pos < n:
            rem = self._chunk_rem
            if rem > 0:  # inside chunk data (the common case)
                end = pos + rem
                if end <= n:
                    self._body(data[pos:end] if pos or end != n else data, t)
                    pos = end
                    self._chunk_rem = -2
                else:
                    self._body(data[pos:] if pos else data, t)
                    self._chunk_rem = rem - (n - pos)
                    return
                if self._state != _CHUNKED:
                    return  # the body sink settled the request
            elif rem == 0:  # chunk-size line
                idx = data.find(b"\r\n", pos)
                if idx < 0:
                    self._buf = data[pos:]
                    if len(self._buf) > 1024:
                        self._fail(t, "malformed", "bad chunked framing (size line too long)")
                    return
                try:
                    size = int(data[pos:idx].split(b";", 1)[0], 16)
                except ValueError:
                    self._fail(t, "malformed", f"bad chunk size line: {data[pos:idx][:50]!r}")
                    return
                pos = idx + 2
                self._chunk_rem = size if size > 0 else -3
            elif rem == -2:  # CRLF after chunk data
                if n - pos < 2:
                    self._buf = data[pos:]
                    return
                if data[pos : pos + 2] != b"\r\n":
                    self._fail(t, "malformed", "bad chunked framing (missing CRLF after chunk)")
                    return
                pos += 2
                self._chunk_rem = 0
            else:  # -3: trailer lines until an empty line
                idx = data.find(b"\r\n", pos)
                if idx < 0:
                    self._buf = data[pos:]
                    return
                if idx == pos:
                    if idx + 2 < n:
                        self._keep_alive = False  # bytes after the body: out of sync
                    self._body_end(t)
                    return
                pos = idx + 2

    def _body(self, data: bytes, t: int) -> None:
        dec = self._decoder
        if dec is not None:
            status = dec.feed(data, t)
            if status == DONE:
                if not self._done_ns:
                    self._done_ns = t
            elif status == FAILED:
                self.reusable = False
                self._settle(t)  # the decoder already put the reason on the record
        elif self._body_len < _MAX_BODY_KEEP:
            self._body_parts.append(data)
            self._body_len += len(data)

    def _body_end(self, t: int) -> None:
        """The HTTP body ended cleanly."""
        self.reusable = self._keep_alive and self.alive
        dec = self._decoder
        rec = self._record
        assert rec is not None
        if dec is not None:
            if dec.close(t) == FAILED:
                self.reusable = False
            self._settle(t)
            return
        body = b"".join(self._body_parts)
        text = body.decode("utf-8", "replace")
        if rec.status_code != 200:
            # The body was read to its end, so the connection stays usable.
            excerpt = " ".join(text[:_EXCERPT].split())
            rec.error = f"HTTP {rec.status_code}: {excerpt}"
            rec.error_kind = "http_status"
            self._settle(t)
            return
        # A 200 that is not an event stream: an error object, or a server
        # that ignored stream=true.
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and (obj.get("error") is not None or obj.get("object") == "error"):
            err = obj.get("error")
            msg = err.get("message", err) if isinstance(err, dict) else (err or obj.get("message"))
            self._fail(t, "stream_error", f"error in 200 reply: {msg}")
        else:
            self._fail(
                t,
                "malformed",
                f"expected text/event-stream, got {self._content_type or 'no content-type'}: "
                + " ".join(text[:200].split()),
            )


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections to one server.

    A request takes an idle connection or opens one, and gives it back when
    its response ended cleanly, so the number of connections follows the
    number of requests in flight. ``base_url`` is ``http://host:port`` or
    ``https://...``, optionally with a path prefix that request paths are
    appended to.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        connect_timeout_s: float = 10.0,
        ssl_context: _ssl.SSLContext | None = None,
        max_idle: int = 4096,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/prefix], got {base_url!r}")
        self.host: str = parts.hostname
        self.port: int = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl: _ssl.SSLContext | None = None
        if parts.scheme == "https":
            self._ssl = ssl_context or _ssl.create_default_context()
        self._prefix = parts.path.rstrip("/").encode()
        default_port = 443 if parts.scheme == "https" else 80
        host_hdr = self.host if ":" not in self.host else f"[{self.host}]"
        if self.port != default_port:
            host_hdr = f"{host_hdr}:{self.port}"
        fixed = {
            "Host": host_hdr,
            "User-Agent": "inferx",
            "Accept": "text/event-stream",
            "Content-Type": "application/json",
        }
        for name, value in (headers or {}).items():
            if any(c in f"{name}{value}" for c in "\r\n"):
                raise ValueError(f"header {name!r} contains a line break")
            fixed = {k: v for k, v in fixed.items() if k.lower() != name.lower()}
            fixed[name] = value
        self._fixed_headers = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self.connect_timeout_s = connect_timeout_s
        self.max_idle = max_idle
        # One receive buffer for all connections: asyncio fills it and the
        # connection copies the bytes out before the next read can happen.
        self._read_buffer = memoryview(bytearray(_READ_SIZE))
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self.connections_opened = 0
        self._closed = False

    def request_bytes(self, path: str, payload: bytes) -> bytes:
        """The full request (head and body) for a POST of ``payload`` to ``path``."""
        return b"".join(
            (
                b"POST ",
                self._prefix,
                path.encode(),
                b" HTTP/1.1\r\n",
                self._fixed_headers,
                b"Content-Length: ",
                str(len(payload)).encode(),
                b"\r\n\r\n",
                payload,
            )
        )

    async def _acquire(self, timeout_s: float) -> _Connection:
        idle = self._idle
        while idle:
            conn = idle.pop()
            if conn.alive and conn.transport is not None and not conn.transport.is_closing():
                conn.reused = True
                return conn
            self._all.discard(conn)
        if self._closed:
            raise RuntimeError("connection pool is closed")
        loop = asyncio.get_running_loop()
        _, conn = await asyncio.wait_for(
            loop.create_connection(
                lambda: _Connection(self),
                self.host,
                self.port,
                ssl=self._ssl,
                server_hostname=self.host if self._ssl else None,
            ),
            timeout=min(self.connect_timeout_s, timeout_s),
        )
        self.connections_opened += 1
        self._all.add(conn)
        conn.reused = False
        return conn

    def _release(self, conn: _Connection) -> None:
        conn._state = _IDLE
        conn._record = None
        conn._decoder = None
        conn._fut = None
        if conn.reusable and conn.alive and not self._closed and len(self._idle) < self.max_idle:
            self._idle.append(conn)
        else:
            conn._close()
            self._all.discard(conn)

    def _forget(self, conn: _Connection) -> None:
        self._all.discard(conn)

    async def close(self) -> None:
        """Close every connection (idle and in use)."""
        self._closed = True
        for conn in list(self._all):
            conn._close()
        self._idle.clear()
        self._all.clear()
        await asyncio.sleep(0)  # let the transports run their close callbacks

    async def __aenter__(self) -> ConnectionPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def send_streaming_request(
    pool: ConnectionPool,
    path: str,
    payload: bytes,
    record: RequestRecord,
    *,
    timeout_s: float,
    idle_timeout_s: float | None = None,
) -> RequestRecord:
    """POST ``payload`` to ``path`` and read the SSE answer into ``record``.

    Fills ``send_ns`` (right before the request is written), ``chunk_ns``,
    usage, ``finish_reason``, ``status_code``, ``end_ns`` and, on failure,
    ``error``/``error_kind``. ``timeout_s`` bounds the whole request
    (connecting included); ``idle_timeout_s`` bounds every silence between
    reads. Never raises, except ``CancelledError`` (after marking the record
    ``cancelled``).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    request = pool.request_bytes(path, payload)
    for attempt in (0, 1):
        conn: _Connection | None = None
        try:
            conn = await pool._acquire(max(deadline - loop.time(), 0.001))
            fut = conn.start(record, request, deadline, timeout_s, idle_timeout_s)
            result = await fut
        except asyncio.CancelledError:
            if conn is not None and conn._record is record:
                conn.cancel()
                pool._release(conn)
            if record.error is None:
                record.error = "cancelled before the request finished"
                record.error_kind = "cancelled"
            if not record.end_ns:
                record.end_ns = perf_counter_ns()
            raise
        except (OSError, asyncio.TimeoutError, RuntimeError) as exc:
            record.end_ns = perf_counter_ns()
            if isinstance(exc, asyncio.TimeoutError):
                record.error_kind = "timeout"
                record.error = f"connect to {pool.host}:{pool.port} timed out"
            else:
                record.error_kind = "connection"
                record.error = f"connect to {pool.host}:{pool.port} failed: {exc!r}"
            return record
        pool._release(conn)
        if result == _RETRY and attempt == 0:
            record.send_ns = 0
            record.status_code = None
            continue
        if result == _RETRY:  # a fresh connection closed before replying
            record.end_ns = perf_counter_ns()
            record.error_kind = "connection"
            record.error = "connection closed before the status line"
        return record
    return record  # pragma: no cover - the loop always returns
