"""Server-sent events for OpenAI-compatible streams: parser and chunk classifier.

Two layers:

* :class:`SSEParser` turns bytes (split anywhere) into events, following the
  WHATWG event-stream rules: LF, CRLF and CR line ends, ``:`` comments,
  multi-line ``data``, ``event`` names, blank line dispatches.
* :class:`StreamDecoder` applies the events of one response to a
  :class:`~inferx_core.load.records.RequestRecord`: which chunks carry
  generated content (the TTFT/ITL clock), usage, finish reason, and errors
  sent inside a 200 stream.

Both run inside the client's ``data_received`` callback, once per network
read, so they are written for low per-event cost: one ``json.loads`` per
event and plain dict lookups.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from inferx_core.load.records import RequestRecord

__all__ = [
    "CONTINUE",
    "DONE",
    "FAILED",
    "ChunkInfo",
    "SSEEvent",
    "SSEParser",
    "StreamDecoder",
    "classify_chunk",
    "classify_payload",
]

_loads = json.loads
# The C scanner behind json.loads without its wrapper (type checks, BOM and
# trailing-whitespace handling): about half the cost per small chunk.
_scan_once = json.JSONDecoder().scan_once


def _parse_json(data: str) -> Any:
    """json.loads, faster for the common case; raises ValueError when invalid."""
    try:
        obj, end = _scan_once(data, 0)
    except StopIteration:
        return _loads(data)  # leading whitespace or invalid: let json.loads decide
    if end != len(data) and data[end:].strip():
        raise ValueError(f"extra data after JSON at {end}")
    return obj


class SSEEvent(NamedTuple):
    """One dispatched event: its data (data lines joined by LF) and type."""

    data: str
    event: str = "message"


class SSEParser:
    """Incremental event-stream parser: ``feed(bytes) -> [SSEEvent]``.

    The result of feeding a byte stream does not depend on how it was split
    into reads (a property the tests check with hypothesis).
    """

    __slots__ = ("_data", "_event", "_skip_lf", "_tail")

    def __init__(self) -> None:
        self._tail = b""  # an unterminated line carried to the next read
        self._data: list[bytes] = []  # data lines of the event being built
        self._event = b""
        # The previous read ended in CR: an LF at the start of the next read
        # is the second half of that CRLF, not an empty line.
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume bytes; return the events completed by them."""
        if not chunk:
            return []
        if chunk[-2:] == b"\n\n" and not (self._tail or self._data or self._event or self._skip_lf):
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
        buf = self._tail + chunk if self._tail else chunk
        if b"\r" in buf:
            # A CR ends a line at once (so an event ending in CR is not held
            # back until the next read); a following LF is skipped.
            self._skip_lf = buf[-1] == 13
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._tail = lines.pop()
        out: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:  # blank line: dispatch
                if data:
                    out.append(self._dispatch())
                    data = self._data
                else:
                    self._event = b""
            elif line[:5] == b"data:":  # the hot path
                data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif line[0] != 58:  # not a ':' comment (keep-alive pings)
                self._other_field(line, data)
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

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch an event whose final blank line is missing.

        The spec discards such an event; being lenient here keeps the last
        chunk of servers that close without the trailing blank line. An
        unterminated last line is still dropped (it may be truncated).
        """
        self._tail = b""
        self._skip_lf = False
        if self._data:
            return [self._dispatch()]
        return []

    def _dispatch(self) -> SSEEvent:
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        event = self._event.decode("utf-8", "replace") if self._event else "message"
        self._data = []
        self._event = b""
        return SSEEvent(text, event)


@dataclass(slots=True)
class ChunkInfo:
    """What one stream chunk means for the metrics."""

    content: bool = False  # carries generated output (counts for TTFT/ITL)
    done: bool = False  # the ``[DONE]`` sentinel
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None  # an error payload inside the stream
    malformed: bool = False


def _error_message(obj: dict[str, Any]) -> str:
    err = obj.get("error")
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or json.dumps(err)[:300]
        code = err.get("code") or err.get("type")
        return f"{msg} ({code})" if code else str(msg)
    if err is not None:
        return str(err)[:300]
    return str(obj.get("message") or json.dumps(obj)[:300])


def _is_error(obj: dict[str, Any]) -> bool:
    return obj.get("error") is not None or obj.get("object") == "error"


def _first_choice(obj: dict[str, Any]) -> dict[str, Any] | None:
    choices = obj.get("choices")
    if choices and type(choices) is list and type(choices[0]) is dict:
        return choices[0]
    return None


def _is_content(c0: dict[str, Any]) -> bool:
    """Generated output in a choice: completions ``text``; chat ``delta`` with
    ``content``, ``reasoning_content``, ``reasoning`` or ``tool_calls``."""
    if c0.get("text"):
        return True
    delta = c0.get("delta")
    return (
        type(delta) is dict
        and bool(delta)
        and bool(
            delta.get("content")
            or delta.get("reasoning_content")
            or delta.get("reasoning")
            or delta.get("tool_calls")
        )
    )


def _reply_text(c0: dict[str, Any]) -> str:
    """The generated text of a content choice (completions ``text``, chat ``delta.content``)."""
    text = c0.get("text")
    if text is None:
        delta = c0.get("delta")
        text = delta.get("content") if type(delta) is dict else None
    return text if type(text) is str else ""


def _usage(obj: dict[str, Any]) -> dict[str, Any] | None:
    usage = obj.get("usage")
    return usage if usage and type(usage) is dict else None


def classify_payload(obj: Any) -> ChunkInfo:
    """Classify one decoded JSON chunk of a completions or chat stream.

    Content: see ``_is_content`` (role-only and usage-only chunks are not).
    """
    if type(obj) is not dict:
        return ChunkInfo(malformed=True)
    if _is_error(obj):
        return ChunkInfo(error=_error_message(obj))
    info = ChunkInfo()
    c0 = _first_choice(obj)
    if c0 is not None:
        info.content = _is_content(c0)
        info.finish_reason = c0.get("finish_reason")
    usage = _usage(obj)
    if usage is not None:
        info.completion_tokens = usage.get("completion_tokens")
        info.prompt_tokens = usage.get("prompt_tokens")
    return info


def classify_chunk(data: str) -> ChunkInfo:
    """Classify the data of one SSE event (``[DONE]`` included)."""
    if data == "[DONE]":
        return ChunkInfo(done=True)
    try:
        obj = _parse_json(data)
    except ValueError:
        return ChunkInfo(malformed=True)
    return classify_payload(obj)


def _record_usage(rec: RequestRecord, usage: dict[str, Any], completion_tokens: Any) -> None:
    if completion_tokens is not None:
        rec.usage_output_tokens = completion_tokens
    pt = usage.get("prompt_tokens")
    if pt is not None:
        rec.usage_prompt_tokens = pt


# StreamDecoder.feed results.
CONTINUE = 0  # keep reading
DONE = 1  # [DONE] seen; the HTTP body should end now
FAILED = 2  # the record failed (error payload or malformed); stop reading


class StreamDecoder:
    """Applies one SSE response body to a :class:`RequestRecord`.

    ``feed`` takes body bytes with the time they arrived; every content
    chunk in them gets that time. Usage is taken from whichever event
    carries it (last one wins); when every content chunk carries cumulative
    ``completion_tokens`` (vLLM ``continuous_usage_stats``), per-chunk token
    counts go to ``record.chunk_tokens``.
    """

    __slots__ = ("_chunk_tokens", "_events", "_last_ct", "done", "failed", "parser", "record")

    def __init__(self, record: RequestRecord) -> None:
        self.record = record
        self.parser = SSEParser()
        self.done = False
        self.failed = False
        self._chunk_tokens: list[int] | None = []
        self._last_ct = 0
        self._events = 0

    def feed(self, data: bytes, t_ns: int) -> int:
        """Consume body bytes that arrived at ``t_ns``; return CONTINUE/DONE/FAILED."""
        if self.done or self.failed:
            return FAILED if self.failed else DONE
        for ev in self.parser.feed(data):
            status = self._on_event(ev.data, t_ns)
            if status:
                return status
        return CONTINUE

    def close(self, t_ns: int) -> int:
        """The body ended: handle a last event without its blank line."""
        if self.done or self.failed:
            return FAILED if self.failed else DONE
        for ev in self.parser.close():
            status = self._on_event(ev.data, t_ns)
            if status:
                return status
        return CONTINUE

    def finish(self) -> None:
        """Final bookkeeping once the response is over (successful or not)."""
        rec = self.record
        if self._chunk_tokens and len(self._chunk_tokens) == len(rec.chunk_ns):
            rec.chunk_tokens = self._chunk_tokens
        if rec.error is None and not rec.chunk_ns:
            rec.error = f"stream ended without generated content ({self._events} events)" + (
                f", finish_reason={rec.finish_reason}" if rec.finish_reason else ""
            )
            rec.error_kind = "no_content"
        elif rec.error is None and not self.done and rec.finish_reason is None:
            # A close-delimited body cut short looks like a clean end: only the
            # missing [DONE] and finish_reason tell it from a complete reply.
            rec.error = (
                f"stream ended after {len(rec.chunk_ns)} content chunks without [DONE] or a "
                "finish_reason (truncated)"
            )
            rec.error_kind = "truncated"

    def _on_event(self, data: str, t_ns: int) -> int:
        self._events += 1
        if data == "[DONE]":
            self.done = True
            return DONE
        try:
            obj = _parse_json(data)
        except ValueError:
            return self._fail("malformed", f"invalid JSON in stream: {data[:200]!r}")
        # The same rules as classify_payload, without building a ChunkInfo
        # (this runs once per streamed chunk).
        if type(obj) is not dict:
            return self._fail("malformed", f"stream chunk is not a JSON object: {data[:200]!r}")
        if _is_error(obj):
            return self._fail("stream_error", f"error in stream: {_error_message(obj)}")
        rec = self.record
        usage = _usage(obj)
        ct = usage.get("completion_tokens") if usage is not None else None
        c0 = _first_choice(obj)
        if c0 is not None:
            if _is_content(c0):
                self._on_content(obj, ct, t_ns)
                if rec.reply_parts is not None:  # only multi-turn sessions ask for the text
                    rec.reply_parts.append(_reply_text(c0))
            finish = c0.get("finish_reason")
            if finish:
                rec.finish_reason = finish
        if usage is not None:
            _record_usage(rec, usage, ct)
        return CONTINUE

    def _on_content(self, obj: dict[str, Any], ct: Any, t_ns: int) -> None:
        rec = self.record
        rec.chunk_ns.append(t_ns)
        sent = obj.get("x_sent_ns")  # a server that stamps its writes (the scripted server)
        if type(sent) is int:
            if rec.server_sent_ns is None:
                rec.server_sent_ns = []
            rec.server_sent_ns.append(sent)
        tokens = self._chunk_tokens
        if tokens is not None:
            if type(ct) is int:
                tokens.append(ct - self._last_ct)
                self._last_ct = ct
            else:
                self._chunk_tokens = None

    def _fail(self, kind: Any, message: str) -> int:
        self.failed = True
        self.record.error = message
        self.record.error_kind = kind
        return FAILED
