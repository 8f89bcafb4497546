"""Tests for inferx_core.metrics.stats: numpy-linear percentiles, empty -> None, +inf failures."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.metrics.stats import (
    describe,
    error_adjusted_percentiles,
    percentile,
    percentile_word,
    validate_percentiles,
)

finite = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)
samples = st.lists(finite, min_size=1, max_size=60)
pcts = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)


def test_percentile_word_matches_vllm() -> None:
    assert percentile_word(99) == "99"
    assert percentile_word(99.0) == "99"
    assert percentile_word(99.9) == "99.9"
    assert percentile_word(50) == "50"
    assert percentile_word(0.1) == "0.1"
    assert percentile_word(99.99) == "99.99"


def test_validate_percentiles() -> None:
    assert validate_percentiles([50, 90, 90, 99.9]) == (50.0, 90.0, 99.9)
    for bad in (-1, 100.5, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            validate_percentiles([bad])


def test_describe_empty_is_none() -> None:
    d = describe([], (50, 99.9))
    assert d == {"mean": None, "median": None, "std": None, "p50": None, "p99.9": None}
    assert percentile([], 50) is None


def test_describe_known_values() -> None:
    d = describe([1.0, 2.0, 3.0, 4.0], (25, 50, 90))
    assert d["mean"] == 2.5
    assert d["median"] == 2.5
    assert d["std"] == pytest.approx(math.sqrt(1.25))  # population std, like np.std
    assert d["p25"] == 1.75
    assert d["p50"] == 2.5
    assert d["p90"] == pytest.approx(3.7)


def test_describe_rejects_non_finite() -> None:
    with pytest.raises(ValueError):
        describe([1.0, math.inf], (50,))
    with pytest.raises(ValueError):
        describe([1.0, math.nan], (50,))


@given(samples, st.lists(pcts, min_size=1, max_size=5))
def test_describe_matches_numpy(values: list[float], ps: list[float]) -> None:
    d = describe(values, ps)
    arr = np.asarray(values)
    assert d["mean"] == float(np.mean(arr))
    assert d["median"] == float(np.median(arr))
    assert d["std"] == float(np.std(arr))
    for p in ps:
        assert d[f"p{percentile_word(p)}"] == float(np.percentile(arr, p))


@given(samples)
def test_percentiles_monotone_and_bounded(values: list[float]) -> None:
    d = describe(values, (50, 90, 99, 99.9, 100))
    seq = [d["p50"], d["p90"], d["p99"], d["p99.9"], d["p100"]]
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(seq))
    assert d["p100"] == max(values)
    assert d["mean"] is not None
    tol = 1e-9 * max(1.0, max(values))
    assert min(values) - tol <= d["mean"] <= max(values) + tol


def test_error_adjusted_hand_cases() -> None:
    # numpy.percentile([1, 2, inf], 50) is NaN; the right answer is 2.
    assert error_adjusted_percentiles([1.0, 2.0], 1, (50,)) == {"p50": 2.0}
    r = error_adjusted_percentiles([1.0, 2.0, 3.0], 1, (50, 66, 67, 75, 99))
    assert r["p50"] == 2.5  # rank 1.5
    assert r["p66"] == pytest.approx(2.98)  # rank 1.98
    assert r["p67"] == math.inf  # rank 2.01 reaches the failure
    assert r["p75"] == math.inf
    assert r["p99"] == math.inf


def test_error_adjusted_all_failed_and_empty() -> None:
    assert error_adjusted_percentiles([], 3, (50, 99)) == {"p50": math.inf, "p99": math.inf}
    assert error_adjusted_percentiles([], 0, (50,)) == {"p50": None}
    with pytest.raises(ValueError):
        error_adjusted_percentiles([1.0], -1, (50,))


def test_error_adjusted_exact_boundary_p99_9() -> None:
    # 1000 successes + 1 failure: p99.9 rank is exactly 999 -> the largest success.
    values = [float(i) for i in range(1000)]
    r = error_adjusted_percentiles(values, 1, (99.9, 100))
    assert r["p99.9"] == 999.0
    assert r["p100"] == math.inf


@given(samples, st.lists(pcts, min_size=1, max_size=5))
def test_error_adjusted_without_failures_is_numpy(values: list[float], ps: list[float]) -> None:
    r = error_adjusted_percentiles(values, 0, ps)
    for p in ps:
        assert r[f"p{percentile_word(p)}"] == float(np.percentile(values, p))


@given(samples, st.integers(min_value=0, max_value=20))
def test_error_adjusted_monotone_and_inf_iff_rank_reaches_failure(
    values: list[float], n_inf: int
) -> None:
    ps = (0, 10, 50, 90, 99, 99.9, 100)
    r = error_adjusted_percentiles(values, n_inf, ps)
    seq = [r[f"p{percentile_word(p)}"] for p in ps]
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(seq))
    n_f = len(values)
    n = n_f + n_inf
    for p in ps:
        v = r[f"p{percentile_word(p)}"]
        rank = p / 100 * (n - 1)
        if rank > n_f - 1 + 1e-9:
            assert v == math.inf
        elif rank < n_f - 1 - 1e-9:
            assert v is not None and math.isfinite(v)
            # Not worse than the unadjusted value at the same percentile of successes only.
            assert min(values) <= v <= max(values)
