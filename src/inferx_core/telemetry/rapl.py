"""CPU package energy over the benchmark window, from RAPL counters.

Pure functions, no I/O; the series format is that of
:mod:`inferx_core.telemetry.integrate`, with metrics named
``cpu.package<n>.energy_j``. The result is CPU energy only, never GPU energy
and not wall power; a null value always has a reason in
``cpu_energy_null_reasons``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from inferx_core.sdk.numbers import json_safe
from inferx_core.telemetry.integrate import CounterResult, Series, counter_delta, extract

__all__ = ["CPU_ENERGY_KEY", "NO_RAPL", "cpu_energy"]

CPU_ENERGY_KEY = re.compile(r"^cpu\.package(\d+)\.energy_j$")
NO_RAPL = "RAPL not readable"

_CPU_TOTALS = (
    "cpu_energy_j",
    "cpu_power_avg_w",
    "cpu_energy_covered_fraction",
    "cpu_energy_reset_detected",
)


def _rapl_packages(series: Series) -> list[int]:
    return sorted({int(m.group(1)) for _, r in series for k in r if (m := CPU_ENERGY_KEY.match(k))})


def _all_null_cpu(
    out: dict[str, Any], reasons: dict[str, str], packages: list[int], why: str
) -> dict[str, Any]:
    for name in _CPU_TOTALS:
        reasons[name] = why
    for p in packages:
        reasons[f"cpu_energy_j_per_package.{p}"] = why
    out["cpu_energy_null_reasons"] = reasons
    return out


def _package_counters(
    series: Series,
    packages: list[int],
    start_ns: int,
    end_ns: int,
    out: dict[str, Any],
    reasons: dict[str, str],
) -> dict[int, CounterResult | None]:
    """Each package's RAPL delta over the window, written into ``out`` as it is read."""
    results: dict[int, CounterResult | None] = {}
    for p in packages:
        c = counter_delta(*extract(series, f"cpu.package{p}.energy_j"), start_ns, end_ns)
        if c is None or c.delta_j is None:
            results[p] = None
            reasons[f"cpu_energy_j_per_package.{p}"] = NO_RAPL
        else:
            results[p] = c
            out["cpu_energy_j_per_package"][str(p)] = c.delta_j
    return results


def _cpu_totals(
    out: dict[str, Any],
    reasons: dict[str, str],
    results: dict[int, CounterResult | None],
    good: list[CounterResult],
) -> None:
    """Energy and average power summed over packages; null when any package is unreadable."""
    if len(good) < len(results):
        bad = [str(p) for p, c in results.items() if c is None]
        why = f"{NO_RAPL}: package " + ", ".join(bad)
        for name in ("cpu_energy_j", "cpu_power_avg_w"):
            reasons[name] = why
        return
    out["cpu_energy_j"] = math.fsum(c.delta_j for c in good if c.delta_j is not None)
    if all(c.avg_watts is not None for c in good):
        out["cpu_power_avg_w"] = math.fsum(c.avg_watts for c in good if c.avg_watts is not None)
    else:
        reasons["cpu_power_avg_w"] = "RAPL readings do not span any time in the window"


def cpu_energy(series: Series, start_ns: int, end_ns: int) -> dict[str, Any]:
    """CPU package energy (RAPL counters) over ``[start_ns, end_ns]``.

    This is CPU energy only, never GPU energy and not wall power. Null with a
    reason ("RAPL not readable") when no package counter can be read.
    """
    packages = _rapl_packages(series)
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
    if end_ns <= start_ns:
        why = (
            "zero-length benchmark window"
            if end_ns == start_ns
            else "benchmark window ends before it starts"
        )
        return _all_null_cpu(out, reasons, packages, why)
    if not packages:
        return _all_null_cpu(out, reasons, packages, NO_RAPL)
    results = _package_counters(series, packages, start_ns, end_ns, out, reasons)
    good = [c for c in results.values() if c is not None]
    if not good:
        return _all_null_cpu(out, reasons, packages, NO_RAPL)
    _cpu_totals(out, reasons, results, good)
    out["cpu_energy_covered_fraction"] = min(c.covered_fraction for c in good)
    out["cpu_energy_reset_detected"] = any(c.reset_detected for c in good)
    out = json_safe(out, "", reasons)
    out["cpu_energy_null_reasons"] = reasons
    return out
