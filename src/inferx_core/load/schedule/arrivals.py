"""Arrival processes of the open loop: Poisson/gamma or constant gaps, vLLM's ramps."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["Ramp", "arrival_intervals"]


@dataclass(frozen=True, slots=True)
class Ramp:
    """vLLM's ramp-up: the rate goes from ``start_rps`` to the point's rate over its
    ``requests`` (request i at progress i / (requests - 1)), linearly or exponentially."""

    kind: Literal["linear", "exponential"]
    start_rps: float
    requests: int

    def rate(self, i: int, end_rps: float) -> float:
        progress = i / (self.requests - 1) if self.requests > 1 else 1.0
        progress = min(progress, 1.0)
        if self.kind == "exponential":
            return float(self.start_rps * (end_rps / self.start_rps) ** progress)
        return self.start_rps + (end_rps - self.start_rps) * progress


def arrival_intervals(
    rate: float,
    arrival: Literal["poisson", "constant"],
    seed: int = 0,
    *,
    burstiness: float = 1.0,
    ramp: Ramp | None = None,
) -> Iterator[float]:
    """Endless gaps in seconds between arrivals at ``rate`` per second.

    Poisson arrivals are vLLM's gamma gaps with shape ``burstiness`` and mean
    ``1 / rate`` (1: exponential gaps, i.e. Poisson; below 1 burstier, above
    1 more even); ``constant`` is evenly spaced. With ``ramp`` the rate of
    gap i follows the ramp (vLLM ``--ramp-up-strategy``).
    """
    if math.isinf(rate):
        while True:
            yield 0.0
    rng = random.Random(seed)
    i = 0
    while True:
        current = ramp.rate(i, rate) if ramp is not None else rate
        i += 1
        if arrival == "constant":
            yield 1.0 / current
        elif burstiness == 1.0:
            yield rng.expovariate(current)
        else:
            yield rng.gammavariate(burstiness, 1.0 / (current * burstiness))
