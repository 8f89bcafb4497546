"""Speculative decoding per request, from the engine's replies, beside the /metrics window.

The engine's per-request counts (vLLM ``metrics.speculative_decoding``,
llama.cpp ``timings.draft_n``/``draft_n_accepted``, SGLang
``sglext.spec_tokens_details``; read into ``RequestRecord.server_figures``)
give each request's acceptance rate = accepted / draft tokens, so a point
shows which requests accept badly, not only the window's mean.

Bounds: a request's rate is in [0, 1] (accepted tokens cannot exceed the
draft tokens); one outside is left out, counted, with the reason.

Agreement: the pooled rate (sum of accepted / sum of draft tokens over the
measured requests) and the window's rate from the engine's counters
(:mod:`inferx_core.telemetry.speculative`) count the same drafts on the same
run, so they agree within :data:`AGREEMENT_TOLERANCE` (absolute); the window
also holds warmup stragglers and requests still in flight at its edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.model import Distribution
from inferx_core.metrics.requests import judged_request
from inferx_core.metrics.stats import describe

__all__ = ["AGREEMENT_TOLERANCE", "SpecPerRequest", "spec_per_request"]

#: |pooled per-request rate - window rate| at most this counts as agreeing.
AGREEMENT_TOLERANCE = 0.05
_WORST = 5  # requests listed as the worst accepting


class SpecPerRequest(BaseModel):
    """Acceptance per request and pooled, and its agreement with the /metrics window."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int = 0  # requests with draft tokens
    out_of_bounds: int = 0  # accepted > draft tokens: left out
    draft_tokens: int = 0
    accepted_tokens: int = 0
    drafts: int | None = None  # verify steps, where the engine reports them
    acceptance_rate: float | None = None  # pooled: accepted / draft tokens
    mean_acceptance_length: float | None = None  # 1 + accepted / drafts
    request_acceptance_rate: Distribution = Field(default_factory=Distribution)
    # The lowest-accepting requests: request_id, response_id, rate, draft tokens.
    worst: list[dict[str, Any]] = Field(default_factory=list)
    window_acceptance_rate: float | None = None
    agrees_with_window: bool | None = None
    why: str | None = None


def _rows(ok: Sequence[RequestRecord]) -> tuple[list[tuple[RequestRecord, int, int]], int]:
    rows, bad = [], 0
    for rec in ok:
        fig = rec.server_figures or {}
        draft, accepted = fig.get("spec_draft_tokens"), fig.get("spec_accepted_tokens")
        if type(draft) is not int or type(accepted) is not int or draft <= 0:
            continue
        if accepted > draft:
            bad += 1
            continue
        rows.append((rec, draft, accepted))
    return rows, bad


def _drafts(rows: list[tuple[RequestRecord, int, int]]) -> int | None:
    """Verify steps summed, when every request reported them (vLLM, SGLang)."""
    each = [(rec.server_figures or {}).get("spec_drafts") for rec, _, _ in rows]
    counts = [d for d in each if type(d) is int]  # a bool is no count
    return sum(counts) if each and len(counts) == len(each) else None


def _agreement(pooled: float | None, window: Mapping[str, Any] | None) -> dict[str, Any]:
    rate = window.get("acceptance_rate") if window else None
    if pooled is None or not isinstance(rate, int | float):
        return {"why": "no acceptance rate from the /metrics window to compare"}
    agrees = abs(pooled - rate) <= AGREEMENT_TOLERANCE
    return {
        "window_acceptance_rate": float(rate),
        "agrees_with_window": agrees,
        "why": f"per-request {pooled:.3f} vs window {rate:.3f} "
        f"({'within' if agrees else 'beyond'} {AGREEMENT_TOLERANCE:g})",
    }


def spec_per_request(
    records: Sequence[RequestRecord],
    window: Mapping[str, Any] | None,
    *,
    ignore_eos: bool = False,
) -> SpecPerRequest | None:
    """The point's per-request acceptance; None when no reply carried draft counts.
    ``window``: the point's ``spec_decode`` figures from the engine's /metrics, if any.
    Only replies the point counts completed (``ignore_eos``: the workload's): a shed
    reply's drafts are no measure of the speculation."""
    measured = [r for r in records if not r.warmup]
    rows, bad = _rows([r for r in measured if judged_request(r, ignore_eos).ok])
    if not rows and not bad:
        return None
    drafts = _drafts(rows)
    draft_tokens = sum(d for _, d, _ in rows)
    accepted = sum(a for _, _, a in rows)
    pooled = accepted / draft_tokens if draft_tokens else None
    rates = sorted(((a / d, rec) for rec, d, a in rows), key=lambda x: x[0])
    worst = [
        {"request_id": rec.request_id, "response_id": rec.response_id, "acceptance_rate": r}
        for r, rec in rates[:_WORST]
    ]
    return SpecPerRequest(
        requests=len(rows),
        out_of_bounds=bad,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        drafts=drafts,
        acceptance_rate=pooled,
        mean_acceptance_length=1.0 + accepted / drafts if drafts else None,
        request_acceptance_rate=Distribution.from_stats(
            describe([r for r, _ in rates], (10.0, 50.0, 90.0))
        ),
        worst=worst,
        **_agreement(pooled, window),
    )
