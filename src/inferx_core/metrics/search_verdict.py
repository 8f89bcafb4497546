"""One probe run judged against a search's SLO: a score (<= 1 meets it) and what bound it.

Per-request limits with a goodput share ``g``: each request gets its ratio, the
largest of ``value / limit`` over the limits (``limit / value`` for
interactivity, infinite for a failed request); at least ``g`` of the requests
meet every limit exactly when the ``g``-quantile of the ratios (the
``ceil(g n)``-th smallest) is <= 1, so that quantile is the score: a
continuous figure whose distance from 1 is how close the verdict was.
Percentile limits (``p99_ttft_ms``) score the reported figure over its limit.
A point that is not ``ok`` (invalid: a starved client, too many errors; failed;
interrupted) is never scored: its reason is the answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from inferx_core.config.search import SearchConfig
from inferx_core.metrics.requests import RequestMetrics
from inferx_core.metrics.search import Measurement

__all__ = ["judge_run", "request_ratio"]


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
    search: SearchConfig,
    point_id: str | None = None,
) -> Measurement:
    """The run's score against ``search.slo``, or why it cannot be judged."""
    if status != "ok":
        why = failure_reason or status
        return Measurement(
            None, reason=why if why.startswith(status) else f"{status}: {why}", point_id=point_id
        )
    scores: list[tuple[float, str]] = []
    limits = search.per_request()
    if limits:
        if not requests:
            return Measurement(None, reason="no measured requests to judge", point_id=point_id)
        scores.append(_goodput_score(requests, limits, search.goodput))
    for key, limit in search.percentile_limits().items():
        value = flat.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            why = f"{key} is not reported (add its percentile to `percentiles:`)"
            return Measurement(None, reason=why, point_id=point_id)
        scores.append((float(value) / limit, key))
    score, binding = max(scores, key=lambda s: s[0])
    return Measurement(score, binding, point_id=point_id)
