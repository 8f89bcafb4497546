"""Finite-number checks shared by telemetry, metrics, analysis and reports.

Readings and results may carry NaN or infinity (legal in Prometheus text and
in float arithmetic) but strict JSON and statistics must not see them; these
two helpers are the one place that decides what counts as a usable number.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

__all__ = ["finite_or_none", "is_finite_number", "json_safe"]


def is_finite_number(value: Any) -> TypeGuard[float]:
    """True for an int or float that is finite; False for bool, None, NaN, inf and others.

    A TypeGuard: after ``if is_finite_number(x)`` a type checker knows ``x`` is a number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def finite_or_none(value: float | None) -> float | None:
    """``value`` as a float, or None when it is None, NaN or infinite."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def json_safe(value: Any, path: str, reasons: dict[str, str]) -> Any:
    """``value`` with every non-finite float (at any depth) replaced by None.

    ``path`` names ``value`` in ``reasons`` (dotted keys, ``[i]`` for list
    items); each replaced float gets the reason "non-finite result" there
    unless a reason is already recorded.
    """
    if isinstance(value, float) and not math.isfinite(value):
        reasons.setdefault(path, "non-finite result")
        return None
    if isinstance(value, dict):
        return {
            k: json_safe(v, f"{path}.{k}" if path else str(k), reasons) for k, v in value.items()
        }
    if isinstance(value, list):
        return [json_safe(v, f"{path}[{i}]", reasons) for i, v in enumerate(value)]
    return value
