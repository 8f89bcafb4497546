"""Pareto frontiers: definition, ties, invariants (hypothesis), interpolation."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.analysis.pareto import (
    Frontier,
    dominates,
    frontier_by_group,
    mask_by_group,
    pareto_front,
    pareto_mask,
)

# Small integer-valued coordinates make ties frequent (the interesting case).
coord = st.integers(min_value=0, max_value=6).map(float)
maybe = st.one_of(coord, coord, coord, st.none(), st.just(math.nan))
points_st = st.lists(st.tuples(coord, coord), max_size=25)
dirty_st = st.lists(st.tuples(maybe, maybe), max_size=25)
direction = st.sampled_from(["max", "min"])


def brute_force(points, x="max", y="max"):
    return [
        all(not dominates(q, p, x, y) for j, q in enumerate(points) if j != i)
        and all(v is not None and math.isfinite(v) for v in p)
        for i, p in enumerate(points)
    ]


def test_golden_frontier_max_max() -> None:
    pts = [(10, 100), (20, 90), (15, 80), (30, 50), (5, 100), (30, 40), (40, 10)]
    #  (5,100) is dominated by (10,100): equal y, worse x.
    #  (15,80) by (20,90); (30,40) by (30,50).
    assert pareto_mask(pts) == [True, True, False, True, False, False, True]
    assert pareto_front(pts, lambda p: p) == [(10, 100), (20, 90), (30, 50), (40, 10)]


def test_ties_identical_points_are_both_on_the_frontier() -> None:
    assert pareto_mask([(1, 1), (1, 1)]) == [True, True]
    assert pareto_mask([(1, 1), (1, 1), (2, 2)]) == [False, False, True]
    assert not dominates((1, 1), (1, 1))
    assert dominates((1, 2), (1, 1))  # equal on x, strictly better on y


def test_min_direction_latency_frontier() -> None:
    # x = latency (lower better), y = throughput (higher better)
    pts = [(100, 10), (200, 50), (150, 5), (300, 50), (400, 80)]
    assert pareto_mask(pts, x="min") == [True, True, False, False, True]


def test_missing_and_nonfinite_coordinates_never_on_the_frontier() -> None:
    pts = [(None, 5), (1, math.nan), (1, 1), (math.inf, 9)]
    assert pareto_mask(pts) == [False, False, True, False]
    assert not dominates((math.inf, 9), (1, 1))


@settings(max_examples=300, deadline=None)
@given(points_st, direction, direction)
def test_sweep_agrees_with_the_definition(points, x, y) -> None:
    assert pareto_mask(points, x, y) == brute_force(points, x, y)


@settings(max_examples=200, deadline=None)
@given(dirty_st)
def test_sweep_agrees_with_definition_on_dirty_input(points) -> None:
    assert pareto_mask(points) == brute_force(points)


@settings(max_examples=300, deadline=None)
@given(points_st, direction, direction)
def test_frontier_invariants(points, x, y) -> None:
    mask = pareto_mask(points, x, y)
    front = [p for p, m in zip(points, mask, strict=True) if m]
    # mutually non-dominated
    assert not any(dominates(a, b, x, y) for a in front for b in front)
    # every point off the frontier is dominated by a frontier point
    for p, on in zip(points, mask, strict=True):
        if not on:
            assert any(dominates(f, p, x, y) for f in front)
    # a non-empty set has a non-empty frontier
    assert bool(front) == bool(points)


@settings(max_examples=200, deadline=None)
@given(points_st, st.randoms(use_true_random=False))
def test_frontier_is_invariant_under_permutation(points, rnd) -> None:
    shuffled = list(points)
    rnd.shuffle(shuffled)
    a = sorted(p for p, m in zip(points, pareto_mask(points), strict=True) if m)
    b = sorted(p for p, m in zip(shuffled, pareto_mask(shuffled), strict=True) if m)
    assert a == b
    assert pareto_front(points, lambda p: p) == pareto_front(shuffled, lambda p: p)


@settings(max_examples=200, deadline=None)
@given(points_st)
def test_frontier_sorted_by_x_has_non_increasing_y(points) -> None:
    front = pareto_front(points, lambda p: p)
    xs = [p[0] for p in front]
    ys = [p[1] for p in front]
    assert xs == sorted(xs)
    assert all(a >= b for a, b in itertools.pairwise(ys))


def test_interpolation_golden() -> None:
    f = Frontier.of([(10, 1000), (20, 800), (40, 200), (15, 100)])
    assert f.x == (10, 20, 40)
    assert f.interpolate(10) == 1000
    assert f.interpolate(15) == pytest.approx(900)
    assert f.interpolate(30) == pytest.approx(500)
    assert f.interpolate(40) == 200
    assert f.interpolate(9.99) is None
    assert f.interpolate(40.01) is None
    assert Frontier.of([]).interpolate(1) is None
    assert f.interpolate(math.nan) is None


@settings(max_examples=200, deadline=None)
@given(points_st, st.floats(min_value=0, max_value=6))
def test_interpolation_stays_between_neighbours(points, at) -> None:
    f = Frontier.of(points)
    value = f.interpolate(at)
    if not len(f) or at < f.x[0] or at > f.x[-1]:
        assert value is None
    else:
        assert value is not None
        assert min(f.y) - 1e-9 <= value <= max(f.y) + 1e-9


def test_groups() -> None:
    rows = [
        {"g": "a", "x": 1, "y": 5},
        {"g": "a", "x": 2, "y": 4},
        {"g": "a", "x": 1, "y": 3},
        {"g": "b", "x": 1, "y": 1},
    ]
    key = lambda r: (r["x"], r["y"])  # noqa: E731
    assert mask_by_group(rows, key, lambda r: r["g"]) == [True, True, False, True]
    fronts = frontier_by_group(rows, key, lambda r: r["g"])
    assert [r["y"] for r in fronts["a"]] == [5, 4]
    assert [r["y"] for r in fronts["b"]] == [1]
