"""The scripted answer to one streamed request, and the request-body readers it uses.

A :class:`ScriptedStream` writes pre-encoded SSE frames on its connection's
schedule (chunk ``i`` at ``t0 + ttft + i*itl`` on the loop clock) and fails
where its :class:`~inferx_core.testing.knobs.ServerKnobs` say.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Protocol

from inferx_core.testing.knobs import ServerKnobs
from inferx_core.testing.spec_metrics import SpecCounters


class _IdSource(Protocol):
    spec: SpecCounters

    def next_id(self) -> int: ...


class ServerConnection(Protocol):
    """What a stream needs from the connection it answers on (server.ServerProtocol)."""

    @property
    def server(self) -> _IdSource: ...  # read-only: a connection's own server type fits

    loop: asyncio.AbstractEventLoop
    closed: bool
    recv_ns: int

    def write(self, data: bytes) -> None: ...

    def abort(self) -> None: ...

    def response_done(self) -> None: ...


__all__ = [
    "ScriptedStream",
    "compact_json",
    "count_prompt_tokens",
    "messages_text",
    "requested_max_tokens",
    "split_words",
]


def split_words(text: str) -> list[str]:
    return text.split()


def count_prompt_tokens(body: dict[str, Any]) -> int:
    prompt = body.get("prompt")
    if prompt is not None:
        if isinstance(prompt, str):
            return len(split_words(prompt))
        if isinstance(prompt, list):
            if prompt and isinstance(prompt[0], str):
                return len(split_words(prompt[0]))
            if prompt and isinstance(prompt[0], list):
                return len(prompt[0])
            return len(prompt)
        return 0
    return len(split_words(messages_text(body.get("messages"))))


def requested_max_tokens(body: dict[str, Any]) -> int:
    for key in ("max_tokens", "max_completion_tokens"):
        if body.get(key) is not None:
            return max(int(body[key]), 0)
    return 16


def messages_text(messages: Any) -> str:
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


def compact_json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class ScriptedStream:
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
        "reasoning_sent",
        "recv_ns",
        "rid",
        "sent_tokens",
        "slot",
        "t0",
    )

    def __init__(
        self, proto: ServerConnection, knobs: ServerKnobs, body: dict[str, Any], chat: bool
    ) -> None:
        self.proto = proto
        self.knobs = knobs
        self.chat = chat
        self.rid = proto.server.next_id()
        self.recv_ns = proto.recv_ns
        max_tokens = requested_max_tokens(body)
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
        self.prompt_tokens = count_prompt_tokens(body)
        self.i = 0
        self.sent_tokens = 0
        self.reasoning_sent = 0
        self.slot = False  # holds one of the server's max_concurrent slots
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
        k = self.knobs
        # A hostile server's usage says what its knobs say, not what it sent.
        ct = b"%d" % completion if k.usage_completion is None else compact_json(k.usage_completion)
        pt = b"%d" % self.prompt_tokens if k.usage_prompt is None else compact_json(k.usage_prompt)
        details = b""
        if k.reasoning_tokens and k.reasoning_usage and self.chat:
            details = b',"completion_tokens_details":{"reasoning_tokens":%d}' % self.reasoning_sent
        return b'"usage":{"prompt_tokens":%b,"completion_tokens":%b,"total_tokens":%d%b}' % (
            pt,
            ct,
            self.prompt_tokens + completion,
            details,
        )

    def _text(self, ntok: int, text: bytes) -> bytes:
        """The generated part of a chunk: completions text, chat content or reasoning."""
        k = self.knobs
        if not self.chat:
            return b'"text":"' + text + b'","logprobs":null,'
        field = b"content"
        if self.sent_tokens - ntok < k.reasoning_tokens:  # still thinking
            self.reasoning_sent += ntok
            field = k.reasoning_field.encode()
        return b'"delta":{"' + field + b'":"' + text + b'"},"logprobs":null,'

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
        if k.spec_tokens:
            proto.server.spec.step(k.spec_tokens, ntok)
        text = b"tok " * ntok + (b"x" * k.long_line_bytes if i == 0 else b"")
        last = i == self.n_chunks - 1
        body = self.prefix
        body += self._text(ntok, text)
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
        if k.hold_open:  # the reply is over, the HTTP body never ends
            self.proto.write(out)
            return
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
            proto.write(_frame(compact_json(err)) + _DONE_FRAME + _LAST_CHUNK)
            proto.response_done()
        elif mode == "malformed":
            proto.write(_frame(b'{"choices":[{"text":"tok ", "index"') + _DONE_FRAME + _LAST_CHUNK)
            proto.response_done()
