"""The validity verdict of one point: checks that decide whether its numbers can be trusted.

A benchmark is trusted for the numbers it refuses to report as good. Each
check has a value, a limit, whether it passed and why it matters; a failing
check of severity ``invalidates`` makes the point ``invalid`` (its status),
one of severity ``marks`` only labels a figure (a p99 from 37 samples is
their maximum, not a tail). docs/metrics.md lists every check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from inferx_core.config.validity import ValidityLimits
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.client_load import ClientLoad, WorkerLoad
from inferx_core.load.transport.usage import usage_disagreement
from inferx_core.metrics.requests import failure_kind, judged_request
from inferx_core.metrics.schedule import ScheduleKeeping, schedule_keeping
from inferx_core.metrics.spec_gaps import zero_gap_limit
from inferx_core.metrics.stats import percentile_word

Severity = Literal["invalidates", "marks"]


class ValidityCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    value: float | None
    limit: float | None
    passed: bool
    severity: Severity = "invalidates"
    why: str


class Validity(BaseModel):
    """``valid``: no check of severity ``invalidates`` failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    valid: bool
    checks: list[ValidityCheck]

    @property
    def failing(self) -> list[ValidityCheck]:
        return [c for c in self.checks if not c.passed and c.severity == "invalidates"]

    def summary(self) -> str:
        """The failing checks in one line (``status`` reason, tables)."""
        return "; ".join(f"{c.name}: {c.why}" for c in self.failing)


def _check(name: str, value: float | None, limit: float, ok: bool, why: str, **kw: Any):
    return ValidityCheck(name=name, value=value, limit=limit, passed=ok, why=why, **kw)


def _client_resources(records: Sequence[RequestRecord]) -> ValidityCheck:
    mine = [r for r in records if r.error_kind == "client_resource"]
    why = (
        f"{len(mine)} requests failed for want of client file descriptors or ports "
        "(raise `ulimit -n`); not counted against the server"
        if mine
        else "the client never ran out of descriptors or ports"
    )
    return _check("client_resources", float(len(mine)), 0.0, not mine, why)


def _error_rate(
    records: Sequence[RequestRecord], limit: float, ignore_eos: bool = False
) -> ValidityCheck:
    """Failures the server is answerable for (the client's own are their own check)."""
    records = [r for r in records if r.error_kind != "client_resource"]
    total = len(records)
    failed = [k for r in records if (k := failure_kind(r, ignore_eos))]
    rate = len(failed) / total if total else 0.0
    kinds: dict[str, int] = {}
    for kind in failed:
        kinds[kind] = kinds.get(kind, 0) + 1
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
    why = f"{len(failed)} of {total} requests failed ({by_kind}); limit {limit:.0%}"
    return _check("error_rate", rate, limit, rate <= limit, why)


#: Below these counts a share is too coarse to condemn a point (one burst of a
#: tiny run is 33%): the check then marks instead of invalidating.
MIN_GAPS_TO_JUDGE = 100
MIN_REPLIES_TO_JUDGE = 20


def _judged(n: int, minimum: int) -> tuple[Severity, str]:
    if n >= minimum:
        return "invalidates", ""
    return "marks", f" (only {n}; {minimum} needed to invalidate)"


