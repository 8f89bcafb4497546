"""One SLO vocabulary: the keys every judge reads, checked before any load is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.config.loader import ConfigError, load_config
from inferx_core.config.models import BenchConfig, RunConfig
from inferx_core.config.search import SearchConfig
from inferx_core.config.slo import PER_REQUEST_LIMITS, SloTarget, parse_slo_text


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
    assert search.slo == target and search.slo.key() == target.key()
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


def _config(tmp_path: Path, body: str) -> RunConfig | BenchConfig:
    path = tmp_path / "bench.yaml"
    path.write_text(f"base_url: http://127.0.0.1:9\n{body}\n")
    loaded = load_config(path)
    assert isinstance(loaded, BenchConfig)
    return loaded


@pytest.mark.parametrize(
    ("body", "per_request"),
    [
        ("slo: {ttft_ms: 2000, tpot_ms: 50}", {"ttft_ms": 2000, "tpot_ms": 50}),
        ("slo: {ttft_ms: null, e2el_ms: 9000}", {"e2el_ms": 9000}),  # null: not set, as before
        ("slo: {itl_ms: 80, intvty: 20}", {"itl_ms": 80, "tpot_ms": 50.0}),  # intvty as TPOT
        ("slo: {}", None),
        ("", None),
    ],
)
def test_a_config_slo_is_the_one_target_with_the_meaning_it_had(
    tmp_path: Path, body: str, per_request: dict[str, float] | None
) -> None:
    """The config's slo: is a SloTarget: the per-request limits a point's goodput counts."""
    slo = _config(tmp_path, body).slo
    assert (slo.goodput_slos() if slo is not None else None) == per_request
    assert slo is None or isinstance(slo, SloTarget)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("slo: {p99_ttft_ms: 500}", "slo: Value error, p99_ttft_ms judges a load level"),
        ("slo: {ttft_ms: 500, goodput: 0.9}", "goodput judges a load level"),
        ("slo: {ttfb_ms: 5}", "unknown SLO 'ttfb_ms'; expected ttft_ms, tpot_ms"),
        ("slo: {ttft_ms: -1}", "slo: Value error, SLO ttft_ms: a finite number > 0, got -1.0"),
    ],
)
def test_a_config_slo_names_the_field_and_where_a_level_limit_goes(
    tmp_path: Path, body: str, needle: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        _config(tmp_path, body)
    message = str(raised.value)
    assert needle in message and "line 2" in message
    if "judges a load level" in needle:
        assert "search.slo" in message and "inferx report --slo" in message


def test_search_goodput_is_read_as_the_targets_share(tmp_path: Path) -> None:
    """Configs that gave the share as search.goodput keep its meaning; a goodput inside
    search.slo (--slo goodput=...) wins, as it did."""
    search = "search: {over: concurrency, slo: {ttft_ms: 500}, goodput: 0.95}"
    target = _config(tmp_path, search).search
    assert target is not None and target.slo.goodput == 0.95
    assert target.slo.per_request() == {"ttft_ms": 500}
    both = "search: {over: rate, slo: {ttft_ms: 500, goodput: 0.9}, goodput: 0.95}"
    target = _config(tmp_path, both).search
    assert target is not None and target.slo.goodput == 0.9
    assert SearchConfig(over="rate", slo=SloTarget(limits={"e2el_ms": 9}), goodput=0.5).slo == (
        SloTarget(limits={"e2el_ms": 9}, goodput=0.5)
    )


_LIMIT = st.floats(min_value=0.001, max_value=1e6, allow_nan=False, allow_infinity=False)
_PER_REQUEST = st.dictionaries(st.sampled_from(PER_REQUEST_LIMITS), _LIMIT, min_size=1)
_PERCENTILE = st.dictionaries(
    st.sampled_from(["p99_ttft_ms", "p90.5_e2el_ms", "median_tpot_ms", "mean_itl_ms"]), _LIMIT
)


@given(_PER_REQUEST, _PERCENTILE, st.none() | st.floats(min_value=0.01, max_value=1.0))
def test_a_written_config_reads_back_as_the_same_target(
    per_request: dict[str, float], percentile: dict[str, float], share: float | None
) -> None:
    """A config is dumped (job manifests, a result's provenance, bench's flags laid over
    a file) and read again: the target must come back the same, written flat as given."""
    given_share = {} if share is None else {"goodput": share}
    search = SearchConfig(over="rate", slo={**per_request, **percentile, **given_share})
    written = json.loads(json.dumps(search.model_dump(mode="json")))
    assert written["slo"] == {**per_request, **percentile, **given_share}
    assert SearchConfig.model_validate(written) == search
    bench = BenchConfig(base_url="http://h:1", slo=per_request, search=search)
    for dump in (bench.model_dump(mode="json"), bench.model_dump(exclude_unset=True)):
        assert BenchConfig.model_validate(json.loads(json.dumps(dump, default=str))) == bench
