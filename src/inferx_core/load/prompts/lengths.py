"""Seeded request-length samplers with named, recorded semantics.

The benchmark tools disagree on what "random range ratio r" means, so every
sampler here is named after the tool whose semantics it reproduces and reports
the exact integer bounds it drew from:

``inferencex`` (default)
    uniform integers in ``[floor(r*L), L]``, r defaults to 0.8 (InferenceX).
``sglang``
    uniform integers in ``[int(L*r), L]`` (``bench_serving --random-range-ratio``).
    Same formula as ``inferencex``; only the tool's default ratio differs.
``vllm``
    uniform integers in ``[int(L*(1-r)), int(L*(1+r))]`` with ``0 <= r < 1``
    (vLLM ``RandomDataset``: ``np.random.randint(low, high + 1)``).
``fixed``
    exactly ``L``.
``lognormal``
    ``round(exp(N(ln(median), sigma)))`` clipped to ``[min_length, max_length]``;
    ``length`` is the median. Production-like mixed traffic.

Every bound is clamped to at least 1: a request never has zero tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

LengthKind = Literal["inferencex", "vllm", "sglang", "fixed", "lognormal"]
LENGTH_KINDS: tuple[LengthKind, ...] = ("inferencex", "vllm", "sglang", "fixed", "lognormal")

SeedLike = int | np.random.Generator


@dataclass(frozen=True, slots=True)
class LengthSpec:
    """How to draw one length per request.

    ``length`` is the nominal length L (the median for ``lognormal``).
    ``range_ratio`` is r for the uniform kinds; ``sigma``, ``min_length`` and
    ``max_length`` are used by ``lognormal`` only.
    """

    kind: LengthKind = "inferencex"
    length: int = 1024
    range_ratio: float = 0.8
    sigma: float = 0.7
    min_length: int = 1
    max_length: int = 4096

    def __post_init__(self) -> None:
        if self.kind not in LENGTH_KINDS:
            raise ValueError(f"unknown length kind {self.kind!r}; use one of {LENGTH_KINDS}")
        if isinstance(self.length, bool) or not isinstance(self.length, int) or self.length < 1:
            raise ValueError(f"length must be an integer >= 1, got {self.length!r}")
        r = self.range_ratio
        if not (isinstance(r, (int, float)) and math.isfinite(r)):
            raise ValueError(f"range_ratio must be a finite number, got {r!r}")
        if self.kind == "vllm" and not 0.0 <= r < 1.0:
            raise ValueError(f"vllm semantics need 0 <= range_ratio < 1, got {r}")
        if self.kind in ("inferencex", "sglang") and not 0.0 <= r <= 1.0:
            raise ValueError(f"{self.kind} semantics need 0 <= range_ratio <= 1, got {r}")
        if self.kind == "lognormal":
            if not (math.isfinite(self.sigma) and self.sigma >= 0):
                raise ValueError(f"sigma must be finite and >= 0, got {self.sigma}")
            if not 1 <= self.min_length <= self.max_length:
                raise ValueError(
                    "lognormal needs 1 <= min_length <= max_length, got "
                    f"min_length={self.min_length}, max_length={self.max_length}"
                )

    @property
    def bounds(self) -> tuple[int, int]:
        """Inclusive ``(low, high)`` integer bounds every sample lies in."""
        return length_bounds(self)

    def describe(self) -> dict[str, Any]:
        """JSON-ready record of the semantics and the bounds actually used."""
        low, high = self.bounds
        out: dict[str, Any] = {
            "semantics": self.kind,
            "length": self.length,
            "low": low,
            "high": high,
        }
        if self.kind == "lognormal":
            out.update(median=self.length, sigma=self.sigma)
        elif self.kind != "fixed":
            out["range_ratio"] = self.range_ratio
        out["formula"] = _FORMULAS[self.kind]
        return out


_FORMULAS: dict[str, str] = {
    "inferencex": "uniform integers in [floor(r*L), L]",
    "sglang": "uniform integers in [int(L*r), L]",
    "vllm": "uniform integers in [int(L*(1-r)), int(L*(1+r))]",
    "fixed": "exactly L",
    "lognormal": "round(lognormal(ln(median), sigma)) clipped to [min_length, max_length]",
}

# Production-like defaults (DOMAIN.md section 2): inputs mostly 128-512 with a
# tail to 4096 (sigma 0.7: ~68% in [128, 512], ~0.3% above 2048); outputs
# mostly 64-256 (sigma 0.5: ~83% in [64, 256]).
DEFAULT_LOGNORMAL_INPUT = LengthSpec(
    kind="lognormal", length=256, sigma=0.7, min_length=16, max_length=4096
)
DEFAULT_LOGNORMAL_OUTPUT = LengthSpec(
    kind="lognormal", length=128, sigma=0.5, min_length=8, max_length=1024
)


def length_bounds(spec: LengthSpec) -> tuple[int, int]:
    """Inclusive integer bounds of ``spec`` (always ``1 <= low <= high``)."""
    L, r = spec.length, float(spec.range_ratio)
    if spec.kind == "fixed":
        low = high = L
    elif spec.kind == "inferencex":
        low, high = math.floor(r * L), L
    elif spec.kind == "sglang":
        low, high = int(L * r), L
    elif spec.kind == "vllm":
        low, high = int(L * (1 - r)), int(L * (1 + r))
    else:  # lognormal
        low, high = spec.min_length, spec.max_length
    low = max(1, low)
    high = max(low, high)
    return low, high


def make_rng(seed: SeedLike) -> np.random.Generator:
    """A numpy Generator from an int seed (or the Generator itself)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def sample_lengths(spec: LengthSpec, n: int, rng: SeedLike) -> list[int]:
    """Draw ``n`` lengths following ``spec``; deterministic for an int seed."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    gen = make_rng(rng)
    low, high = length_bounds(spec)
    if n == 0:
        return []
    if spec.kind == "fixed" or low == high:
        return [low] * n
    if spec.kind == "lognormal":
        raw = gen.lognormal(mean=math.log(spec.length), sigma=spec.sigma, size=n)
        vals = np.clip(np.rint(raw), low, high).astype(np.int64)
    else:
        vals = gen.integers(low, high + 1, size=n, dtype=np.int64)
    return [int(v) for v in vals]
