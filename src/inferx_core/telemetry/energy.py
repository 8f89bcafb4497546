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
The integrals themselves live in :mod:`inferx_core.telemetry.integrate`;
this module turns them into GPU result fields, and re-exports the CPU ones
(:mod:`inferx_core.telemetry.rapl`) so callers find both energies here.

Result dicts are JSON-safe: no NaN or infinity, a null value always has a
reason in the matching ``*_null_reasons`` dict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inferx_core.sdk.numbers import finite_or_none, json_safe
from inferx_core.telemetry.integrate import (
    CounterResult,
    IntegralResult,
    Sample,
    Series,
    counter_delta,
    extract,
    integrate_trapezoid,
)
from inferx_core.telemetry.rapl import CPU_ENERGY_KEY, cpu_energy

__all__ = [
    "CPU_ENERGY_KEY",
    "CounterResult",
    "IntegralResult",
    "Sample",
    "Series",
    "WindowCounts",
    "counter_delta",
    "cpu_energy",
    "extract",
    "gpu_energy",
    "integrate_trapezoid",
]

_NS = 1_000_000_000
NO_COUNTER = "energy counter not supported"


def _fmt(x: float) -> str:
    """Short human number for reasons: 4.2, 3, 1234.57."""
    return f"{round(x, 2):g}"


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


@dataclass
class _GpuFields:
    """What one ``gpu_energy`` call collects while it builds its fields.

    ``reasons`` make the power data invalid (numbers kept); ``null_reasons``
    say why one field is null. ``missing_reason`` is set when some GPU has no
    power data covering the window, which nulls every sum over GPUs.
    """

    ids: list[Any]
    keys: list[str]
    reasons: list[str] = field(default_factory=list)
    null_reasons: dict[str, str] = field(default_factory=dict)
    missing_reason: str | None = None

    def gpus(self) -> zip[tuple[Any, str]]:
        return zip(self.ids, self.keys, strict=True)

    def per_gpu(
        self, power: dict[str, IntegralResult], name: str, attr: str
    ) -> dict[str, float | None]:
        """One attribute of every GPU's integral, a null reason for each missing one."""
        vals: dict[str, float | None] = {}
        for k in self.keys:
            v = getattr(power[k], attr)
            vals[k] = v
            if v is None:
                self.null_reasons[f"{name}.{k}"] = (
                    "no power samples in the window"
                    if attr == "max_w"
                    else "no power data covering the window"
                )
        return vals

    def total(self, name: str, vals: dict[str, float | None]) -> float | None:
        """Sum over GPUs, or None (with a reason) when any GPU lacks a value."""
        if self.missing_reason:
            self.null_reasons[name] = self.missing_reason
            return None
        absent = [g for g, k in self.gpus() if vals[k] is None]
        if absent:
            self.null_reasons[name] = "no power samples in the window for gpu " + ", ".join(
                str(g) for g in absent
            )
            return None
        return math.fsum(v for v in vals.values() if v is not None)


def _window_problem(
    ids: list[Any], start_ns: int, end_ns: int, source: str, unavailable_reason: str | None
) -> dict[str, Any] | None:
    """The all-null result when there is nothing to integrate, else None."""
    if not ids:
        return _null_gpu_result([], source, unavailable_reason or "no supported GPU", samples=None)
    if end_ns < start_ns:
        return _null_gpu_result(ids, source, "benchmark window ends before it starts", samples=0)
    if end_ns == start_ns:
        return _null_gpu_result(ids, source, "zero-length benchmark window", samples=0)
    return None


