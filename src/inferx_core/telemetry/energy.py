"""Energy over the benchmark window, computed once from sampled telemetry.

Pure functions, no I/O. A *series* is one sampler's readings in time order:
a sequence of ``(t_ns, {metric: value})`` where ``t_ns`` comes from
``time.perf_counter_ns`` (the load window's clock) and metric names follow
:mod:`inferx_core.sdk.sampler` (``gpu.<i>.power_w``,
``gpu.<i>.energy_j``, ``cpu.package<n>.energy_j``).

Method (DOMAIN.md section 4): integrate sampled power by the trapezoid rule
over exactly ``[start_ns, end_ns]``, interpolating linearly at the window
edges; never extrapolate past the first/last sample, report the uncovered
seconds instead; cross-check with the device energy counter; mark the power
data invalid when a sample gap exceeds ``max_gap_s`` or a GPU is missing.

Result dicts are JSON-safe: no NaN or infinity, a null value always has a
reason in the matching ``*_null_reasons`` dict.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CPU_ENERGY_KEY",
    "CounterResult",
    "IntegralResult",
    "Sample",
    "Series",
    "counter_delta",
    "cpu_energy",
    "extract",
    "gpu_energy",
    "integrate_trapezoid",
]

Sample = tuple[int, Mapping[str, "float | None"]]
Series = Sequence[Sample]

CPU_ENERGY_KEY = re.compile(r"^cpu\.package(\d+)\.energy_j$")

_NS = 1_000_000_000
NO_COUNTER = "energy counter not supported"
NO_RAPL = "RAPL not readable"


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


def _fmt(x: float) -> str:
    """Short human number for reasons: 4.2, 3, 1234.57."""
    return f"{round(x, 2):g}"


def _json_safe(value: Any, path: str, reasons: dict[str, str]) -> Any:
    """Replace non-finite floats (anywhere) by None, recording a reason."""
    if isinstance(value, float) and not math.isfinite(value):
        reasons.setdefault(path, "non-finite result")
        return None
    if isinstance(value, dict):
        return {
            k: _json_safe(v, f"{path}.{k}" if path else str(k), reasons) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_json_safe(v, f"{path}[{i}]", reasons) for i, v in enumerate(value)]
    return value


_GPU_NUMERIC = (
    "gpu_power_avg_w",
    "gpu_power_max_w",
    "gpu_energy_j",
    "gpu_energy_counter_j",
    "energy_counter_diff_pct",
    "joules_per_output_token",
    "joules_per_total_token",
    "joules_per_request",
    "output_tokens_per_s_per_kw",
    "total_tokens_per_s_per_kw",
    "max_sample_gap_s",
    "power_window_s",
    "power_covered_fraction",
)
_GPU_PER_GPU = (
    "gpu_power_avg_w_per_gpu",
    "gpu_power_max_w_per_gpu",
    "gpu_energy_j_per_gpu",
    "gpu_energy_counter_j_per_gpu",
)


def _null_gpu_result(
    ids: list[Any], source: str, reason: str, *, samples: int | None
) -> dict[str, Any]:
    """Result with every numeric field null for one reason."""
    keys = [str(i) for i in ids]
    out: dict[str, Any] = {
        "power_valid": False,
        "power_invalid_reason": reason,
        "power_invalid_reasons": [reason],
        "power_source": source,
        "gpu_ids": ids,
    }
    null_reasons: dict[str, str] = {}
    for name in _GPU_NUMERIC:
        out[name] = None
        null_reasons[name] = reason
    for name in _GPU_PER_GPU:
        out[name] = dict.fromkeys(keys)
        for k in keys:
            null_reasons[f"{name}.{k}"] = reason
    out["gpu_power_max_method"] = None
    out["energy_counter_reset_detected"] = None
    null_reasons["energy_counter_reset_detected"] = reason
    out["samples"] = samples
    if samples is None:
        null_reasons["samples"] = reason
    out["power_null_reasons"] = null_reasons
    return out


def gpu_energy(
    series: Series,
    gpu_ids: Sequence[int | str],
    start_ns: int,
    end_ns: int,
    *,
    output_tokens: int | None,
    total_tokens: int | None,
    requests: int | None,
    max_gap_s: float = 3.0,
    counter_tolerance: float = 0.05,
    source: str,
    unavailable_reason: str | None = None,
) -> dict[str, Any]:
    """GPU power/energy result fields for the window ``[start_ns, end_ns]``.

    ``gpu_power_max_w`` is the max over in-window readings of the summed power
    when every in-window reading carries every GPU's power (aligned); otherwise
    it is the sum of each GPU's own maximum, an upper bound
    (``gpu_power_max_method`` says which). Invalid data keeps its numbers with
    ``power_valid`` false; with no data at all, numeric fields are null.
    """
    ids = list(gpu_ids)
    keys = [str(i) for i in ids]
    if not ids:
        return _null_gpu_result([], source, unavailable_reason or "no supported GPU", samples=None)
    if end_ns < start_ns:
        return _null_gpu_result(ids, source, "benchmark window ends before it starts", samples=0)
    if end_ns == start_ns:
        return _null_gpu_result(ids, source, "zero-length benchmark window", samples=0)

    duration_s = (end_ns - start_ns) / _NS
    reasons: list[str] = []
    null_reasons: dict[str, str] = {}
    power: dict[str, IntegralResult] = {}
    for gid, key in zip(ids, keys, strict=True):
        res = integrate_trapezoid(*extract(series, f"gpu.{gid}.power_w"), start_ns, end_ns)
        power[key] = res
        if res.samples_in_window == 0:
            reasons.append(f"gpu {gid}: no power samples in the window")
            continue
        if res.joules is None:
            reasons.append(f"gpu {gid}: power samples do not span any of the window")
            continue
        edge_gaps: set[float] = set()
        if res.uncovered_start_s > max_gap_s:
            edge_gaps.add(res.uncovered_start_s)
            reasons.append(
                f"gpu {gid}: first power sample {_fmt(res.uncovered_start_s)} s after the "
                f"window start (> {_fmt(max_gap_s)} s)"
            )
        if res.uncovered_end_s > max_gap_s:
            edge_gaps.add(res.uncovered_end_s)
            reasons.append(
                f"gpu {gid}: last power sample {_fmt(res.uncovered_end_s)} s before the "
                f"window end (> {_fmt(max_gap_s)} s)"
            )
        if res.max_gap_s > max_gap_s and res.max_gap_s not in edge_gaps:
            reasons.append(f"gpu {gid}: sample gap {_fmt(res.max_gap_s)} s > {_fmt(max_gap_s)} s")

    def _pw(reading: Mapping[str, float | None], gid: int | str) -> float | None:
        v = reading.get(f"gpu.{gid}.power_w")
        return float(v) if v is not None and math.isfinite(float(v)) else None

    in_window = [[_pw(r, g) for g in ids] for t, r in series if start_ns <= t <= end_ns]
    in_window = [row for row in in_window if any(v is not None for v in row)]
    n_samples = len(in_window)
    if all(p.joules is None for p in power.values()):
        out = _null_gpu_result(ids, source, "no power data in the window", samples=n_samples)
        out["power_invalid_reason"] = "; ".join(reasons)
        out["power_invalid_reasons"] = reasons
        return out

    missing = [g for g, k in zip(ids, keys, strict=True) if power[k].joules is None]
    missing_reason = (
        "no power data covering the window for gpu " + ", ".join(str(g) for g in missing)
        if missing
        else None
    )

    def _per_gpu(name: str, attr: str) -> dict[str, float | None]:
        vals: dict[str, float | None] = {}
        for k in keys:
            v = getattr(power[k], attr)
            vals[k] = v
            if v is None:
                null_reasons[f"{name}.{k}"] = (
                    "no power samples in the window"
                    if attr == "max_w"
                    else "no power data covering the window"
                )
        return vals

    energy_per = _per_gpu("gpu_energy_j_per_gpu", "joules")
    avg_per = _per_gpu("gpu_power_avg_w_per_gpu", "avg_watts")
    max_per = _per_gpu("gpu_power_max_w_per_gpu", "max_w")

    def _sum(name: str, vals: dict[str, float | None]) -> float | None:
        if missing_reason:
            null_reasons[name] = missing_reason
            return None
        absent = [g for g, k in zip(ids, keys, strict=True) if vals[k] is None]
        if absent:
            null_reasons[name] = "no power samples in the window for gpu " + ", ".join(
                str(g) for g in absent
            )
            return None
        return math.fsum(v for v in vals.values() if v is not None)

    energy_j = _sum("gpu_energy_j", energy_per)
    avg_w = _sum("gpu_power_avg_w", avg_per)

    # Peak: summed instantaneous power when readings are aligned across GPUs.
    max_w: float | None
    max_method: str | None = None
    if in_window and all(v is not None for row in in_window for v in row):
        max_w = max(math.fsum(v for v in row if v is not None) for row in in_window)
        max_method = "max of summed aligned samples"
    else:
        max_w = _sum("gpu_power_max_w", max_per)
        if max_w is not None:
            max_method = "sum of per-GPU maxima (samples not aligned)"

    # Device energy counters, cross-checked against the integral.
    counters: dict[str, CounterResult | None] = {}
    counter_per: dict[str, float | None] = {}
    for gid, key in zip(ids, keys, strict=True):
        c = counter_delta(*extract(series, f"gpu.{gid}.energy_j"), start_ns, end_ns)
        if c is None or c.delta_j is None:
            counters[key] = counter_per[key] = None
            null_reasons[f"gpu_energy_counter_j_per_gpu.{key}"] = (
                NO_COUNTER if c is None else "energy counter readings do not span the window"
            )
        else:
            counters[key] = c
            counter_per[key] = c.delta_j
    no_counter = [g for g, k in zip(ids, keys, strict=True) if counters[k] is None]
    counter_j: float | None = None
    diff_pct: float | None = None
    reset_detected: bool | None = None
    if not no_counter:
        counter_j = math.fsum(v for v in counter_per.values() if v is not None)
        reset_detected = any(c is not None and c.reset_detected for c in counters.values())
        if energy_j is None:
            null_reasons["energy_counter_diff_pct"] = null_reasons["gpu_energy_j"]
        elif counter_j <= 0:
            null_reasons["energy_counter_diff_pct"] = "energy counter did not advance"
            if energy_j > 0:
                # A counter stuck while the GPUs drew power: one of the two is wrong.
                reasons.append(
                    f"energy counter did not advance while the power integral is {_fmt(energy_j)} J"
                )
        else:
            diff_pct = (energy_j - counter_j) / counter_j * 100.0
            if abs(diff_pct) > counter_tolerance * 100.0:
                reasons.append(
                    f"power integral and energy counter disagree by {abs(diff_pct):.1f}%"
                    f" (> {_fmt(counter_tolerance * 100.0)}%)"
                    + ("; energy counter reset detected" if reset_detected else "")
                )
    else:
        why = (
            NO_COUNTER
            if len(no_counter) == len(ids)
            else f"{NO_COUNTER}: gpu " + ", ".join(str(g) for g in no_counter)
        )
        null_reasons["gpu_energy_counter_j"] = why
        null_reasons["energy_counter_diff_pct"] = why
        null_reasons["energy_counter_reset_detected"] = why

    def _tok(name: str, num: float | None, den: int | None, what: str) -> float | None:
        if num is None:
            null_reasons[name] = null_reasons.get("gpu_energy_j", "no energy")
            return None
        if den is None:
            null_reasons[name] = f"{what} not given"
            return None
        if den <= 0:
            null_reasons[name] = f"no {what}"
            return None
        return num / den

    def _per_kw(name: str, tokens: int | None, what: str) -> float | None:
        if avg_w is None:
            null_reasons[name] = null_reasons.get("gpu_power_avg_w", "no power")
            return None
        if tokens is None:
            null_reasons[name] = f"{what} not given"
            return None
        if avg_w <= 0:
            null_reasons[name] = "average GPU power is not positive"
            return None
        return (tokens / duration_s) / (avg_w / 1000.0)

    out: dict[str, Any] = {
        "power_valid": not reasons,
        "power_invalid_reason": "; ".join(reasons) if reasons else None,
        "power_invalid_reasons": reasons,
        "power_source": source,
        "gpu_ids": ids,
        "gpu_power_avg_w": avg_w,
        "gpu_power_avg_w_per_gpu": avg_per,
        "gpu_power_max_w": max_w,
        "gpu_power_max_w_per_gpu": max_per,
        "gpu_power_max_method": max_method,
        "gpu_energy_j": energy_j,
        "gpu_energy_j_per_gpu": energy_per,
        "gpu_energy_counter_j": counter_j,
        "gpu_energy_counter_j_per_gpu": counter_per,
        "energy_counter_diff_pct": diff_pct,
        "energy_counter_reset_detected": reset_detected,
        "joules_per_output_token": _tok(
            "joules_per_output_token", energy_j, output_tokens, "output tokens"
        ),
        "joules_per_total_token": _tok(
            "joules_per_total_token", energy_j, total_tokens, "total tokens"
        ),
        "joules_per_request": _tok("joules_per_request", energy_j, requests, "requests"),
        "output_tokens_per_s_per_kw": _per_kw(
            "output_tokens_per_s_per_kw", output_tokens, "output tokens"
        ),
        "total_tokens_per_s_per_kw": _per_kw(
            "total_tokens_per_s_per_kw", total_tokens, "total tokens"
        ),
        "max_sample_gap_s": max(p.max_gap_s for p in power.values()),
        "power_window_s": duration_s,
        "power_covered_fraction": min(p.covered_fraction for p in power.values()),
        "samples": n_samples,
    }
    out = _json_safe(out, "", null_reasons)
    out["power_null_reasons"] = null_reasons
    return out


def cpu_energy(series: Series, start_ns: int, end_ns: int) -> dict[str, Any]:
    """CPU package energy (RAPL counters) over ``[start_ns, end_ns]``.

    This is CPU energy only, never GPU energy and not wall power. Null with a
    reason ("RAPL not readable") when no package counter can be read.
    """
    packages = sorted(
        {int(m.group(1)) for _, r in series for k in r if (m := CPU_ENERGY_KEY.match(k))}
    )
    out: dict[str, Any] = {
        "cpu_energy_scope": "CPU packages (RAPL counters); not GPU energy, not wall power",
        "cpu_energy_source": "rapl",
        "cpu_packages": packages,
        "cpu_energy_j": None,
        "cpu_energy_j_per_package": dict.fromkeys(str(p) for p in packages),
        "cpu_power_avg_w": None,
        "cpu_energy_covered_fraction": None,
        "cpu_energy_reset_detected": None,
    }
    reasons: dict[str, str] = {}

    def _all_null(why: str) -> dict[str, Any]:
        for name in (
            "cpu_energy_j",
            "cpu_power_avg_w",
            "cpu_energy_covered_fraction",
            "cpu_energy_reset_detected",
        ):
            reasons[name] = why
        for p in packages:
            reasons[f"cpu_energy_j_per_package.{p}"] = why
        out["cpu_energy_null_reasons"] = reasons
        return out

    if end_ns <= start_ns:
        return _all_null(
            "zero-length benchmark window"
            if end_ns == start_ns
            else "benchmark window ends before it starts"
        )
    if not packages:
        return _all_null(NO_RAPL)
    results: dict[int, CounterResult | None] = {}
    for p in packages:
        c = counter_delta(*extract(series, f"cpu.package{p}.energy_j"), start_ns, end_ns)
        if c is None or c.delta_j is None:
            results[p] = None
            reasons[f"cpu_energy_j_per_package.{p}"] = NO_RAPL
        else:
            results[p] = c
            out["cpu_energy_j_per_package"][str(p)] = c.delta_j
    good = [c for c in results.values() if c is not None]
    if not good:
        return _all_null(NO_RAPL)
    if len(good) < len(packages):
        bad = [str(p) for p, c in results.items() if c is None]
        why = f"{NO_RAPL}: package " + ", ".join(bad)
        for name in ("cpu_energy_j", "cpu_power_avg_w"):
            reasons[name] = why
    else:
        out["cpu_energy_j"] = math.fsum(c.delta_j for c in good if c.delta_j is not None)
        if all(c.avg_watts is not None for c in good):
            out["cpu_power_avg_w"] = math.fsum(c.avg_watts for c in good if c.avg_watts is not None)
        else:
            reasons["cpu_power_avg_w"] = "RAPL readings do not span any time in the window"
    out["cpu_energy_covered_fraction"] = min(c.covered_fraction for c in good)
    out["cpu_energy_reset_detected"] = any(c.reset_detected for c in good)
    out = _json_safe(out, "", reasons)
    out["cpu_energy_null_reasons"] = reasons
    return out
