"""Length samplers: documented bounds per semantics, determinism per seed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.load.prompts.lengths import (
    DEFAULT_LOGNORMAL_INPUT,
    DEFAULT_LOGNORMAL_OUTPUT,
    LengthSpec,
    length_bounds,
    sample_lengths,
)

lengths = st.integers(min_value=1, max_value=200_000)
seeds = st.integers(min_value=0, max_value=2**32 - 1)
counts = st.integers(min_value=0, max_value=300)


def expected_bounds(kind: str, L: int, r: float) -> tuple[int, int]:
    """The formulas as documented, written independently of the module."""
    if kind == "fixed":
        lo, hi = L, L
    elif kind == "inferencex":
        lo, hi = math.floor(r * L), L
    elif kind == "sglang":
        lo, hi = int(L * r), L
    else:  # vllm
        lo, hi = int(L * (1 - r)), int(L * (1 + r))
    lo = max(1, lo)
    return lo, max(lo, hi)


@st.composite
def uniform_specs(draw: st.DrawFn) -> LengthSpec:
    kind = draw(st.sampled_from(["inferencex", "vllm", "sglang", "fixed"]))
    top = 0.999 if kind == "vllm" else 1.0
    r = draw(st.floats(min_value=0.0, max_value=top, allow_nan=False))
    return LengthSpec(kind=kind, length=draw(lengths), range_ratio=r)


@st.composite
def lognormal_specs(draw: st.DrawFn) -> LengthSpec:
    lo = draw(st.integers(min_value=1, max_value=5000))
    hi = draw(st.integers(min_value=lo, max_value=20_000))
    return LengthSpec(
        kind="lognormal",
        length=draw(st.integers(min_value=1, max_value=10_000)),
        sigma=draw(st.floats(min_value=0.0, max_value=3.0)),
        min_length=lo,
        max_length=hi,
    )


@settings(max_examples=300, deadline=None)
@given(spec=uniform_specs(), n=counts, seed=seeds)
def test_uniform_samples_within_documented_bounds(spec: LengthSpec, n: int, seed: int) -> None:
    lo, hi = expected_bounds(spec.kind, spec.length, spec.range_ratio)
    assert length_bounds(spec) == (lo, hi)
    got = sample_lengths(spec, n, seed)
    assert len(got) == n
    assert all(isinstance(x, int) and lo <= x <= hi and x >= 1 for x in got)
    assert sample_lengths(spec, n, seed) == got  # deterministic per seed


@settings(max_examples=200, deadline=None)
@given(spec=lognormal_specs(), n=counts, seed=seeds)
def test_lognormal_samples_clipped_and_deterministic(spec: LengthSpec, n: int, seed: int) -> None:
    got = sample_lengths(spec, n, seed)
    assert all(spec.min_length <= x <= spec.max_length for x in got)
    assert sample_lengths(spec, n, seed) == got
    assert spec.bounds == (spec.min_length, spec.max_length)


@pytest.mark.parametrize(
    ("kind", "L", "r", "bounds"),
    [
        ("inferencex", 1024, 0.8, (819, 1024)),
        ("inferencex", 8192, 0.8, (6553, 8192)),
        ("sglang", 1024, 0.8, (819, 1024)),
        ("vllm", 1024, 0.5, (512, 1536)),
        ("vllm", 1024, 0.0, (1024, 1024)),
        ("fixed", 1024, 0.8, (1024, 1024)),
        ("inferencex", 1, 0.8, (1, 1)),  # floor(0.8) = 0 is clamped to 1
        ("vllm", 3, 0.9, (1, 5)),
        ("sglang", 10, 0.0, (1, 10)),
    ],
)
def test_known_bounds(kind: str, L: int, r: float, bounds: tuple[int, int]) -> None:
    spec = LengthSpec(kind=kind, length=L, range_ratio=r)  # type: ignore[arg-type]
    assert spec.bounds == bounds
    d = spec.describe()
    assert d["semantics"] == kind and (d["low"], d["high"]) == bounds and d["formula"]


def test_uniform_reaches_both_ends() -> None:
    spec = LengthSpec(kind="inferencex", length=10, range_ratio=0.8)
    got = set(sample_lengths(spec, 2000, 1))
    assert got == set(range(8, 11))


def test_generator_accepted_and_different_seeds_differ() -> None:
    spec = LengthSpec(length=1024)
    a = sample_lengths(spec, 50, np.random.default_rng(3))
    assert a == sample_lengths(spec, 50, 3)
    assert a != sample_lengths(spec, 50, 4)


def test_default_lognormal_shapes() -> None:
    ins = np.array(sample_lengths(DEFAULT_LOGNORMAL_INPUT, 20_000, 0))
    outs = np.array(sample_lengths(DEFAULT_LOGNORMAL_OUTPUT, 20_000, 0))
    assert ((ins >= 128) & (ins <= 512)).mean() > 0.6  # most 128-512
    assert (ins > 1024).mean() > 0.01  # a real tail
    assert ins.max() <= 4096
    assert ((outs >= 64) & (outs <= 256)).mean() > 0.75  # mostly 64-256


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "vllm", "range_ratio": 1.0},
        {"kind": "inferencex", "range_ratio": 1.5},
        {"kind": "sglang", "range_ratio": -0.1},
        {"kind": "inferencex", "range_ratio": float("nan")},
        {"kind": "nope"},
        {"length": 0},
        {"kind": "lognormal", "min_length": 10, "max_length": 5},
        {"kind": "lognormal", "sigma": -1.0},
    ],
)
def test_invalid_specs_rejected(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        LengthSpec(**kwargs)


def test_negative_n_rejected() -> None:
    with pytest.raises(ValueError):
        sample_lengths(LengthSpec(), -1, 0)
