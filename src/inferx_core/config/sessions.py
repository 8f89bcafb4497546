"""Config of multi-turn sessions (``workload.kind: multi-turn``) and load stages.

Kept out of :mod:`inferx_core.config.models` so the models stay readable; the
checks take the models duck-typed (this module is imported by them).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from inferx_core.config.base import StrictModel

__all__ = ["StageConfig", "ThinkTimeConfig", "check_multi_turn_workload", "check_stages_load"]


class ThinkTimeConfig(StrictModel):
    """Seconds a user thinks between a reply and the next turn: ``constant`` (``mean``),
    ``exponential`` (``mean``) or ``lognormal`` (``median``, ``sigma``)."""

    kind: Literal["constant", "exponential", "lognormal"] = "constant"
    mean: float | None = Field(default=None, ge=0, description="constant / exponential: seconds")
    median: float | None = Field(default=None, gt=0, description="lognormal: median seconds")
    sigma: float | None = Field(default=None, ge=0, description="lognormal: sigma of log(s)")

    @model_validator(mode="after")
    def _parameters(self) -> ThinkTimeConfig:
        if self.kind in ("constant", "exponential"):
            if self.mean is None:
                raise ValueError(f"think_time_s kind {self.kind!r} needs mean (seconds)")
            if self.median is not None or self.sigma is not None:
                raise ValueError(f"think_time_s kind {self.kind!r} takes mean only")
        else:
            if self.median is None or self.sigma is None:
                raise ValueError("think_time_s kind 'lognormal' needs median (seconds) and sigma")
            if self.mean is not None:
                raise ValueError("think_time_s kind 'lognormal' takes median and sigma, not mean")
        return self


class StageConfig(StrictModel):
    """One load stage: exactly one of ``rate`` (requests/s) and ``concurrency``."""

    rate: float | None = Field(default=None, gt=0, description="Open loop: requests/s")
    concurrency: int | None = Field(default=None, ge=1, description="Closed loop: in flight")
    duration_s: float = Field(gt=0, description="How long the stage runs")

    @model_validator(mode="after")
    def _one_level(self) -> StageConfig:
        if (self.rate is None) == (self.concurrency is None):
            raise ValueError("a stage needs exactly one of rate and concurrency")
        if self.rate is not None and self.rate == float("inf"):
            raise ValueError("a stage's rate must be finite (use concurrency for a closed loop)")
        return self


def check_multi_turn_workload(workload: Any) -> None:
    """Multi-turn fields only with kind 'multi-turn', and nothing that sets prompts otherwise."""
    defaults = {"turns": 2, "think_time_s": 0.0, "turn_isl": None, "turn_osl": None}
    session_fields = {k for k, v in defaults.items() if getattr(workload, k) != v}
    if workload.kind != "multi-turn":
        if session_fields:
            raise ValueError(
                f"{', '.join(sorted(session_fields))} apply to kind 'multi-turn' only "
                f"(kind is {workload.kind!r}); set kind: multi-turn"
            )
        return
    if workload.shared_prefix or workload.dataset is not None or workload.trace is not None:
        raise ValueError("kind 'multi-turn' builds its own prompts: remove shared_prefix/dataset")


def check_stages_load(load: Any) -> None:
    """Stages are the point's load: no levels, duration or ramp beside them."""
    if not load.stages:
        return
    given = [
        name
        for name, value in (
            ("concurrency", load.concurrency),
            ("request_rate", load.request_rate),
            ("duration_s", load.duration_s),
            ("ramp", load.ramp),
        )
        if value is not None
    ]
    if given:
        raise ValueError(
            f"load.stages sets the load level and its duration: remove {', '.join(given)} "
            "(each stage has rate or concurrency and duration_s)"
        )
    if load.repeats != 1:
        raise ValueError("load.stages run once in order: repeats must be 1")
    if (getattr(load, "workers", None) or 1) > 1:
        raise ValueError(
            f"load.stages run in one load process (stages are not split across worker "
            f"processes yet): drop load.workers / --workers {load.workers}"
        )
