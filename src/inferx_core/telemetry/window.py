"""Per-window statistics of telemetry series (host load, engine /metrics, GPU readings)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

import numpy as np

from inferx_core.telemetry.speculative import spec_decode_window

Row = tuple[int, dict[str, float | None]]


def window_values(rows: Iterable[Row], key: str, start_ns: int, end_ns: int) -> list[float]:
    return [
        float(values[key])
        for t_ns, values in rows
        if start_ns <= t_ns <= end_ns and values.get(key) is not None
    ]


def counter_increase(rows: Iterable[Row], key: str, start_ns: int, end_ns: int) -> float | None:
    """A counter's increase over [start_ns, end_ns], from the readings around each edge.

    The value at an edge is interpolated linearly between the last reading before it
    and the first after it (the rate between two readings is taken as even, as the
    energy integral does), or is the nearest reading where the series does not reach
    past that edge. So a window shorter than a few sampling intervals still has an
    increase -- the readings inside it alone (last minus first) missed the traffic
    between the window's start and its first reading, and had no increase at all
    with fewer than two readings inside (a 0.17 s llama.cpp point at 0.1 s had two).
    None unless the readings reach into the window from both sides.
    """
    points = [(t_ns, float(v[key])) for t_ns, v in rows if v.get(key) is not None]
    points.sort(key=lambda point: point[0])
    if len(points) < 2 or points[0][0] >= end_ns or points[-1][0] <= start_ns:
        return None  # every reading on one side of the window: nothing measured inside
    return _value_at(points, end_ns) - _value_at(points, start_ns)


def _value_at(points: list[tuple[int, float]], t_ns: int) -> float:
    if t_ns <= points[0][0]:
        return points[0][1]
    if t_ns >= points[-1][0]:
        return points[-1][1]
    times = [t for t, _ in points]
    i = bisect.bisect_right(times, t_ns)
    (t0, v0), (t1, v1) = points[i - 1], points[i]
    return v0 + (v1 - v0) * (t_ns - t0) / (t1 - t0) if t1 > t0 else v1


def stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "median": None, "min": None, "max": None, "samples": 0}
    arr = np.asarray(values, dtype=float)
    return {
        "mean": float(arr.mean()),
        "median": float(np.median(arr)),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "samples": len(values),
    }


def summarize_prefix(
    rows: list[Row], prefix: str, start_ns: int, end_ns: int
) -> dict[str, dict[str, Any]]:
    """Stats over the window for every key starting with ``prefix``.

    Keys ending in ``_total`` are counters: the result is their increase over
    the window, the counter's value at its end minus at its start, each read
    between the readings around that edge (:func:`counter_increase`).
    """
    keys = sorted({k for _, values in rows for k in values if k.startswith(prefix)})
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        values = window_values(rows, key, start_ns, end_ns)
        name = key.removeprefix(prefix)
        if key.endswith("_total"):
            out[name] = {
                "increase": counter_increase(rows, key, start_ns, end_ns),
                "samples": len(values),
            }
        else:
            out[name] = stats(values)
    hit_rate = _hit_rate(out)
    if hit_rate is not None:
        out["prefix_cache_hit_rate"] = hit_rate
    spec = spec_decode_window(out)
    if spec is not None:  # speculative decoding: acceptance over the window
        out["spec_decode"] = spec
    return out


def _hit_rate(metrics: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Prefix-cache hits / queries (tokens) over the window, from the two counters."""
    hits = (metrics.get("prefix_cache_hits_total") or {}).get("increase")
    queries = (metrics.get("prefix_cache_queries_total") or {}).get("increase")
    if hits is None or queries is None:
        return None
    return {
        "value": hits / queries if queries > 0 else None,
        "hits_tokens": hits,
        "queried_tokens": queries,
        "why": None if queries > 0 else "no prefix-cache lookups in the window",
    }
