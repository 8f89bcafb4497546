"""The hot-path streaming HTTP/1.1 client.

Why not httpx or aiohttp: measured client CPU per 1000 streamed chunks was
~108 ms (httpx) and ~25 ms (aiohttp); at high concurrency that CPU turns
into event-loop lag, which shows up as inflated TTFT/ITL. This client is an
``asyncio.Protocol``: the whole response (status line, headers, chunked
framing, SSE, JSON, record update) is handled inside ``data_received``, so
a streamed chunk costs one callback and no task wake-up, and every chunk is
stamped with ``perf_counter_ns()`` the moment its bytes are handed to
Python, before any parsing. The awaiting task wakes once per request.
The connection and its response parser are
:mod:`inferx_core.load.transport.connection`; this module holds the request payloads,
the connection pool and the request function.

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
import errno
import ssl as _ssl
from collections.abc import Mapping
from time import perf_counter_ns
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.connection import RETRY, Connection
from inferx_core.load.transport.server_clock import ServerClock, request_id_prefix
from inferx_core.load.transport.sse import DEFAULT_MAX_SSE_LINE_BYTES

if TYPE_CHECKING:
    from inferx_core.sdk.server_timing_api import ServerTiming

#: Errors that are the client's: out of file descriptors, buffers or local ports.
CLIENT_RESOURCE_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.EADDRNOTAVAIL, errno.ENOMEM}
)

__all__ = [
    "ConnectionPool",
    "send_streaming_request",
]

_READ_SIZE = 256 * 1024  # bytes per socket read


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections to one server.

    A request takes an idle connection or opens one, and gives it back when
    its response ended cleanly, so the number of connections follows the
    number of requests in flight. ``base_url`` is ``http://host:port`` or
    ``https://...``, optionally with a path prefix that request paths are
    appended to. ``server_timing``: where the engine's replies carry its own
    per-request clock (hook ``inferx_engine_server_timing``); its request
    fields go into every body. Every request carries its own ``X-Request-Id``
    (this pool's random prefix and the record's id), kept on the record.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        connect_timeout_s: float = 10.0,
        ssl_context: _ssl.SSLContext | None = None,
        max_idle: int = 4096,
        server_timing: ServerTiming | None = None,
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
        self.clock = ServerClock(server_timing) if server_timing is not None else None
        self.id_prefix = request_id_prefix()
        # A configured X-Request-Id is sent as configured (one header, never two).
        self._own_ids = not any(name.lower() == "x-request-id" for name in headers or {})
        # One receive buffer for all connections: asyncio fills it and the
        # connection copies the bytes out before the next read can happen.
        self._read_buffer = memoryview(bytearray(_READ_SIZE))
        self._idle: list[Connection] = []
        self._all: set[Connection] = set()
        self.connections_opened = 0
        self._closed = False

    def request_bytes(self, path: str, payload: bytes, request_id: str | None = None) -> bytes:
        """The full request (head and body) for a POST of ``payload`` to ``path``, with
        ``X-Request-Id: request_id`` when given (and the clock's fields in the body)."""
        if self.clock is not None:
            payload = self.clock.add_to_body(payload)
        id_header = (
            b"X-Request-Id: " + request_id.encode("latin-1") + b"\r\n" if request_id else b""
        )
        return b"".join(
            (
                b"POST ",
                self._prefix,
                path.encode(),
                b" HTTP/1.1\r\n",
                self._fixed_headers,
                id_header,
                b"Content-Length: ",
                str(len(payload)).encode(),
                b"\r\n\r\n",
                payload,
            )
        )

    def request_for(self, path: str, payload: bytes, record: RequestRecord) -> bytes:
        """:meth:`request_bytes` with the record's own ``X-Request-Id`` (kept on the record)."""
        if not self._own_ids:
            return self.request_bytes(path, payload)
        record.client_request_id = f"{self.id_prefix}-{record.request_id}"
        return self.request_bytes(path, payload, record.client_request_id)

    async def _acquire(self, timeout_s: float, *, fresh: bool = False) -> Connection:
        """An idle connection, or a new one; always new with ``fresh`` (a retry: the idle
        ones are as old as the one the server just closed, and may be closing too)."""
        idle = self._idle if not fresh else []
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
                lambda: Connection(self._read_buffer, self._forget, self.clock),
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

    def _release(self, conn: Connection) -> None:
        if conn.draining:  # settled at [DONE]: back once its HTTP body has ended
            conn.on_drained = self._release
            return
        conn.detach()
        if conn.reusable and conn.alive and not self._closed and len(self._idle) < self.max_idle:
            self._idle.append(conn)
        else:
            conn.close()
            self._all.discard(conn)

    def _forget(self, conn: Connection) -> None:
        self._all.discard(conn)

    async def close(self) -> None:
        """Close every connection (idle and in use)."""
        self._closed = True
        for conn in list(self._all):
            conn.close()
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
    first_token_timeout_s: float | None = None,
    token_idle_timeout_s: float | None = None,
    max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
) -> RequestRecord:
    """POST ``payload`` to ``path`` and read the SSE answer into ``record``.

    Fills ``send_ns`` (right before the request is written), ``chunk_ns``, usage,
    ``finish_reason``, ``status_code``, ``end_ns`` and, on failure, ``error``/``error_kind``.
    ``timeout_s`` bounds the whole request (connecting included); ``idle_timeout_s``
    every silence between reads; ``first_token_timeout_s`` the wait for the first
    generated token and ``token_idle_timeout_s`` every gap between tokens after it
    (keep-alive comments do not count: :class:`_TokenGuard`); ``max_sse_line_bytes`` the
    longest SSE line. Never raises, except ``CancelledError`` (record ``cancelled``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    request = pool.request_for(path, payload, record)
    for attempt in (0, 1):
        conn: Connection | None = None
        guard: _TokenGuard | None = None
        try:
            conn = await pool._acquire(max(deadline - loop.time(), 0.001), fresh=attempt > 0)
            fut = conn.start(
                record, request, deadline, timeout_s, idle_timeout_s, max_sse_line_bytes
            )
            guard = _TokenGuard.arm(conn, record, first_token_timeout_s, token_idle_timeout_s)
            result = await fut
        except asyncio.CancelledError:
            if conn is not None and conn.carries(record):
                conn.cancel()
                pool._release(conn)
            if record.error is None:
                record.error = "cancelled before the request finished"
                record.error_kind = "cancelled"
            if not record.end_ns:
                record.end_ns = perf_counter_ns()
            raise
        except (OSError, asyncio.TimeoutError, RuntimeError) as exc:
            return _connect_failed(pool, record, exc)
        finally:
            if guard is not None:
                guard.disarm()
        pool._release(conn)
        if result == RETRY and attempt == 0:
            record.send_ns = 0
            record.status_code = None
            continue
        if result == RETRY:  # a fresh connection closed before replying
            record.end_ns = perf_counter_ns()
            record.error_kind = "connection"
            record.error = "connection closed before the status line"
        return record
    return record  # pragma: no cover - the loop always returns


def _connect_failed(
    pool: ConnectionPool, record: RequestRecord, exc: BaseException
) -> RequestRecord:
    """The request never got a connection: why, as the record's error."""
    record.end_ns = perf_counter_ns()
    if isinstance(exc, asyncio.TimeoutError):
        record.error_kind = "timeout"
        record.error = f"connect to {pool.host}:{pool.port} timed out"
    elif getattr(exc, "errno", None) in CLIENT_RESOURCE_ERRNOS:
        record.error_kind = "client_resource"
        record.error = (
            f"the client ran out of a resource ({exc!r}): not the server's fault; "
            "raise `ulimit -n` or lower the concurrency"
        )
    else:
        record.error_kind = "connection"
        record.error = f"connect to {pool.host}:{pool.port} failed: {exc!r}"
    return record


