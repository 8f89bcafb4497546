"""Energy over the benchmark window: trapezoid, counters, validity, JSON safety."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.telemetry.energy import (
    WindowCounts,
    counter_delta,
    cpu_energy,
    extract,
    gpu_energy,
    integrate_trapezoid,
)

S = 1_000_000_000  # ns per second
T0 = 123_456_789_000_000  # a perf_counter_ns-like origin

NUMERIC_GPU_FIELDS = (
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
)


def ts(seconds: float) -> int:
    """Absolute ns stamp ``seconds`` after T0."""
    return T0 + round(seconds * S)


def make_series(
    times_s: Sequence[float], columns: Mapping[str, Sequence[float | None]]
) -> list[tuple[int, dict[str, float | None]]]:
    """Series of readings; a None cell is left out of that reading's dict."""
    out: list[tuple[int, dict[str, float | None]]] = []
    for i, t in enumerate(times_s):
        out.append((ts(t), {k: v[i] for k, v in columns.items() if v[i] is not None}))
    return out


def energy(series, ids, start_s, end_s, **kw):
    """gpu_energy with token counts defaulted."""
    counts = WindowCounts(
        kw.pop("output_tokens", 1000), kw.pop("total_tokens", 4000), kw.pop("requests", 10)
    )
    kw.setdefault("source", "nvml")
    return gpu_energy(series, ids, ts(start_s), ts(end_s), counts=counts, **kw)


def assert_null_reasons(result: dict, reasons_key: str = "power_null_reasons") -> None:
    """Every null value (top level and per-GPU) has a reason string."""
    reasons = result[reasons_key]
    for name, value in result.items():
        if name == reasons_key:
            continue
        if value is None and name not in ("power_invalid_reason", "gpu_power_max_method"):
            assert isinstance(reasons.get(name), str), name
        if isinstance(value, dict):
            for k, v in value.items():
                if v is None:
                    assert isinstance(reasons.get(f"{name}.{k}"), str), f"{name}.{k}"


# --- strategies -------------------------------------------------------------

sample_times = st.lists(st.integers(min_value=1, max_value=5 * S), min_size=1, max_size=40).map(
    lambda steps: [T0 + sum(steps[:i]) for i in range(len(steps) + 1)]
)


# repeated stamps allowed: two readings at one instant are a step in power
sample_times_with_repeats = st.lists(
    st.integers(min_value=0, max_value=5 * S), min_size=1, max_size=40
).map(lambda steps: [T0 + sum(steps[:i]) for i in range(len(steps) + 1)])


@st.composite
def times_and_window(draw):
    """Sorted sample times and a window [start, end] inside the sampled range."""
    times = draw(sample_times)
    a = draw(st.integers(min_value=times[0], max_value=times[-1]))
    b = draw(st.integers(min_value=times[0], max_value=times[-1]))
    return times, min(a, b), max(a, b)


watts_value = st.floats(min_value=0.0, max_value=2000.0, allow_nan=False)


# --- integrate_trapezoid ----------------------------------------------------


@given(times_and_window(), watts_value)
def test_constant_power_gives_power_times_duration(tw, p):
    times, start, end = tw
    res = integrate_trapezoid(times, [p] * len(times), start, end)
    duration = (end - start) / S
    assert res.joules == pytest.approx(p * duration, rel=1e-12, abs=1e-9)
    assert res.covered_fraction == 1.0
    assert res.uncovered_start_s == 0.0 and res.uncovered_end_s == 0.0
    assert res.complete
    if duration > 0:
        assert res.avg_watts == pytest.approx(p, rel=1e-12, abs=1e-9)


@given(
    times_and_window(),
    st.floats(min_value=0.0, max_value=1000.0),
    st.floats(min_value=-20.0, max_value=20.0),
)
def test_linear_ramp_integrates_exactly(tw, a, b):
    times, start, end = tw
    watts = [a + b * (t - T0) / S for t in times]
    res = integrate_trapezoid(times, watts, start, end)
    x0, x1 = (start - T0) / S, (end - T0) / S
    exact = a * (x1 - x0) + b / 2 * (x1 * x1 - x0 * x0)
    scale = (abs(a) + abs(b) * max(abs(x0), abs(x1)) + 1) * (x1 - x0 + 1)
    assert res.joules == pytest.approx(exact, abs=1e-9 * scale)