def _coalescing(
    flat: Mapping[str, Any],
    ok: Sequence[RequestRecord],
    n_gaps: int,
    limits: ValidityLimits,
    step_tokens: float | None = None,
):
    zero = flat.get("itl_zero_gap_fraction")
    severity, few = _judged(n_gaps, MIN_GAPS_TO_JUDGE)
    limit, allowance = zero_gap_limit(limits.max_zero_gap_fraction, ok, step_tokens)
    yield _check(
        "chunk_coalescing",
        zero,
        limit,
        zero is None or zero <= limit,
        f"{(zero or 0):.0%} of {n_gaps} chunk gaps are 0{few}{allowance}: chunks were read "
        "together, so ITL percentiles describe the client's reads, not generation (TPOT, "
        "from E2E - TTFT, is unaffected)",
        severity=severity,
    )
    multi = [r for r in ok if r.output_tokens > 1]
    whole = [r for r in multi if r.chunk_ns[-1] == r.chunk_ns[0]]
    share = len(whole) / len(multi) if multi else 0.0
    severity, few = _judged(len(multi), MIN_REPLIES_TO_JUDGE)
    yield _check(
        "whole_reply_at_once",
        share,
        limits.max_whole_reply_fraction,
        share <= limits.max_whole_reply_fraction,
        f"{len(whole)} of {len(multi)} multi-token replies arrived in one read{few}: their TTFT "
        "equals their E2E latency (a starved client or a buffering proxy)",
        severity=severity,
    )


def _sample_sizes(flat: Mapping[str, Any], percentiles: Sequence[float], n: Mapping[str, int]):
    for metric, count in n.items():
        for p in percentiles:
            if p <= 50:
                continue
            need = math.ceil(100 / (100 - p) - 1e-9)
            if count >= need:
                continue
            yield _check(
                f"sample_size.p{percentile_word(p)}_{metric}_ms",
                float(count),
                float(need),
                False,
                f"p{percentile_word(p)} from {count} samples is their maximum, not a tail "
                f"(needs {need})",
                severity="marks",
            )


def _nominal_rate(records: Sequence[RequestRecord], target_rate: float, limits: ValidityLimits):
    """Records without scheduled times (older files): only the nominal rate to compare
    with, whose gap to a drawn schedule is the draw's own spread, so it only marks."""
    sends = sorted(r.send_ns for r in records if not r.turn and r.send_ns)
    if len(sends) < 2:
        return None
    achieved = (len(sends) - 1) / ((sends[-1] - sends[0]) / 1e9 or math.inf)
    ratio = achieved / target_rate
    return _check(
        "achieved_rate",
        ratio,
        limits.min_rate_ratio,
        ratio >= limits.min_rate_ratio,
        f"sent {achieved:.1f} req/s of the nominal {target_rate:g} ({ratio:.0%}); the records "
        "carry no scheduled times, and a drawn schedule misses its nominal rate by its own spread",
        severity="marks",
    )


def _slowest_stage(records: Sequence[RequestRecord]) -> ScheduleKeeping | None:
    """The schedule keeping of the stage that kept its schedule worst (one stage: all)."""
    stages: dict[int | None, list[RequestRecord]] = {}
    for r in records:
        stages.setdefault(r.stage, []).append(r)
    kept = [k for group in stages.values() if (k := schedule_keeping(group)) is not None]
    return min(kept, key=lambda k: k.rate_ratio, default=None)


def _achieved_rate(
    records: Sequence[RequestRecord], target_rate: float | None, limits: ValidityLimits
) -> ValidityCheck | None:
    """The client against the schedule it was given (each stage's), not the nominal rate."""
    keeping = _slowest_stage(records)
    if keeping is None:
        return None if target_rate is None else _nominal_rate(records, target_rate, limits)
    allowance = limits.max_dispatch_lateness_p99_ms
    behind = keeping.fell_behind(limits.min_rate_ratio, allowance)
    nominal = "" if target_rate is None else f"; nominal {target_rate:g}"
    why = (
        f"sent {keeping.achieved_rate:.1f} req/s of the {keeping.scheduled_rate:.1f} its drawn "
        f"schedule of {keeping.arrivals} arrivals asked for ({keeping.rate_ratio:.0%}{nominal})"
    )
    if behind:
        why += (
            f"; its sends took {keeping.stretch_ms:.0f} ms longer than the schedule: the client "
            "fell behind (run more load workers, --workers; under max_concurrency, the slots "
            "were full)"
        )
    return _check("achieved_rate", keeping.rate_ratio, limits.min_rate_ratio, not behind, why)


