"""The event-stream parser: bytes, split anywhere, to server-sent events.

:class:`SSEParser` follows the WHATWG event-stream rules (LF, CRLF and CR line
ends, ``:`` comments, multi-line ``data``, ``event`` names, a blank line
dispatches) with a size limit per line and per event, and costs time linear in
its input however the reads split it. The stream decoder that applies events
to a request record is :mod:`inferx_core.load.transport.sse`.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DEFAULT_MAX_SSE_LINE_BYTES", "SSEEvent", "SSELineTooLong", "SSEParser"]


class SSEEvent(NamedTuple):
    """One dispatched event: its data (data lines joined by LF) and type."""

    data: str
    event: str = "message"


#: The longest SSE line (and one event's data) a reply may send, by default
#: (``load.max_sse_line_bytes``): far above any real chunk, a bound on memory.
DEFAULT_MAX_SSE_LINE_BYTES = 16 * 1024 * 1024


class SSELineTooLong(ValueError):
    """A line (or one event's data) of the stream is longer than the parser's limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the server sent an SSE line longer than {limit} bytes "
            "(load.max_sse_line_bytes); raise load.max_sse_line_bytes if such events are expected"
        )


class SSEParser:
    """Incremental event-stream parser: ``feed(bytes) -> [SSEEvent]``.

    The result of feeding a byte stream does not depend on how it was split
    into reads (a property the tests check with hypothesis). A line is
    assembled once, when its end arrives: the pieces of an unterminated line
    are kept as a list and only the new bytes are searched for line ends, so
    a long line costs time linear in its length (``copied_bytes`` counts the
    bytes joined). A line or an event's data longer than ``max_line_bytes``
    raises :class:`SSELineTooLong`, so memory stays bounded.
    """

    __slots__ = (
        "_data",
        "_data_len",
        "_event",
        "_max",
        "_pending",
        "_pending_len",
        "_skip_lf",
        "copied_bytes",
    )

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES) -> None:
        self._max = max_line_bytes
        # The pieces of an unterminated line carried to the next read (none
        # holds a CR or LF: those end a line) and their total length.
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._data: list[bytes] = []  # data lines of the event being built
        self._data_len = 0
        self._event = b""
        # The previous read ended in CR: an LF at the start of the next read
        # is the second half of that CRLF, not an empty line.
        self._skip_lf = False
        self.copied_bytes = 0  # bytes copied to join carried pieces into lines

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume bytes; return the events completed by them."""
        if not chunk:
            return []
        if (
            chunk[-2:] == b"\n\n"
            and not (self._pending or self._data or self._event or self._skip_lf)
            and len(chunk) <= self._max
        ):
            # Fast paths: whole ``data: ...`` events, one line each (what
            # OpenAI-compatible servers send, one event per read).
            if chunk[:6] == b"data: ":
                body = chunk[6:-2]
                if b"\n" not in body and b"\r" not in body:
                    return [SSEEvent(body.decode("utf-8", "replace"))]
            fast = self._feed_simple(chunk)
            if fast is not None:
                return fast
        return self._feed_lines(chunk)

    def _feed_lines(self, chunk: bytes) -> list[SSEEvent]:
        """The general path: split into lines (any line ending) and parse each."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 10:
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\r" in chunk:
            # A CR ends a line at once (so an event ending in CR is not held
            # back until the next read); a following LF is skipped.
            self._skip_lf = chunk[-1] == 13
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        elif b"\n" not in chunk:
            self._carry(chunk)  # the middle of a line: nothing ends here
            return []
        lines = chunk.split(b"\n")
        tail = lines.pop()
        if self._pending:  # the first line began in an earlier read
            self._pending.append(lines[0])
            lines[0] = b"".join(self._pending)
            self.copied_bytes += len(lines[0])
        # (Under pending + chunk bytes in all, no line here can be too long.)
        if self._pending_len + len(chunk) > self._max and any(
            len(line) > self._max for line in lines
        ):
            self._too_long()
        self._pending = []
        self._pending_len = 0
        if tail:
            self._carry(tail)
        return self._parse(lines)

    def _carry(self, piece: bytes) -> None:
        self._pending.append(piece)
        self._pending_len += len(piece)
        if self._pending_len > self._max:
            self._too_long()

    def _too_long(self) -> None:
        self._pending = []
        self._pending_len = 0
        self._data = []
        self._data_len = 0
        raise SSELineTooLong(self._max)

    def _parse(self, lines: list[bytes]) -> list[SSEEvent]:
        """Complete lines to events (a blank line dispatches the event built so far)."""
        out: list[SSEEvent] = []
        data = self._data
        size = self._data_len
        limit = self._max
        for line in lines:
            if not line:  # blank line: dispatch
                if data:
                    out.append(self._dispatch())
                    data = self._data
                    size = 0
                else:
                    self._event = b""
            elif line[:5] == b"data:":  # the hot path
                value = line[6:] if line[5:6] == b" " else line[5:]
                data.append(value)
                size += len(value)
                if size > limit:  # an event of many lines is held whole until dispatched
                    self._too_long()
            elif line[0] != 58:  # not a ':' comment (keep-alive pings)
                self._other_field(line, data)
        self._data_len = size
        return out

    def _other_field(self, line: bytes, data: list[bytes]) -> None:
        """A field line other than ``data: ...`` (``data`` without the space, ``event``)."""
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            self._event = value
        # id, retry and unknown fields do not matter here.

    def _feed_simple(self, chunk: bytes) -> list[SSEEvent] | None:
        """Events of a read made only of single-line data events, else None."""
        if b"\r" in chunk:
            return None
        out: list[SSEEvent] = []
        for part in chunk[:-2].split(b"\n\n"):
            if not part:
                continue  # extra blank lines dispatch nothing
            if part[:6] != b"data: " or b"\n" in part:
                return None
            out.append(SSEEvent(part[6:].decode("utf-8", "replace")))
        return out

    def whole_data_events(self, chunk: bytes) -> list[bytes] | None:
        """The undecoded data of each event in ``chunk``, when it holds only whole
        single-line ``data: ...`` events and nothing is pending; else None (then
        :meth:`feed` it). The hot path of the stream decoder."""
        if (
            chunk[:6] != b"data: "
            or chunk[-2:] != b"\n\n"
            or self._pending
            or len(chunk) > self._max
            or self._data
            or self._event
            or self._skip_lf
            or b"\r" in chunk
        ):
            return None
        out = chunk[6:-2].split(b"\n\ndata: ")
        # Two LFs per event and no others: every event is one line, and every
        # boundary was a "\n\ndata: " (a comment or a bare "data:" makes a count differ).
        return out if chunk.count(b"\n") == 2 * len(out) else None

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch an event whose final blank line is missing.

        The spec discards such an event; being lenient here keeps the last
        chunk of servers that close without the trailing blank line. An
        unterminated last line is still dropped (it may be truncated).
        """
        self._pending = []
        self._pending_len = 0
        self._skip_lf = False
        if self._data:
            return [self._dispatch()]
        return []

    def _dispatch(self) -> SSEEvent:
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        event = self._event.decode("utf-8", "replace") if self._event else "message"
        self._data = []
        self._data_len = 0
        self._event = b""
        return SSEEvent(text, event)