def test_edge_interpolation_golden():
    times = [ts(0), ts(1), ts(2), ts(3)]
    watts = [100.0, 200.0, 100.0, 300.0]
    res = integrate_trapezoid(times, watts, ts(0.5), ts(2.5))
    # edges: w(0.5) = 150, w(2.5) = 200
    # [0.5,1]: 87.5 + [1,2]: 150 + [2,2.5]: 75
    assert res.joules == pytest.approx(312.5, rel=1e-12)
    assert res.avg_watts == pytest.approx(156.25, rel=1e-12)
    assert res.samples_in_window == 2
    assert res.max_gap_s == pytest.approx(1.0)
    assert res.max_w == 200.0
    assert res.complete and res.covered_fraction == 1.0


def test_window_inside_one_sample_interval():
    res = integrate_trapezoid([ts(0), ts(10)], [100.0, 200.0], ts(2), ts(4))
    assert res.joules == pytest.approx((120 + 140) / 2 * 2, rel=1e-12)
    assert res.samples_in_window == 0
    assert res.max_gap_s == pytest.approx(2.0)
    assert res.max_w is None


def test_uncovered_edges_are_reported_not_extrapolated():
    times = [ts(1), ts(2), ts(3)]
    res = integrate_trapezoid(times, [100.0, 100.0, 100.0], ts(0), ts(4))
    assert res.joules == pytest.approx(200.0)  # only [1, 3] s, no flat extension
    assert res.avg_watts == pytest.approx(100.0)
    assert res.uncovered_start_s == pytest.approx(1.0)
    assert res.uncovered_end_s == pytest.approx(1.0)
    assert res.covered_fraction == pytest.approx(0.5)
    assert res.covered_s == pytest.approx(2.0)
    assert not res.complete
    assert res.max_gap_s == pytest.approx(1.0)


def test_window_outside_samples_has_no_joules():
    res = integrate_trapezoid([ts(0), ts(1)], [100.0, 100.0], ts(5), ts(6))
    assert res.joules is None and res.avg_watts is None
    assert res.covered_fraction == 0.0
    assert res.uncovered_end_s == pytest.approx(1.0)
    assert res.samples_in_window == 0
    empty = integrate_trapezoid([], [], ts(0), ts(2))
    assert empty.joules is None
    assert empty.uncovered_start_s == empty.uncovered_end_s == pytest.approx(2.0)


def test_none_and_non_finite_values_are_dropped_and_counted():
    times = [ts(i) for i in range(6)]
    watts = [100.0, None, 100.0, float("nan"), None, 100.0]
    res = integrate_trapezoid(times, watts, ts(0), ts(5))
    assert res.joules == pytest.approx(500.0)
    assert res.dropped_none == 2
    assert res.dropped_nonfinite == 1
    assert res.samples_in_window == 3
    assert res.max_gap_s == pytest.approx(3.0)


def test_reversed_window_raises():
    with pytest.raises(ValueError):
        integrate_trapezoid([ts(0), ts(1)], [1.0, 1.0], ts(1), ts(0))


@given(sample_times_with_repeats, st.data())
def test_additivity(times, data):
    watts = data.draw(st.lists(watts_value, min_size=len(times), max_size=len(times)))
    pts = sorted(
        data.draw(
            st.lists(st.integers(min_value=times[0], max_value=times[-1]), min_size=3, max_size=3)
        )
    )
    a, b, c = pts
    ab = integrate_trapezoid(times, watts, a, b).joules
    bc = integrate_trapezoid(times, watts, b, c).joules
    ac = integrate_trapezoid(times, watts, a, c).joules
    assert ab is not None and bc is not None and ac is not None
    assert ab + bc == pytest.approx(ac, rel=1e-9, abs=1e-6)


@given(times_and_window(), st.data(), st.floats(min_value=0.0, max_value=100.0))
def test_scaling_power_scales_energy(tw, data, k):
    times, start, end = tw
    watts = data.draw(st.lists(watts_value, min_size=len(times), max_size=len(times)))
    base = integrate_trapezoid(times, watts, start, end).joules
    scaled = integrate_trapezoid(times, [k * w for w in watts], start, end).joules
    assert base is not None and scaled is not None
    assert scaled == pytest.approx(k * base, rel=1e-9, abs=1e-6)


# --- counter_delta ------------------------------------------------------------


