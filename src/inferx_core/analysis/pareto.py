"""Pareto frontiers of benchmark points. Pure functions, no I/O.

Each point has two coordinates and each axis a direction ("max": higher is
better, "min": lower is better). Definitions, exactly:

- ``a`` *dominates* ``b`` when ``a`` is at least as good as ``b`` on both
  axes and strictly better on at least one.
- The *frontier* is every point that no other point dominates.

Consequences (what the tests check with hypothesis):

- Ties: two points with identical coordinates do not dominate each other, so
  both are on the frontier or both are off it. A point that equals another
  on one axis and is worse on the other is dominated (off the frontier).
- Frontier points are mutually non-dominated; every point off the frontier is
  dominated by some frontier point; the frontier (as a set of points) does
  not depend on the input order.
- A point with a missing (None) or non-finite coordinate is never on the
  frontier and never dominates anything; it is reported as not comparable.

The two frontiers used by reports: throughput per GPU (max) against
interactivity (max), and throughput per GPU (max) against median E2E latency
(min).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from inferx_core.sdk.numbers import is_finite_number

Direction = Literal["max", "min"]
T = TypeVar("T")

__all__ = [
    "Direction",
    "Frontier",
    "dominates",
    "frontier_by_group",
    "pareto_front",
    "pareto_mask",
]


def _better_or_equal(a: float, b: float, direction: Direction) -> bool:
    return a >= b if direction == "max" else a <= b


def dominates(
    a: tuple[float, float],
    b: tuple[float, float],
    x: Direction = "max",
    y: Direction = "max",
) -> bool:
    """True when ``a`` is at least as good on both axes and strictly better on one."""
    if not all(map(is_finite_number, (a[0], a[1], b[0], b[1]))):
        return False
    ge_x = _better_or_equal(a[0], b[0], x)
    ge_y = _better_or_equal(a[1], b[1], y)
    return ge_x and ge_y and (a[0] != b[0] or a[1] != b[1])


def _numbers(point: tuple[float | None, float | None]) -> tuple[float, float] | None:
    """Both coordinates as floats when both are finite numbers, else None."""
    px, py = point
    return (float(px), float(py)) if is_finite_number(px) and is_finite_number(py) else None


def pareto_mask(
    points: Sequence[tuple[float | None, float | None]],
    x: Direction = "max",
    y: Direction = "max",
) -> list[bool]:
    """For each point, whether it is on the frontier. O(n log n).

    Sweep: visit distinct x values from best to worst keeping the best y seen
    at strictly better x; within one x value only the points with that
    value's best y can be on the frontier, and they are when that y is
    strictly better than every y seen at a strictly better x.
    """
    sx = 1.0 if x == "max" else -1.0
    sy = 1.0 if y == "max" else -1.0
    # Work with "higher is better" keys; a point without two numbers is never on it.
    numbers = [_numbers(p) for p in points]
    keyed = {i: (sx * n[0], sy * n[1]) for i, n in enumerate(numbers) if n is not None}
    valid = list(keyed)
    order = sorted(valid, key=lambda i: (-keyed[i][0], -keyed[i][1]))
    mask = [False] * len(points)
    best_y = -math.inf
    pos = 0
    while pos < len(order):
        kx = keyed[order[pos]][0]
        end = pos
        while end < len(order) and keyed[order[end]][0] == kx:
            end += 1
        group = order[pos:end]  # same x; sorted by y, best first
        group_best = keyed[group[0]][1]
        if group_best > best_y:
            for i in group:
                if keyed[i][1] == group_best:
                    mask[i] = True
            best_y = group_best
        pos = end
    return mask


def pareto_front(
    items: Iterable[T],
    key: Callable[[T], tuple[float | None, float | None]],
    x: Direction = "max",
    y: Direction = "max",
) -> list[T]:
    """The frontier items, sorted by x from low to high (then by y, best first)."""
    items = list(items)
    coords = [key(item) for item in items]
    mask = pareto_mask(coords, x, y)
    # on the frontier: both coordinates are numbers (pareto_mask leaves None off it)
    chosen = [
        (n, item)
        for i, item in enumerate(items)
        if mask[i] and (n := _numbers(coords[i])) is not None
    ]
    sy = -1.0 if y == "max" else 1.0
    chosen.sort(key=lambda c: (c[0][0], sy * c[0][1]))
    return [item for _, item in chosen]


@dataclass(frozen=True)
class Frontier:
    """A frontier as coordinates sorted by x ascending (for plots and interpolation)."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    x_direction: Direction = "max"
    y_direction: Direction = "max"

    @classmethod
    def of(
        cls,
        points: Sequence[tuple[float | None, float | None]],
        x: Direction = "max",
        y: Direction = "max",
    ) -> Frontier:
        front = pareto_front(points, lambda p: p, x, y)  # numbers only: None is never on it
        pairs = [n for p in front if (n := _numbers(p)) is not None]
        return cls(tuple(px for px, _ in pairs), tuple(py for _, py in pairs), x, y)

    def __len__(self) -> int:
        return len(self.x)

    def interpolate(self, at: float) -> float | None:
        """y at ``x = at`` by linear interpolation between neighbouring frontier
        points; None outside ``[min x, max x]`` or when the frontier is empty.

        Frontier points sorted by x have y monotone (non-increasing when both
        axes are "max"), so the result is well defined; equal x values on a
        frontier always carry equal y.
        """
        if not self.x or not is_finite_number(at):
            return None
        at = float(at)
        if at < self.x[0] or at > self.x[-1]:
            return None
        for i in range(len(self.x)):
            if self.x[i] == at:
                return self.y[i]
            if self.x[i] > at:
                x0, x1, y0, y1 = self.x[i - 1], self.x[i], self.y[i - 1], self.y[i]
                return y0 + (y1 - y0) * (at - x0) / (x1 - x0)
        return None  # pragma: no cover - at <= x[-1] returns in the loop


def frontier_by_group(
    items: Iterable[T],
    key: Callable[[T], tuple[float | None, float | None]],
    group: Callable[[T], Hashable],
    x: Direction = "max",
    y: Direction = "max",
) -> dict[Hashable, list[T]]:
    """Frontier items per group (insertion order of the groups)."""
    groups: dict[Hashable, list[T]] = {}
    for item in items:
        groups.setdefault(group(item), []).append(item)
    return {g: pareto_front(members, key, x, y) for g, members in groups.items()}


def mask_by_group(
    items: Sequence[T],
    key: Callable[[T], tuple[float | None, float | None]],
    group: Callable[[T], Hashable],
    x: Direction = "max",
    y: Direction = "max",
) -> list[bool]:
    """For each item, whether it is on its own group's frontier."""
    members: dict[Hashable, list[int]] = {}
    for i, item in enumerate(items):
        members.setdefault(group(item), []).append(i)
    out = [False] * len(items)
    for idx in members.values():
        mask = pareto_mask([key(items[i]) for i in idx], x, y)
        for i, on in zip(idx, mask, strict=True):
            out[i] = on
    return out


def as_mapping_key(
    x_field: str, y_field: str
) -> Callable[[Mapping[str, Any]], tuple[float | None, float | None]]:
    """A key function reading two fields of a dict (None when absent)."""

    def key(row: Mapping[str, Any]) -> tuple[float | None, float | None]:
        return row.get(x_field), row.get(y_field)

    return key
