"""The ``search:`` section: find the largest load that still meets an SLO.

``search: {over: concurrency, slo: {ttft_ms: 500, tpot_ms: 50}}`` asks for the
highest concurrency (or request rate) at which 99% of the requests meet every
per-request limit; ``p99_ttft_ms: 800``-style keys are limits on a reported
percentile instead, and both kinds may be mixed. ``slo`` is the one
:class:`~inferx_core.config.slo.SloTarget`; the rest are the search's own knobs.
The algorithm is in
:mod:`inferx_core.metrics.search`, the driver in :mod:`inferx_core.pipeline.search.driver`,
the guarantees in ``docs/search.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_validator

from inferx_core.config.base import StrictModel
from inferx_core.config.bounds import MAX_CONCURRENCY, MAX_PROMPTS, MAX_REPEATS
from inferx_core.config.slo import (
    PER_REQUEST_LIMITS,
    SLO_KEYS_HELP,
    SloTarget,
    percentile_limit_parts,
)

__all__ = [
    "MIN_PROMPTS_PER_SLOT",
    "MIN_RATE_PROBE_S",
    "PER_REQUEST_LIMITS",
    "SearchConfig",
    "percentile_limit_parts",
]

#: A concurrency probe runs at least this many prompts per slot: C slots stay full
#: for (n - C) of its n requests, so the level is held for most of the run.
MIN_PROMPTS_PER_SLOT = 4
#: A rate probe runs at least this long when no TTFT/E2E limit sizes it.
MIN_RATE_PROBE_S = 5.0
#: ... and at most this long (a limit of minutes would ask for hours).
MAX_RATE_PROBE_S = 600.0


class SearchConfig(StrictModel):
    """Bracketing then bisection over one load axis, to ``tolerance``, within a budget."""

    over: Literal["concurrency", "rate"] = Field(
        description="The load axis searched: closed-loop concurrency or open-loop request rate"
    )
    slo: SloTarget = Field(
        description=f"The target every probe is judged against, by name: {SLO_KEYS_HELP}",
    )
    start: float | None = Field(default=None, gt=0, description="First level (default 1)")
    min: float | None = Field(default=None, gt=0, description="Lowest level (default 1 / 0.1)")
    max: float | None = Field(
        default=None, gt=0, description="Highest level (default 4096 / 10000 req/s)"
    )
    tolerance: float | None = Field(
        default=None,
        gt=0,
        description="Stop when the bracket is this narrow (default 1 for concurrency, "
        "5% of the passing rate for rate)",
    )
    max_probes: int = Field(
        default=16, ge=1, le=MAX_REPEATS, description="Runs at most, repeats included"
    )
    max_seconds: float | None = Field(
        default=None, gt=0, description="Start no probe after this many seconds"
    )
    noise: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="A verdict within this share of its limit is repeated before it is "
        "trusted (widened by the spread repeats measure)",
    )
    max_runs: int = Field(
        default=3, ge=1, le=MAX_REPEATS, description="Runs of one probe at most (noise)"
    )
    min_probe_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_RATE_PROBE_S,
        description="Rate probes run at least this long (default: the largest TTFT/E2E "
        "limit over the tolerance's share, the time a queue needs to show an overload of "
        f"that share; at least {MIN_RATE_PROBE_S:g} s)",
    )

    @model_validator(mode="before")
    @classmethod
    def _share_into_target(cls, data: Any) -> Any:
        """``search.goodput``, where configs gave the share before it joined the target,
        is read as the target's ``goodput`` (one given in ``slo``, e.g. by ``--slo
        goodput=0.95``, wins, as it always did)."""
        if not isinstance(data, Mapping) or "goodput" not in data:
            return data
        data = dict(data)
        share, slo = data.pop("goodput"), data.get("slo")
        if isinstance(slo, SloTarget):
            slo = slo.model_dump()
        if isinstance(slo, Mapping):  # else the field says what is wrong with it
            inner = slo.get("limits", slo)
            has_share = "goodput" in slo or (isinstance(inner, Mapping) and "goodput" in inner)
            data["slo"] = slo if has_share else {**slo, "goodput": share}
        return data

    @model_validator(mode="after")
    def _levels(self) -> SearchConfig:
        low, high = self.lowest(), self.highest()
        if self.over == "concurrency":
            for name in ("start", "min", "max", "tolerance"):
                value = getattr(self, name)
                if value is not None and value != int(value):
                    raise ValueError(f"search.{name}: a whole concurrency, got {value:g}")
            if high > MAX_CONCURRENCY:
                raise ValueError(f"search.max: at most {MAX_CONCURRENCY} requests in flight")
        if not low <= self.first() <= high:
            raise ValueError(f"search: start {self.first():g} is outside [{low:g}, {high:g}]")
        return self

    def first(self) -> float:
        return self.start if self.start is not None else max(1.0, self.lowest())

    def lowest(self) -> float:
        if self.min is not None:
            return self.min
        return 1.0 if self.over == "concurrency" else 0.1

    def highest(self) -> float:
        if self.max is not None:
            return self.max
        return 4096.0 if self.over == "concurrency" else 10_000.0

    def describe(self) -> str:
        """One line: ``concurrency, 99% of requests: ttft_ms<=500; p99_tpot_ms<=50``."""
        return f"{self.over}, {self.slo.describe()}"

    def probe_seconds(self, level: float) -> float:
        """How long a rate probe at ``level`` must run to tell an overload of the tolerance:
        arrivals a share ``e`` above what the server serves grow its queue's wait by about
        ``e`` seconds per second, so a wait past limit ``L`` shows after ``L / e``."""
        if self.min_probe_s is not None:
            return self.min_probe_s
        share = (self.tolerance / level) if self.tolerance is not None else 0.05
        limit = self.slo.latency_limit_s()
        wanted = limit / max(share, 1e-3) if limit is not None else MIN_RATE_PROBE_S
        return min(max(wanted, MIN_RATE_PROBE_S), MAX_RATE_PROBE_S)

    def probe_prompts(self, level: float, usual: int) -> int:
        """Measured prompts of a probe at ``level`` (``usual``: what the load would run):
        concurrency, at least :data:`MIN_PROMPTS_PER_SLOT` per slot; rate, at least
        :meth:`probe_seconds` of arrivals. At most ``MAX_PROMPTS`` (a longer probe is
        judged as not held or too short, and says so)."""
        if self.over == "concurrency":
            need = MIN_PROMPTS_PER_SLOT * int(level)
        else:
            need = math.ceil(level * self.probe_seconds(level)) if math.isfinite(level) else usual
        return min(max(usual, need), MAX_PROMPTS)