class _TokenGuard:
    """Fails a request whose first token, or next token, is overdue.

    A server that accepts and then sends nothing, or only keep-alive comments,
    would otherwise hold a slot until the whole-request timeout. One timer per
    request, re-armed from the last token (not one per chunk).
    """

    def __init__(
        self, conn: Connection, record: RequestRecord, first_s: float | None, idle_s: float | None
    ) -> None:
        self.conn, self.record = conn, record
        self.first_ns = int(first_s * 1e9) if first_s else 0
        self.idle_ns = int(idle_s * 1e9) if idle_s else 0
        self.handle: asyncio.TimerHandle | None = None

    @classmethod
    def arm(
        cls, conn: Connection, record: RequestRecord, first_s: float | None, idle_s: float | None
    ) -> _TokenGuard | None:
        if not first_s and not idle_s:
            return None
        guard = cls(conn, record, first_s, idle_s)
        guard._schedule(min(x for x in (first_s, idle_s) if x))
        return guard

    def _schedule(self, seconds: float) -> None:
        self.handle = asyncio.get_running_loop().call_later(max(seconds, 0.001), self._check)

    def disarm(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _check(self) -> None:
        self.handle = None
        rec = self.record
        if not self.conn.carries(rec) or rec.end_ns:
            return
        now = perf_counter_ns()
        chunks = rec.chunk_ns
        if not chunks:
            limit, since, what = self.first_ns, rec.send_ns, "no first token within"
        else:
            limit, since, what = self.idle_ns, chunks[-1], "no token for"
        if not limit:  # this phase is unbounded here; look again at the other limit
            self._schedule((self.idle_ns or self.first_ns) / 1e9)
            return
        left = since + limit - now
        if left > 0:
            self._schedule(left / 1e9)
            return
        rec.error = f"{what} {limit / 1e9:g} s ({len(chunks)} tokens so far)"
        rec.error_kind = "timeout"
        self.conn.cancel()  # keeps the message above, settles the record, drops the connection