def _open_loop(
    records: Sequence[RequestRecord], target_rate: float | None, limits: ValidityLimits
) -> list[ValidityCheck]:
    checks = []
    rate = _achieved_rate(records, target_rate, limits)
    if rate is not None:
        checks.append(rate)
    late = [
        (r.send_ns - r.scheduled_ns) / 1e6
        for r in records
        if r.scheduled_ns is not None and r.send_ns  # never sent: no lateness to speak of
    ]
    if late:
        p99 = float(np.percentile(late, 99))
        checks.append(
            _check(
                "dispatch_lateness",
                p99,
                limits.max_dispatch_lateness_p99_ms,
                p99 <= limits.max_dispatch_lateness_p99_ms,
                f"p99 of send minus scheduled time is {p99:.1f} ms (the client's own "
                "dispatch delay, plus any wait for a slot under a concurrency cap)",
            )
        )
    return checks


def _receive_lag(ok: Sequence[RequestRecord], limit_ms: float) -> ValidityCheck | None:
    """Client stamp minus the server's write stamp per chunk, where the server stamps."""
    lags = [
        (t - sent) / 1e6
        for r in ok
        if r.server_sent_ns and len(r.server_sent_ns) == len(r.chunk_ns)
        for t, sent in zip(r.chunk_ns, r.server_sent_ns, strict=True)
    ]
    if not lags:
        return None
    p99 = float(np.percentile(lags, 99))
    return _check(
        "receive_lag",
        p99,
        limit_ms,
        p99 <= limit_ms,
        f"chunks reached the client {p99:.2f} ms after the server wrote them at p99 "
        f"({len(lags)} stamped chunks): every latency carries that",
    )


def suspicious_usage(rec: RequestRecord, max_per_chunk: float) -> str | None:
    """Why a request's reported token counts cannot be right, else None: the stream's own
    usage check (both ways, types included), the verdict's per-chunk ceiling, and
    reasoning tokens that outnumber the whole reply."""
    if rec.error_kind == "usage":  # the decoder refused it already: the point says so too
        error = rec.error or ""
        named = error.startswith(f"request {rec.request_id}:")  # the stream's check names it
        return error if named else f"request {rec.request_id}: {error}"
    if not rec.ok:
        return None
    reasoning, whole = rec.usage_reasoning_tokens, rec.usage_output_tokens
    if type(reasoning) is int and type(whole) is int and reasoning > whole:
        return (
            f"request {rec.request_id}: usage says {reasoning} reasoning tokens of a reply of "
            f"{whole} completion tokens (reasoning is part of the reply)"
        )
    return usage_disagreement(rec, max_per_chunk)


def _usage(records: Sequence[RequestRecord], limits: ValidityLimits) -> ValidityCheck:
    bad = [w for r in records if (w := suspicious_usage(r, limits.max_tokens_per_chunk))]
    shown = "; ".join(bad[:3]) + (f"; {len(bad) - 3} more" if len(bad) > 3 else "")
    why = shown or "usage agrees with max_tokens and the chunks streamed, both ways"
    return _check("usage_cross_check", float(len(bad)), 0.0, not bad, why)


#: The client's prompt count against the server's usage.prompt_tokens: a template or a
#: BOS token moves it by some tokens; a count off by this factor and by more than
#: PROMPT_MISS_TOKENS is a different prompt or a tokenizer that lies (an inflating
#: /tokenize gave 8 M client tokens for a server's 40).
PROMPT_MISS_FACTOR = 8.0
PROMPT_MISS_TOKENS = 64


def _prompt_miss(rec: RequestRecord) -> str | None:
    server, client = rec.usage_prompt_tokens, rec.prompt_tokens
    if rec.turn or type(server) is not int or server <= 0 or client <= 0:
        return None  # a later turn's history is counted by each side its own way
    far = max(client / server, server / client) > PROMPT_MISS_FACTOR
    if far and abs(client - server) > PROMPT_MISS_TOKENS:
        return (
            f"request {rec.request_id}: the client counted {client} prompt tokens, the "
            f"server's usage {server}"
        )
    return None


