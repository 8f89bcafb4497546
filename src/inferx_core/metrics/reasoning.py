"""Reasoning models: the answer's own clock beside the whole stream's.

A reasoning model streams its thinking (``reasoning_content`` / ``reasoning``)
before its answer. Thinking chunks are generated tokens, so TTFT, ITL, TPOT
and E2E keep counting them (as vLLM and InferenceX do). For a request whose
stream carried reasoning, this adds, per request:

- TTFO (AIPerf's time to first output token): send -> the first chunk of the
  answer (content, completions text or tool calls);
- reasoning tokens: the server's ``completion_tokens_details.reasoning_tokens``
  (source ``usage``), else the reasoning chunks' tokens by per-chunk usage
  (``chunk_tokens``), else one per reasoning chunk (``chunk_count``, an estimate);
- the answer's TPOT: (last chunk - first answer chunk) / (answer tokens - 1),
  answer tokens = output tokens - reasoning tokens, only when more than one.

The point's summary keys appear only when some successful request reasoned
(``reasoning_requests`` > 0), so results of other models are unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.usage import is_token_count
from inferx_core.metrics.requests import RequestMetrics, valid_chunk_tokens
from inferx_core.metrics.stats import describe

#: The output-token sources, in the order the result lists their counts.
_SOURCES: tuple[Literal["usage", "chunk_tokens", "chunk_count"], ...] = (
    "usage",
    "chunk_tokens",
    "chunk_count",
)

__all__ = ["ReasoningMetrics", "ReasoningSource", "put_reasoning", "reasoning_metrics"]

ReasoningSource = Literal["usage", "chunk_tokens", "chunk_count"]
_NS_PER_MS = 1e6


@dataclass(frozen=True, slots=True)
class ReasoningMetrics:
    """One successful request's reasoning figures (ms)."""

    reasoning_tokens: int
    source: ReasoningSource
    ttfo_ms: float | None  # None: the stream carried no answer
    tpot_answer_ms: float | None  # None: no answer, or one answer token


def _reasoning_tokens(rec: RequestRecord) -> tuple[int, ReasoningSource]:
    if is_token_count(rec.usage_reasoning_tokens):
        return rec.usage_reasoning_tokens, "usage"
    if is_token_count(rec.chunk_reasoning_tokens) and valid_chunk_tokens(rec) is not None:
        return rec.chunk_reasoning_tokens, "chunk_tokens"
    return rec.reasoning_chunks, "chunk_count"


def reasoning_metrics(rec: RequestRecord, m: RequestMetrics) -> ReasoningMetrics | None:
    """The reasoning figures of a successful request that reasoned; None otherwise."""
    reasoned = rec.reasoning_chunks > 0 or (rec.usage_reasoning_tokens or 0) > 0
    if not m.ok or not reasoned:
        return None
    tokens, source = _reasoning_tokens(rec)
    first = rec.first_answer_chunk
    if first is None or not 0 <= first < len(rec.chunk_ns):
        return ReasoningMetrics(tokens, source, None, None)
    t_answer = rec.chunk_ns[first]
    answer_tokens = m.output_tokens - tokens
    tpot = None
    if answer_tokens > 1:
        tpot = (rec.chunk_ns[-1] - t_answer) / (answer_tokens - 1) / _NS_PER_MS
    return ReasoningMetrics(tokens, source, (t_answer - rec.send_ns) / _NS_PER_MS, tpot)


Put = Callable[[str, Any, str], None]


def put_reasoning(
    put: Put,
    ok: Sequence[tuple[RequestRecord, RequestMetrics]],
    pcts: tuple[float, ...],
) -> None:
    """The point's reasoning keys through ``put(key, value, null_reason)``; none when no
    successful request reasoned."""
    found = [r for rec, m in ok if (r := reasoning_metrics(rec, m)) is not None]
    if not found:
        return
    sources = Counter(r.source for r in found)
    put("reasoning_requests", len(found), "")
    put("total_reasoning_tokens", sum(r.reasoning_tokens for r in found), "")
    put(
        "reasoning_token_sources",
        {k: sources.get(k, 0) for k in _SOURCES},
        "",
    )
    put("reasoning_no_answer_requests", sum(1 for r in found if r.ttfo_ms is None), "")
    ttfo = [r.ttfo_ms for r in found if r.ttfo_ms is not None]
    for stat, value in describe(ttfo, pcts).items():
        put(f"{stat}_ttfo_ms", value, "no_request_streamed_an_answer")
    tpot = [r.tpot_answer_ms for r in found if r.tpot_answer_ms is not None]
    for stat, value in describe(tpot, pcts).items():
        put(f"{stat}_tpot_answer_ms", value, "no_answer_with_more_than_one_token")
