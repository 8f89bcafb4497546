"""One keep-alive HTTP/1.1 connection and the parser of its streamed response.

The connection is an ``asyncio.BufferedProtocol``: the whole response
(status line, headers, chunked framing, SSE, JSON, record update) is handled
inside ``data_received``, so a streamed chunk costs one callback and no task
wake-up, and every chunk is stamped with ``perf_counter_ns()`` the moment its
bytes are handed to Python, before any parsing. The pool that opens and
reuses connections, and the request function, are in
:mod:`inferx_core.load.transport.client`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from time import perf_counter_ns

from inferx_core.load.records.request import ErrorKind, RequestRecord
from inferx_core.load.transport.http_chunks import CHUNKED_STATE, ChunkedBody
from inferx_core.load.transport.http_reply import parse_headers, parse_status_line, unusable_reply
from inferx_core.load.transport.server_clock import ServerClock
from inferx_core.load.transport.sse import DEFAULT_MAX_SSE_LINE_BYTES, DONE, FAILED, StreamDecoder

__all__ = ["RETRY", "SETTLED", "Connection"]

_MAX_HEAD = 64 * 1024  # a status line + headers larger than this is malformed
_MAX_BODY_KEEP = 64 * 1024  # bytes of a non-streamed body kept for the excerpt
# A reply is complete at [DONE] (or a finish_reason) even when the HTTP body
# never ends (a server that keeps the connection open). Its end of body (the
# last chunk, the Content-Length) usually follows within microseconds: wait
# this long of silence for it, so the connection can be reused, then settle
# without it and close the connection. After a finish_reason without [DONE]
# wait longer, for the usage chunk that comes after it.
_DONE_GRACE_S = 0.05
_FINISH_GRACE_S = 0.5

# Parser states of a connection.
_IDLE = 0  # no request in flight
_HEAD = 1  # reading the status line and headers
_CHUNKED = CHUNKED_STATE  # reading a chunked body (load/transport/http_chunks.py)
_LENGTH = 3  # reading a Content-Length body
_EOF = 4  # reading a close-delimited body
_OVER = 5  # the request is settled; ignore what still arrives

# A request's future resolves to one of these.
SETTLED = 0
RETRY = 1  # a reused keep-alive connection died before any reply byte


class Connection(asyncio.BufferedProtocol, ChunkedBody):
    """One keep-alive connection and the response parser of its request.

    A BufferedProtocol: asyncio's plain Protocol path does ``recv(256 KiB)``
    per read, and allocating that buffer costs more than everything else we
    do per chunk (~17 us here); ``recv_into`` a reused buffer does not.
    """

    def __init__(
        self,
        read_buffer: memoryview,
        forget: Callable[[Connection], None],
        clock: ServerClock | None = None,
    ) -> None:
        # The pool's shared receive buffer, how to tell the pool this connection is gone,
        # and where the engine's replies carry its own per-request clock (None: nowhere).
        self._rbuf = read_buffer
        self._forget = forget
        self._clock = clock
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
        self._end_handle: asyncio.TimerHandle | None = None  # the grace after the reply
        # After [DONE] the request is settled at once; the HTTP body's end is still read
        # (for up to _DONE_GRACE_S) so the connection can be reused, without holding the
        # request's load slot. The pool's release waits for it (on_drained).
        self.draining = False
        self.on_drained: Callable[[Connection], None] | None = None
        self._max_line = DEFAULT_MAX_SSE_LINE_BYTES
        self._idle_ns = 0
        self._idle_s = 0.0
        self._rx_ns = 0
        self._timeout_s = 0.0

    # -- asyncio.Protocol ----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a TCP transport here

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
            self.close()

    def eof_received(self) -> bool | None:
        return None  # let the transport close; connection_lost settles

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        self.reusable = False
        if self.draining:  # the reply was complete at [DONE]; only the framing is cut
            self._drained()
            self._forget(self)
            return
        state = self._state
        if state in (_IDLE, _OVER):
            self._forget(self)
            return
        t = perf_counter_ns()
        if state == _EOF and exc is None:
            self._body_end(t)  # a close-delimited body ends with the connection
            return
        if self._decoder is not None and self._decoder.done:
            self._settle(t)  # [DONE] seen: only the HTTP framing was cut short
            return
        if not self._got_bytes and self.reused:
            self._resolve(RETRY)  # stale keep-alive connection: retry once
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
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
    ) -> asyncio.Future[int]:
        """Write the request (stamping ``send_ns``) and return its future.

        ``deadline`` is on the loop clock; ``timeout_s`` is only for messages.
        """
        self._max_line = max_sse_line_bytes
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
        if self._state in (_IDLE, _OVER) or self.draining:
            return
        self._fail(perf_counter_ns(), "cancelled", "cancelled before the request finished")

    def carries(self, record: RequestRecord) -> bool:
        """True while ``record`` is this connection's request."""
        return self._record is record

    def detach(self) -> None:
        """Forget the finished request, so the connection can carry the next one."""
        self._state = _IDLE
        self._record = None
        self._decoder = None
        self._fut = None

    def _resolve(self, value: int) -> None:
        self._state = _OVER
        self._stop_timers()
        fut = self._fut
        if fut is not None and not fut.done():
            fut.set_result(value)

    def _stop_timers(self) -> None:
        if self._total_handle is not None:
            self._total_handle.cancel()
            self._total_handle = None
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        if self._end_handle is not None:
            self._end_handle.cancel()
            self._end_handle = None

    def _settle_at_done(self, t: int) -> None:
        """[DONE]: the reply is complete now. Wake the waiter (its load slot is free)
        and keep reading the HTTP body's end, which makes the connection reusable."""
        rec = self._record
        assert rec is not None and self._decoder is not None
        self._decoder.finish()
        rec.end_ns = t
        self._stop_timers()
        self.draining = True
        self._end_handle = asyncio.get_running_loop().call_later(
            _DONE_GRACE_S, self._on_drain_grace
        )
        fut = self._fut
        if fut is not None and not fut.done():
            fut.set_result(SETTLED)

    def _on_drain_grace(self) -> None:
        # The server keeps the connection open after a complete reply: not reused.
        self._end_handle = None
        if self.draining:
            self.close()
            self._drained()

    def _drained(self) -> None:
        """The body after [DONE] ended (reusable) or never will (closed): release."""
        self.draining = False
        if self._end_handle is not None:
            self._end_handle.cancel()
            self._end_handle = None
        self._state = _OVER
        callback, self.on_drained = self.on_drained, None
        if callback is not None:
            callback(self)

    def _settle(self, t: int) -> None:
        """The request is over: final record fields, then wake the waiter."""
        rec = self._record
        assert rec is not None
        if self._decoder is not None:
            self._decoder.finish()
        rec.end_ns = self._done_ns or t
        if not self.reusable:
            self.close()
        self._resolve(SETTLED)

    def _fail(self, t: int, kind: ErrorKind, message: str) -> None:
        rec = self._record
        assert rec is not None
        if rec.error is None:
            rec.error = message
            rec.error_kind = kind
        self.reusable = False
        self._settle(t)

    def close(self) -> None:
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

    def _await_body_end(self, grace_s: float) -> None:
        """The reply is complete: give the HTTP body ``grace_s`` of silence to end."""
        if self._end_handle is not None:
            self._end_handle.cancel()
        loop = asyncio.get_running_loop()
        self._end_handle = loop.call_later(grace_s, self._on_end_grace, grace_s)

    def _on_end_grace(self, grace_s: float) -> None:
        self._end_handle = None
        if self._state in (_IDLE, _OVER):
            return
        quiet = (perf_counter_ns() - self._rx_ns) / 1e9
        if quiet < grace_s:  # bytes still arrive (a usage chunk): wait for silence
            self._end_handle = asyncio.get_running_loop().call_later(
                grace_s - quiet, self._on_end_grace, grace_s
            )
            return
        # The server keeps the connection open after a complete reply: the reply
        # ends at [DONE] (or its last event); the connection is not reused.
        self._done_ns = self._done_ns or self._rx_ns
        self.reusable = False
        self._settle(self._rx_ns)

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
        lines = buf[:end].decode("latin-1").split("\r\n")
        rest = buf[end + 4 :]
        status_line = parse_status_line(lines[0])
        if status_line is None:
            self._fail(t, "malformed", f"bad status line: {lines[0][:200]!r}")
            return
        version, status = status_line
        if 100 <= status < 200:  # interim reply (100 Continue): the real one follows
            if rest:
                self._feed_head(rest, t)
            return
        self._start_body(version, status, parse_headers(lines[1:]), rest, t)

    def _start_body(
        self, version: str, status: int, headers: dict[str, str], rest: bytes, t: int
    ) -> None:
        """The head is read: pick the body framing and feed it what already arrived."""
        rec = self._record
        assert rec is not None
        rec.status_code = status
        rec.server_request_id = headers.get("x-request-id")
        conn_hdr = headers.get("connection", "").lower()
        self._keep_alive = version == "HTTP/1.1" and "close" not in conn_hdr
        self._content_type = headers.get("content-type", "")
        if status == 200 and "event-stream" in self._content_type:
            self._decoder = StreamDecoder(rec, self._max_line, self._clock)
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

    def _body(self, data: bytes, t: int) -> None:
        if self.draining:
            return  # bytes after [DONE] belong to no reply
        dec = self._decoder
        if dec is not None:
            status = dec.feed(data, t)
            if status == DONE:
                if not self._done_ns:
                    self._done_ns = t
                    self._settle_at_done(t)
            elif status == FAILED:
                self.reusable = False
                self._settle(t)  # the decoder already put the reason on the record
            elif self._end_handle is None and dec.record.finish_reason is not None:
                self._await_body_end(_FINISH_GRACE_S)
        elif self._body_len < _MAX_BODY_KEEP:
            self._body_parts.append(data)
            self._body_len += len(data)

    def _body_end(self, t: int) -> None:
        """The HTTP body ended cleanly."""
        self.reusable = self._keep_alive and self.alive
        if self.draining:
            self._drained()
            return
        dec = self._decoder
        rec = self._record
        assert rec is not None
        if dec is not None:
            if dec.close(t) == FAILED:
                self.reusable = False
            self._settle(t)
            return
        self._plain_body_end(rec, t)

    def _plain_body_end(self, rec: RequestRecord, t: int) -> None:
        """A body that is not an event stream ended: an HTTP error, or a reply we cannot use."""
        kind, message = unusable_reply(
            rec.status_code, b"".join(self._body_parts), self._content_type
        )
        if kind == "http_status":
            # The body was read to its end, so the connection stays usable.
            rec.error = message
            rec.error_kind = kind
            self._settle(t)
        else:
            self._fail(t, kind, message)
