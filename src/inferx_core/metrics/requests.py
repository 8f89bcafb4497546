"""Per-request metrics: TTFT, E2EL, TPOT, ITL and interactivity of one request.

Timestamps are ``perf_counter_ns``; definitions are in docs/metrics.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.usage import is_token_count

# usage: the server's usage block; chunk_tokens: the server's per-chunk token
# counts; chunk_count: one token per content chunk (an estimate).
OutputTokenSource = Literal["usage", "chunk_tokens", "chunk_count"]

_NS_PER_MS = 1e6


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    """Per-request derived values (ms). Latency fields are None for a failed request."""

    request_id: int
    ok: bool
    input_tokens: int
    output_tokens: int  # 0 for a failed request
    output_token_source: OutputTokenSource
    ttft_ms: float | None
    e2el_ms: float | None
    tpot_ms: float | None  # None when output_tokens <= 1
    interactivity: float | None  # 1000 / tpot_ms; None when tpot_ms is None or 0
    itl_ms: tuple[float, ...]  # chunk gaps
    # Per-token gaps: each chunk gap divided by the tokens that chunk carried,
    # repeated once per token. None when chunk_tokens is unknown or malformed.
    itl_per_token_ms: tuple[float, ...] | None
    max_itl_ms: float | None  # None when fewer than two content chunks


def valid_chunk_tokens(rec: RequestRecord) -> list[int] | None:
    ct = rec.chunk_tokens
    if ct is None or len(ct) != len(rec.chunk_ns) or not all(map(is_token_count, ct)):
        return None
    return list(ct)


def _output_tokens(rec: RequestRecord) -> tuple[int, OutputTokenSource]:
    # Only a count the usage check accepts is used: a negative, float or string
    # "usage" (a record read back from a file, built by hand) never reaches a
    # throughput; the stream decoder already failed such a request.
    if is_token_count(rec.usage_output_tokens):
        return rec.usage_output_tokens, "usage"
    ct = valid_chunk_tokens(rec)
    if ct is not None:
        return sum(ct), "chunk_tokens"
    return len(rec.chunk_ns), "chunk_count"


def _input_tokens(rec: RequestRecord) -> int:
    """The prompt's measured tokens; never negative (every throughput adds them)."""
    return max(int(rec.prompt_tokens), 0)


def _failed(request_id: int, input_tokens: int, source: OutputTokenSource) -> RequestMetrics:
    """A failed request's metrics: its prompt counted, no output and no latency."""
    return RequestMetrics(
        request_id=request_id,
        ok=False,
        input_tokens=input_tokens,
        output_tokens=0,
        output_token_source=source,
        ttft_ms=None,
        e2el_ms=None,
        tpot_ms=None,
        interactivity=None,
        itl_ms=(),
        itl_per_token_ms=None,
        max_itl_ms=None,
    )


def request_metrics(rec: RequestRecord) -> RequestMetrics:
    """Derive TTFT, E2EL, TPOT, ITL and interactivity of one request."""
    out_tokens, source = _output_tokens(rec)
    if not rec.ok:
        return _failed(rec.request_id, _input_tokens(rec), source)
    chunks = rec.chunk_ns
    ttft_ns = chunks[0] - rec.send_ns
    e2el_ns = chunks[-1] - rec.send_ns
    gaps_ns = [b - a for a, b in pairwise(chunks)]
    tpot_ms: float | None = None
    if out_tokens > 1:
        tpot_ms = (e2el_ns - ttft_ns) / (out_tokens - 1) / _NS_PER_MS
    interactivity = 1000.0 / tpot_ms if tpot_ms is not None and tpot_ms > 0 else None
    per_token: tuple[float, ...] | None = None
    ct = valid_chunk_tokens(rec)
    if ct is not None:
        pt: list[float] = []
        for gap, k in zip(gaps_ns, ct[1:], strict=True):
            if k >= 1:
                pt.extend([gap / k / _NS_PER_MS] * k)
        per_token = tuple(pt)
    return RequestMetrics(
        request_id=rec.request_id,
        ok=True,
        input_tokens=_input_tokens(rec),
        output_tokens=out_tokens,
        output_token_source=source,
        ttft_ms=ttft_ns / _NS_PER_MS,
        e2el_ms=e2el_ns / _NS_PER_MS,
        tpot_ms=tpot_ms,
        interactivity=interactivity,
        itl_ms=tuple(g / _NS_PER_MS for g in gaps_ns),
        itl_per_token_ms=per_token,
        max_itl_ms=max(gaps_ns) / _NS_PER_MS if gaps_ns else None,
    )


def short_reply(rec: RequestRecord, ignore_eos: bool) -> str | None:
    """Why an answered request is not the reply that was asked, else None: under
    ``ignore_eos`` a stop on its own (``finish_reason: stop``) or fewer tokens than
    ``max_tokens``; without it, a ``length`` stop short of ``max_tokens``. Counts are
    the server's (usage or per-chunk); one token per chunk is only a lower bound and
    convicts nothing. A shedding server answers fast with one token: such a reply is
    a failed request (kind ``short_reply``) for the SLO and the validity verdict."""
    if not rec.ok or rec.max_tokens <= 0:
        return None
    if ignore_eos and rec.finish_reason == "stop":
        return (
            f"request {rec.request_id} stopped (finish_reason stop) although ignore_eos was "
            f"sent for {rec.max_tokens} tokens"
        )
    tokens, source = _output_tokens(rec)
    if source == "chunk_count" or tokens >= rec.max_tokens:
        return None
    if ignore_eos or rec.finish_reason == "length":
        return f"request {rec.request_id} got {tokens} of the {rec.max_tokens} tokens asked"
    return None


def judged_request(rec: RequestRecord, ignore_eos: bool) -> RequestMetrics:
    """The request's metrics as every consumer counts it: the one place that decides its
    outcome. A reply cut short of what was asked (:func:`short_reply`) is a failure with
    no latency, so the counts, goodput, latency populations, validity and the search's
    verdict agree on it (docs/metrics.md: "Failed requests are never good")."""
    m = request_metrics(rec)
    if m.ok and short_reply(rec, ignore_eos):
        return _failed(m.request_id, m.input_tokens, m.output_token_source)
    return m


def failure_kind(rec: RequestRecord, ignore_eos: bool) -> str | None:
    """The request's failure kind (None: it succeeded): the transport's kind, ``no_content``
    for a failure that names none, ``short_reply`` for an answer cut short."""
    if not rec.ok:
        if rec.error_kind is not None:
            return str(rec.error_kind)
        return "no_content" if rec.error is None and not rec.chunk_ns else "unknown"
    return "short_reply" if short_reply(rec, ignore_eos) else None
