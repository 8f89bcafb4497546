"""Properties of the capacity search (metrics/search.py): exact under monotone
verdicts, bounded in runs, repeats near the limit, never judges an invalid probe."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.metrics.search import Budget, Measurement, SearchSpace, search_capacity


def _monotone(capacity: float, margin: float = 0.5):
    """Passes (score 1 - margin) at levels <= capacity, fails (1 + margin) above."""
    calls: list[tuple[float, int]] = []

    def measure(level: float, run: int) -> Measurement:
        calls.append((level, run))
        return Measurement(1 - margin if level <= capacity else 1 + margin, "ttft_ms")

    return measure, calls


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(min_value=1, max_value=999),
    start=st.integers(min_value=1, max_value=1000),
)
def test_monotone_verdicts_give_the_exact_integer_boundary(capacity: int, start: int) -> None:
    measure, calls = _monotone(capacity)
    space = SearchSpace(start=start, low=1, high=1000)
    out = search_capacity(space, measure, budget=Budget(max_runs=100))
    assert out.status == "found"
    assert out.capacity == capacity
    assert out.first_fail is not None and out.first_fail.level == capacity + 1
    # far from the limit: one run per level, about two log2(range) levels at most
    assert all(run == 1 for _, run in calls)
    assert out.runs <= 2 * math.ceil(math.log2(1000)) + 2


@settings(max_examples=40, deadline=None)
@given(capacity=st.floats(min_value=0.2, max_value=900.0), tol=st.floats(0.01, 1.0))
def test_monotone_rates_are_bracketed_within_the_tolerance(capacity: float, tol: float) -> None:
    measure, _ = _monotone(capacity)
    space = SearchSpace(start=1.0, low=0.1, high=1000.0, integer=False, tolerance=tol)
    out = search_capacity(space, measure, budget=Budget(max_runs=200))
    assert out.status == "found"
    assert out.last_pass is not None and out.first_fail is not None
    assert out.last_pass.level <= capacity < out.first_fail.level
    assert out.first_fail.level - out.last_pass.level <= tol


def test_the_bounds_are_answers_not_guesses() -> None:
    measure, _ = _monotone(5000)
    out = search_capacity(SearchSpace(1, 1, 64), measure, budget=Budget(max_runs=50))
    assert (out.status, out.capacity, out.first_fail) == ("above_max", 64, None)
    measure, _ = _monotone(0)
    out = search_capacity(SearchSpace(8, 1, 64), measure, budget=Budget(max_runs=50))
    assert (out.status, out.capacity, out.last_pass) == ("below_min", None, None)


@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(2, 200), near=st.floats(0.0, 0.09))
def test_a_verdict_near_the_limit_is_repeated_before_it_is_trusted(
    capacity: int, near: float
) -> None:
    """At the boundary level the score is within the noise band: it runs max_runs times;
    everywhere else once."""
    calls: list[tuple[float, int]] = []

    def measure(level: float, run: int) -> Measurement:
        calls.append((level, run))
        if level == capacity:
            return Measurement(1 - near)
        return Measurement(0.3 if level < capacity else 1.7)

    out = search_capacity(
        SearchSpace(1, 1, 256), measure, noise=0.1, max_runs=3, budget=Budget(max_runs=100)
    )
    assert out.capacity == capacity
    assert [run for level, run in calls if level == capacity] == [1, 2, 3]
    assert all(run == 1 for level, run in calls if level != capacity)


def test_runs_that_straddle_the_limit_decide_by_the_median_and_say_so() -> None:
    scripted = {1: 0.2, 2: 0.2, 4: 1.8}
    runs_at_3 = iter([0.98, 1.04, 0.97])

    def measure(level: float, run: int) -> Measurement:
        return Measurement(next(runs_at_3) if level == 3 else scripted[int(level)])

    out = search_capacity(SearchSpace(1, 1, 8), measure, budget=Budget(max_runs=20))
    assert out.capacity == 3 and out.last_pass is not None
    assert out.last_pass.uncertain and out.last_pass.spread == (0.97, 1.04)
    assert len(out.last_pass.runs) == 3
    assert out.band >= 0.035  # learned from the repeats' half-spread


def test_an_invalid_probe_is_neither_pass_nor_fail() -> None:
    def measure(level: float, run: int) -> Measurement:
        if level >= 8:
            return Measurement(None, reason="invalid: client_starved")
        return Measurement(0.5)

    out = search_capacity(SearchSpace(1, 1, 64), measure, budget=Budget(max_runs=20))
    assert out.status == "undetermined"
    assert out.capacity == 4 and out.first_fail is None
    assert "could not judge level 8" in out.reason and "client_starved" in out.reason
    unknown = out.probes[-1]
    assert unknown.state == "unknown" and len(unknown.runs) == 2  # tried once more


def test_one_invalid_run_then_a_judged_one_counts_only_the_judged() -> None:
    seen: list[int] = []

    def measure(level: float, run: int) -> Measurement:
        seen.append(run)
        if level == 2 and run == 1:
            return Measurement(None, reason="invalid: errors")
        return Measurement(0.5 if level <= 2 else 1.5)

    out = search_capacity(SearchSpace(1, 1, 64), measure, budget=Budget(max_runs=20))
    assert out.capacity == 2
    probe_2 = next(p for p in out.probes if p.level == 2)
    assert probe_2.state == "pass" and probe_2.score == 0.5


@pytest.mark.parametrize("max_runs", [1, 3, 5])
def test_the_run_budget_is_never_exceeded(max_runs: int) -> None:
    measure, calls = _monotone(700)
    out = search_capacity(SearchSpace(1, 1, 1000), measure, budget=Budget(max_runs=max_runs))
    assert out.status == "budget" and "budget" in out.reason
    assert len(calls) == max_runs == out.runs


def test_the_seconds_budget_stops_before_the_next_run() -> None:
    now = [0.0]
    measure_calls = []

    def measure(level: float, run: int) -> Measurement:
        measure_calls.append(level)
        now[0] += 10.0
        return Measurement(0.5)

    budget = Budget(max_runs=100, max_seconds=25.0, clock=lambda: now[0])
    out = search_capacity(SearchSpace(1, 1, 1000), measure, budget=budget)
    assert out.status == "budget" and len(measure_calls) == 3
    assert "25 s" in out.reason
