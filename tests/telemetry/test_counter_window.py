"""A counter's increase over a window: read at the window's edges, not at its inner readings."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from inferx_core.telemetry.window import counter_increase, summarize_prefix

KEY = "engine.prompt_tokens_total"


def rows_of(times: list[int], value_at) -> list:
    return [(t, {KEY: value_at(t)}) for t in times]


@given(
    interval=st.integers(10, 1000),
    n=st.integers(2, 40),
    rate=st.floats(0, 1e3, allow_nan=False),
    start_frac=st.floats(0, 1),
    length_frac=st.floats(0, 1),
)
def test_an_even_rate_gives_exactly_rate_times_window(
    interval: int, n: int, rate: float, start_frac: float, length_frac: float
) -> None:
    times = [k * interval for k in range(n)]
    span = times[-1]
    start = int(start_frac * span)
    end = start + max(1, int(length_frac * (span - start)))
    if end > span:
        return
    got = counter_increase(rows_of(times, lambda t: rate * t), KEY, start, end)
    assert got is not None
    assert abs(got - rate * (end - start)) <= 1e-6 * max(1.0, rate * span)


@given(
    steps=st.lists(st.floats(0, 100, allow_nan=False), min_size=2, max_size=30),
    start=st.integers(0, 300),
    length=st.integers(1, 300),
)
def test_a_counter_never_rises_more_than_it_did_nor_falls(
    steps: list[float], start: int, length: int
) -> None:
    times = [k * 10 for k in range(len(steps))]
    values, total = [], 0.0
    for step in steps:
        total += step
        values.append(total)
    rows = [(t, {KEY: v}) for t, v in zip(times, values, strict=True)]
    got = counter_increase(rows, KEY, start, start + length)
    if got is None:
        assert times[0] >= start + length or times[-1] <= start
        return
    assert -1e-9 <= got <= values[-1] - values[0] + 1e-9


def test_a_window_shorter_than_two_readings_still_has_its_increase() -> None:
    """The llama.cpp case: a 0.17 s point at 0.1 s readings had one or two inside."""
    rows = [(0, {KEY: 0.0}), (100, {KEY: 1000.0}), (200, {KEY: 2000.0}), (300, {KEY: 2000.0})]
    # one reading (t=100) inside [60, 170]: the old last-minus-first gave None
    assert counter_increase(rows, KEY, 60, 170) == 1100.0
    summary = summarize_prefix(rows, "engine.", 60, 170)
    assert summary["prompt_tokens_total"] == {"increase": 1100.0, "samples": 1}


def test_readings_all_on_one_side_of_the_window_give_none() -> None:
    rows = [(0, {KEY: 0.0}), (10, {KEY: 5.0})]
    assert counter_increase(rows, KEY, 20, 30) is None
    assert counter_increase(rows, KEY, -30, -20) is None
    assert counter_increase(rows[:1], KEY, 0, 10) is None
    assert counter_increase([(0, {KEY: None}), (5, {KEY: 1.0})], KEY, 0, 10) is None


def test_a_window_reaching_past_the_last_reading_takes_the_last_value() -> None:
    rows = [(0, {KEY: 0.0}), (10, {KEY: 4.0})]
    assert counter_increase(rows, KEY, 5, 50) == 2.0


def test_a_drop_is_a_reset_and_the_pieces_are_summed() -> None:
    """Prometheus' increase(): 0 -> 100, restart, 0 -> 40 is an increase of 140, not 40."""
    rows = [(0, {KEY: 0.0}), (10, {KEY: 100.0}), (11, {KEY: 0.0}), (20, {KEY: 40.0})]
    assert counter_increase(rows, KEY, 0, 20) == 140.0
    backwards = [(0, {KEY: 200.0}), (10, {KEY: 161.0})]  # end minus start: -39
    assert counter_increase(backwards, KEY, 0, 10) == 161.0


@given(
    values=st.lists(
        st.one_of(st.floats(-1e308, 1e308, allow_nan=False), st.just(float("nan"))),
        min_size=2,
        max_size=30,
    ),
    start=st.integers(0, 300),
    length=st.integers(1, 300),
)
def test_whatever_the_readings_the_increase_is_finite_and_never_negative(
    values: list[float], start: int, length: int
) -> None:
    rows = [(k * 10, {KEY: v}) for k, v in enumerate(values)]
    got = counter_increase(rows, KEY, start, start + length)
    assert got is None or (got >= 0 and got == got and got != float("inf"))


def test_a_gauge_with_no_reading_inside_a_short_window_is_null_and_says_why() -> None:
    """A 0.23 s point sampled every 0.5 s can fall between two readings: the gauge's
    statistics are null with the reason, while a counter is still read at the edges."""
    gauge, counter = "engine.requests_running", "engine.preemptions_total"
    rows = [(0, {gauge: 1.0, counter: 0.0}), (500, {gauge: 2.0, counter: 10.0})]
    out = summarize_prefix(rows, "engine.", 100, 330)
    running = out["requests_running"]
    assert running["mean"] is None and running["samples"] == 0
    assert "no finite reading inside the window" in running["why"]
    assert out["preemptions_total"]["increase"] == 10.0 * 230 / 500


def test_a_gauge_whose_readings_were_all_nan_says_so_not_that_none_was_taken() -> None:
    gauge = "engine.kv_cache_usage"
    rows = [(t, {gauge: float("nan")}) for t in (100, 200, 300)]
    out = summarize_prefix(rows, "engine.", 50, 350)["kv_cache_usage"]
    assert out["mean"] is None and out["samples"] == 0
    assert out["why"] == "none of the 3 readings inside the window was a finite number"