def _prompt_tokens(records: Sequence[RequestRecord]) -> ValidityCheck:
    """The input tokens every throughput adds, against the server's own count."""
    bad = [w for r in records if (w := _prompt_miss(r))]
    shown = "; ".join(bad[:3]) + (f"; {len(bad) - 3} more" if len(bad) > 3 else "")
    why = (
        f"{shown}: more than {PROMPT_MISS_FACTOR:g}x apart, so input throughputs are wrong "
        "(check the token counter: `tokenizer:`, the server's /tokenize)"
        if bad
        else "the client's prompt token counts agree with the server's usage"
    )
    return _check("prompt_token_cross_check", float(len(bad)), 0.0, not bad, why)


def _more_workers(load: ClientLoad) -> str:
    """The fix for a client that is the bottleneck."""
    n = max(len(load.workers), 1)
    return (
        f"; the client is the bottleneck: run more load workers (--workers {n * 2}, now {n}; "
        f"the client may use {len(load.cores) or '?'} CPUs)"
    )


def _client(
    load: ClientLoad, records: Sequence[RequestRecord], limits: ValidityLimits
) -> list[ValidityCheck]:
    checks = []
    n = len(load.workers)
    who = f"the busiest of {n} workers' event loops" if n else "the client's event loop"
    if load.loop_lag_p95_ms is not None:
        ok = load.loop_lag_p95_ms <= limits.max_loop_lag_p95_ms
        checks.append(
            _check(
                "client_loop_lag",
                load.loop_lag_p95_ms,
                limits.max_loop_lag_p95_ms,
                ok,
                f"{who} ran {load.loop_lag_p95_ms:.1f} ms late at p95 (max "
                f"{load.loop_lag_max_ms or 0:.1f}): timestamps are that late"
                + ("" if ok else _more_workers(load)),
            )
        )
    if load.process_cpu_fraction is not None:
        ok = load.process_cpu_fraction <= limits.max_client_cpu_fraction
        used = f"the client used {load.process_cpu_fraction:.0%} of a core (one event loop)"
        if n:
            used = (
                f"the busiest of {n} load workers used {load.process_cpu_fraction:.0%} of a core "
                f"({load.total_cpu_cores or 0:.2f} cores in all)"
            )
        checks.append(
            _check(
                "client_cpu",
                load.process_cpu_fraction,
                limits.max_client_cpu_fraction,
                ok,
                used + ("" if ok else _more_workers(load)),
            )
        )
    if load.cores_busy_fraction is not None:
        cores = ",".join(map(str, load.cores))
        checks.append(
            _check(
                "client_cores_busy",
                load.cores_busy_fraction,
                limits.max_client_cores_busy,
                load.cores_busy_fraction <= limits.max_client_cores_busy,
                f"CPUs {cores} (the client's) were {load.cores_busy_fraction:.0%} busy: the "
                "client competed for them (set client_cpus/engine_cpus apart); the loop lag "
                "and coalescing checks say whether it cost accuracy",
                severity="marks",
            )
        )
    if load.workers:
        checks.append(_bottleneck(load, records, limits))
    return checks


def _worker_behind(
    w: WorkerLoad, keeping: ScheduleKeeping | None, limits: ValidityLimits
) -> str | None:
    """Why one load worker could not keep up, else None; ``keeping``: its share of the
    drawn schedule against its sends (not its share of the nominal rate)."""
    if w.error:
        return f"worker {w.worker} ended early: {w.error}"
    if w.loop_lag_p95_ms is not None and w.loop_lag_p95_ms > limits.max_loop_lag_p95_ms:
        return f"worker {w.worker}'s loop ran {w.loop_lag_p95_ms:.1f} ms late at p95"
    if w.cpu_fraction is not None and w.cpu_fraction > limits.max_client_cpu_fraction:
        return f"worker {w.worker} used {w.cpu_fraction:.0%} of a core"
    late = w.dispatch_lateness_p99_ms
    if late is not None and late > limits.max_dispatch_lateness_p99_ms:
        return f"worker {w.worker} sent {late:.1f} ms after schedule at p99"
    if keeping is not None and keeping.fell_behind(
        limits.min_rate_ratio, limits.max_dispatch_lateness_p99_ms
    ):
        return (
            f"worker {w.worker} sent {keeping.achieved_rate:.1f} of the "
            f"{keeping.scheduled_rate:.1f} req/s its share of the schedule asked for "
            f"({keeping.rate_ratio:.0%})"
        )
    return None


