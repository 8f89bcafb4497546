"""One SLO vocabulary: the keys every judge reads, checked before any load is sent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.config.search import SearchConfig
from inferx_core.config.slo import SloTarget, parse_slo_text


@pytest.mark.parametrize("pct", ["0", "100", "101", "100.0", "250"])
def test_a_percentile_limit_outside_0_100_is_refused(pct: str) -> None:
    with pytest.raises(ValueError, match=r"percentile must be in \(0, 100\)"):
        parse_slo_text(f"p{pct}_ttft_ms=500")
    with pytest.raises(ValueError, match=r"\(0, 100\)"):
        SearchConfig(over="concurrency", slo={f"p{pct}_ttft_ms": 500})


@given(st.floats(min_value=0.001, max_value=99.999, allow_nan=False))
def test_any_percentile_inside_0_100_is_a_limit(p: float) -> None:
    key = f"p{p:g}_tpot_ms"
    if "e" in key:  # 1e-03: not how a percentile is spelled
        return
    target = SloTarget(limits={key: 30.0})
    assert target.percentile_limits() == {key: 30.0}
    assert target.percentiles_read() == [float(f"{p:g}")]


def test_a_key_given_twice_is_refused_not_overwritten() -> None:
    with pytest.raises(ValueError, match=r"ttft_ms is given twice \(500 and 900\); give it once"):
        parse_slo_text("ttft_ms=500,tpot_ms=30,ttft_ms=900")


def test_the_target_is_one_type_for_the_search_and_the_report() -> None:
    parsed = parse_slo_text("ttft_ms=500,intvty=20,p90_e2el_ms=9000,goodput=0.95")
    target = SloTarget(limits=parsed)
    assert target.goodput == 0.95 and "goodput" not in target.limits
    search = SearchConfig(over="rate", slo=parsed)
    assert search.target == target and search.target.key() == target.key()
    assert target.goodput_slos() == {"ttft_ms": 500, "tpot_ms": 50.0}
    assert search.describe() == f"rate, {target.describe()}"
    assert target.describe() == "0.95 of requests: ttft_ms<=500, intvty>=20; p90_e2el_ms<=9000"


def test_probes_are_sized_to_their_level() -> None:
    c = SearchConfig(over="concurrency", slo={"ttft_ms": 500}, max=512)
    assert c.probe_prompts(512, usual=200) == 2048  # 4 per slot: the level is held
    assert c.probe_prompts(8, usual=200) == 200
    r = SearchConfig(over="rate", slo={"ttft_ms": 500})
    # 5% tolerance: an overload of 5% needs 0.5 s / 0.05 = 10 s to push a wait past 500 ms
    assert r.probe_seconds(34) == pytest.approx(10.0)
    assert r.probe_prompts(34, usual=20) == 340
    assert SearchConfig(over="rate", slo={"tpot_ms": 30}).probe_seconds(5) == 5.0  # the floor
    quick = SearchConfig(over="rate", slo={"ttft_ms": 500}, min_probe_s=1.5)
    assert quick.probe_prompts(10, usual=5) == 15