def test_counter_delta_interpolates_edges():
    res = counter_delta([ts(0), ts(1), ts(2)], [1000.0, 1100.0, 1200.0], ts(0.5), ts(1.5))
    assert res is not None
    assert res.delta_j == pytest.approx(100.0)
    assert res.avg_watts == pytest.approx(100.0)
    assert not res.reset_detected
    assert res.readings_in_window == 1


def test_counter_reset_sums_positive_segments():
    times = [ts(i) for i in range(6)]
    counter = [100.0, 200.0, 300.0, 10.0, 110.0, 210.0]
    res = counter_delta(times, counter, ts(0), ts(5))
    assert res is not None
    assert res.reset_detected and res.resets == 1
    assert res.delta_j == pytest.approx(400.0)


def test_counter_needs_two_readings():
    assert counter_delta([ts(0)], [5.0], ts(0), ts(1)) is None
    assert counter_delta([ts(0), ts(1)], [5.0, None], ts(0), ts(1)) is None
    assert counter_delta([], [], ts(0), ts(1)) is None


def test_counter_outside_window_has_no_delta():
    res = counter_delta([ts(0), ts(1)], [0.0, 10.0], ts(3), ts(4))
    assert res is not None and res.delta_j is None


@given(sample_times, st.data())
def test_counter_additivity_and_matches_integral_of_its_rate(times, data):
    incs = data.draw(
        st.lists(
            st.floats(min_value=0.0, max_value=5000.0),
            min_size=len(times) - 1,
            max_size=len(times) - 1,
        )
    )
    counter = [1e6]
    for inc in incs:
        counter.append(counter[-1] + inc)
    a, b, c = sorted(
        data.draw(
            st.lists(st.integers(min_value=times[0], max_value=times[-1]), min_size=3, max_size=3)
        )
    )
    ab = counter_delta(times, counter, a, b)
    bc = counter_delta(times, counter, b, c)
    ac = counter_delta(times, counter, a, c)
    if len(times) < 2:
        assert ab is None
        return
    assert ab is not None and bc is not None and ac is not None
    assert ab.delta_j is not None and bc.delta_j is not None and ac.delta_j is not None
    assert ab.delta_j + bc.delta_j == pytest.approx(ac.delta_j, rel=1e-9, abs=1e-6)
    full = counter_delta(times, counter, times[0], times[-1])
    assert full is not None
    assert full.delta_j == pytest.approx(counter[-1] - counter[0], rel=1e-12)


# --- extract --------------------------------------------------------------------


def test_extract_missing_key_is_none():
    series = [(1, {"gpu.0.power_w": 5.0}), (2, {}), (3, {"gpu.0.power_w": None})]
    assert extract(series, "gpu.0.power_w") == ([1, 2, 3], [5.0, None, None])


# --- gpu_energy -------------------------------------------------------------------


def two_gpu_series(n_s: int = 10, p0: float = 250.0, p1: float = 350.0, **extra):
    times = list(range(n_s + 1))
    cols: dict[str, list[float | None]] = {
        "gpu.0.power_w": [p0] * len(times),
        "gpu.1.power_w": [p1] * len(times),
    }
    cols.update(extra)
    return make_series(times, cols)


def test_energy_per_token_golden():
    series = two_gpu_series()
    r = energy(series, [0, 1], 0, 10, output_tokens=3000, total_tokens=12000, requests=30)
    assert r["power_valid"] is True and r["power_invalid_reason"] is None
    assert r["power_source"] == "nvml"
    assert r["gpu_ids"] == [0, 1]
    assert r["gpu_energy_j"] == pytest.approx(6000.0)
    assert r["gpu_energy_j_per_gpu"] == {"0": pytest.approx(2500.0), "1": pytest.approx(3500.0)}
    assert r["gpu_power_avg_w"] == pytest.approx(600.0)
    assert r["gpu_power_avg_w_per_gpu"] == {"0": pytest.approx(250.0), "1": pytest.approx(350.0)}
    assert r["gpu_power_max_w"] == pytest.approx(600.0)
    assert r["gpu_power_max_method"] == "max of summed aligned samples"
    assert r["joules_per_output_token"] == pytest.approx(2.0)
    assert r["joules_per_total_token"] == pytest.approx(0.5)
    assert r["joules_per_request"] == pytest.approx(200.0)
    # 300 output tok/s over 0.6 kW; 1200 total tok/s over 0.6 kW
    assert r["output_tokens_per_s_per_kw"] == pytest.approx(500.0)
    assert r["total_tokens_per_s_per_kw"] == pytest.approx(2000.0)
    assert r["max_sample_gap_s"] == pytest.approx(1.0)
    assert r["samples"] == 11
    assert r["gpu_energy_counter_j"] is None
    assert r["power_null_reasons"]["gpu_energy_counter_j"] == "energy counter not supported"
    assert_null_reasons(r)
    json.dumps(r, allow_nan=False)


