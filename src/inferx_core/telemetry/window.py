"""Per-window statistics of telemetry series (host load, engine /metrics, GPU readings)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

Row = tuple[int, dict[str, float | None]]


def window_values(rows: Iterable[Row], key: str, start_ns: int, end_ns: int) -> list[float]:
    return [
        float(values[key])
        for t_ns, values in rows
        if start_ns <= t_ns <= end_ns and values.get(key) is not None
    ]


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
    the window (last minus first reading inside it).
    """
    keys = sorted({k for _, values in rows for k in values if k.startswith(prefix)})
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        values = window_values(rows, key, start_ns, end_ns)
        name = key.removeprefix(prefix)
        if key.endswith("_total"):
            out[name] = {
                "increase": (values[-1] - values[0]) if len(values) >= 2 else None,
                "samples": len(values),
            }
        else:
            out[name] = stats(values)
    hit_rate = _hit_rate(out)
    if hit_rate is not None:
        out["prefix_cache_hit_rate"] = hit_rate
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