def _coverage_problems(gid: Any, res: IntegralResult, max_gap_s: float) -> list[str]:
    """Why one GPU's power samples do not cover the window well enough (empty if they do)."""
    if res.samples_in_window == 0:
        return [f"gpu {gid}: no power samples in the window"]
    if res.joules is None:
        return [f"gpu {gid}: power samples do not span any of the window"]
    problems: list[str] = []
    edge_gaps: set[float] = set()
    if res.uncovered_start_s > max_gap_s:
        edge_gaps.add(res.uncovered_start_s)
        problems.append(
            f"gpu {gid}: first power sample {_fmt(res.uncovered_start_s)} s after the "
            f"window start (> {_fmt(max_gap_s)} s)"
        )
    if res.uncovered_end_s > max_gap_s:
        edge_gaps.add(res.uncovered_end_s)
        problems.append(
            f"gpu {gid}: last power sample {_fmt(res.uncovered_end_s)} s before the "
            f"window end (> {_fmt(max_gap_s)} s)"
        )
    if res.max_gap_s > max_gap_s and res.max_gap_s not in edge_gaps:
        problems.append(f"gpu {gid}: sample gap {_fmt(res.max_gap_s)} s > {_fmt(max_gap_s)} s")
    return problems


def _integrate_power(
    series: Series, f: _GpuFields, start_ns: int, end_ns: int, max_gap_s: float
) -> dict[str, IntegralResult]:
    """Each GPU's power integral over the window; coverage problems go to ``f.reasons``."""
    power: dict[str, IntegralResult] = {}
    for gid, key in f.gpus():
        res = integrate_trapezoid(*extract(series, f"gpu.{gid}.power_w"), start_ns, end_ns)
        power[key] = res
        f.reasons.extend(_coverage_problems(gid, res, max_gap_s))
    return power


def _in_window_rows(
    series: Series, ids: list[Any], start_ns: int, end_ns: int
) -> list[list[float | None]]:
    """Per-reading power of every GPU inside the window (readings with no power dropped)."""
    rows = [
        [finite_or_none(r.get(f"gpu.{g}.power_w")) for g in ids]
        for t, r in series
        if start_ns <= t <= end_ns
    ]
    return [row for row in rows if any(v is not None for v in row)]


def _missing_power_reason(f: _GpuFields, power: dict[str, IntegralResult]) -> str | None:
    missing = [g for g, k in f.gpus() if power[k].joules is None]
    if not missing:
        return None
    return "no power data covering the window for gpu " + ", ".join(str(g) for g in missing)


def _peak_power(
    f: _GpuFields, rows: list[list[float | None]], max_per: dict[str, float | None]
) -> tuple[float | None, str | None]:
    """(peak power, method): summed instantaneous power when readings are aligned across GPUs."""
    if rows and all(v is not None for row in rows for v in row):
        aligned = max(math.fsum(v for v in row if v is not None) for row in rows)
        return aligned, "max of summed aligned samples"
    peak = f.total("gpu_power_max_w", max_per)
    return peak, ("sum of per-GPU maxima (samples not aligned)" if peak is not None else None)


def _energy_counters(
    series: Series, f: _GpuFields, start_ns: int, end_ns: int
) -> dict[str, CounterResult | None]:
    """Each GPU's energy-counter delta over the window (None, with a reason, when unusable)."""
    counters: dict[str, CounterResult | None] = {}
    for gid, key in f.gpus():
        c = counter_delta(*extract(series, f"gpu.{gid}.energy_j"), start_ns, end_ns)
        if c is None or c.delta_j is None:
            counters[key] = None
            f.null_reasons[f"gpu_energy_counter_j_per_gpu.{key}"] = (
                NO_COUNTER if c is None else "energy counter readings do not span the window"
            )
        else:
            counters[key] = c
    return counters


def _counter_disagreement(
    f: _GpuFields,
    energy_j: float | None,
    counter_j: float,
    reset_detected: bool,
    tolerance: float,
) -> float | None:
    """Percent by which the power integral differs from the counter; flags a disagreement."""
    if energy_j is None:
        f.null_reasons["energy_counter_diff_pct"] = f.null_reasons["gpu_energy_j"]
        return None
    if counter_j <= 0:
        f.null_reasons["energy_counter_diff_pct"] = "energy counter did not advance"
        if energy_j > 0:
            # A counter stuck while the GPUs drew power: one of the two is wrong.
            f.reasons.append(
                f"energy counter did not advance while the power integral is {_fmt(energy_j)} J"
            )
        return None
    diff_pct = (energy_j - counter_j) / counter_j * 100.0
    if abs(diff_pct) > tolerance * 100.0:
        f.reasons.append(
            f"power integral and energy counter disagree by {abs(diff_pct):.1f}%"
            f" (> {_fmt(tolerance * 100.0)}%)"
            + ("; energy counter reset detected" if reset_detected else "")
        )
    return diff_pct