def test_peak_power_of_summed_aligned_samples():
    times = [0, 1, 2]
    series = make_series(
        times, {"gpu.0.power_w": [100, 300, 100], "gpu.1.power_w": [300, 100, 100]}
    )
    r = energy(series, [0, 1], 0, 2)
    assert r["gpu_power_max_w"] == pytest.approx(400.0)
    assert r["gpu_power_max_w_per_gpu"] == {"0": 300.0, "1": 300.0}


def test_peak_power_unaligned_sums_per_gpu_maxima():
    series = [
        (ts(0), {"gpu.0.power_w": 100.0}),
        (ts(0.5), {"gpu.1.power_w": 300.0}),
        (ts(1), {"gpu.0.power_w": 300.0}),
        (ts(1.5), {"gpu.1.power_w": 100.0}),
        (ts(2), {"gpu.0.power_w": 100.0, "gpu.1.power_w": 100.0}),
    ]
    r = energy(series, [0, 1], 0, 2)
    assert r["gpu_power_max_w"] == pytest.approx(600.0)
    assert r["gpu_power_max_method"] == "sum of per-GPU maxima (samples not aligned)"


def test_gap_over_limit_is_invalid_and_names_the_gpu():
    times = [0, 1, 2, 6.2, 7, 8]
    series = make_series(times, {"gpu.0.power_w": [200.0] * 6, "gpu.1.power_w": [200.0] * 6})
    # gpu 1 also reads between 2 and 6.2 s; gpu 0 does not
    series.insert(3, (ts(4), {"gpu.1.power_w": 200.0}))
    r = energy(series, [0, 1], 0, 8)
    assert r["power_valid"] is False
    assert r["power_invalid_reason"] == "gpu 0: sample gap 4.2 s > 3 s"
    assert "gpu 1" not in r["power_invalid_reason"]
    # measured numbers are kept
    assert r["gpu_energy_j"] == pytest.approx(3200.0)
    assert r["max_sample_gap_s"] == pytest.approx(4.2)


def test_gap_within_limit_is_valid():
    series = make_series([0, 3, 6], {"gpu.0.power_w": [100.0] * 3})
    r = energy(series, [0], 0, 6)
    assert r["power_valid"] is True


def test_missing_gpu_is_invalid():
    series = two_gpu_series()
    r = energy(series, [0, 1, 2, 3], 0, 10)
    assert r["power_valid"] is False
    assert "gpu 2: no power samples in the window" in r["power_invalid_reasons"]
    assert "gpu 3: no power samples in the window" in r["power_invalid_reason"]
    # per-GPU numbers kept; totals would silently miss GPUs, so they are null
    assert r["gpu_energy_j_per_gpu"]["0"] == pytest.approx(2500.0)
    assert r["gpu_energy_j_per_gpu"]["3"] is None
    assert r["gpu_energy_j"] is None
    assert "gpu 2, 3" in r["power_null_reasons"]["gpu_energy_j"]
    assert r["joules_per_output_token"] is None
    assert_null_reasons(r)
    json.dumps(r, allow_nan=False)


def test_window_start_not_covered_is_invalid():
    series = make_series([5, 6, 7, 8, 9, 10], {"gpu.0.power_w": [100.0] * 6})
    r = energy(series, [0], 0, 10)
    assert r["power_valid"] is False
    assert r["power_invalid_reason"] == (
        "gpu 0: first power sample 5 s after the window start (> 3 s)"
    )
    assert r["power_covered_fraction"] == pytest.approx(0.5)
    assert r["gpu_energy_j"] == pytest.approx(500.0)


def _with_counters(scale: float) -> list[tuple[int, dict[str, float | None]]]:
    """2 GPUs at 250 W / 350 W for 10 s; counters advance trapezoid/scale."""
    times = list(range(11))
    return two_gpu_series(
        **{
            "gpu.0.energy_j": [5e5 + 250.0 * t / scale for t in times],
            "gpu.1.energy_j": [7e5 + 350.0 * t / scale for t in times],
        }
    )


