"""The ``load:`` section: how hard to push (closed or open loop, arrivals, counts, limits).

Kept out of :mod:`inferx_core.config.models` (which re-exports it) so each stays
readable; an infinite ``request_rate`` is vLLM's "every request at once" and
becomes a closed loop in :func:`inferx_core.config.points.load_points`.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from inferx_core.config.base import StrictModel
from inferx_core.config.bounds import (
    MAX_CONCURRENCY,
    MAX_PROMPTS,
    MAX_REPEATS,
    check_prompts_per_point,
)
from inferx_core.config.sessions import StageConfig, check_stages_load

__all__ = ["LoadProfile"]


class LoadProfile(StrictModel):
    """How hard to push: closed loop over concurrencies, or open loop at a rate."""

    concurrency: list[Annotated[int, Field(le=MAX_CONCURRENCY)]] | None = Field(
        default=None, description="Closed loop: max concurrency levels, one load point each"
    )
    request_rate: list[Annotated[float, Field(allow_inf_nan=True)]] | None = Field(
        default=None,
        description="Open loop: requests/s, one load point each; inf (.inf in YAML): every "
        "request at once, as vLLM's --request-rate inf (a closed loop at max_concurrency, "
        "or at num_prompts without a cap)",
    )
    arrival: Literal["poisson", "constant"] = "poisson"
    burstiness: float = Field(
        default=1.0,
        gt=0,
        description="Poisson arrivals: gamma shape of the gaps, mean 1/rate (vLLM's; 1: Poisson, "
        "<1 burstier)",
    )
    ramp: Literal["linear", "exponential"] | None = Field(
        default=None, description="Open loop: ramp from ramp_start_rps up to each request_rate"
    )
    ramp_start_rps: float | None = Field(default=None, gt=0, description="The ramp's first rate")
    max_concurrency: int | None = Field(
        default=None, ge=1, le=MAX_CONCURRENCY, description="Cap for open loop"
    )
    num_prompts: int | None = Field(
        default=None, ge=1, le=MAX_PROMPTS, description=f"Measured prompts (at most {MAX_PROMPTS})"
    )
    prompts_per_concurrency: int = Field(
        default=10,
        ge=1,
        le=MAX_PROMPTS,
        description="num_prompts default = this x concurrency (InferenceX)",
    )
    duration_s: float | None = Field(default=None, gt=0, description="Stop dispatching after")
    warmup: int | None = Field(
        default=None,
        ge=0,
        le=MAX_PROMPTS,
        description="Warmup requests; default: one per concurrent slot",
    )
    request_timeout_s: float = Field(default=600.0, gt=0, description="Whole request, at most")
    first_token_timeout_s: float | None = Field(
        default=300.0,
        gt=0,
        description="A request fails when its first token takes longer (a server that accepts "
        "and never answers); None: only request_timeout_s",
    )
    idle_timeout_s: float | None = Field(
        default=60.0,
        gt=0,
        description="A request fails when, after its first token, no token comes for this long",
    )
    max_sse_line_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="Longest line (one event's data) a streamed reply may send; a longer one "
        "fails its request, naming this setting (bounds the client's memory)",
    )
    repeats: int = Field(
        default=1,
        ge=1,
        le=MAX_REPEATS,
        description="Run every point this many times, interleaved; the result is the median "
        "run with the spread of all (`inferx docs metrics`)",
    )
    stages: list[StageConfig] | None = Field(
        default=None,
        min_length=1,
        description="Load levels run in order within one point: [{rate: R | concurrency: C, "
        "duration_s: D}, ...] (`inferx docs workloads`)",
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        le=512,
        description="Load generator processes sharing one schedule (`inferx docs scale-out`); "
        "default: one per two CPUs the client may use, 1 to 8 (1: in-process)",
    )

    @model_validator(mode="after")
    def _one_mode(self) -> LoadProfile:
        if self.concurrency is not None and self.request_rate is not None:
            raise ValueError("give either 'concurrency' (closed loop) or 'request_rate', not both")
        check_stages_load(self)
        if self.concurrency is None and self.request_rate is None and not self.stages:
            self.concurrency = [1]
        for c in self.concurrency or []:
            if c < 1:
                raise ValueError(f"concurrency levels must be >= 1, got {c}")
        self._check_rates()
        check_prompts_per_point(self)
        return self

    def _check_rates(self) -> None:
        rates = self.request_rate or []
        for r in rates:
            if not r > 0:  # nan too
                raise ValueError(f"request rates must be > 0 (inf: all at once), got {r}")
        if self.ramp is not None and (self.request_rate is None or self.ramp_start_rps is None):
            raise ValueError(
                "ramp needs request_rate (the end rates) and ramp_start_rps (the first rate)"
            )
        if not any(math.isinf(r) for r in rates):
            return
        if self.ramp is not None:
            raise ValueError("a ramp needs finite request rates to ramp up to, not inf")
        if self.max_concurrency is None and self.num_prompts is None:
            raise ValueError(
                "request_rate inf sends every prompt at once: give num_prompts (how many), "
                "or max_concurrency (a closed loop at that cap)"
            )