def _counter_fields(
    series: Series,
    f: _GpuFields,
    start_ns: int,
    end_ns: int,
    energy_j: float | None,
    tolerance: float,
) -> dict[str, Any]:
    """Device energy counters over the window, cross-checked against the power integral."""
    counters = _energy_counters(series, f, start_ns, end_ns)
    fields: dict[str, Any] = {
        "gpu_energy_counter_j": None,
        "gpu_energy_counter_j_per_gpu": {
            k: (c.delta_j if c is not None else None) for k, c in counters.items()
        },
        "energy_counter_diff_pct": None,
        "energy_counter_reset_detected": None,
    }
    no_counter = [g for g, k in f.gpus() if counters[k] is None]
    if no_counter:
        why = (
            NO_COUNTER
            if len(no_counter) == len(f.ids)
            else f"{NO_COUNTER}: gpu " + ", ".join(str(g) for g in no_counter)
        )
        for name in (
            "gpu_energy_counter_j",
            "energy_counter_diff_pct",
            "energy_counter_reset_detected",
        ):
            f.null_reasons[name] = why
        return fields
    counter_j = math.fsum(c.delta_j for c in counters.values() if c and c.delta_j is not None)
    reset_detected = any(c is not None and c.reset_detected for c in counters.values())
    fields["gpu_energy_counter_j"] = counter_j
    fields["energy_counter_diff_pct"] = _counter_disagreement(
        f, energy_j, counter_j, reset_detected, tolerance
    )
    fields["energy_counter_reset_detected"] = reset_detected
    return fields


def _per_unit(
    f: _GpuFields, name: str, energy_j: float | None, count: int | None, what: str
) -> float | None:
    """Joules per token or request, or None with a reason."""
    if energy_j is None:
        f.null_reasons[name] = f.null_reasons.get("gpu_energy_j", "no energy")
        return None
    if count is None:
        f.null_reasons[name] = f"{what} not given"
        return None
    if count <= 0:
        f.null_reasons[name] = f"no {what}"
        return None
    return energy_j / count


def _per_kw(
    f: _GpuFields,
    name: str,
    avg_w: float | None,
    tokens: int | None,
    duration_s: float,
    what: str,
) -> float | None:
    """Tokens per second per kilowatt of average GPU power, or None with a reason."""
    if avg_w is None:
        f.null_reasons[name] = f.null_reasons.get("gpu_power_avg_w", "no power")
        return None
    if tokens is None:
        f.null_reasons[name] = f"{what} not given"
        return None
    if avg_w <= 0:
        f.null_reasons[name] = "average GPU power is not positive"
        return None
    return (tokens / duration_s) / (avg_w / 1000.0)


@dataclass(frozen=True)
class WindowCounts:
    """What the window served: the denominators of the per-token, per-request and per-kW
    figures, one value as they travel together (None: not counted; its figures null)."""

    output_tokens: int | None = None
    total_tokens: int | None = None
    requests: int | None = None


def _efficiency_fields(
    f: _GpuFields,
    energy_j: float | None,
    avg_w: float | None,
    duration_s: float,
    c: WindowCounts,
) -> dict[str, float | None]:
    out_tok, all_tok = "output tokens", "total tokens"
    return {
        "joules_per_output_token": _per_unit(
            f, "joules_per_output_token", energy_j, c.output_tokens, out_tok
        ),
        "joules_per_total_token": _per_unit(
            f, "joules_per_total_token", energy_j, c.total_tokens, all_tok
        ),
        "joules_per_request": _per_unit(f, "joules_per_request", energy_j, c.requests, "requests"),
        "output_tokens_per_s_per_kw": _per_kw(
            f, "output_tokens_per_s_per_kw", avg_w, c.output_tokens, duration_s, out_tok
        ),
        "total_tokens_per_s_per_kw": _per_kw(
            f, "total_tokens_per_s_per_kw", avg_w, c.total_tokens, duration_s, all_tok
        ),
    }


