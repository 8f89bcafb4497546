"""The zero chunk gaps a speculative server makes itself, allowed by ``chunk_coalescing``.

A zero gap between two chunks usually means the client read them together (a
starved or coalescing reader), which the validity check ``chunk_coalescing``
judges. A speculating server can make them itself: it verifies several tokens
in one step and may write them as separate chunks at once. This module bounds
that share from the server's own counters and the chunks the client counted,
so the check allows what the server made and nothing more: a client that reads
late on a speculative point is still caught.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from inferx_core.config.speculative import MAX_SPECULATIVE_TOKENS
from inferx_core.load.records.request import RequestRecord

__all__ = ["server_zero_gaps", "zero_gap_limit"]


def server_zero_gaps(ok: Sequence[RequestRecord], step_tokens: float | None) -> float | None:
    """The share of chunk gaps a speculative server itself makes 0, or None (no allowance).

    A verify step yields ``step_tokens`` tokens on average (L, the mean acceptance
    length from the server's own counters, bounded to [1, k + 1] before it gets here).
    After a reply's first token (the prefill's), its ``tokens - 1`` tokens come from
    ``(tokens - 1) / L`` steps, each of which starts with one gap that is a step long;
    every other gap of the reply may be 0 by the server's doing: a server that writes a
    step's tokens as separate chunks at once (llama-server: one chunk per token) makes
    up to ``1 - 1/L`` of its gaps 0, one that writes a step as one chunk (vLLM) none.
    Summed over the replies: ``sum(max(chunks - 1 - (tokens - 1) / L, 0)) / gaps``.
    A length that is missing, not finite, at most 1 or above any speculative length
    gives no allowance."""
    if (
        step_tokens is None
        or not math.isfinite(step_tokens)
        or not 1 < step_tokens <= MAX_SPECULATIVE_TOKENS + 1
    ):
        return None
    multi = [r for r in ok if len(r.chunk_ns) > 1]
    gaps = sum(len(r.chunk_ns) - 1 for r in multi)
    if not gaps:
        return None
    steps_gaps = sum(
        max(len(r.chunk_ns) - 1 - max(r.output_tokens - 1, 0) / step_tokens, 0.0) for r in multi
    )
    return steps_gaps / gaps


def zero_gap_limit(
    limit: float, ok: Sequence[RequestRecord], step_tokens: float | None
) -> tuple[float, str]:
    """The share of zero chunk gaps a point may have: the plain limit, or the share a
    speculative server makes itself (:func:`server_zero_gaps`) where that is larger."""
    allowed = server_zero_gaps(ok, step_tokens)
    if allowed is None or allowed <= limit:
        return limit, ""
    why = (
        f" (allowed up to {allowed:.0%}: the server's own, {step_tokens:.2f} tokens per "
        "speculative step written as separate chunks)"
    )
    return allowed, why
