"""HTTP/1.1 chunked framing of a streamed reply body.

:class:`ChunkedBody`, a part of :class:`~inferx_core.load.transport.connection.Connection`,
walks the framing byte by byte with its state carried between reads; a read
that holds only whole chunks (the common case for a streamed reply) is
unframed in one split instead (:func:`whole_chunks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

__all__ = ["CHUNKED_STATE", "MAX_TRAILERS", "ChunkedBody", "split_chunks", "whole_chunks"]

CHUNKED_STATE = 2  # the connection's parser state while it reads a chunked body
MAX_TRAILERS = 64 * 1024  # a trailer line longer than this is malformed (bounds memory)


class ChunkedBody:
    """The chunked-body reader of a connection: hands chunk data to ``_body``.

    The connection provides the state below and the sinks: ``_body`` (chunk
    data), ``_body_end`` (the last chunk and trailers were read) and
    ``_fail``. ``_chunk_rem``: >0 bytes left in the chunk, 0 a size line,
    -2 the CRLF after chunk data, -3 trailers; ``_buf`` holds a partial
    framing line between reads.
    """

    _buf: bytes
    _chunk_rem: int
    _keep_alive: bool
    _state: int
    _body: Callable[[bytes, int], None]
    _body_end: Callable[[int], None]
    _fail: Callable[[int, Literal["malformed"], str], None]

    def _feed_chunked(self, data: bytes, t: int) -> None:
        if self._buf:
            data = self._buf + data
            self._buf = b""
        elif self._chunk_rem == 0:
            # Fast paths: whole chunks (one SSE event each is what streaming
            # servers send, one per read unless the client fell behind): their
            # data goes to the body sink in one call.
            idx = data.find(b"\r\n", 0, 10)
            if idx > 0:
                try:
                    size = int(data[:idx], 16)
                except ValueError:
                    size = -1
                if size > 0 and idx + size + 4 == len(data) and data[-2:] == b"\r\n":
                    self._body(data[idx + 2 : -2], t)  # exactly one chunk
                    return
            parts, pos = whole_chunks(data)
            if parts:
                self._body(parts[0] if len(parts) == 1 else b"".join(parts), t)
                if pos == len(data) or self._state != CHUNKED_STATE:
                    return
                data = data[pos:]
        self._feed_framed(data, t)

    def _feed_framed(self, data: bytes, t: int) -> None:
        """Walk the chunked framing of ``data``; state carries over between reads.

        ``_chunk_rem``: >0 bytes left in the chunk, 0 a size line, -2 the CRLF
        after chunk data, -3 trailers. The framing steps return the next
        position, or -1 when they stopped reading this data.
        """
        pos = 0
        n = len(data)
        while pos < n:
            rem = self._chunk_rem
            if rem > 0:  # inside chunk data (the common case)
                end = pos + rem
                if end > n:
                    self._body(data[pos:] if pos else data, t)
                    self._chunk_rem = rem - (n - pos)
                    return
                self._body(data[pos:end] if pos or end != n else data, t)
                pos = end
                self._chunk_rem = -2
                if self._state != CHUNKED_STATE:
                    return  # the body sink settled the request
            elif rem == 0:
                pos = self._chunk_size_line(data, pos, t)
            elif rem == -2:
                pos = self._chunk_data_end(data, pos, t)
            else:
                pos = self._chunk_trailer(data, pos, t)
            if pos < 0:
                return

    def _chunk_size_line(self, data: bytes, pos: int, t: int) -> int:
        idx = data.find(b"\r\n", pos)
        if idx < 0:
            self._buf = data[pos:]
            if len(self._buf) > 1024:
                self._fail(t, "malformed", "bad chunked framing (size line too long)")
            return -1
        try:
            size = int(data[pos:idx].split(b";", 1)[0], 16)
        except ValueError:
            self._fail(t, "malformed", f"bad chunk size line: {data[pos:idx][:50]!r}")
            return -1
        self._chunk_rem = size if size > 0 else -3
        return idx + 2

    def _chunk_data_end(self, data: bytes, pos: int, t: int) -> int:
        """The CRLF after chunk data."""
        if len(data) - pos < 2:
            self._buf = data[pos:]
            return -1
        if data[pos : pos + 2] != b"\r\n":
            self._fail(t, "malformed", "bad chunked framing (missing CRLF after chunk)")
            return -1
        self._chunk_rem = 0
        return pos + 2

    def _chunk_trailer(self, data: bytes, pos: int, t: int) -> int:
        """Trailer lines until an empty line, which ends the body."""
        idx = data.find(b"\r\n", pos)
        if idx < 0:
            self._buf = data[pos:]
            if len(self._buf) > MAX_TRAILERS:
                self._fail(t, "malformed", "bad chunked framing (trailer section too large)")
            return -1
        if idx == pos:
            if idx + 2 < len(data):
                self._keep_alive = False  # bytes after the body: out of sync
            self._body_end(t)
            return -1
        return idx + 2


def whole_chunks(data: bytes) -> tuple[list[bytes], int]:
    """The data of the whole non-empty chunks ``data`` starts with, and where they end.

    Stops at anything else (a partial chunk, the last chunk, a size line with
    extensions or too long), which the framing walk then handles.
    """
    parts = split_chunks(data)
    if parts is not None:
        return parts, len(data)
    parts = []
    pos = 0
    n = len(data)
    find = data.find
    while pos < n:
        idx = find(b"\r\n", pos, pos + 10)  # size lines of up to 8 hex digits
        if idx < 0:
            break
        try:
            size = int(data[pos:idx], 16)
        except ValueError:
            break
        end = idx + 2 + size
        if size <= 0 or end + 2 > n or data[end : end + 2] != b"\r\n":
            break
        parts.append(data[idx + 2 : end])
        pos = end + 2
    return parts, pos


def split_chunks(data: bytes) -> list[bytes] | None:
    """The chunks' data when ``data`` is only whole non-empty chunks, found in one split.

    ``size CRLF data CRLF`` repeated: split at CRLF, the pieces alternate
    size and data. Exact whenever every size matches the length of the piece
    after it: by induction each piece then starts where the framing says its
    chunk does (a CRLF inside chunk data breaks a match and returns None).
    """
    pieces = data.split(b"\r\n")
    if not len(pieces) & 1 or pieces[-1]:
        return None
    parts = pieces[1:-1:2]
    try:
        sizes = [int(size, 16) for size in pieces[0:-1:2]]
    except ValueError:
        return None
    if sizes != list(map(len, parts)) or not all(parts):
        return None
    return parts