def _power_fields(
    f: _GpuFields, power: dict[str, IntegralResult], rows: list[list[float | None]]
) -> dict[str, Any]:
    """Average power, peak power and energy: per GPU and summed over the GPUs."""
    f.missing_reason = _missing_power_reason(f, power)
    energy_per = f.per_gpu(power, "gpu_energy_j_per_gpu", "joules")
    avg_per = f.per_gpu(power, "gpu_power_avg_w_per_gpu", "avg_watts")
    max_per = f.per_gpu(power, "gpu_power_max_w_per_gpu", "max_w")
    energy_j = f.total("gpu_energy_j", energy_per)
    avg_w = f.total("gpu_power_avg_w", avg_per)
    max_w, max_method = _peak_power(f, rows, max_per)
    return {
        "gpu_power_avg_w": avg_w,
        "gpu_power_avg_w_per_gpu": avg_per,
        "gpu_power_max_w": max_w,
        "gpu_power_max_w_per_gpu": max_per,
        "gpu_power_max_method": max_method,
        "gpu_energy_j": energy_j,
        "gpu_energy_j_per_gpu": energy_per,
    }


def gpu_energy(
    series: Series,
    gpu_ids: Sequence[int | str],
    start_ns: int,
    end_ns: int,
    *,
    counts: WindowCounts,
    source: str,
    unavailable_reason: str | None = None,
    max_gap_s: float = 3.0,
    counter_tolerance: float = 0.05,
) -> dict[str, Any]:
    """GPU power/energy result fields for the window ``[start_ns, end_ns]``.

    ``gpu_power_max_w`` is the max over in-window readings of the summed power
    when every in-window reading carries every GPU's power (aligned); otherwise
    it is the sum of each GPU's own maximum, an upper bound
    (``gpu_power_max_method`` says which). Invalid data keeps its numbers with
    ``power_valid`` false; with no data at all, numeric fields are null.
    """
    ids = list(gpu_ids)
    nothing = _window_problem(ids, start_ns, end_ns, source, unavailable_reason)
    if nothing is not None:
        return nothing
    f = _GpuFields(ids, [str(i) for i in ids])
    power = _integrate_power(series, f, start_ns, end_ns, max_gap_s)
    rows = _in_window_rows(series, ids, start_ns, end_ns)
    if all(p.joules is None for p in power.values()):
        out = _null_gpu_result(ids, source, "no power data in the window", samples=len(rows))
        out["power_invalid_reason"] = "; ".join(f.reasons)
        out["power_invalid_reasons"] = f.reasons
        return out

    power_fields = _power_fields(f, power, rows)
    energy_j = power_fields["gpu_energy_j"]
    counters = _counter_fields(series, f, start_ns, end_ns, energy_j, counter_tolerance)
    duration_s = (end_ns - start_ns) / _NS
    efficiency = _efficiency_fields(
        f,
        energy_j,
        power_fields["gpu_power_avg_w"],
        duration_s,
        counts,
    )
    measured = {**power_fields, **counters, **efficiency}
    return _gpu_result(f, ids, source, power, measured, duration_s, len(rows))


def _gpu_result(
    f: _GpuFields,
    ids: list[Any],
    source: str,
    power: Mapping[Any, Any],
    measured: dict[str, Any],
    duration_s: float,
    samples: int,
) -> dict[str, Any]:
    """The result fields in their file order; non-finite values become null with a reason."""
    out: dict[str, Any] = {
        "power_valid": not f.reasons,
        "power_invalid_reason": "; ".join(f.reasons) if f.reasons else None,
        "power_invalid_reasons": f.reasons,
        "power_source": source,
        "gpu_ids": ids,
        **measured,
        "max_sample_gap_s": max(p.max_gap_s for p in power.values()),
        "power_window_s": duration_s,
        "power_covered_fraction": min(p.covered_fraction for p in power.values()),
        "samples": samples,
    }
    out = json_safe(out, "", f.null_reasons)
    out["power_null_reasons"] = f.null_reasons
    return out
