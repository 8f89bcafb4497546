"""Confidence intervals behind ``inferx compare``'s verdicts (the module doc of compare)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inferx_core.metrics.stats import Z95

MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)  # asymptotic SE(median) = 1.2533 sd / sqrt(n)


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% CI (``low``/``high`` None when the spread is unknown)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    basis: str = "none"
    n: int | None = None

    @property
    def has_ci(self) -> bool:
        return self.low is not None and self.high is not None

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "ci": [self.low, self.high], "basis": self.basis, "n": self.n}


def median_ci(values: Sequence[float], z: float = Z95) -> tuple[float, float, float] | None:
    """(median, low, high): the distribution-free CI of the median from order statistics.

    Ranks (1-based) j = floor((n - z sqrt(n)) / 2) and k = ceil(1 + (n + z sqrt(n)) / 2),
    clamped to [1, n]; for small n this is the full range. None when empty.
    """
    data = sorted(float(v) for v in values if v is not None and math.isfinite(v))
    n = len(data)
    if n == 0:
        return None
    half = z * math.sqrt(n) / 2
    j = max(1, math.floor(n / 2 - half))
    k = min(n, math.ceil(1 + n / 2 + half))
    return statistics.median(data), data[j - 1], data[k - 1]


def median_ci_from_std(
    median: float, std: float, n: int, z: float = Z95
) -> tuple[float, float] | None:
    """Normal-approximation CI of a median: median -+ z x 1.2533 x std / sqrt(n)."""
    if n < 1 or not (math.isfinite(median) and math.isfinite(std)) or std < 0:
        return None
    half = z * MEDIAN_SE_FACTOR * std / math.sqrt(n)
    return median - half, median + half
