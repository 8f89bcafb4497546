"""The ``search:`` section: find the largest load that still meets an SLO.

``search: {over: concurrency, slo: {ttft_ms: 500, tpot_ms: 50}}`` asks for the
highest concurrency (or request rate) at which 99% of the requests meet every
per-request limit; ``p99_ttft_ms: 800``-style keys are limits on a reported
percentile instead, and both kinds may be mixed. The algorithm is in
:mod:`inferx_core.metrics.search`, the driver in :mod:`inferx_core.pipeline.search`,
the guarantees in ``docs/search.md``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from inferx_core.config.base import StrictModel
from inferx_core.config.bounds import MAX_CONCURRENCY, MAX_REPEATS

__all__ = [
    "PER_REQUEST_LIMITS",
    "SearchConfig",
    "percentile_limit_parts",
]

#: Per-request limits: a request is good when it meets every one given (ms, except
#: ``intvty``: the least tokens/s one user sees, 1000 / TPOT).
PER_REQUEST_LIMITS: tuple[str, ...] = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "intvty")
_PERCENTILE_LIMIT = re.compile(r"^(p\d+(?:\.\d+)?|median|mean)_(ttft|tpot|itl|e2el)_ms$")
_KEYS_HELP = (
    "ttft_ms, tpot_ms, itl_ms, e2el_ms, intvty (per request), goodput (their share, "
    "default 0.99), or a percentile limit such as p99_ttft_ms, median_tpot_ms"
)


def percentile_limit_parts(key: str) -> tuple[str, str] | None:
    """``p99_ttft_ms`` -> (``p99``, ``ttft``); None for any other key."""
    match = _PERCENTILE_LIMIT.match(key)
    return (match.group(1), match.group(2)) if match else None


class SearchConfig(StrictModel):
    """Bracketing then bisection over one load axis, to ``tolerance``, within a budget."""

    over: Literal["concurrency", "rate"] = Field(
        description="The load axis searched: closed-loop concurrency or open-loop request rate"
    )
    slo: dict[str, float] = Field(
        description=f"The limits, by name: {_KEYS_HELP}",
    )
    goodput: float = Field(
        default=0.99,
        gt=0,
        le=1,
        description="Share of requests that must meet every per-request limit",
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

    @field_validator("slo")
    @classmethod
    def _known_limits(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            raise ValueError(f"give at least one limit: {_KEYS_HELP}")
        for key, limit in value.items():
            known = key == "goodput" or key in PER_REQUEST_LIMITS
            if not known and percentile_limit_parts(key) is None:
                raise ValueError(f"unknown SLO {key!r}; expected {_KEYS_HELP}")
            if not (limit > 0 and limit == limit and limit != float("inf")):
                raise ValueError(f"SLO {key}: a finite number > 0, got {limit!r}")
        if "goodput" in value and not value["goodput"] <= 1:
            raise ValueError("SLO goodput is a share of requests: at most 1 (e.g. 0.99)")
        return value

    @model_validator(mode="after")
    def _levels(self) -> SearchConfig:
        if "goodput" in self.slo:  # `--slo goodput=0.95` sets the share
            self.goodput = self.slo.pop("goodput")
            if not self.slo:
                raise ValueError(f"goodput needs per-request limits: {_KEYS_HELP}")
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

    def per_request(self) -> dict[str, float]:
        """The per-request limits, as given."""
        return {k: v for k, v in self.slo.items() if k in PER_REQUEST_LIMITS}

    def percentile_limits(self) -> dict[str, float]:
        """Limits on reported figures (``p99_ttft_ms``: ...)."""
        return {k: v for k, v in self.slo.items() if percentile_limit_parts(k)}

    def goodput_slos(self) -> dict[str, float]:
        """The per-request limits as the result's goodput SLOs (ms; ``intvty`` as TPOT)."""
        out = {k: v for k, v in self.per_request().items() if k != "intvty"}
        if "intvty" in self.slo:
            tpot = 1000.0 / self.slo["intvty"]
            out["tpot_ms"] = min(out.get("tpot_ms", tpot), tpot)
        return out

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
        parts = []
        if self.per_request():
            limits = ", ".join(
                f"{k}>={v:g}" if k == "intvty" else f"{k}<={v:g}"
                for k, v in self.per_request().items()
            )
            parts.append(f"{self.goodput:.4g} of requests: {limits}")
        parts += [f"{k}<={v:g}" for k, v in self.percentile_limits().items()]
        return f"{self.over}, " + "; ".join(parts)
