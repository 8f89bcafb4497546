"""HTTP/1.1 chunked framing, fast path: whole chunks found in one step.

The connection's framing walk (:mod:`inferx_core.load.connection`) handles
every case byte by byte; a read that holds only whole chunks (the common
case for a streamed reply) is unframed here in one split instead.
"""

from __future__ import annotations

__all__ = ["split_chunks", "whole_chunks"]


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
