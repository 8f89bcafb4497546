"""One probe run judged against a search's SLO: a score (<= 1 meets it) and what bound it.

Per-request limits with a goodput share ``g``: each request gets its ratio, the
largest of ``value / limit`` over the limits (``limit / value`` for
interactivity, infinite for a failed request); at least ``g`` of the requests
meet every limit exactly when the ``g``-quantile of the ratios (the
``ceil(g n)``-th smallest) is <= 1, so that quantile is the score: a
continuous figure whose distance from 1 is how close the verdict was.
Percentile limits (``p99_ttft_ms``) score the reported figure over its limit.

Every point counts (docs/search.md, "how a claim is made"): a point that is
``invalid`` for the server's doing (too many failed requests, usage that lies) or
``failed`` with nothing completed is a **fail** at its level, never a skip. Only
what says nothing about the server's capacity is left unjudged (score None, with
the reason): a client that could not keep up (the other validity checks), an
interrupted run, a server that stopped answering (every request refused or reset),
a level that was not held (:mod:`~inferx_core.metrics.search_held`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from inferx_core.config.slo import SloTarget
from inferx_core.metrics.requests import RequestMetrics
from inferx_core.metrics.search import Measurement

__all__ = ["SERVER_FAULTS", "judge_run", "request_ratio"]

#: Failing validity checks that are the server's doing: such a point fails its level.
SERVER_FAULTS: tuple[str, ...] = ("error_rate", "usage_cross_check", "short_replies")
#: A failed point whose requests all completed nothing: a fail (not a stopped server).
NOTHING_COMPLETED = "no request completed"


def _value(m: RequestMetrics, key: str) -> float:
    # vLLM's goodput conventions: no TPOT (<= 1 token) counts as 0, no gap as 0.
    if key == "ttft_ms":
        return m.ttft_ms or 0.0
    if key == "tpot_ms":
        return m.tpot_ms or 0.0
    if key == "itl_ms":
        return m.max_itl_ms or 0.0
    return m.e2el_ms or 0.0


def request_ratio(m: RequestMetrics, limits: Mapping[str, float]) -> tuple[float, str]:
    """The request's worst value/limit ratio and the limit that gave it (inf: it failed)."""
    if m.ttft_ms is None or m.e2el_ms is None:
        return math.inf, "errors"
    worst, name = -math.inf, ""
    for key, limit in limits.items():
        if key == "intvty":
            ratio = 0.0 if m.interactivity is None else limit / m.interactivity
        else:
            ratio = _value(m, key) / limit
        if ratio > worst:
            worst, name = ratio, key
    return worst, name


def _goodput_score(
    requests: Sequence[RequestMetrics], limits: Mapping[str, float], share: float
) -> tuple[float, str]:
    ratios = sorted(request_ratio(m, limits) for m in requests)
    k = max(math.ceil(share * len(ratios) - 1e-9), 1)
    score, name = ratios[k - 1]
    return score, f"{name} ({share:.4g} of requests)"


def judge_run(
    status: str,
    failure_reason: str | None,
    flat: Mapping[str, object],
    requests: Sequence[RequestMetrics] | None,
    target: SloTarget,
    point_id: str | None = None,
) -> Measurement:
    """The run's score against ``target``, or why it cannot be judged."""
    if status != "ok":
        return _not_ok(status, failure_reason, flat, point_id)
    scores: list[tuple[float, str]] = []
    limits = target.per_request()
    if limits:
        if not requests:
            return Measurement(None, reason="no measured requests to judge", point_id=point_id)
        scores.append(_goodput_score(requests, limits, target.goodput))
    for key, limit in target.percentile_limits().items():
        value = flat.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            why = f"{key} is not reported (add its percentile to `percentiles:`)"
            return Measurement(None, reason=why, point_id=point_id)
        scores.append((float(value) / limit, key))
    score, binding = max(scores, key=lambda s: s[0])
    return Measurement(score, binding, point_id=point_id)


def _server_faults(failure_reason: str | None, flat: Mapping[str, object]) -> list[str]:
    """The failing validity checks that are the server's (by name, else from the reason)."""
    failing = flat.get("validity_failing")
    if isinstance(failing, list):
        return [str(n) for n in failing if n in SERVER_FAULTS]
    return [n for n in SERVER_FAULTS if n in (failure_reason or "")]


def _not_ok(
    status: str, failure_reason: str | None, flat: Mapping[str, object], point_id: str | None
) -> Measurement:
    """A point that is not ``ok``: a fail when the server is answerable for it, else why not."""
    why = failure_reason or status
    why = why if why.startswith(status) else f"{status}: {why}"
    faults = _server_faults(failure_reason, flat) if status == "invalid" else []
    if faults:
        return Measurement(math.inf, f"invalid ({', '.join(faults)})", point_id=point_id)
    if status == "failed" and NOTHING_COMPLETED in (failure_reason or ""):
        return Measurement(math.inf, "errors (nothing completed)", point_id=point_id)
    return Measurement(None, reason=why, point_id=point_id)
