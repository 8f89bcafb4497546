"""Turn request records into the numbers people compare across tools.

Pure functions, no I/O. Definitions are in docs/metrics.md; in short, per
successful request (timestamps are ``perf_counter_ns``):

- TTFT  = chunk_ns[0] - send_ns
- E2EL  = chunk_ns[-1] - send_ns (the last content chunk)
- TPOT  = (E2EL - TTFT) / (output_tokens - 1), only when output_tokens > 1
- ITL   = every gap between consecutive content chunks, pooled over requests
- interactivity = 1000 / TPOT_ms (tokens/s seen by one user)

Field names follow vLLM ``bench serve`` (``mean_ttft_ms``, ``p99_itl_ms``,
``output_throughput``...) and add InferenceX's aggregate ones
(``tput_per_gpu``, ``median_intvty``, ``median_ttft`` in seconds...).

The result is strict JSON: no NaN or Infinity anywhere. A value that cannot
be given is ``None`` and its key appears in ``null_reasons`` with the reason
(``"infinite"`` for a true +inf, e.g. an error-adjusted p99 when more than 1%
of requests failed).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.usage import is_token_count
from inferx_core.metrics.reasoning import put_reasoning
from inferx_core.metrics.requests import (
    OutputTokenSource,
    RequestMetrics,
    failure_kind,
    judged_request,
    request_metrics,
    short_reply,
    valid_chunk_tokens,
)
from inferx_core.metrics.stats import (
    describe,
    error_adjusted_percentiles,
    validate_percentiles,
)

#: The output-token sources, in the order the result lists their counts.
_SOURCES: tuple[Literal["usage", "chunk_tokens", "chunk_count"], ...] = (
    "usage",
    "chunk_tokens",
    "chunk_count",
)

__all__ = [
    "DEFAULT_PERCENTILES",
    "LATENCY_METRICS",
    "SLO_KEYS",
    "OutputTokenSource",
    "RequestMetrics",
    "normalize_slos",
    "request_metrics",
    "summarize",
]

DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9)
LATENCY_METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")
# SLO names accepted by ``summarize(slos=...)``; values are milliseconds.
SLO_KEYS: tuple[str, ...] = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
_SLO_ALIASES = {
    "ttft": "ttft_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
    "e2el": "e2el_ms",
}
MAX_ERROR_CHARS = 500

_NS_PER_S = 1e9


def normalize_slos(slos: Mapping[str, float] | None) -> dict[str, float] | None:
    """Validate SLOs and return them keyed by ``SLO_KEYS`` names (values in ms).

    vLLM's spelling (``ttft``, ``tpot``, ``e2el``, values in ms) is accepted
    too. An empty mapping means no SLO, as in vLLM.
    """
    if not slos:
        return None
    out: dict[str, float] = {}
    for key, value in slos.items():
        name = _SLO_ALIASES.get(key, key)
        if name not in SLO_KEYS:
            raise ValueError(f"unknown SLO {key!r}; expected one of {SLO_KEYS}")
        v = float(value)
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"SLO {key!r} must be a finite number >= 0, got {value!r}")
        if name in out:
            raise ValueError(f"SLO {name!r} given twice")
        out[name] = v
    return {k: out[k] for k in SLO_KEYS if k in out}


def _meets_slos(m: RequestMetrics, slos: Mapping[str, float]) -> bool:
    if not m.ok:
        return False
    assert m.ttft_ms is not None and m.e2el_ms is not None
    checks = {
        "ttft_ms": m.ttft_ms,
        # vLLM: a request with <= 1 output token has TPOT 0 for goodput.
        "tpot_ms": m.tpot_ms if m.tpot_ms is not None else 0.0,
        # The largest chunk gap; a single-chunk request has no gap.
        "itl_ms": m.max_itl_ms if m.max_itl_ms is not None else 0.0,
        "e2el_ms": m.e2el_ms,
    }
    return all(checks[k] <= limit for k, limit in slos.items())


class _Fields:
    """Ordered output fields; None and non-finite values get a reason."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.null_reasons: dict[str, str] = {}

    def put(self, key: str, value: Any, reason: str | None = None) -> None:
        if isinstance(value, (float, np.floating)):
            value = float(value)
            if math.isinf(value):
                value, reason = None, "infinite"
            elif math.isnan(value):
                value, reason = None, reason or "undefined"
        self.data[key] = value
        if value is None:
            self.null_reasons[key] = reason or "unknown"
        else:
            self.null_reasons.pop(key, None)


