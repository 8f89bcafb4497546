"""Descriptive statistics with the conventions of vLLM's ``bench serve``.

- Percentiles use numpy's default method (``linear``, type 7), exactly as
  ``numpy.percentile`` computes them.
- The standard deviation is the population one (``numpy.std``, ``ddof=0``).
- Percentile field names use vLLM's ``p_word``: ``99.0 -> "99"``,
  ``99.9 -> "99.9"``.
- An empty sample gives ``None`` for every statistic, never 0 or NaN.

``error_adjusted_percentiles`` adds failures as ``+inf`` observations. numpy
cannot do this itself (``numpy.percentile([1.0, 2.0, inf], 50)`` is NaN
because its interpolation computes ``inf - inf``), so the rank is located
with exact arithmetic and only finite neighbours are ever interpolated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

__all__ = [
    "Z95",
    "describe",
    "error_adjusted_percentiles",
    "percentile",
    "percentile_word",
    "t_quantile_975",
    "validate_percentiles",
]

Z95 = 1.959963984540054  # two-sided 95% normal quantile
# Two-sided 95% Student t quantiles by degrees of freedom (between entries the
# next lower one: conservative); beyond 30, the normal quantile.
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}
_T975.update({9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042})


def percentile_word(p: float) -> str:
    """vLLM's spelling of a percentile in a field name (99.0 -> '99', 99.9 -> '99.9')."""
    p = float(p)
    return str(int(p)) if int(p) == p else str(p)


def validate_percentiles(percentiles: Iterable[float]) -> tuple[float, ...]:
    """Return the percentiles as floats, de-duplicated in order; reject values outside [0, 100]."""
    out: list[float] = []
    for p in percentiles:
        q = float(p)
        if not math.isfinite(q) or q < 0.0 or q > 100.0:
            raise ValueError(f"percentile {p!r} is outside [0, 100]")
        if q not in out:
            out.append(q)
    return tuple(out)


def _as_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError("statistics need finite values")
    return arr


def percentile(values: Sequence[float] | np.ndarray, p: float) -> float | None:
    """numpy's default (linear) percentile of finite values; None for an empty sample."""
    arr = _as_array(values)
    if arr.size == 0:
        return None
    return float(np.percentile(arr, float(p)))


def describe(
    values: Sequence[float] | np.ndarray, percentiles: Sequence[float]
) -> dict[str, float | None]:
    """Mean, median, std and the given percentiles of a finite sample.

    Keys: ``mean``, ``median``, ``std``, then ``p{percentile_word(p)}`` for each
    percentile, in the order given. Every value is None when the sample is empty.
    """
    arr = _as_array(values)
    keys = ["mean", "median", "std"] + [f"p{percentile_word(p)}" for p in percentiles]
    if arr.size == 0:
        return dict.fromkeys(keys)
    out: dict[str, float | None] = {
        "mean": float(np.mean(arr)),
        "median": float(np.median(arr)),
        "std": float(np.std(arr)),
    }
    if percentiles:
        qs = np.percentile(arr, [float(p) for p in percentiles])
        for p, v in zip(percentiles, qs, strict=True):
            out[f"p{percentile_word(p)}"] = float(v)
    return out


def _exact(x: float) -> Fraction:
    # The decimal the user wrote (99.9), not its binary approximation.
    return Fraction(repr(float(x)))


def error_adjusted_percentiles(
    finite_values: Sequence[float] | np.ndarray,
    n_infinite: int,
    percentiles: Sequence[float],
) -> dict[str, float | None]:
    """Percentiles of ``finite_values`` plus ``n_infinite`` observations at +inf.

    Keys are ``p{percentile_word(p)}``. A value is ``math.inf`` when the rank
    reaches a failure, None when there are no observations at all. Where the
    rank falls among the finite values the result equals ``numpy.percentile``
    over the whole (n_finite + n_infinite)-long sample.
    """
    if n_infinite < 0:
        raise ValueError("n_infinite must be >= 0")
    arr = np.sort(_as_array(finite_values))
    n_finite = int(arr.size)
    n = n_finite + n_infinite
    keys = [f"p{percentile_word(p)}" for p in percentiles]
    if n == 0:
        return dict.fromkeys(keys)
    if n_infinite == 0:
        return {
            k: float(np.percentile(arr, float(p))) for k, p in zip(keys, percentiles, strict=True)
        }
    # Stand-in for the infinities: the largest finite value keeps the array
    # sorted and is never interpolated towards except with weight 0.
    fill = arr[-1] if n_finite else 0.0
    full = np.concatenate([arr, np.full(n_infinite, fill)])
    out: dict[str, float | None] = {}
    for key, p in zip(keys, percentiles, strict=True):
        rank = _exact(p) / 100 * (n - 1)  # linear method: 0-based virtual index
        if n_finite == 0 or rank > n_finite - 1:
            out[key] = math.inf
        else:
            out[key] = float(np.percentile(full, float(p)))
    return out


def t_quantile_975(df: int) -> float:
    """Two-sided 95% Student t quantile (table; conservative between entries)."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if df > 30:
        return Z95
    known = [k for k in _T975 if k <= df]
    return _T975[max(known)]
