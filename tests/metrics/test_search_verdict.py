"""The knee from probe figures, and one run judged against an SLO (score = goodput quantile)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.search import SearchConfig
from inferx_core.metrics.knee import LevelFigures, find_knee
from inferx_core.metrics.requests import RequestMetrics
from inferx_core.metrics.search_verdict import judge_run


def _saturating(capacity: int, levels: list[int]) -> list[LevelFigures]:
    """A server of ``capacity`` slots, service time 100 ms, closed loop (Little's law)."""
    out = []
    for c in levels:
        tput = min(c, capacity) * 10.0
        out.append(LevelFigures(c, tput, 1000.0 * c / tput))
    return out


@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(1, 60), extra=st.lists(st.integers(1, 128), max_size=8))
def test_the_knee_of_a_saturating_server_is_its_capacity(capacity: int, extra: list[int]) -> None:
    levels = sorted({capacity, capacity + 1, *extra})
    knee = find_knee(_saturating(capacity, levels))
    assert knee is not None and knee.level == capacity


def test_no_knee_while_throughput_follows_the_load() -> None:
    assert find_knee(_saturating(100, [1, 2, 4, 8, 16])) is None


def _req(ttft: float | None, tpot: float | None = 10.0) -> RequestMetrics:
    return RequestMetrics(
        request_id=0, ok=ttft is not None, input_tokens=10, output_tokens=10,
        output_token_source="usage",
        ttft_ms=ttft, e2el_ms=None if ttft is None else ttft + 90, tpot_ms=tpot,
        interactivity=None if tpot is None else 1000 / tpot, itl_ms=(), itl_per_token_ms=None,
        max_itl_ms=None,
    )  # fmt: skip


def test_the_goodput_score_is_the_quantile_of_the_worst_ratio() -> None:
    search = SearchConfig(over="concurrency", slo={"ttft_ms": 100, "goodput": 0.9}).slo
    reqs = [_req(50)] * 9 + [_req(400)]  # 90% meet: exactly the target
    run = judge_run("ok", None, {}, reqs, search)
    assert run.score == pytest.approx(0.5) and run.binding.startswith("ttft_ms")
    run = judge_run("ok", None, {}, [*reqs[1:], _req(None)], search)  # 80% meet
    assert run.score == pytest.approx(4.0)  # the 9th of 10: the 400 ms one


def test_percentile_limits_and_interactivity() -> None:
    search = SearchConfig(over="rate", slo={"p99_ttft_ms": 200, "intvty": 50}).slo
    run = judge_run("ok", None, {"p99_ttft_ms": 100.0}, [_req(10, tpot=40.0)] * 5, search)
    assert run.score == pytest.approx(2.0) and run.binding.startswith("intvty")
    assert search.goodput_slos() == {"tpot_ms": 20.0}


def test_an_invalid_run_is_not_scored() -> None:
    search = SearchConfig(over="concurrency", slo={"ttft_ms": 100}).slo
    run = judge_run("invalid", "invalid: client_starved (lag 80 ms)", {}, [_req(5)], search)
    assert run.score is None and run.reason == "invalid: client_starved (lag 80 ms)"
    p999 = SearchConfig(over="rate", slo={"p99.9_ttft_ms": 9}).slo
    run = judge_run("ok", None, {}, [_req(5)], p999)
    assert run.score is None and "percentiles" in run.reason


@pytest.mark.parametrize(
    "slo",
    [{}, {"ttfb_ms": 3}, {"ttft_ms": -1}, {"goodput": 0.9}, {"ttft_ms": 5, "goodput": 1.5}],
)
def test_bad_search_limits_are_refused(slo: dict) -> None:
    with pytest.raises(ValueError):
        SearchConfig(over="concurrency", slo=slo)