def _peak_output_tokens_per_s(
    ok: Sequence[tuple[RequestRecord, RequestMetrics]],
) -> float:
    """vLLM's max_output_tokens_per_s: 1 s buckets from the first successful send."""
    if not ok:
        return 0.0
    t0 = min(r.send_ns for r, _ in ok)
    buckets: Counter[int] = Counter()
    for rec, _ in ok:
        ct = valid_chunk_tokens(rec)
        for i, t in enumerate(rec.chunk_ns):
            buckets[(t - t0) // 1_000_000_000] += ct[i] if ct is not None else 1
    return float(max(buckets.values())) if buckets else 0.0


def _peak_concurrency(ok: Sequence[tuple[RequestRecord, RequestMetrics]]) -> int:
    """Most successful requests in flight at once over half-open [send, last chunk)."""
    events: list[tuple[int, int]] = []
    for rec, _ in ok:
        events.append((rec.send_ns, 1))
        events.append((rec.chunk_ns[-1], -1))
    events.sort()  # at equal times -1 (departure) sorts before +1 (arrival)
    cur = peak = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    return peak


def _check_gpus(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")


NO_OK = "no_successful_requests"


@dataclass(frozen=True)
class _Window:
    """The measured requests of one point, split once, shared by every stage below."""

    ok: list[tuple[RequestRecord, RequestMetrics]]
    failed: list[RequestRecord]
    duration_s: float

    @property
    def no_success(self) -> bool:
        return not self.ok


def _validated_gpus(
    num_gpus: int | None, num_prefill_gpus: int | None, num_decode_gpus: int | None
) -> tuple[int | None, bool]:
    """The GPU count to divide by, and whether serving is disaggregated."""
    for name, v in (
        ("num_gpus", num_gpus),
        ("num_prefill_gpus", num_prefill_gpus),
        ("num_decode_gpus", num_decode_gpus),
    ):
        _check_gpus(name, v)
    disagg = num_prefill_gpus is not None or num_decode_gpus is not None
    if disagg:
        if num_prefill_gpus is None or num_decode_gpus is None:
            raise ValueError("give both num_prefill_gpus and num_decode_gpus, or neither")
        if num_gpus is not None and num_gpus != num_prefill_gpus + num_decode_gpus:
            raise ValueError("num_gpus must equal num_prefill_gpus + num_decode_gpus")
        num_gpus = num_prefill_gpus + num_decode_gpus
    return num_gpus, disagg


def _put_counts(f: _Fields, w: _Window, total: int, measured: int) -> None:
    ok = w.ok
    f.put("duration", w.duration_s)
    f.put("completed", len(ok))
    f.put("failed", len(w.failed))
    f.put("total_requests", measured)
    f.put("warmup_excluded", total - measured)
    f.put("total_input_tokens", sum(m.input_tokens for _, m in ok))
    f.put("total_output_tokens", sum(m.output_tokens for _, m in ok))
    server_in = [r.usage_prompt_tokens for r, _ in ok]
    if ok and all(map(is_token_count, server_in)):
        f.put("total_input_tokens_server", sum(server_in))
    else:
        why = NO_OK if w.no_success else "usage_prompt_tokens_missing"
        f.put("total_input_tokens_server", None, why)
    sources = Counter(m.output_token_source for _, m in ok)
    n_estimated = sources.get("chunk_count", 0)
    f.put("output_tokens_estimated", n_estimated > 0)
    f.put("output_tokens_estimated_requests", n_estimated)
    f.put(
        "output_token_sources",
        {k: sources.get(k, 0) for k in _SOURCES},
    )


def _put_throughput(f: _Fields, w: _Window, slo: dict[str, float] | None) -> None:
    total_input = f.data["total_input_tokens"]
    total_output = f.data["total_output_tokens"]
    # request_metrics counts only non-negative tokens (the usage check): no throughput below 0.
    assert total_input >= 0 and total_output >= 0, (total_input, total_output)
    good = [m for _, m in w.ok if _meets_slos(m, slo)] if slo is not None else []
    f.put("request_throughput", len(w.ok) / w.duration_s)
    f.put("request_goodput", None if slo is None else len(good) / w.duration_s, "no_slo_given")
    f.put("output_throughput", total_output / w.duration_s)
    f.put("total_token_throughput", (total_input + total_output) / w.duration_s)
    f.put("max_output_tokens_per_s", _peak_output_tokens_per_s(w.ok))
    f.put("max_concurrent_requests", _peak_concurrency(w.ok))
    f.put("goodput_slos", slo, "no_slo_given")
    if slo is None:
        for k in ("good_completed", "output_goodput", "total_token_goodput"):
            f.put(k, None, "no_slo_given")
        return
    f.put("good_completed", len(good))
    f.put("output_goodput", sum(m.output_tokens for m in good) / w.duration_s)
    f.put(
        "total_token_goodput",
        sum(m.input_tokens + m.output_tokens for m in good) / w.duration_s,
    )


def _put_per_gpu(
    f: _Fields,
    num_gpus: int | None,
    num_prefill_gpus: int | None,
    num_decode_gpus: int | None,
    duration_s: float,
) -> None:
    """InferenceX: total / (prefill + decode), output / decode, input / prefill."""
    f.put("num_gpus", num_gpus, "num_gpus_unknown")
    f.put("num_prefill_gpus", num_prefill_gpus, "not_disaggregated")
    f.put("num_decode_gpus", num_decode_gpus, "not_disaggregated")
    if num_gpus is None:
        for k in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"):
            f.put(k, None, "num_gpus_unknown")
        return
    total = f.data["total_token_throughput"]
    output = f.data["output_throughput"]
    inputs = f.data["total_input_tokens"] / duration_s
    f.put("tput_per_gpu", total / num_gpus)
    f.put("output_tput_per_gpu", output / (num_decode_gpus or num_gpus))
    f.put("input_tput_per_gpu", inputs / (num_prefill_gpus or num_gpus))


def _latency_samples(w: _Window) -> tuple[dict[str, list[float]], dict[str, str]]:
    ok, none = w.ok, w.no_success
    samples: dict[str, list[float]] = {
        "ttft": [m.ttft_ms for _, m in ok if m.ttft_ms is not None],
        "tpot": [m.tpot_ms for _, m in ok if m.tpot_ms is not None],
        "itl": [g for _, m in ok for g in m.itl_ms],
        "e2el": [m.e2el_ms for _, m in ok if m.e2el_ms is not None],
    }
    empty_reason = {
        "ttft": NO_OK,
        "tpot": NO_OK if none else "no_request_with_more_than_one_output_token",
        "itl": NO_OK if none else "no_request_with_more_than_one_content_chunk",
        "e2el": NO_OK,
    }
    return samples, empty_reason


def _put_latency(f: _Fields, w: _Window, pcts: tuple[float, ...]) -> None:
    samples, empty_reason = _latency_samples(w)
    latency_stats: dict[str, dict[str, float | None]] = {}
    for metric in LATENCY_METRICS:
        latency_stats[metric] = describe(samples[metric], pcts)
        for stat, value in latency_stats[metric].items():
            f.put(f"{stat}_{metric}_ms", value, empty_reason[metric])
    # Chunks stamped by one socket read share a timestamp (gap 0). Many such
    # gaps mean the client read late (starved CPU) or the server flushed
    # bursts: ITL/TPOT then describe delivery, not generation. Say how often.
    gaps = samples["itl"]
    f.put(
        "itl_zero_gap_fraction",
        (sum(1 for g in gaps if g == 0) / len(gaps)) if gaps else None,
        empty_reason["itl"],
    )
    _put_per_token_itl(f, w, pcts)
    # --- error-adjusted percentiles (failures = +inf latency) ---------------
    for metric in ("ttft", "e2el"):
        adj = error_adjusted_percentiles(samples[metric], len(w.failed), pcts)
        for stat, value in adj.items():
            f.put(f"{stat}_{metric}_ms_error_adjusted", value, "no_requests")
    _put_inferencex_names(f, latency_stats, empty_reason)
    _put_request_interactivity(f, w, pcts)


def _put_per_token_itl(f: _Fields, w: _Window, pcts: tuple[float, ...]) -> None:
    """Per-token ITL: only requests whose chunk token counts are known."""
    pt_reqs = [m.itl_per_token_ms for _, m in w.ok if m.itl_per_token_ms is not None]
    f.put("itl_per_token_requests", len(pt_reqs))
    pt_reason = (
        NO_OK
        if w.no_success
        else ("chunk_tokens_unknown" if not pt_reqs else "no_gap_after_first_chunk")
    )
    for stat, value in describe([g for req in pt_reqs for g in req], pcts).items():
        f.put(f"{stat}_itl_per_token_ms", value, pt_reason)


def _put_inferencex_names(
    f: _Fields,
    latency_stats: dict[str, dict[str, float | None]],
    empty_reason: dict[str, str],
) -> None:
    """InferenceX aggregate names: latencies in seconds and ``{stat}_intvty``."""
    for metric in LATENCY_METRICS:
        for stat, value in latency_stats[metric].items():
            seconds = None if value is None else value / 1000.0
            f.put(f"{stat}_{metric}", seconds, empty_reason[metric])
    # InferenceX derives {stat}_intvty = 1000 / {stat}_tpot_ms for every TPOT
    # statistic; so p99_intvty is the interactivity of the p99 (slow) TPOT.
    for stat, value in latency_stats["tpot"].items():
        if value is None:
            f.put(f"{stat}_intvty", None, empty_reason["tpot"])
        else:
            f.put(f"{stat}_intvty", math.inf if value == 0 else 1000.0 / value)


def _put_request_interactivity(f: _Fields, w: _Window, pcts: tuple[float, ...]) -> None:
    """Per-request interactivity; the slow tail is the low percentiles: p(100 - p)."""
    low_pcts = tuple(round(100.0 - p, 10) for p in pcts)
    intvty = [m.interactivity for _, m in w.ok if m.interactivity is not None]
    iv_reason = NO_OK if w.no_success else "no_request_with_positive_tpot"
    f.put("intvty_requests", len(intvty))
    for stat, value in describe(intvty, validate_percentiles(low_pcts)).items():
        f.put(f"{stat}_request_intvty", value, iv_reason)


def _put_dispatch_lateness(f: _Fields, measured: Sequence[RequestRecord]) -> None:
    """Open loop: send minus scheduled time (ms) over the requests that were sent; no keys
    in a closed loop (nothing is scheduled there)."""
    late = [
        (r.send_ns - r.scheduled_ns) / 1e6
        for r in measured
        if r.scheduled_ns is not None and r.send_ns
    ]
    if not late:
        return
    f.put("dispatch_lateness_requests", len(late))
    f.put("mean_dispatch_lateness_ms", float(np.mean(late)))
    f.put("p50_dispatch_lateness_ms", float(np.percentile(late, 50)))
    f.put("p99_dispatch_lateness_ms", float(np.percentile(late, 99)))
    f.put("max_dispatch_lateness_ms", float(max(late)))


def _put_failures(
    f: _Fields, failed: list[RequestRecord], max_error_samples: int, ignore_eos: bool
) -> None:
    kinds = [failure_kind(r, ignore_eos) or "unknown" for r in failed]
    by_kind = Counter(kinds)
    f.put("failed_by_kind", dict(sorted(by_kind.items())))
    samples_out: list[dict[str, Any]] = []
    seen: set[tuple[str, str | None]] = set()
    for r, kind in zip(failed, kinds, strict=True):
        if len(samples_out) >= max_error_samples:
            break
        error = r.error if not r.ok else short_reply(r, ignore_eos)
        msg = None if error is None else error[:MAX_ERROR_CHARS]
        if (kind, msg) in seen:
            continue
        seen.add((kind, msg))
        samples_out.append({"request_id": r.request_id, "error_kind": kind, "error": msg})
    f.put("error_samples", samples_out)


def summarize(
    records: Iterable[RequestRecord],
    *,
    window_start_ns: int,
    window_end_ns: int,
    num_gpus: int | None = None,
    slos: Mapping[str, float] | None = None,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    num_prefill_gpus: int | None = None,
    num_decode_gpus: int | None = None,
    max_error_samples: int = 5,
    ignore_eos: bool = False,
) -> dict[str, Any]:
    """Summarize one benchmark point. Returns a flat, strict-JSON-safe dict.

    ``window_start_ns``/``window_end_ns`` (perf_counter_ns) bound the measured
    window (first dispatch to last completion); every throughput divides by it.
    Warmup records are dropped before anything else. ``num_gpus`` divides the
    per-GPU throughputs; for disaggregated serving give ``num_prefill_gpus``
    and ``num_decode_gpus`` instead (InferenceX: total / (prefill + decode),
    output / decode, input / prefill). ``slos`` maps ``ttft_ms``, ``tpot_ms``,
    ``itl_ms``, ``e2el_ms`` to limits in ms (a request meets ``itl_ms`` when
    its largest chunk gap is within it). :meth:`PointMetrics.from_flat
    <inferx_core.metrics.model.PointMetrics.from_flat>` groups the result
    into typed sections. ``ignore_eos``: the requests asked for every token, so a reply
    short of ``max_tokens`` fails as ``short_reply`` (:func:`~inferx_core.metrics.requests.
    judged_request` decides each request's outcome, as validity and the search do).
    """
    if window_end_ns <= window_start_ns:
        raise ValueError("window_end_ns must be greater than window_start_ns")
    pcts = validate_percentiles(percentiles)
    slo = normalize_slos(slos)
    num_gpus, _ = _validated_gpus(num_gpus, num_prefill_gpus, num_decode_gpus)
    all_records = list(records)
    measured = [r for r in all_records if not r.warmup]
    per_req = [(r, judged_request(r, ignore_eos)) for r in measured]
    window = _Window(
        ok=[(r, m) for r, m in per_req if m.ok],
        failed=[r for r, m in per_req if not m.ok],
        duration_s=(window_end_ns - window_start_ns) / _NS_PER_S,
    )
    f = _Fields()
    _put_counts(f, window, len(all_records), len(measured))
    _put_throughput(f, window, slo)
    _put_per_gpu(f, num_gpus, num_prefill_gpus, num_decode_gpus, window.duration_s)
    _put_latency(f, window, pcts)
    _put_dispatch_lateness(f, measured)
    put_reasoning(f.put, window.ok, pcts)  # reasoning models only: TTFO, answer TPOT
    _put_failures(f, window.failed, max_error_samples, ignore_eos)
    f.put("percentiles", list(pcts))
    f.put("no_successful_requests", window.no_success)
    result = dict(f.data)
    result["null_reasons"] = dict(f.null_reasons)
    return result
