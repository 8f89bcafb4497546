"""Per-request records: the raw facts every metric is derived from.

All timestamps are ``time.perf_counter_ns()`` values of the process that ran
the request (one monotonic clock shared with telemetry samplers).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ErrorKind = Literal[
    "timeout",  # no byte / no completion within the configured limit
    "connection",  # refused, reset, DNS, closed before a status line
    "http_status",  # a non-200 reply (status and body excerpt in ``error``)
    "stream_error",  # an error payload inside a 200 stream
    "malformed",  # unparseable SSE/JSON
    "no_content",  # the stream finished cleanly but carried no generated content
    "truncated",  # content, then the body ended with neither [DONE] nor a finish_reason
    "usage",  # the server's usage is not a non-negative integer or disagrees with the stream
    "client_resource",  # the client ran out of file descriptors/ports: its fault, not the server's
    "cancelled",  # the benchmark stopped before the request finished
]

TokenSource = Literal["usage", "chunks"]


@dataclass(slots=True)
class RequestRecord:
    """What happened to one request.

    ``chunk_ns`` holds the arrival time of every chunk that carried generated
    content (role-only, usage-only, comment and [DONE] events excluded), so
    TTFT = chunk_ns[0] - send_ns and ITL gaps are consecutive differences.
    """

    request_id: int
    prompt_tokens: int  # the prompt's measured token count (workload side)
    max_tokens: int  # output length requested
    send_ns: int = 0
    # Open loop: when the arrival process made the request due (send_ns minus
    # this is the client's queueing and dispatch lateness); None in a closed loop.
    scheduled_ns: int | None = None
    chunk_ns: list[int] = field(default_factory=list)
    # Tokens carried by each content chunk when the server says so (e.g. from
    # per-chunk usage); None when unknown.
    chunk_tokens: list[int] | None = None
    # Output tokens as reported by the server's usage block, else None.
    usage_output_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    # Reasoning models: content chunks that carried only reasoning (``reasoning_content``
    # or ``reasoning``; they count for TTFT), the index in ``chunk_ns`` of the first
    # chunk of the answer (content, text or tool calls; None: no answer streamed), the
    # server's ``completion_tokens_details.reasoning_tokens``, and the reasoning chunks'
    # tokens by per-chunk usage where every chunk carried cumulative usage.
    reasoning_chunks: int = 0
    first_answer_chunk: int | None = None
    usage_reasoning_tokens: int | None = None
    chunk_reasoning_tokens: int | None = None
    end_ns: int = 0  # when the stream finished (or failed)
    # The server's own perf_counter_ns() of each content chunk's write, when it
    # stamps them (``x_sent_ns``; same host, same monotonic clock): receive lag.
    server_sent_ns: list[int] | None = None
    finish_reason: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    warmup: bool = False
    status_code: int | None = None
    # Dimensions of structured workloads and load: the multi-turn session and
    # its turn (0-based), the load stage, the worker process that sent it.
    session_id: int | None = None
    turn: int | None = None
    stage: int | None = None
    worker: int | None = None
    # Joining with the server's logs: the ``X-Request-Id`` this client sent, the
    # ``X-Request-Id`` the server echoed (when it does), and the reply's own ``id``.
    client_request_id: str | None = None
    server_request_id: str | None = None
    response_id: str | None = None
    # The engine's own view (hook ``inferx_engine_server_timing``): the reply fields it
    # names, kept as the server gave them; the figures read from them (durations in
    # ms on the server's clock, counts); and, per figure that is null, the reason.
    server_fields: dict[str, Any] | None = None
    server_figures: dict[str, float | int | None] | None = None
    server_problems: dict[str, str] | None = None
    # Multi-turn sessions: the reply's text pieces, captured by the stream decoder
    # only when this is a list (the next turn's prompt needs the reply); never written.
    reply_parts: list[str] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.chunk_ns)

    @property
    def output_tokens(self) -> int:
        """Server-reported output tokens, else the number of content chunks (never negative)."""
        usage = self.usage_output_tokens
        if type(usage) is int and usage >= 0:
            return usage
        tokens = self.chunk_tokens
        if (
            tokens is not None
            and len(tokens) == len(self.chunk_ns)
            and all(type(k) is int and k >= 0 for k in tokens)
        ):
            return sum(tokens)
        return len(self.chunk_ns)

    @property
    def output_token_source(self) -> TokenSource:
        usage = self.usage_output_tokens
        return "usage" if type(usage) is int and usage >= 0 else "chunks"

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        del row["reply_parts"]  # conversation text, not a measurement
        return row
