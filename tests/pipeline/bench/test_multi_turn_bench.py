"""Multi-turn sessions and load stages through `inferx bench`: config, counts, results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from inferx_core.cli.app import main
from inferx_core.config.loader import load_config
from inferx_core.config.models import BenchConfig, LoadProfile, RunConfig, Workload
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.model import parse_result
from inferx_core.testing import ServerProcess

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "workloads"


@pytest.fixture(scope="module")
def server():
    with ServerProcess(ttft_ms=5, itl_ms=1) as srv:
        yield srv


def test_multi_turn_point_counts_requests_and_reports_turns(
    server: ServerProcess, tmp_path: Path
) -> None:
    config = BenchConfig(
        base_url=server.base_url,
        workload=Workload(kind="multi-turn", turns=3, turn_isl=16, turn_osl=4, think_time_s=0.05,
                          api="chat"),
        load=LoadProfile(concurrency=[2], num_prompts=4),
        output_dir=tmp_path,
        telemetry=False,
    )  # fmt: skip
    [outcome] = run_bench(config, progress=False)
    result = outcome.result
    assert result.status == "ok", result.failure_reason
    assert result.load.completed == 12 and result.load.num_prompts_planned == 12  # sessions x turns
    assert result.load.warmup_requests == 2
    turns = result.load.turns
    assert [t.turn for t in turns] == [0, 1, 2] and all(t.completed == 4 for t in turns)
    # the conversation grows: each turn adds a 16-token message and a 4-token reply
    assert [t.mean_prompt_tokens for t in turns] == [16, 36, 56]
    assert all(t.median_ttft_ms is not None and t.p99_e2el_ms is not None for t in turns)
    assert "multi-turn" in outcome.point_id
    lines = (tmp_path / f"{outcome.point_id}.requests.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if not json.loads(line)["warmup"]]
    assert sorted((r["session_id"], r["turn"]) for r in rows) == [
        (s, k) for s in range(4) for k in range(3)
    ]
    assert "reply_parts" not in rows[0]
    on_disk = json.loads((tmp_path / f"{outcome.point_id}.json").read_text())
    assert parse_result(on_disk) == result


def test_staged_point_reports_each_stage(server: ServerProcess, tmp_path: Path) -> None:
    config = BenchConfig(
        base_url=server.base_url,
        workload=Workload(isl=16, osl=2),
        load=LoadProfile(stages=[{"rate": 15, "duration_s": 1.2}, {"concurrency": 2,
                                                                     "duration_s": 1.0}]),
        output_dir=tmp_path,
        telemetry=False,
    )  # fmt: skip
    [outcome] = run_bench(config, progress=False)
    result = outcome.result
    assert result.status in ("ok", "invalid"), result.failure_reason
    first, second = result.load.stages
    assert (first.target_rate, first.target_concurrency) == (15, None)
    assert (second.target_rate, second.target_concurrency) == (None, 2)
    assert 8 <= first.dispatched_rps <= 22  # generous: a busy machine
    assert second.dispatched > 0 and second.completed_rps > 0
    assert result.load.completed == first.dispatched + second.dispatched - result.load.failed
    assert "stages2" in outcome.point_id and result.load.stopped_by == "duration"


def test_cli_flags_make_a_multi_turn_config(tmp_path: Path) -> None:
    from inferx_core.cli.app import build_parser
    from inferx_core.cli.bench import bench_config_from_args

    args = build_parser().parse_args(
        ["bench", "--base-url", "http://127.0.0.1:1", "--workload", "multi-turn", "--turns", "5",
         "--think-time", "1.5", "--turn-isl", "64", "--turn-osl", "8"]
    )  # fmt: skip
    config = bench_config_from_args(args)
    w = config.workload
    assert (w.kind, w.turns, w.think_time_s, w.turn_isl, w.turn_osl) == ("multi-turn", 5, 1.5,
                                                                         64, 8)  # fmt: skip


@pytest.mark.parametrize(
    ("load", "message"),
    [
        ({"stages": [{"duration_s": 5}]}, "stages.0.*exactly one of rate and concurrency"),
        ({"stages": [{"rate": 1, "concurrency": 2, "duration_s": 5}]}, "exactly one of"),
        ({"stages": [{"rate": 1, "duration_s": 0}]}, "stages.0.duration_s"),
        ({"stages": [{"rate": 1}]}, "stages.0.duration_s"),
        ({"stages": []}, "stages"),
        ({"stages": [{"rate": 1, "duration_s": 5}], "concurrency": [4]}, "remove concurrency"),
        ({"stages": [{"rate": 1, "duration_s": 5}], "duration_s": 9}, "remove duration_s"),
        ({"stages": [{"rate": 1, "duration_s": 5}], "workers": 2}, "drop load.workers"),
    ],
)
def test_stage_config_errors_name_the_field(load: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=f"(?s){message}"):
        LoadProfile(**load)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"turns": 3}, "apply to kind 'multi-turn' only"),
        ({"kind": "multi-turn", "turns": 0}, "turns"),
        ({"kind": "multi-turn", "think_time_s": {"kind": "exponential"}}, "needs mean"),
        ({"kind": "multi-turn", "think_time_s": {"kind": "lognormal", "median": 1}}, "sigma"),
        ({"kind": "multi-turn", "shared_prefix": 8}, "builds its own prompts"),
    ],
)
def test_multi_turn_config_errors(workload: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Workload(**workload)


def test_the_last_turn_must_fit_the_context() -> None:
    with pytest.raises(ValidationError, match="max_model_len"):
        workload = {"kind": "multi-turn", "turns": 4, "turn_isl": 200, "turn_osl": 100}
        RunConfig(engine="vllm", model="m", max_model_len=1000, workload=workload)


def test_example_configs_load() -> None:
    multi = load_config(EXAMPLES / "multi-turn.yaml")
    assert multi.workload.kind == "multi-turn" and multi.workload.turns == 4
    staged = load_config(EXAMPLES / "stages.yaml")
    assert [s.rate or s.concurrency for s in staged.load.stages] == [2, 8, 32]


def test_bench_cli_runs_a_staged_multi_turn_point(server: ServerProcess, tmp_path: Path) -> None:
    config = tmp_path / "bench.yaml"
    config.write_text(
        f"base_url: {server.base_url}\ntelemetry: false\n"
        "workload: {kind: multi-turn, turns: 2, turn_isl: 8, turn_osl: 2}\n"
        "load: {stages: [{concurrency: 2, duration_s: 0.6}, {rate: 5, duration_s: 0.6}]}\n"
    )
    code = main(
        ["bench", str(config), "--output", str(tmp_path / "out"), "--no-progress", "--json"]
    )
    assert code in (0, 1)
    [path] = [p for p in (tmp_path / "out").glob("*.json")]
    result = parse_result(json.loads(path.read_text()))
    assert result.load.turns is not None and len(result.load.stages) == 2


def test_report_shows_turns_and_stages() -> None:
    from types import SimpleNamespace

    from inferx_core.metrics.dimensions import StageStats, TurnStats
    from inferx_core.report.dimensions import dimension_lines

    turn = TurnStats(turn=1, requests=4, completed=4, mean_prompt_tokens=36.0, median_ttft_ms=12.5,
                     p99_ttft_ms=20.0, median_e2el_ms=50.0, p99_e2el_ms=61.0)  # fmt: skip
    stage = StageStats(stage=0, target_rate=15.0, duration_s=1.2, window_s=1.2, dispatched=18,
                       completed=17, failed=0, dispatched_rps=15.0, completed_rps=14.2)  # fmt: skip
    lines = dimension_lines(SimpleNamespace(load=SimpleNamespace(turns=[turn], stages=[stage])))
    assert lines == [
        "turn 1: 4/4 ok, prompt 36 tok, TTFT p50 12.5 p99 20.0 ms, E2EL p50 50.0 p99 61.0 ms",
        "stage 0 (rate 15/s, 1.2 s): sent 15.00/s, completed 14.20/s, TTFT p50 - ms",
    ]


def test_open_loop_sessions_arrive_at_the_rate(server: ServerProcess, tmp_path: Path) -> None:
    config = BenchConfig(
        base_url=server.base_url,
        workload=Workload(kind="multi-turn", turns=2, turn_isl=8, turn_osl=2),
        load=LoadProfile(request_rate=[20], num_prompts=6, warmup=0),
        output_dir=None,
        telemetry=False,
    )
    [outcome] = run_bench(config, progress=False)
    load = outcome.result.load
    assert load.completed == 12 and [t.completed for t in load.turns] == [6, 6]
    checks = {c.name: c for c in outcome.result.validity.checks}
    assert "achieved_rate" in checks  # of session arrivals (turn 0), not of all turns
    firsts = sorted(r.send_ns for r in outcome.records if r.turn == 0)
    assert (len(firsts) - 1) / ((firsts[-1] - firsts[0]) / 1e9) < 60  # sessions, not turns
