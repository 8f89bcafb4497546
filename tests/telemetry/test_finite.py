"""No value in a point's telemetry that is not a finite number reaches a file."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from inferx_core.telemetry.finite import finite_telemetry
from inferx_core.telemetry.model import CpuEnergy, GpuPower, TelemetrySection

odd = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none(), st.integers(-5, 5))


def section(power: float | None, gauge: float | None, increase: float | None) -> TelemetrySection:
    return TelemetrySection(
        gpu=GpuPower(power_valid=True, power_source="nvml", gpu_power_avg_w=power),
        cpu=CpuEnergy(cpu_energy_scope="package", cpu_energy_source="rapl"),
        engine_metrics={
            "kv_cache_usage": {"mean": gauge, "max": gauge, "samples": 2},
            "prompt_tokens_total": {"increase": increase, "samples": 2},
            "spec_decode": {"acceptance_per_position": [gauge, 0.5]},
        },
    )


@given(power=odd, gauge=odd, increase=odd)
def test_every_section_is_strict_json_and_finite_values_are_kept(power, gauge, increase) -> None:
    before = section(power, gauge, increase)
    after = finite_telemetry(before)
    assert after is not None
    text = json.dumps(after.model_dump(mode="json"), allow_nan=False)  # always writable
    for value, path in ((power, after.gpu.gpu_power_avg_w), (gauge, after.engine_metrics[
            "kv_cache_usage"]["mean"])):  # fmt: skip
        finite = value is None or (isinstance(value, int) or math.isfinite(value))
        assert path == (value if finite else None)
    if isinstance(power, float) and not math.isfinite(power):
        assert after.gpu.power_null_reasons["gpu_power_avg_w"] == "not a finite number"
    if isinstance(gauge, float) and not math.isfinite(gauge):
        assert after.engine_metrics["kv_cache_usage"]["why"] == "not a finite number"
        assert after.engine_metrics["spec_decode"]["acceptance_per_position"][0] is None
    assert "Infinity" not in text and "NaN" not in text


def test_a_clean_section_is_returned_as_it_is() -> None:
    clean = section(300.0, 0.5, 10.0)
    assert finite_telemetry(clean) is clean
    assert finite_telemetry(None) is None
