"""A/B comparison: CIs of medians, the verdict rule, matching, replicates, frontiers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from result_factory import make_result, write_results

from inferx_core.analysis.compare import (
    Estimate,
    compare,
    decide,
    default_levels,
    load_side,
    match_points,
    median_ci,
    median_ci_from_std,
    t_quantile_975,
)
from inferx_core.analysis.cost import CostOptions
from inferx_core.analysis.pareto import Frontier
from inferx_core.load.records.request import RequestRecord

MS = 1_000_000


def test_median_ci_order_statistics_golden() -> None:
    med, low, high = median_ci([float(v) for v in range(100, 0, -1)])  # 1..100, shuffled order
    # n=100: ranks floor(50 - 9.8) = 40 and ceil(51 + 9.8) = 61
    assert (med, low, high) == (50.5, 40.0, 61.0)
    assert median_ci([5.0]) == (5.0, 5.0, 5.0)
    assert median_ci([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)  # small n: the full range
    assert median_ci([]) is None
    assert median_ci([math.nan]) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=200))
def test_median_ci_contains_the_median(values) -> None:
    med, low, high = median_ci(values)
    assert low <= med <= high
    assert min(values) <= low and high <= max(values)


def test_median_ci_from_std_golden() -> None:
    low, high = median_ci_from_std(100.0, 10.0, 100)
    half = 1.959963984540054 * math.sqrt(math.pi / 2) * 10.0 / 10.0  # 2.4564
    assert (low, high) == (pytest.approx(100 - half), pytest.approx(100 + half))
    assert half == pytest.approx(2.4564, abs=1e-4)
    assert median_ci_from_std(1.0, 1.0, 0) is None


def test_t_quantiles() -> None:
    assert t_quantile_975(1) == 12.706
    assert t_quantile_975(11) == 2.228  # conservative: the entry for df 10
    assert t_quantile_975(100) == pytest.approx(1.96, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_verdict_rule() -> None:
    a = Estimate(100.0, 97.0, 103.0)
    assert decide(a, Estimate(110.0, 107.0, 113.0), "higher")["verdict"] == "better"
    assert decide(a, Estimate(110.0, 107.0, 113.0), "higher")["basis"] == "ci"
    assert decide(a, Estimate(110.0, 107.0, 113.0), "lower")["verdict"] == "worse"
    overlap = decide(a, Estimate(110.0, 102.0, 118.0), "higher")
    assert (overlap["verdict"], overlap["basis"]) == ("same", "CIs overlap")
    small = decide(Estimate(100.0), Estimate(104.0), "higher")
    assert small["verdict"] == "same" and small["ratio"] == pytest.approx(1.04)
    big = decide(Estimate(100.0), Estimate(80.0), "higher")
    assert (big["verdict"], big["basis"]) == ("worse", "noise floor")
    assert big["change"] == pytest.approx(-0.2)
    assert decide(Estimate(100.0), Estimate(80.0), "higher", noise=0.25)["verdict"] == "same"
    assert decide(Estimate(None), Estimate(1.0), "higher")["verdict"] == "n/a"
    assert decide(Estimate(0.0), Estimate(1.0), "higher")["verdict"] == "n/a"


def records(ttft_ms: list[float], tpot_ms: float, tokens: int = 11) -> list[dict]:
    rows = []
    for i, t in enumerate(ttft_ms):
        first = int(t * MS)
        chunks = [first + int(k * tpot_ms * MS) for k in range(tokens)]
        rec = RequestRecord(
            request_id=i,
            prompt_tokens=16,
            max_tokens=tokens,
            send_ns=0,
            chunk_ns=chunks,
            usage_output_tokens=tokens,
            end_ns=chunks[-1],
        )
        rows.append(rec.to_json())
    warm = RequestRecord(request_id=-1, prompt_tokens=1, max_tokens=1, chunk_ns=[5], warmup=True)
    rows.append(warm.to_json())
    return rows


def write_side(folder: Path, results: list[dict], ttfts: dict[str, list[float]] | None = None):
    write_results(folder, results)
    for pid, values in (ttfts or {}).items():
        lines = [json.dumps(r) for r in records(values, tpot_ms=10.0)]
        (folder / f"{pid}.requests.jsonl").write_text("\n".join(lines) + "\n")


def test_compare_end_to_end_with_sidecars(tmp_path: Path) -> None:
    base = dict(median_intvty=100.0)
    a = [
        make_result("m-c4", tput_per_gpu=1000.0, concurrency=4, **base),
        make_result("m-c16", tput_per_gpu=2000.0, concurrency=16, median_intvty=50.0),
        make_result("only-a", tput_per_gpu=1.0),
    ]
    b = [
        make_result("m-c4", tput_per_gpu=1200.0, concurrency=4, median_ttft_ms=150.0, **base),
        make_result("m-c16", tput_per_gpu=2040.0, concurrency=16, median_intvty=50.0),
    ]
    # TTFT: A ~100 ms, B ~150 ms (tight distributions): a real regression.
    write_side(tmp_path / "A", a, {"m-c4": [99.0 + i % 3 for i in range(60)]})
    write_side(tmp_path / "B", b, {"m-c4": [149.0 + i % 3 for i in range(60)]})
    result = compare(load_side("A", [tmp_path / "A"]), load_side("B", [tmp_path / "B"]))
    assert result.matched_by == "point_id"
    assert [p["label"] for p in result.points] == ["m-c4", "m-c16"]  # by load level
    c4 = {m["field"]: m for m in result.points[0]["metrics"]}
    assert c4["tput_per_gpu"]["ratio"] == pytest.approx(1.2)
    assert (c4["tput_per_gpu"]["verdict"], c4["tput_per_gpu"]["basis"]) == (
        "better",
        "noise floor",
    )
    ttft = c4["median_ttft_ms"]
    assert ttft["verdict"] == "worse" and ttft["basis"] == "ci"
    assert ttft["a"]["basis"].startswith("median CI from requests")
    assert ttft["a"]["n"] == 60  # the warmup record is not counted
    assert ttft["a"]["value"] == 100.0  # the result's own median
    c16 = {m["field"]: m for m in result.points[1]["metrics"]}
    assert c16["tput_per_gpu"]["verdict"] == "same"  # +2% is within the noise floor
    # no sidecar: the std/sqrt(n) approximation
    assert c16["median_ttft_ms"]["a"]["basis"].startswith("median CI from std")
    assert result.unmatched_a == ["only-a"]
    assert any("TTFT" in r for r in result.regressions)
    json.dumps(result.to_json())  # strict JSON-able


def test_replicates_give_the_run_to_run_spread(tmp_path: Path) -> None:
    write_side(tmp_path / "A" / "run1", [make_result("p", tput_per_gpu=1000.0, date="2026-01-01")])
    write_side(tmp_path / "A" / "run2", [make_result("p", tput_per_gpu=1040.0, date="2026-01-02")])
    write_side(tmp_path / "B" / "run1", [make_result("p", tput_per_gpu=1190.0, date="2026-01-01")])
    write_side(tmp_path / "B" / "run2", [make_result("p", tput_per_gpu=1210.0, date="2026-01-02")])
    a = load_side("A", [tmp_path / "A"])
    b = load_side("B", [tmp_path / "B"])
    [point] = compare(a, b).points
    tput = point["metrics"][0]
    assert tput["a"]["value"] == pytest.approx(1020.0)  # mean of the replicates
    half = 12.706 * math.sqrt(800) / math.sqrt(2)  # t(0.975, 1) x sd / sqrt(n)
    assert tput["a"]["ci"] == [pytest.approx(1020 - half), pytest.approx(1020 + half)]
    assert tput["a"]["basis"] == "replicates (n=2)"
    # +17.6% but the two replicate CIs overlap: not a verdict
    assert (tput["verdict"], tput["basis"]) == ("same", "CIs overlap")


def test_match_by_load_key_when_ids_differ(tmp_path: Path) -> None:
    a = [make_result(f"vllm-c{c}", concurrency=c, engine="vllm") for c in (4, 16)]
    b = [make_result(f"sglang-c{c}", concurrency=c, engine="sglang") for c in (4, 16, 64)]
    sa = load_side("A", [write_results(tmp_path / "A", a)[0].parent])
    sb = load_side("B", [write_results(tmp_path / "B", b)[0].parent])
    pairs, rule = match_points(sa.rows, sb.rows)
    assert rule == "load"
    assert pairs == [
        ("1024/1024 tp1 c4", "vllm-c4", "sglang-c4"),
        ("1024/1024 tp1 c16", "vllm-c16", "sglang-c16"),
    ]
    assert compare(sa, sb).unmatched_b == ["sglang-c64"]


def test_frontiers_compared_by_interpolation(tmp_path: Path) -> None:
    a = [
        make_result("a1", tput_per_gpu=2000.0, median_intvty=20.0, concurrency=64),
        make_result("a2", tput_per_gpu=1000.0, median_intvty=60.0, concurrency=16),
        make_result("a3", tput_per_gpu=400.0, median_intvty=100.0, concurrency=4),
    ]
    b = [
        make_result("b1", tput_per_gpu=2400.0, median_intvty=30.0, concurrency=64),
        make_result("b2", tput_per_gpu=800.0, median_intvty=90.0, concurrency=4),
    ]
    sa = load_side("A", [write_results(tmp_path / "A", a)[0].parent])
    sb = load_side("B", [write_results(tmp_path / "B", b)[0].parent])
    result = compare(sa, sb, at=[50.0, 95.0, 10.0])
    f50, f95, f10 = result.frontiers
    # A at 50: between (20, 2000) and (60, 1000): 2000 - 1000 * 30/40 = 1250
    assert f50["a"] == pytest.approx(1250.0)
    # B at 50: between (30, 2400) and (90, 800): 2400 - 1600 * 20/60 = 1866.67
    assert f50["b"] == pytest.approx(1866.6667, rel=1e-6)
    assert f50["ratio"] == pytest.approx(1.493333, rel=1e-5)
    assert f50["verdict"] == "better"
    assert f95["b"] is None and f95["verdict"] == "n/a"  # outside B's range
    assert f10["a"] is None
    # interactivity is 1000 / median TPOT in the model: 30.0 comes back to within 1 ulp
    [(scenario, (range_a, range_b))] = result.frontier_ranges.items()
    assert scenario == "1024/1024"
    assert range_a == [20.0, 100.0]
    assert range_b == pytest.approx([30.0, 90.0], rel=1e-15)
    assert default_levels(Frontier.of([(20, 1), (100, 0)]), Frontier.of([(30, 1), (90, 0)])) == [
        45.0,
        60.0,
        75.0,
    ]
    assert default_levels(Frontier.of([(1, 1)]), Frontier.of([(2, 1)])) == []


def test_assumed_gpu_count_applies_to_both_sides(tmp_path: Path) -> None:
    a = [make_result("p", num_gpus=None, tput_per_gpu=800.0, bench=True)]
    b = [make_result("p", num_gpus=None, tput_per_gpu=1600.0, bench=True)]
    options = CostOptions(num_gpus=8)
    sa = load_side("A", [write_results(tmp_path / "A", a)[0].parent], options)
    sb = load_side("B", [write_results(tmp_path / "B", b)[0].parent], options)
    tput = compare(sa, sb).points[0]["metrics"][0]
    assert (tput["a"]["value"], tput["b"]["value"]) == (100.0, 200.0)


def test_failed_points_get_no_verdict(tmp_path: Path) -> None:
    sa = load_side("A", [write_results(tmp_path / "A", [make_result("p")])[0].parent])
    sb = load_side(
        "B",
        [write_results(tmp_path / "B", [make_result("p", status="failed")])[0].parent],
    )
    metrics = compare(sa, sb).points[0]["metrics"]
    assert {m["verdict"] for m in metrics} == {"n/a"}
    assert metrics[0]["basis"] == "point not ok in B"