def _bottleneck(
    load: ClientLoad, records: Sequence[RequestRecord], limits: ValidityLimits
) -> ValidityCheck:
    """Every load worker kept up with its share: loop lag, CPU, lateness, rate."""
    by_worker: dict[int | None, list[RequestRecord]] = {}
    for r in records:
        by_worker.setdefault(r.worker, []).append(r)
    behind = [
        why
        for w in load.workers
        if (why := _worker_behind(w, schedule_keeping(by_worker.get(w.worker, [])), limits))
    ]
    n = len(load.workers)
    if not behind:
        why = f"each of the {n} load workers kept up with its share (loop lag, CPU, schedule)"
    else:
        why = "; ".join(behind[:3]) + (f"; {len(behind) - 3} more" if len(behind) > 3 else "")
        why += _more_workers(load)
    return _check("client_bottleneck", float(len(behind)), 0.0, not behind, why)


def assess(
    records: Sequence[RequestRecord],
    flat: Mapping[str, Any],
    *,
    open_loop_rate: float | None,
    client_load: ClientLoad | None,
    limits: ValidityLimits | None = None,
    extra_checks: Sequence[ValidityCheck | None] = (),
    ignore_eos: bool = False,
    step_tokens: float | None = None,
) -> Validity:
    """Every check over the measured ``records`` and their metrics ``flat``, plus
    ``extra_checks`` made elsewhere (e.g. ``metrics.speculative.acceptance_check``;
    None entries are skipped). ``ignore_eos``: the requests asked for every token
    (a reply that stops short fails). The open-loop checks run for every point whose
    requests carry a schedule (a rate, a stage, a trace, multi-turn arrivals).
    ``step_tokens``: a speculative server's measured mean acceptance length, which
    allows that share of zero chunk gaps (:func:`inferx_core.metrics.spec_gaps.zero_gap_limit`)."""
    limits = limits or ValidityLimits()
    measured = [r for r in records if not r.warmup]
    # the replies the point counts completed: its latency and ITL populations (a short
    # reply is failed there), so the sample sizes and gaps judged are the figures' own
    ok = [r for r in measured if judged_request(r, ignore_eos).ok]
    checks = [
        _error_rate(measured, limits.max_error_rate, ignore_eos),
        _client_resources(measured),
        _usage(measured, limits),
        _prompt_tokens(measured),
    ]
    gaps = sum(max(len(r.chunk_ns) - 1, 0) for r in ok)
    checks += list(_coalescing(flat, ok, gaps, limits, step_tokens))
    if open_loop_rate is None and any(r.scheduled_ns is not None for r in measured):
        checks += _open_loop(measured, None, limits)  # stages, sessions: their schedule
    elif open_loop_rate is not None and math.isfinite(open_loop_rate):  # inf: all at once
        checks += _open_loop(measured, open_loop_rate, limits)
    if client_load is not None:
        checks += _client(client_load, measured, limits)
    lag = _receive_lag(ok, limits.max_receive_lag_p99_ms)
    if lag is not None:
        checks.append(lag)
    counts = {"ttft": len(ok), "e2el": len(ok), "itl": gaps}
    checks += list(_sample_sizes(flat, flat.get("percentiles") or (), counts))
    checks += [c for c in extra_checks if c is not None]
    return Validity(
        valid=all(c.passed or c.severity != "invalidates" for c in checks), checks=checks
    )
