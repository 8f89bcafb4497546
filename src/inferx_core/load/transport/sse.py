"""Server-sent events for OpenAI-compatible streams: parser and chunk classifier.

Two layers:

* :class:`SSEParser` (:mod:`inferx_core.load.transport.sse_parser`) turns bytes (split
  anywhere) into events, following the WHATWG event-stream rules: LF, CRLF and
  CR line ends, ``:`` comments, multi-line ``data``, ``event`` names, blank line
  dispatches; a line over its limit is refused.
* :class:`StreamDecoder` applies the events of one response to a
  :class:`~inferx_core.load.records.request.RequestRecord`: which chunks carry
  generated content (the TTFT/ITL clock), usage, finish reason, and errors
  sent inside a 200 stream.

Both run inside the client's ``data_received`` callback, once per network
read, so they are written for low per-event cost: a read made only of whole
``data:`` events is split in one step, and each event's JSON is decoded by
the fastest decoder installed (:mod:`inferx_core.load.transport.chunks`: msgspec or
the standard library; identical records with each).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.chunks import (
    BACKENDS,
    DEFAULT_BACKEND,
    ChunkInfo,
    classify_chunk,
    classify_payload,
    error_message,
    is_content,
    is_reasoning_only,
    parse_json,
    reasoning_tokens_of,
    reply_text,
    struct_is_content,
    struct_is_reasoning_only,
    struct_reply_text,
    typed_decoder,
)
from inferx_core.load.transport.sse_parser import (
    DEFAULT_MAX_SSE_LINE_BYTES,
    SSEEvent,
    SSELineTooLong,
    SSEParser,
)
from inferx_core.load.transport.usage import usage_disagreement, usage_value_problem

if TYPE_CHECKING:
    from inferx_core.load.transport.server_clock import ServerClock

__all__ = [
    "CONTINUE",
    "DEFAULT_MAX_SSE_LINE_BYTES",
    "DONE",
    "FAILED",
    "ChunkInfo",
    "SSEEvent",
    "SSELineTooLong",
    "SSEParser",
    "StreamDecoder",
    "classify_chunk",
    "classify_payload",
    "json_backend",
    "use_json_backend",
]

_parse_json = parse_json

# The chunk JSON decoder StreamDecoder uses (see use_json_backend).
_backend = DEFAULT_BACKEND
_typed, _decode = BACKENDS[DEFAULT_BACKEND]


def json_backend() -> str:
    """The name of the JSON decoder the stream decoder uses now."""
    return _backend


def use_json_backend(name: str | None = None) -> str:
    """Decode stream chunks with ``name`` (None: the default); returns the previous name.

    Names are the keys of :data:`inferx_core.load.transport.chunks.BACKENDS` (those
    installed here): ``msgspec``, ``json``.
    """
    global _backend, _typed, _decode
    name = name or DEFAULT_BACKEND
    if name not in BACKENDS:
        raise ValueError(
            f"JSON decoder {name!r} is not installed here (have: {', '.join(BACKENDS)})"
        )
    previous = _backend
    _backend = name
    _typed, _decode = BACKENDS[name]
    return previous


def _record_usage(rec: RequestRecord, usage: dict[str, Any], completion_tokens: Any) -> str | None:
    """Keep a usage block's counts on the record; why they are no token counts, else None."""
    pt = usage.get("prompt_tokens")
    ct = completion_tokens
    if (ct is None or (type(ct) is int and ct >= 0)) and (
        pt is None or (type(pt) is int and pt >= 0)
    ):
        if ct is not None:
            rec.usage_output_tokens = ct
        if pt is not None:
            rec.usage_prompt_tokens = pt
        reasoning = reasoning_tokens_of(usage)
        if reasoning is not None:
            rec.usage_reasoning_tokens = reasoning
        return None
    return usage_value_problem("completion_tokens", ct) or usage_value_problem("prompt_tokens", pt)


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
    counts go to ``record.chunk_tokens``. With a ``clock`` (the engine's own
    per-request fields), the top-level fields it names are kept as the last
    chunk carrying each gave them, and read into the record at ``finish``;
    the reply's ``id`` goes to ``record.response_id`` either way.
    """

    __slots__ = (
        "_chunk_tokens",
        "_clock",
        "_decode",
        "_events",
        "_kept",
        "_keys",
        "_last_ct",
        "_reasoning_ct",
        "_typed",
        "done",
        "failed",
        "parser",
        "record",
    )

    def __init__(
        self,
        record: RequestRecord,
        max_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        clock: ServerClock | None = None,
    ) -> None:
        self.record = record
        self.parser = SSEParser(max_line_bytes)
        self.done = False
        self.failed = False
        self._chunk_tokens: list[int] | None = []
        self._last_ct = 0
        self._reasoning_ct = 0  # reasoning chunks' tokens by per-chunk usage
        self._events = 0
        self._clock = clock
        self._keys: tuple[str, ...] = clock.keys if clock is not None else ()
        self._kept: dict[str, Any] = {}
        # The backend chosen now; with kept fields, its structs decode them too.
        self._typed = _typed
        self._decode = (typed_decoder(self._keys) if _typed and self._keys else None) or _decode

    def feed(self, data: bytes, t_ns: int) -> int:
        """Consume body bytes that arrived at ``t_ns``; return CONTINUE/DONE/FAILED."""
        if self.done or self.failed:
            return FAILED if self.failed else DONE
        payloads = self.parser.whole_data_events(data)
        if payloads is not None:  # the hot path
            if self._typed:
                return self._on_structs(payloads, t_ns)
            return self._on_dicts(payloads, t_ns)
        try:
            events = self.parser.feed(data)
        except SSELineTooLong as exc:
            return self._fail("malformed", str(exc))
        for ev in events:
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
        if self._clock is not None:
            self._clock.read(rec, self._kept)
        if self._chunk_tokens and len(self._chunk_tokens) == len(rec.chunk_ns):
            rec.chunk_tokens = self._chunk_tokens
            if rec.reasoning_chunks:
                rec.chunk_reasoning_tokens = self._reasoning_ct
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
        elif rec.error is None and (why := usage_disagreement(rec)):
            rec.error = why
            rec.error_kind = "usage"

    def _on_event(self, data: str, t_ns: int) -> int:
        """One event by the standard library's rules (the reference for the fast paths)."""
        self._events += 1
        if data == "[DONE]":
            self.done = True
            return DONE
        try:
            obj = _parse_json(data)
        except (ValueError, RecursionError):  # a chunk nested thousands deep is no chunk either
            return self._fail("malformed", f"invalid JSON in stream: {data[:200]!r}")
        if type(obj) is not dict:
            return self._fail("malformed", f"stream chunk is not a JSON object: {data[:200]!r}")
        return self._on_object(obj, t_ns)

    def _on_dicts(self, payloads: list[bytes], t_ns: int) -> int:
        """Events decoded into dicts (json); what that refuses goes to ``_on_event``."""
        decode = self._decode
        for raw in payloads:
            try:
                obj = decode(raw)
            except (ValueError, RecursionError):
                obj = None
            if type(obj) is dict:
                self._events += 1
                status = self._on_object(obj, t_ns)
            else:  # [DONE], or not a JSON object
                status = self._on_event(raw.decode("utf-8", "replace"), t_ns)
            if status:
                return status
        return CONTINUE

    def _on_object(self, obj: dict[str, Any], t_ns: int) -> int:
        # The same rules as classify_payload, inlined (this runs once per streamed chunk).
        if obj.get("error") is not None or obj.get("object") == "error":
            return self._fail("stream_error", f"error in stream: {error_message(obj)}")
        rec = self.record
        self._keep(obj.get("id"), obj.get)
        usage = obj.get("usage")
        if usage and type(usage) is dict:
            ct = usage.get("completion_tokens")
        else:
            usage = ct = None
        choices = obj.get("choices")
        if choices and type(choices) is list and type(c0 := choices[0]) is dict:
            if c0.get("text") or is_content(c0):
                self._on_content(obj.get("x_sent_ns"), ct, t_ns, is_reasoning_only(c0))
                if rec.reply_parts is not None:  # only multi-turn sessions ask for the text
                    rec.reply_parts.append(reply_text(c0))
            finish = c0.get("finish_reason")
            if finish:
                rec.finish_reason = finish
        if usage is not None and (why := _record_usage(rec, usage, ct)):
            return self._fail("usage", why)
        return CONTINUE

    def _on_structs(self, payloads: list[bytes], t_ns: int) -> int:
        """Events decoded into msgspec structs: ``_on_object``'s rules on their fields.

        A chunk the structs refuse (invalid, an unexpected field type) or an
        error payload goes to ``_on_event``, which decides and words the error.
        """
        decode = self._decode
        rec = self.record
        for raw in payloads:
            try:
                obj = decode(raw)
            except (ValueError, RecursionError):
                obj = None
            if obj is None or obj.error is not None or obj.object == "error":
                status = self._on_event(raw.decode("utf-8", "replace"), t_ns)
                if status:
                    return status
                continue
            self._events += 1
            self._keep(obj.id, obj.__getattribute__)
            usage = obj.usage
            if usage and type(usage) is dict:
                ct = usage.get("completion_tokens")
            else:
                usage = ct = None
            if choices := obj.choices:
                c0 = choices[0]
                if c0.text or struct_is_content(c0.delta):
                    self._on_content(obj.x_sent_ns, ct, t_ns, struct_is_reasoning_only(c0))
                    if rec.reply_parts is not None:
                        rec.reply_parts.append(struct_reply_text(c0))
                if finish := c0.finish_reason:
                    rec.finish_reason = finish
            if usage is not None and (why := _record_usage(rec, usage, ct)):
                return self._fail("usage", why)
        return CONTINUE

    def _keep(self, rid: Any, get: Callable[[str], Any]) -> None:
        """The reply's first ``id``, and the engine's fields this chunk carries."""
        if self.record.response_id is None and type(rid) is str:
            self.record.response_id = rid
        for key in self._keys:
            if (value := get(key)) is not None:
                self._kept[key] = value

    def _on_content(self, sent: Any, ct: Any, t_ns: int, reasoning: bool) -> None:
        rec = self.record
        rec.chunk_ns.append(t_ns)
        if reasoning:  # thinking: counts for TTFT, not for the answer's clock
            rec.reasoning_chunks += 1
        elif rec.first_answer_chunk is None:
            rec.first_answer_chunk = len(rec.chunk_ns) - 1
        if type(sent) is int:  # a server that stamps its writes (x_sent_ns: the scripted server)
            if rec.server_sent_ns is None:
                rec.server_sent_ns = []
            rec.server_sent_ns.append(sent)
        tokens = self._chunk_tokens
        if tokens is not None:
            if type(ct) is int:
                tokens.append(ct - self._last_ct)
                if reasoning:
                    self._reasoning_ct += ct - self._last_ct
                self._last_ct = ct
            else:
                self._chunk_tokens = None

    def _fail(self, kind: Any, message: str) -> int:
        self.failed = True
        self.record.error = message
        self.record.error_kind = kind
        return FAILED
