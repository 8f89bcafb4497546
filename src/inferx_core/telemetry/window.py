"""Per-window statistics of telemetry series (host load, engine /metrics, GPU readings).

Nothing a scrape returns can make a result unwritable: readings that are not
finite numbers (an engine's ``NaN``, ``+Inf``) are left out and counted, and a
statistic that overflows (two gauges of 1e308 have no finite mean) is None with
the reason under ``why``, never ``inf`` in the file.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from inferx_core.telemetry.speculative import spec_decode_window

Row = tuple[int, dict[str, float | None]]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def window_values(rows: Iterable[Row], key: str, start_ns: int, end_ns: int) -> list[float]:
    """The finite readings of ``key`` inside the window."""
    return [
        float(values[key])  # type: ignore[arg-type]  # _finite checked it
        for t_ns, values in rows
        if start_ns <= t_ns <= end_ns and _finite(values.get(key))
    ]


def counter_increase(rows: Iterable[Row], key: str, start_ns: int, end_ns: int) -> float | None:
    """A counter's increase over [start_ns, end_ns], as Prometheus' ``increase()`` reads it.

    A drop between two readings is a reset (the engine restarted, its counters from 0):
    the piece after it counts from 0, and the pieces are summed, so the increase is
    never negative and a restart mid-run does not cancel what came before it.
    The value at an edge is interpolated linearly between the last reading before it
    and the first after it (the rate between two readings is taken as even, as the
    energy integral does), or is the nearest reading where the series does not reach
    past that edge. So a window shorter than a few sampling intervals still has an
    increase -- the readings inside it alone (last minus first) missed the traffic
    between the window's start and its first reading, and had no increase at all
    with fewer than two readings inside (a 0.17 s llama.cpp point at 0.1 s had two).
    None unless the readings reach into the window from both sides, or when the
    increase is not a finite number.
    """
    readings = [(t_ns, float(v[key])) for t_ns, v in rows if _finite(v.get(key))]  # type: ignore[arg-type]  # finite
    points = _reset_adjusted(sorted(readings, key=lambda point: point[0]))
    if len(points) < 2 or points[0][0] >= end_ns or points[-1][0] <= start_ns:
        return None  # every reading on one side of the window: nothing measured inside
    increase = _value_at(points, end_ns) - _value_at(points, start_ns)
    return increase if math.isfinite(increase) else None


def _reset_adjusted(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The counter as if it had never reset: each drop adds the new reading (counted
    from 0), each rise its difference, so the series never falls."""
    out: list[tuple[int, float]] = []
    total = 0.0
    for i, (t_ns, value) in enumerate(points):
        if i == 0:
            total = value
        else:
            previous = points[i - 1][1]
            total += value - previous if value >= previous else max(value, 0.0)
        out.append((t_ns, total))
    return out


def _value_at(points: list[tuple[int, float]], t_ns: int) -> float:
    if t_ns <= points[0][0]:
        return points[0][1]
    if t_ns >= points[-1][0]:
        return points[-1][1]
    times = [t for t, _ in points]
    i = bisect.bisect_right(times, t_ns)
    (t0, v0), (t1, v1) = points[i - 1], points[i]
    return v0 + (v1 - v0) * (t_ns - t0) / (t1 - t0) if t1 > t0 else v1


def gauge_stats(rows: Iterable[Row], key: str, start_ns: int, end_ns: int) -> dict[str, Any]:
    """:func:`stats` of a gauge's readings inside the window; with none finite, ``why``
    tells a window no reading fell in from one whose readings were all NaN or Inf."""
    inside = [v[key] for t_ns, v in rows if start_ns <= t_ns <= end_ns and v.get(key) is not None]
    out = stats([float(x) for x in inside if isinstance(x, (int, float)) and math.isfinite(x)])
    if out["samples"] == 0 and inside:
        out["why"] = f"none of the {len(inside)} readings inside the window was a finite number"
    return out


def stats(values: list[float]) -> dict[str, Any]:
    """Mean, median, min, max of the finite ``values``; a statistic that overflows is None
    and ``why`` says so."""
    finite = [v for v in values if _finite(v)]
    if not finite:  # a point shorter than the sampling interval can fall between two readings
        why = (
            "no finite reading inside the window"
            " (a window shorter than the sampling interval can have none)"
        )
        return {"mean": None, "median": None, "min": None, "max": None, "samples": 0, "why": why}
    arr = np.asarray(finite, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        out: dict[str, Any] = {
            "mean": float(arr.mean()),
            "median": float(np.median(arr)),
            "min": float(arr.min()),
            "max": float(arr.max()),
        }
    overflowed = [k for k, v in out.items() if not math.isfinite(v)]
    for k in overflowed:
        out[k] = None
    out["samples"] = len(finite)
    if overflowed:
        out["why"] = (
            f"{', '.join(overflowed)}: not a finite number (readings up to {max(finite):g})"
        )
    return out


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
            out[name] = gauge_stats(rows, key, start_ns, end_ns)
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
    value = hits / queries if queries > 0 else None
    why = None if queries > 0 else "no prefix-cache lookups in the window"
    if value is not None and not 0.0 <= value <= 1.0:  # more hits than lookups: not a rate
        value, why = None, f"out of bounds: {hits:g} hits of {queries:g} looked-up tokens"
    return {"value": value, "hits_tokens": hits, "queried_tokens": queries, "why": why}
