"""What the scripted test server does: timing, usage placement and failures."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FAIL_MODES",
    "OVERLOAD_MODES",
    "FailMode",
    "OverloadMode",
    "ServerKnobs",
    "UsageMode",
]

FailMode = Literal["http_500", "http_429", "error_mid", "drop", "malformed", "no_done", "hang"]
FAIL_MODES: tuple[str, ...] = (
    "http_500",
    "http_429",
    "error_mid",
    "drop",
    "malformed",
    "no_done",
    "hang",
)
UsageMode = Literal["final", "finish", "none", "continuous"]
#: What a server at its ``max_concurrent`` does with one more request: wait for a slot
#: (TTFT grows), refuse it (503 or 429), or shed it (one token and ``finish_reason:
#: stop`` at once, ignoring ``ignore_eos``: fast figures for no work).
OverloadMode = Literal["queue", "http_503", "http_429", "shed"]
OVERLOAD_MODES: tuple[str, ...] = ("queue", "http_503", "http_429", "shed")


@dataclass(slots=True)
class ServerKnobs:
    """Behaviour of the server (defaults for every request)."""

    ttft_ms: float = 0.0  # request received -> first content chunk
    itl_ms: float = 0.0  # between content chunks
    tokens_per_chunk: int = 1
    # Where usage goes: a final chunk with empty choices ("final"), the
    # finish_reason chunk ("finish"), nowhere ("none"), or every chunk
    # cumulatively plus the final chunk ("continuous", like vLLM's
    # continuous_usage_stats).
    usage: UsageMode = "final"
    fail: FailMode | None = None
    # Content chunks sent before a mid-stream failure (default: half).
    fail_after: int | None = None
    # Output length when the request does not set ignore_eos (None: max_tokens).
    natural_len: int | None = None
    role_chunk: bool = True  # chat: a role-only chunk right away, before TTFT
    comments: bool = False  # a ": ping" comment line right away
    # Put the server's perf_counter_ns() in every content chunk ("x_sent_ns",
    # right before the write; "x_recv_ns", when the request arrived), so a
    # client on the same host can split a latency into its parts.
    stamp: bool = False
    model: str = "test-model"
    max_model_len: int = 131072
    # Hostile servers. Report this JSON value as usage.completion_tokens /
    # usage.prompt_tokens instead of the true count (1 after 8 chunks, -20,
    # 3.7, "7", true: every shape a client must refuse).
    usage_completion: Any = None
    usage_prompt: Any = None
    # End the reply ([DONE], or the finish_reason chunk with fail="no_done")
    # but never the HTTP body: no last chunk, the connection stays open.
    hold_open: bool = False
    # Pad the first content chunk's text with this many bytes: one long SSE line.
    long_line_bytes: int = 0
    # A known capacity (server-wide, not per request): at most this many generations
    # run at once; the rest wait in arrival order, so their TTFT includes the wait.
    max_concurrent: int | None = None
    overload: OverloadMode = "queue"  # what a request beyond max_concurrent gets
    # A server that dies: after this many generation requests it closes its listener
    # and drops every connection (a crash between or during probes).
    die_after: int | None = None
    # A server that drifts: each generation's TTFT grows by this much per generation
    # started before it (a leak, a filling cache: the same level slower later).
    drift_ms: float = 0.0
    # A hostile /tokenize: every prompt counted this many times over, or every token
    # id reported as this integer (ids past 64 bits).
    tokenize_factor: int = 1
    tokenize_id: int | None = None
    # Reasoning models (chat): the first this-many tokens stream as delta.<reasoning_field>,
    # the rest as delta.content; usage says completion_tokens_details.reasoning_tokens
    # (the reasoning tokens actually sent) unless reasoning_usage is False.
    reasoning_tokens: int = 0
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"
    reasoning_usage: bool = True
    # Speculative decoding as vLLM counts it on /metrics: each content chunk is one
    # verification step of spec_tokens drafts, of which tokens_per_chunk - 1 were
    # accepted (so the mean acceptance length is tokens_per_chunk). 0: no counters.
    spec_tokens: int = 0

    def merged(self, overrides: Any) -> ServerKnobs:
        """These knobs with a request's ``x_test`` overrides applied."""
        if not isinstance(overrides, dict) or not overrides:
            return self
        names = {f.name for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if k in names})
