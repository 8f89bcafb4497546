"""Repeats: every point N times, interleaved; the result is the median run with the spread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.cli import main
from inferx_core.metrics.repeats import RepeatRun, median_run, repeat_stat, summarize_repeats
from inferx_core.results.read import load_results
from inferx_core.testing import ServerProcess


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=9))
def test_the_chosen_run_is_the_median_one(values) -> None:
    flats = [{"output_throughput": v} for v in values]
    chosen = flats[median_run(flats)]["output_throughput"]
    below = sum(1 for v in values if v < chosen)
    above = sum(1 for v in values if v > chosen)
    assert below <= len(values) // 2 and above <= len(values) // 2


def test_stats_are_median_range_and_the_t_interval() -> None:
    stat = repeat_stat([1255.0, 661.0, 725.0])  # the demo's c=8 in three runs
    assert stat.median == 725.0 and (stat.min, stat.max) == (661.0, 1255.0)
    mean = (1255 + 661 + 725) / 3
    sd = (sum((v - mean) ** 2 for v in (1255, 661, 725)) / 2) ** 0.5  # the sample sd
    assert stat.ci95_low == pytest.approx(mean - 4.303 * sd / 3**0.5, rel=1e-9)
    assert stat.ci95_high == pytest.approx(mean + 4.303 * sd / 3**0.5, rel=1e-9)
    assert repeat_stat([5.0]).ci95_low is None
    runs = [RepeatRun(repeat=k, status="ok", date="d") for k in (1, 2, 3)]
    summary = summarize_repeats([{"output_throughput": v} for v in (3.0, 1.0, 2.0)], runs)
    assert summary.chosen == 3 and summary.stats["output_throughput"].values == [3.0, 1.0, 2.0]


def test_bench_repeats_write_the_median_run_with_its_spread(tmp_path: Path) -> None:
    with ServerProcess(ttft_ms=8, itl_ms=2) as server:
        argv = ["bench", "--base-url", server.base_url, "--isl", "16", "--osl", "4"]
        argv += ["--concurrency", "1,2", "--num-prompts", "4", "--repeats", "3"]
        assert main([*argv, "--output", str(tmp_path), "--no-progress"]) in (0, 1)
    loaded = load_results([tmp_path])
    assert len(loaded.results) == 2  # the single repeats under repeats/ are not results here
    for result in loaded.results:
        rep = result.repeats
        assert rep is not None and rep.n == 3 and [r.repeat for r in rep.runs] == [1, 2, 3]
        values = rep.stats["output_throughput"].values
        assert result.metric("output_throughput") == sorted(values)[1]  # the median run
        assert rep.stats["output_throughput"].min == min(values)
        assert (tmp_path / f"{result.point_id}.requests.jsonl").is_file()
        for k in (1, 2, 3):
            single = json.loads(
                (tmp_path / "repeats" / f"r{k}" / f"{result.point_id}.json").read_text()
            )
            assert single["throughput"]["output_throughput"] == values[k - 1]


def test_compare_uses_the_spread_of_repeats(tmp_path: Path) -> None:
    from inferx_core.analysis.compare import MetricSpec, estimate, load_side

    with ServerProcess(ttft_ms=8, itl_ms=2) as server:
        argv = ["bench", "--base-url", server.base_url, "--isl", "16", "--osl", "4"]
        argv += ["--concurrency", "2", "--num-prompts", "4", "--repeats", "3", "--no-progress"]
        main([*argv, "--output", str(tmp_path)])
    side = load_side("A", [tmp_path])
    [result] = side.loaded.results
    est = estimate(side, result.point_id, MetricSpec("output_throughput", "out", "higher"))
    stat = result.repeats.stats["output_throughput"]
    assert est.basis == "repeats (n=3)" and (est.low, est.high) == (stat.ci95_low, stat.ci95_high)
    assert est.value == result.metric("output_throughput")


def test_run_repeats_on_one_launched_engine(tmp_path: Path) -> None:
    import fake_engine

    from inferx_core.config.models import RunConfig
    from inferx_core.pipeline.server.run import run_configs
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.platform import Platform

    config = RunConfig.model_validate(
        {
            "engine": "fake",
            "model": "org/tiny-model",
            "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 1},
            "readiness_timeout_s": 30,
            "workload": {"isl": 16, "osl": 4},
            "load": {"concurrency": [1, 2], "num_prompts": 4, "repeats": 2},
        }
    )
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    seen: list[str] = []
    summary = run_configs(
        [config], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False,
        on_point=lambda o: seen.append(o.point_id),
    )  # fmt: skip
    assert len(summary.outcomes) == 2 and len(seen) == 2  # one combined outcome per point
    for outcome in summary.outcomes:
        assert outcome.result.repeats.n == 2
        assert [r.repeat for r in outcome.result.repeats.runs] == [1, 2]
        assert (tmp_path / "repeats" / "r2" / f"{outcome.point_id}.json").is_file()
        assert outcome.path == tmp_path / f"{outcome.point_id}.json"
