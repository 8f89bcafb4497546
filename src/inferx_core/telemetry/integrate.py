"""Integrals of sampled telemetry over one time window.

Pure functions, no I/O. A *series* is one sampler's readings in time order:
a sequence of ``(t_ns, {metric: value})`` where ``t_ns`` comes from
``time.perf_counter_ns`` (the load window's clock).

:func:`integrate_trapezoid` integrates sampled power by the trapezoid rule
over exactly ``[start_ns, end_ns]``, interpolating linearly at the window
edges and never extrapolating past the first or last sample (the uncovered
seconds are reported instead). :func:`counter_delta` reads how far a
cumulative energy counter advanced over the same window. The result fields
built from these live in :mod:`inferx_core.telemetry.energy`.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "CounterResult",
    "IntegralResult",
    "Sample",
    "Series",
    "counter_delta",
    "extract",
    "integrate_trapezoid",
]

Sample = tuple[int, Mapping[str, "float | None"]]
Series = Sequence[Sample]

_NS = 1_000_000_000


@dataclass(frozen=True)
class IntegralResult:
    """Trapezoid integral of a power series over one window.

    ``joules`` covers only the part of the window that lies between the first
    and the last usable sample (``covered_s``); nothing is extrapolated.
    ``avg_watts`` is ``joules / covered_s`` (equal to ``joules / duration_s``
    when ``complete``). ``max_gap_s`` is the largest distance between
    consecutive usable samples inside the window, the window edges counting as
    points (so a window with no sample inside has a gap of ``duration_s``).
    """

    joules: float | None
    avg_watts: float | None
    max_w: float | None
    samples_in_window: int
    max_gap_s: float
    uncovered_start_s: float
    uncovered_end_s: float
    covered_s: float
    covered_fraction: float
    duration_s: float
    complete: bool
    dropped_none: int
    dropped_nonfinite: int


@dataclass(frozen=True)
class CounterResult:
    """Delta of a cumulative energy counter over one window.

    ``delta_j`` is the counter interpolated at both (covered) edges; a
    decrease between two readings (wrap or reset) is ``reset_detected`` and
    that segment contributes nothing, so the delta is then a lower bound.
    ``delta_j`` is None when no two readings bracket any part of the window.
    """

    delta_j: float | None
    avg_watts: float | None
    reset_detected: bool
    resets: int
    readings_in_window: int
    uncovered_start_s: float
    uncovered_end_s: float
    covered_s: float
    covered_fraction: float
    duration_s: float
    dropped_none: int


def extract(series: Series, key: str) -> tuple[list[int], list[float | None]]:
    """Split a series into (times_ns, values) for one metric (missing key -> None)."""
    times: list[int] = []
    values: list[float | None] = []
    for t_ns, reading in series:
        times.append(int(t_ns))
        values.append(reading.get(key))
    return times, values


def _clean(
    times_ns: Sequence[int], values: Sequence[float | None]
) -> tuple[list[int], list[float], int, int]:
    """Drop None and non-finite values; return sorted (times, values, n_none, n_nonfinite)."""
    if len(times_ns) != len(values):
        raise ValueError(f"{len(times_ns)} times but {len(values)} values")
    pairs: list[tuple[int, float]] = []
    n_none = n_bad = 0
    for t, v in zip(times_ns, values, strict=True):
        if v is None:
            n_none += 1
            continue
        fv = float(v)
        if not math.isfinite(fv):
            n_bad += 1
            continue
        pairs.append((int(t), fv))
    pairs.sort(key=lambda p: p[0])  # stable: equal stamps keep their order
    return [p[0] for p in pairs], [p[1] for p in pairs], n_none, n_bad


def _check_window(start_ns: int, end_ns: int) -> None:
    if end_ns < start_ns:
        raise ValueError(f"window ends before it starts ({start_ns} > {end_ns})")


def _coverage(times: list[int], start_ns: int, end_ns: int) -> tuple[int, int, int, int]:
    """Return (covered_start, covered_end, uncovered_start_ns, uncovered_end_ns)."""
    duration = end_ns - start_ns
    if not times:
        return start_ns, start_ns, duration, duration
    a = min(max(times[0], start_ns), end_ns)
    b = max(min(times[-1], end_ns), start_ns)
    return a, b, a - start_ns, end_ns - b


def _interp(times: list[int], values: list[float], t: int, *, at_start: bool) -> float:
    """Value at ``t`` (inside [times[0], times[-1]]) by linear interpolation.

    Several readings stamped exactly ``t`` form a step: a window starting at
    ``t`` takes the last of them, a window ending at ``t`` the first, so
    adjacent windows add up to the enclosing one.
    """
    i = bisect_left(times, t)
    if times[i] == t:
        return values[bisect_right(times, t) - 1] if at_start else values[i]
    t0, t1 = times[i - 1], times[i]
    v0, v1 = values[i - 1], values[i]
    return v0 + (v1 - v0) * ((t - t0) / (t1 - t0))


def integrate_trapezoid(
    times_ns: Sequence[int],
    watts: Sequence[float | None],
    start_ns: int,
    end_ns: int,
) -> IntegralResult:
    """Joules over exactly ``[start_ns, end_ns]`` by the trapezoid rule.

    Values at the window edges are interpolated linearly from the neighbouring
    samples. Parts of the window before the first or after the last usable
    sample are not extrapolated: they are reported as ``uncovered_*_s``.
    """
    _check_window(start_ns, end_ns)
    times, vals, n_none, n_bad = _clean(times_ns, watts)
    duration = end_ns - start_ns
    a, b, unc_a, unc_b = _coverage(times, start_ns, end_ns)

    lo = bisect_left(times, start_ns)
    hi = bisect_left(times, end_ns + 1)
    inside_t = times[lo:hi]
    inside_v = vals[lo:hi]
    edges = [start_ns, *inside_t, end_ns]
    max_gap = max(edges[k + 1] - edges[k] for k in range(len(edges) - 1))

    joules: float | None = None
    covered = 0
    if times and times[0] <= end_ns and times[-1] >= start_ns and (a < b or duration == 0):
        covered = b - a
        mid_lo = bisect_left(times, a + 1)
        mid_hi = bisect_left(times, b)
        pts_t = [a, *times[mid_lo:mid_hi], b]
        pts_v = [
            _interp(times, vals, a, at_start=True),
            *vals[mid_lo:mid_hi],
            _interp(times, vals, b, at_start=False),
        ]
        joules = math.fsum(
            (pts_v[k] + pts_v[k + 1]) * (pts_t[k + 1] - pts_t[k]) for k in range(len(pts_t) - 1)
        ) / (2 * _NS)
    avg = joules / (covered / _NS) if joules is not None and covered > 0 else None
    fraction = covered / duration if duration else float(joules is not None)
    return IntegralResult(
        joules=joules,
        avg_watts=avg,
        max_w=max(inside_v) if inside_v else None,
        samples_in_window=len(inside_t),
        max_gap_s=max_gap / _NS,
        uncovered_start_s=unc_a / _NS,
        uncovered_end_s=unc_b / _NS,
        covered_s=covered / _NS,
        covered_fraction=fraction,
        duration_s=duration / _NS,
        complete=joules is not None and unc_a == 0 and unc_b == 0,
        dropped_none=n_none,
        dropped_nonfinite=n_bad,
    )


def _counter_increments(
    times: list[int], vals: list[float], start_ns: int, end_ns: int
) -> tuple[list[float], int, bool]:
    """(in-window increments, resets seen, whether any segment overlapped the window).

    A segment only partly inside the window contributes its share of the
    increase; a decreasing segment (wrap or reset) contributes nothing.
    """
    duration = end_ns - start_ns
    parts: list[float] = []
    resets = 0
    overlapped = False
    for k in range(len(times) - 1):
        t0, t1 = times[k], times[k + 1]
        inc = vals[k + 1] - vals[k]
        if t1 == t0:  # two readings at one instant: count the step once, at (start, end]
            if start_ns < t0 <= end_ns:
                overlapped = True
                if inc < 0:
                    resets += 1
                else:
                    parts.append(inc)
            continue
        overlap = min(t1, end_ns) - max(t0, start_ns)
        if overlap < 0 or (overlap == 0 and duration > 0):
            continue
        overlapped = True
        if inc < 0:
            resets += 1
        elif overlap == t1 - t0:
            parts.append(inc)
        else:
            parts.append(inc * (overlap / (t1 - t0)))
    return parts, resets, overlapped


def counter_delta(
    times_ns: Sequence[int],
    counter_j: Sequence[float | None],
    start_ns: int,
    end_ns: int,
) -> CounterResult | None:
    """Joules a cumulative counter advanced over ``[start_ns, end_ns]``.

    The counter is interpolated linearly at both edges; a decrease between
    consecutive readings (wrap or reset) sets ``reset_detected`` and only the
    increasing segments are summed. None when fewer than 2 usable readings.
    """
    _check_window(start_ns, end_ns)
    times, vals, n_none, n_bad = _clean(times_ns, counter_j)
    if len(times) < 2:
        return None
    duration = end_ns - start_ns
    a, b, unc_a, unc_b = _coverage(times, start_ns, end_ns)
    parts, resets, overlapped = _counter_increments(times, vals, start_ns, end_ns)
    covered = b - a if overlapped else 0
    delta = math.fsum(parts) if overlapped else None
    lo = bisect_left(times, start_ns)
    hi = bisect_left(times, end_ns + 1)
    return CounterResult(
        delta_j=delta,
        avg_watts=delta / (covered / _NS) if delta is not None and covered > 0 else None,
        reset_detected=resets > 0,
        resets=resets,
        readings_in_window=hi - lo,
        uncovered_start_s=(unc_a if overlapped else duration) / _NS,
        uncovered_end_s=(unc_b if overlapped else duration) / _NS,
        covered_s=covered / _NS,
        covered_fraction=(covered / duration if duration else float(overlapped)),
        duration_s=duration / _NS,
        dropped_none=n_none + n_bad,
    )
