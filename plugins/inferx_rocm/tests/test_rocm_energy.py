"""Energy from the amdsmi accumulator, computed by the core exactly as for NVIDIA.

The fake accumulator advances at a known power; the core's ``gpu_energy``
integrates the sampled socket power and cross-checks it with the counter
delta. Both must agree with power x time (and with each other) within 5%.
"""

from __future__ import annotations

import time

import fake_amdsmi as fake
import pytest

from inferx_core.telemetry import energy
from inferx_core.telemetry.recorder import TelemetryRecorder
from inferx_core.telemetry.session import TelemetryPlan, telemetry_fields
from inferx_rocm.sampler import AmdSmiSampler

NS = 1_000_000_000


def gpu_energy(series, gpu_ids, start_ns, end_ns, **kw):
    counts = energy.WindowCounts(**kw)
    return energy.gpu_energy(series, gpu_ids, start_ns, end_ns, counts=counts, source="amdsmi")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def sampled(amd: fake.FakeAmdSmi, clock: Clock, seconds: float, step_s: float, on_tick=None):
    """Read the sampler every ``step_s`` of fake time; samples stamped with that time."""
    sampler = AmdSmiSampler(range(len(amd.gpus)), amdsmi=amd.as_module())
    sampler.start()
    series = []
    steps = round(seconds / step_s)
    for k in range(steps + 1):
        if on_tick:
            on_tick(k * step_s)
        series.append((round(clock.t * NS), dict(sampler.read())))
        clock.t += step_s
    sampler.stop()
    return series


@pytest.mark.parametrize("api", ["7.0", "6.1"])
def test_constant_power_counter_matches_power_times_time(api: str) -> None:
    clock = Clock()
    gpus = [fake.mi300x(power_w=700.0), fake.mi300x(power_w=450.0)]
    amd = fake.FakeAmdSmi(gpus, api=api, clock=clock)
    start_ns = round(clock.t * NS)
    series = sampled(amd, clock, seconds=30.0, step_s=0.5)
    end_ns = series[-1][0]
    out = gpu_energy(series, [0, 1], start_ns, end_ns, output_tokens=1000, requests=10)
    expected = (700.0 + 450.0) * 30.0
    assert out["power_valid"] is True, out["power_invalid_reasons"]
    assert out["gpu_energy_j"] == pytest.approx(expected, rel=0.05)
    assert out["gpu_energy_counter_j"] == pytest.approx(expected, rel=0.05)
    assert out["gpu_energy_counter_j_per_gpu"]["0"] == pytest.approx(700.0 * 30.0, rel=0.05)
    assert abs(out["energy_counter_diff_pct"]) < 5.0
    assert out["gpu_power_avg_w"] == pytest.approx(1150.0, rel=0.01)
    assert out["joules_per_output_token"] == pytest.approx(expected / 1000, rel=0.05)


def test_varying_power_counter_and_integral_agree() -> None:
    """Power steps every 2 s (a load ramping up and down); the counter integrates exactly."""
    clock = Clock()
    amd = fake.FakeAmdSmi([fake.mi355x(power_w=300.0)], clock=clock)
    profile = [300.0, 900.0, 1400.0, 600.0, 1100.0, 350.0]

    def tick(t: float) -> None:
        watts = profile[min(int(t // 2.0), len(profile) - 1)]
        if amd.gpus[0].power_w != watts:
            amd.set_power(0, watts)

    start_ns = round(clock.t * NS)
    series = sampled(amd, clock, seconds=12.0, step_s=0.05, on_tick=tick)
    out = gpu_energy(series, [0], start_ns, series[-1][0])
    true_j = sum(profile) * 2.0  # 6 steps x 2 s
    assert out["gpu_energy_counter_j"] == pytest.approx(true_j, rel=0.05)
    assert out["gpu_energy_j"] == pytest.approx(true_j, rel=0.05)
    assert abs(out["energy_counter_diff_pct"]) < 5.0
    assert out["power_valid"] is True


@pytest.mark.parametrize("resolution", [1.0, 15.259999275207520, 1_000_000.0])
def test_counter_resolution_is_applied(resolution: float) -> None:
    """The same joules whatever the microjoules-per-count of the device."""
    clock = Clock()
    amd = fake.FakeAmdSmi([fake.mi300x(power_w=500.0, counter_resolution=resolution)], clock=clock)
    start_ns = round(clock.t * NS)
    series = sampled(amd, clock, seconds=20.0, step_s=1.0)
    out = gpu_energy(series, [0], start_ns, series[-1][0])
    assert out["gpu_energy_counter_j"] == pytest.approx(10_000.0, rel=0.05)


def test_with_the_recorder_on_real_time() -> None:
    """The sampler on the core's recorder thread, real clock: counter == P x t within 5%."""
    amd = fake.FakeAmdSmi([fake.mi300x(power_w=640.0), fake.mi300x(power_w=320.0)])
    sampler = AmdSmiSampler([0, 1], interval_s=0.02, amdsmi=amd.as_module())
    with TelemetryRecorder([sampler]) as recorder:
        time.sleep(0.1)
        start_ns = time.perf_counter_ns()
        time.sleep(1.0)
        end_ns = time.perf_counter_ns()
        time.sleep(0.1)
    (series,) = recorder.series
    assert series.unavailable is None and not series.errors
    plan = TelemetryPlan(make_samplers=list, gpu_ids=[0, 1])
    out = telemetry_fields(
        recorder,
        plan,
        start_ns=start_ns,
        end_ns=end_ns,
        output_tokens=100,
        total_tokens=200,
        requests=2,
    )
    seconds = (end_ns - start_ns) / NS
    assert out["power_valid"] is True, out["power_invalid_reasons"]
    assert out["power_source"] == "amdsmi"
    assert out["gpu_energy_j"] == pytest.approx(960.0 * seconds, rel=0.05)
    assert out["gpu_energy_counter_j"] == pytest.approx(960.0 * seconds, rel=0.05)
    # the same gpu.<i>.* summaries as NVIDIA's, under the same names
    assert {"0.power_w", "1.mem_used_mib", "0.temp_c", "1.sm_clock_mhz"} <= set(out["gpu_metrics"])
    assert amd.initialised == 0