def test_counter_agreement_within_tolerance_is_valid():
    r = energy(_with_counters(1.04), [0, 1], 0, 10)
    assert r["power_valid"] is True
    assert r["gpu_energy_counter_j"] == pytest.approx(6000.0 / 1.04)
    assert r["energy_counter_diff_pct"] == pytest.approx(4.0)
    assert r["energy_counter_reset_detected"] is False
    assert r["gpu_energy_counter_j_per_gpu"]["1"] == pytest.approx(3500.0 / 1.04)


def test_counter_disagreement_is_invalid_with_percentage():
    r = energy(_with_counters(1.073), [0, 1], 0, 10)
    assert r["power_valid"] is False
    assert "power integral and energy counter disagree by 7.3%" in r["power_invalid_reason"]
    assert r["energy_counter_diff_pct"] == pytest.approx(7.3)
    assert r["gpu_energy_j"] == pytest.approx(6000.0)


def test_counter_on_only_some_gpus_is_not_used():
    series = two_gpu_series(**{"gpu.0.energy_j": [float(100 * t) for t in range(11)]})
    r = energy(series, [0, 1], 0, 10)
    assert r["power_valid"] is True
    assert r["gpu_energy_counter_j"] is None
    assert r["power_null_reasons"]["gpu_energy_counter_j"].startswith(
        "energy counter not supported"
    )
    assert r["gpu_energy_counter_j_per_gpu"]["0"] == pytest.approx(1000.0)


def test_counter_reset_in_gpu_energy_is_reported():
    counter = [0.0, 100.0, 200.0, 300.0, 5.0, 105.0, 205.0, 305.0, 405.0, 505.0, 605.0]
    series = make_series(
        list(range(11)), {"gpu.0.power_w": [100.0] * 11, "gpu.0.energy_j": counter}
    )
    r = energy(series, [0], 0, 10)
    assert r["energy_counter_reset_detected"] is True
    assert r["gpu_energy_counter_j"] == pytest.approx(900.0)
    assert r["power_valid"] is False  # 1000 J vs 900 J: 11.1%
    assert "reset" in r["power_invalid_reason"]


def test_none_values_dropped_in_gpu_energy():
    series = make_series([0, 1, 2, 3, 4], {"gpu.0.power_w": [100.0, None, 100.0, None, 100.0]})
    r = energy(series, [0], 0, 4)
    assert r["power_valid"] is True
    assert r["gpu_energy_j"] == pytest.approx(400.0)
    assert r["max_sample_gap_s"] == pytest.approx(2.0)
    assert r["samples"] == 3


def test_no_gpu_all_null_with_given_reason():
    why = "no supported GPU: NVML shared library not found"
    r = gpu_energy(
        [],
        [],
        ts(0),
        ts(10),
        counts=WindowCounts(output_tokens=10, total_tokens=20, requests=1),
        source="nvml",
        unavailable_reason=why,
    )
    assert r["power_valid"] is False
    assert r["power_invalid_reason"] == why
    for name in (*NUMERIC_GPU_FIELDS, "samples"):
        assert r[name] is None, name
        assert r["power_null_reasons"][name] == why
    json.dumps(r, allow_nan=False)
    default = energy([], [], 0, 10)
    assert default["power_invalid_reason"] == "no supported GPU"


def test_expected_gpus_but_no_data_all_null():
    r = energy([], [0, 1], 0, 10)
    assert r["power_valid"] is False
    assert "gpu 0: no power samples in the window" in r["power_invalid_reason"]
    for name in NUMERIC_GPU_FIELDS:
        assert r[name] is None, name
    assert r["samples"] == 0
    assert_null_reasons(r)


@pytest.mark.parametrize(("start", "end"), [(5, 5), (6, 5)])
def test_degenerate_window_is_null_with_reason(start, end):
    r = energy(two_gpu_series(), [0, 1], start, end)
    assert r["power_valid"] is False
    assert "window" in r["power_invalid_reason"]
    for name in NUMERIC_GPU_FIELDS:
        assert r[name] is None
        assert "window" in r["power_null_reasons"][name]


def test_zero_tokens_and_requests_give_null_with_reason():
    r = energy(two_gpu_series(), [0, 1], 0, 10, output_tokens=0, total_tokens=None, requests=0)
    assert r["joules_per_output_token"] is None
    assert r["power_null_reasons"]["joules_per_output_token"] == "no output tokens"
    assert r["joules_per_total_token"] is None
    assert r["power_null_reasons"]["joules_per_total_token"] == "total tokens not given"
    assert r["joules_per_request"] is None
    assert r["output_tokens_per_s_per_kw"] == 0.0


