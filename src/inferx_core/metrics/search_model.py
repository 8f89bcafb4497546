"""The answer of a capacity search, one per server configuration: ``SearchSummary``.

Written next to the probes' point results as ``search/<search_id>.json`` (a
folder result readers skip); read back by ``inferx report`` for the buyer's
table. Cost per million tokens and tokens per MW at capacity are computed by
the report from the capacity point's result (``analysis/cost.py``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from inferx_core.config.slo import SloTarget
from inferx_core.metrics.knee import Knee
from inferx_core.metrics.search import Probe, SearchOutcome

__all__ = ["SEARCH_SCHEMA", "KneeEvidence", "ProbeEvidence", "SearchSummary"]

SEARCH_SCHEMA = 1
#: The figures of the capacity point copied into the summary (flat names).
AT_CAPACITY: tuple[str, ...] = (
    "output_throughput",
    "total_token_throughput",
    "request_throughput",
    "tput_per_gpu",
    "output_tput_per_gpu",
    "request_goodput",
    "output_goodput",
    "good_completed",
    "completed",
    "p99_ttft_ms",
    "p99_tpot_ms",
    "median_e2el_ms",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProbeEvidence(_Model):
    level: float
    state: str  # pass | fail | unknown
    score: float | None  # the median run's worst ratio to a limit (<= 1 passes)
    spread: tuple[float, float] | None  # min and max score over its runs
    runs: int
    uncertain: bool
    binding: str | None
    point_id: str | None
    reason: str | None = None
    # per judged run, what it reached (peak/mean in flight, achieved and drawn rate, backlog)
    reached: list[dict[str, float | int | None]] | None = None

    @classmethod
    def of(cls, probe: Probe) -> ProbeEvidence:
        return cls(
            level=probe.level,
            state=probe.state,
            score=_finite(probe.score),
            spread=None if probe.spread is None else (_cap(probe.spread[0]), _cap(probe.spread[1])),
            runs=len(probe.runs),
            uncertain=probe.uncertain,
            binding=probe.binding,
            point_id=probe.point_id,
            reason=probe.reason,
            reached=[dict(r.reached) for r in probe.runs if r.reached is not None] or None,
        )


class KneeEvidence(_Model):
    level: float
    next_level: float
    reason: str

    @classmethod
    def of(cls, knee: Knee) -> KneeEvidence:
        return cls(level=knee.level, next_level=knee.next_level, reason=knee.reason)


class SearchSummary(_Model):
    """What a search found for one server configuration, with its evidence."""

    schema_version: int = SEARCH_SCHEMA
    search_id: str
    server_id: str | None
    over: str  # concurrency | rate
    slo: str  # the constraint in one line
    limits: dict[str, float]
    goodput_target: float
    status: str  # found | above_max | below_min | budget | undetermined
    reason: str
    capacity: float | None
    capacity_point_id: str | None
    binding_slo: str | None
    last_pass: ProbeEvidence | None
    first_fail: ProbeEvidence | None
    probes: list[ProbeEvidence]
    runs: int
    noise_band: float
    at_capacity: dict[str, float | int | None]
    knee: KneeEvidence | None = None
    # What the search did besides probing: probe files not reused on --resume, and why
    notes: list[str] = []

    @classmethod
    def build(
        cls,
        outcome: SearchOutcome,
        *,
        ids: tuple[str, str | None],
        constraint: tuple[str, SloTarget],
        at_capacity: dict[str, Any],
        knee: Knee | None,
        notes: list[str] | None = None,
    ) -> SearchSummary:
        """``ids``: (search id, server id); ``constraint``: (axis, the target judged)."""
        over, target = constraint
        last = outcome.last_pass
        return cls(
            search_id=ids[0],
            server_id=ids[1],
            over=over,
            slo=f"{over}, {target.describe()}",
            limits=dict(target.limits),
            goodput_target=target.goodput,
            status=outcome.status,
            reason=outcome.reason,
            capacity=outcome.capacity,
            capacity_point_id=last.point_id if last else None,
            binding_slo=_binding(outcome),
            last_pass=ProbeEvidence.of(last) if last else None,
            first_fail=ProbeEvidence.of(outcome.first_fail) if outcome.first_fail else None,
            probes=[ProbeEvidence.of(p) for p in outcome.probes],
            runs=outcome.runs,
            noise_band=outcome.band,
            at_capacity={k: at_capacity.get(k) for k in AT_CAPACITY},
            knee=KneeEvidence.of(knee) if knee else None,
            notes=list(notes or ()),
        )

    def target(self) -> SloTarget:
        """The SLO its levels were judged against (the buyer's table judges the other
        points of a report against it too)."""
        return SloTarget(limits=dict(self.limits), goodput=self.goodput_target)


def _binding(outcome: SearchOutcome) -> str | None:
    """The limit that stopped the load from rising: the first failing probe's."""
    if outcome.first_fail is not None:
        return outcome.first_fail.binding
    return outcome.last_pass.binding if outcome.last_pass else None


def _finite(value: float | None) -> float | None:
    return None if value is None else _cap(value)


def _cap(value: float) -> float:
    # JSON has no infinity: a probe whose requests failed scores "over any limit"
    return min(value, 1e300)
