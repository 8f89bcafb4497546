"""Arrival shapes: gamma gaps with vLLM's burstiness, and vLLM's ramps."""

from __future__ import annotations

import itertools
import statistics

import pytest

from inferx_core.config.models import LoadProfile
from inferx_core.load.schedule.scheduler import Ramp, arrival_intervals


def gaps(n: int, rate: float, **kw) -> list[float]:
    return list(itertools.islice(arrival_intervals(rate, "poisson", 7, **kw), n))


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_gaps_keep_the_mean_and_scale_the_spread(burstiness: float) -> None:
    g = gaps(40_000, 10.0, burstiness=burstiness)
    assert statistics.fmean(g) == pytest.approx(0.1, rel=0.03)  # mean 1 / rate
    # gamma(shape k, scale 1/(rate k)): coefficient of variation 1/sqrt(k)
    cv = statistics.pstdev(g) / statistics.fmean(g)
    assert cv == pytest.approx(burstiness**-0.5, rel=0.05)


def test_linear_and_exponential_ramps_follow_vllms_rates() -> None:
    ramp = Ramp("linear", 2.0, 11)
    assert [ramp.rate(i, 12.0) for i in (0, 5, 10, 20)] == [2.0, 7.0, 12.0, 12.0]
    exp = Ramp("exponential", 1.0, 3)
    assert [exp.rate(i, 16.0) for i in range(3)] == pytest.approx([1.0, 4.0, 16.0])
    constant = list(itertools.islice(arrival_intervals(12.0, "constant", ramp=ramp), 11))
    assert constant[0] == pytest.approx(0.5) and constant[-1] == pytest.approx(1 / 12)


def test_a_ramp_needs_its_rates() -> None:
    with pytest.raises(ValueError, match="ramp needs request_rate"):
        LoadProfile(ramp="linear", concurrency=[1])
    assert LoadProfile(ramp="linear", request_rate=[8.0], ramp_start_rps=1.0).ramp == "linear"