value_or_junk = st.one_of(
    st.none(),
    st.floats(min_value=0.0, max_value=5000.0),
    st.sampled_from([float("nan"), float("inf"), -float("inf")]),
)


@settings(max_examples=200)
@given(
    n_gpus=st.integers(min_value=0, max_value=3),
    steps=st.lists(st.integers(min_value=0, max_value=6 * S), min_size=0, max_size=12),
    data=st.data(),
)
def test_json_strict_for_random_inputs(n_gpus, steps, data):
    times = [T0 + sum(steps[:i]) for i in range(len(steps))]
    keys = [f"gpu.{g}.{m}" for g in range(n_gpus) for m in ("power_w", "energy_j")]
    keys += ["cpu.package0.energy_j", "cpu.package1.energy_j"]
    series = []
    for t in times:
        reading = {k: data.draw(value_or_junk) for k in keys if data.draw(st.booleans())}
        series.append((t, reading))
    lo, hi = T0 - 3 * S, T0 + 80 * S
    start = data.draw(st.integers(min_value=lo, max_value=hi))
    end = data.draw(st.integers(min_value=lo, max_value=hi))
    tokens = st.one_of(st.none(), st.integers(min_value=0, max_value=10**7))
    r = gpu_energy(
        series,
        list(range(n_gpus)),
        start,
        end,
        counts=WindowCounts(data.draw(tokens), data.draw(tokens), data.draw(tokens)),
        source="nvml",
    )
    json.dumps(r, allow_nan=False)
    assert_null_reasons(r)
    assert isinstance(r["power_valid"], bool)
    assert r["power_valid"] == (r["power_invalid_reason"] is None)
    c = cpu_energy(series, start, end)
    json.dumps(c, allow_nan=False)
    assert_null_reasons(c, "cpu_energy_null_reasons")


# --- cpu_energy ---------------------------------------------------------------------


def test_cpu_energy_rapl_packages():
    times = list(range(11))
    series = make_series(
        times,
        {
            "cpu.package0.energy_j": [1000.0 + 50.0 * t for t in times],
            "cpu.package1.energy_j": [2000.0 + 30.0 * t for t in times],
            "gpu.0.energy_j": [9e9] * 11,  # never counted as CPU energy
        },
    )
    c = cpu_energy(series, ts(1), ts(9))
    assert c["cpu_packages"] == [0, 1]
    assert c["cpu_energy_j"] == pytest.approx(640.0)
    assert c["cpu_energy_j_per_package"] == {"0": pytest.approx(400.0), "1": pytest.approx(240.0)}
    assert c["cpu_power_avg_w"] == pytest.approx(80.0)
    assert c["cpu_energy_reset_detected"] is False
    assert "CPU" in c["cpu_energy_scope"] and "not GPU" in c["cpu_energy_scope"]
    assert c["cpu_energy_null_reasons"] == {}


def test_cpu_energy_absent_is_null_with_reason():
    c = cpu_energy(two_gpu_series(), ts(0), ts(10))
    assert c["cpu_energy_j"] is None and c["cpu_power_avg_w"] is None
    assert c["cpu_energy_null_reasons"]["cpu_energy_j"] == "RAPL not readable"
    unreadable = make_series([0, 1, 2], {"cpu.package0.energy_j": [None, None, None]})
    assert unreadable == [(ts(0), {}), (ts(1), {}), (ts(2), {})]
    unreadable = [(t, {"cpu.package0.energy_j": None}) for t, _ in unreadable]
    c = cpu_energy(unreadable, ts(0), ts(2))
    assert c["cpu_energy_j"] is None
    assert c["cpu_energy_null_reasons"]["cpu_energy_j"] == "RAPL not readable"
    assert math.isfinite(json.loads(json.dumps(c, allow_nan=False))["cpu_packages"][0])


def test_gpu_energy_takes_at_most_nine_parameters():
    """Issue 43 item 5: the window's counts travel as one WindowCounts, not three keywords."""
    import inspect

    params = inspect.signature(gpu_energy).parameters
    assert len(params) <= 9, list(params)
    assert "counts" in params and "output_tokens" not in params
