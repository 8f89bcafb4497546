"""The checks an imported run needs beyond InferX's own verdict
(:func:`inferx_core.metrics.validity.assess`), in the same :class:`ValidityCheck` shape.

InferX knows what it asked of its own runs; another tool's file has to be
held to what *it* says it asked: every request its summary counts is in the
per-request file, the concurrency it names was reached, the replies are as
long as requested. A file with no per-request data gets the checks its
counts allow (:func:`summary_checks`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from inferx_core.config.validity import ValidityLimits
from inferx_core.interop.tool_run import ToolRun
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.stats import percentile_word
from inferx_core.metrics.validity import ValidityCheck

__all__ = [
    "MAX_OUTPUT_RATIO",
    "MIN_OUTPUT_RATIO",
    "MIN_REACHED_FRACTION",
    "record_checks",
    "summary_checks",
]

#: Median reply length against the requested one: outside these the run measured
#: another workload (EOS not ignored, a max_tokens that never reached the server).
MIN_OUTPUT_RATIO = 0.5
MAX_OUTPUT_RATIO = 1.5
#: A closed loop at concurrency N whose most requests in flight stayed below this
#: share of N never ran at N.
MIN_REACHED_FRACTION = 0.9


def _check(name: str, value: float | None, limit: float | None, ok: bool, why: str, **kw: Any):
    return ValidityCheck(name=name, value=value, limit=limit, passed=ok, why=why, **kw)


def _records_complete(run: ToolRun, records: Sequence[RequestRecord]) -> ValidityCheck | None:
    reported = run.reported_requests
    if reported is None:
        return None
    n = sum(1 for r in records if not r.warmup)
    ok = n == reported
    why = (
        f"the per-request data holds all {n} requests the {run.tool} summary counts"
        if ok
        else f"the {run.tool} summary counts {reported} requests, its per-request data holds "
        f"{n}: rows were removed or added after the run, so its figures cannot be checked"
    )
    return _check("records_complete", float(n), float(reported), ok, why)


def _in_flight_peak(records: Sequence[RequestRecord]) -> int:
    events = sorted(
        (t, step)
        for r in records
        if r.send_ns and r.end_ns > r.send_ns
        for t, step in ((r.send_ns, 1), (r.end_ns, -1))
    )
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def _concurrency_reached(run: ToolRun, records: Sequence[RequestRecord]) -> ValidityCheck | None:
    target = run.concurrency
    if run.mode != "closed" or not target or target <= 1:
        return None
    peak = _in_flight_peak(records)
    need = math.floor(target * MIN_REACHED_FRACTION)
    ok = peak >= need
    why = f"at most {peak} requests were in flight of the concurrency {target} the run names"
    if not ok:
        why += ": the level was never reached, so its figures describe a lighter load"
    return _check("concurrency_reached", float(peak), float(need), ok, why)


def _output_length(run: ToolRun, records: Sequence[RequestRecord]) -> ValidityCheck | None:
    asked = run.requested_output_tokens
    ok_records = [r for r in records if r.ok and not r.warmup]
    if not asked or not ok_records:
        return None
    median = statistics.median(r.output_tokens for r in ok_records)
    ratio = median / asked
    ok = MIN_OUTPUT_RATIO <= ratio <= MAX_OUTPUT_RATIO
    short = sum(1 for r in ok_records if r.output_tokens < asked * MIN_OUTPUT_RATIO)
    why = (
        f"median reply {median:g} tokens of the {asked:g} asked for ({ratio:.0%}; "
        f"{short} of {len(ok_records)} replies under half)"
    )
    if not ok:
        why += ": the run measured another workload (EOS not ignored, or max_tokens not sent)"
    return _check(
        "output_length", ratio, MIN_OUTPUT_RATIO if ratio < 1 else MAX_OUTPUT_RATIO, ok, why
    )


#: Below this many sends an open loop's achieved rate is too coarse to judge.
MIN_SENDS_FOR_RATE = 20


def _rate_reached(run: ToolRun, records: Sequence[RequestRecord]) -> ValidityCheck | None:
    """An open loop without scheduled times (InferX's achieved_rate then only marks): its
    send rate against the target, failing beyond 4 standard errors of a Poisson draw
    (1 - 4/sqrt(n)), which no schedule's spread explains."""
    target = run.request_rate
    sends = sorted(r.send_ns for r in records if r.send_ns and not r.warmup)
    if run.mode != "open" or not target or len(sends) < MIN_SENDS_FOR_RATE:
        return None
    if any(r.scheduled_ns is not None for r in records):
        return None  # assess's achieved_rate holds the sends to their schedule
    achieved = (len(sends) - 1) / max((sends[-1] - sends[0]) / 1e9, 1e-9)
    ratio, floor = achieved / target, 1 - 4 / math.sqrt(len(sends))
    why = f"sent {achieved:.2f} req/s of the {target:g} asked for ({ratio:.0%}"
    why += f"; a Poisson draw of {len(sends)} stays above {floor:.0%})"
    if ratio < floor:
        why += ": the load asked for was never offered (a concurrency cap, or the client)"
    return _check("rate_reached", ratio, floor, ratio >= floor, why)


def record_checks(run: ToolRun, records: Sequence[RequestRecord]) -> list[ValidityCheck]:
    """The checks of an imported run with per-request data (beside ``assess``'s)."""
    found = (
        _records_complete(run, records),
        _concurrency_reached(run, records),
        _output_length(run, records),
        _rate_reached(run, records),
    )
    return [c for c in found if c is not None]


def summary_checks(flat: Mapping[str, Any]) -> list[ValidityCheck]:
    """What the counts of a summary-only file allow: its error rate and, per percentile,
    whether enough samples stood behind it (a p99 of 37 requests is their maximum)."""
    completed, failed = flat.get("completed"), flat.get("failed")
    checks: list[ValidityCheck] = []
    if completed is not None and failed is not None:
        total = completed + failed
        rate = failed / total if total else 0.0
        limit = ValidityLimits().max_error_rate
        why = f"{failed} of {total} requests failed (the file gives no kinds); limit {limit:.0%}"
        checks.append(_check("error_rate", rate, limit, rate <= limit, why))
    for p in flat.get("percentiles") or ():
        need = math.ceil(100 / (100 - p) - 1e-9) if p > 50 else 0
        if completed is not None and completed < need:
            word = percentile_word(p)
            checks.append(
                _check(
                    f"sample_size.p{word}_ttft_ms",
                    float(completed),
                    float(need),
                    False,
                    f"p{word} from {completed} samples is their maximum, not a tail (needs {need})",
                    severity="marks",
                )
            )
    return checks


def summary_rate_check(achieved: float | None, target: float | None) -> ValidityCheck | None:
    """An open loop's achieved rate against its target, where a summary reports both."""
    if not achieved or not target:
        return None
    ratio = achieved / target
    limit = ValidityLimits().min_rate_ratio
    why = f"sent {achieved:.2f} req/s of the {target:g} asked for ({ratio:.0%})"
    if ratio < limit:
        why += ": the load asked for was not delivered"
    return _check("achieved_rate", ratio, limit, ratio >= limit, why)


#: A median token gap below this share of the median TPOT: most gaps are ~0 (the
#: summary-level form of chunk_coalescing).
MIN_ITL_TO_TPOT = 0.1


def summary_itl_check(median_itl_ms: float | None, median_tpot_ms: float | None):
    """A median ITL far below the median TPOT: most token gaps are near 0 and a few are
    long. It only marks: inference-perf stamps every token of a chunk (by its tokenizer)
    with the chunk's time, so the gaps inside a chunk are 0 by design, and its summary
    cannot tell those from chunks read together. Measured on the scripted server at 2
    req/s and 40 ms per chunk: a median ITL of 0 from chunks of ~2 of its tokens, read one
    by one (its per-request report: 0% zero chunk gaps)."""
    if median_itl_ms is None or not median_tpot_ms:
        return None
    ratio = median_itl_ms / median_tpot_ms
    why = (
        f"median ITL {median_itl_ms:.3g} ms against a median TPOT of {median_tpot_ms:.3g} ms "
        f"({ratio:.1%})"
    )
    if ratio < MIN_ITL_TO_TPOT:
        why += (
            ": most token gaps are near 0: chunks read together, or chunks of several of "
            "the tool's tokens (inference-perf stamps each token of a chunk with the "
            "chunk's time); its per-request report (per_request: true) tells which"
        )
    return _check(
        "chunk_coalescing",
        ratio,
        MIN_ITL_TO_TPOT,
        ratio >= MIN_ITL_TO_TPOT,
        why,
        severity="marks",
    )


#: A tool's own token count may differ from the server's usage by this share (one token
#: of rounding in a short reply) before its token figures count as wrong.
MAX_TOKEN_COUNT_DRIFT = 0.1


def tool_token_check(tool: str, name: str, pairs: Sequence[tuple[int, int]]):
    """The tool's own output token count against the server's usage, per request: a tool
    that counts with another tokenizer reports token throughputs off by that factor."""
    if not pairs:
        return None
    off = [(mine, usage) for mine, usage in pairs if usage and abs(mine - usage) / usage > 0.1]
    share = len(off) / len(pairs)
    ok = share <= MAX_TOKEN_COUNT_DRIFT
    why = f"{tool}'s {name} differs from the server's usage by over 10% in {len(off)} of "
    why += f"{len(pairs)} requests"
    if off:
        mine = sum(m for m, _ in off) / len(off)
        usage = sum(u for _, u in off) / len(off)
        why += (
            f" ({mine:.1f} against {usage:.1f} tokens per reply: its token throughputs are "
            f"{mine / usage:.2f}x what the server generated)"
        )
    return _check("tool_token_count", share, MAX_TOKEN_COUNT_DRIFT, ok, why)
