"""Sweep axes that need more than a list: geometric concurrency ranges and precisions.

Kept apart from the sweep models (:mod:`inferx_core.config.sweep`) so that the
types a sweep axis is made of depend on nothing but the strict base model.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, PositiveInt, model_validator

from inferx_core.config.base import StrictModel

__all__ = [
    "MAX_RANGE_POINTS",
    "ConcurrencyRange",
    "Precision",
    "RoleAxes",
    "apply_role_value",
    "geometric_range",
]

MAX_RANGE_POINTS = 64


def geometric_range(start: int, stop: int, factor: float = 2) -> list[int]:
    """``start, start*factor, start*factor**2, ...`` up to and including ``stop``.

    Values are rounded to integers and deduplicated; ``stop`` is included
    only when the progression reaches it (4..100 by 2 is 4, 8, 16, 32, 64).

    >>> geometric_range(4, 256)
    [4, 8, 16, 32, 64, 128, 256]
    """
    if isinstance(start, bool) or isinstance(stop, bool):
        raise ValueError("start and stop must be integers")
    if int(start) != start or int(stop) != stop:
        raise ValueError(f"start and stop must be integers, got {start!r} and {stop!r}")
    start, stop = int(start), int(stop)
    if start < 1:
        raise ValueError(f"start must be >= 1, got {start}")
    if stop < start:
        raise ValueError(f"stop ({stop}) must be >= start ({start})")
    if not math.isfinite(factor) or factor <= 1:
        raise ValueError(f"factor must be > 1, got {factor!r}")
    out: list[int] = []
    k = 0
    while True:
        # Exact integer powers where possible (no drift for factor 2, 4, ...).
        value = start * factor**k
        level = round(value)
        if level > stop:
            break
        if not out or level != out[-1]:
            out.append(level)
        if len(out) > MAX_RANGE_POINTS:
            raise ValueError(
                f"range {start}..{stop} by {factor} has more than {MAX_RANGE_POINTS} levels"
            )
        k += 1
    return out


class ConcurrencyRange(StrictModel):
    """A geometric range of concurrency levels: start, start*factor, ... <= stop."""

    start: int = Field(ge=1, description="First level")
    stop: int = Field(ge=1, description="Last level allowed (included when reached)")
    factor: float = Field(default=2, gt=1, description="Multiplier between levels")

    @model_validator(mode="after")
    def _valid(self) -> ConcurrencyRange:
        self.levels()  # raises ValueError with the reason
        return self

    def levels(self) -> list[int]:
        return geometric_range(self.start, self.stop, self.factor)


class Precision(StrictModel):
    """One precision setting: weights dtype, quantization method, KV-cache dtype."""

    name: str = Field(min_length=1, description="Label used in run names and point ids")
    dtype: str | None = Field(default=None, description="Activation/weight dtype (--dtype)")
    quantization: str | None = Field(
        default=None, description="Quantization method, passed as engine_args.quantization"
    )
    kv_cache_dtype: str | None = Field(default=None, description="KV-cache dtype")

    def apply(self, data: dict[str, Any]) -> None:
        """Set this precision on a RunConfig dump (in place)."""
        if self.dtype is not None:
            data["dtype"] = self.dtype
        if self.kv_cache_dtype is not None:
            data["kv_cache_dtype"] = self.kv_cache_dtype
        if self.quantization is not None:
            data.setdefault("engine_args", {})["quantization"] = self.quantization


class RoleAxes(StrictModel):
    """Sweep axes of one role of a ``deployment:``: its replicas, nodes and parallelism."""

    replicas: list[PositiveInt] = Field(default_factory=list)
    nodes: list[PositiveInt] = Field(default_factory=list, description="Nodes per replica")
    tp: list[PositiveInt] = Field(default_factory=list)
    pp: list[PositiveInt] = Field(default_factory=list)
    dp: list[PositiveInt] = Field(default_factory=list)
    ep: list[PositiveInt] = Field(default_factory=list)

    def axes(self, role: str) -> list[list[tuple[str, tuple[str, str, int]]]]:
        """One axis per field with values: ``("role", (role, field, value))`` entries."""
        out = []
        for name in ("replicas", "nodes", "tp", "pp", "dp", "ep"):
            values = getattr(self, name)
            if values:
                out.append([("role", (role, name, v)) for v in values])
        return out


def apply_role_value(data: dict[str, Any], role: str, field: str, value: int) -> None:
    """Set one role's ``field`` on a RunConfig dump (in place); parallelism starts from the
    role's own, else the base's."""
    groups = (data.get("deployment") or {}).get("roles") or []
    group = next((g for g in groups if g.get("role") == role), None)
    if group is None:
        raise ValueError(f"matrix.roles.{role}: the base deployment has no role {role}")
    if field in ("replicas", "nodes"):
        group[field] = value
        return
    parallelism = dict(group.get("parallelism") or data.get("parallelism") or {})
    parallelism[field] = value
    group["parallelism"] = parallelism
