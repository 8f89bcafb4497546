"""`inferx bench` and run_bench against the scripted SSE server (known delays, failures)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from inferx_core.cli.app import main
from inferx_core.config.models import SLO, BenchConfig, LoadProfile, Workload
from inferx_core.config.points import LoadPoint
from inferx_core.load.tokens.counter import resolve_token_counter
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.pipeline.point.measure import BenchTarget, ServerPlan, measure_point
from inferx_core.results.files import is_complete, read_result
from inferx_core.results.model import parse_result
from inferx_core.testing import ServerProcess


@pytest.fixture(scope="module")
def slow_server():
    with ServerProcess(ttft_ms=30, itl_ms=5) as server:
        yield server


def test_run_bench_measures_injected_delays_and_writes_results(
    slow_server: ServerProcess, tmp_path: Path
) -> None:
    config = BenchConfig(
        base_url=slow_server.base_url,
        workload=Workload(isl=48, osl=12),
        load=LoadProfile(concurrency=[2], num_prompts=12),
        slo=SLO(ttft_ms=200, tpot_ms=50),
        num_gpus=2,
        output_dir=tmp_path,
    )
    [outcome] = run_bench(config, progress=False)
    result = outcome.result.flat()
    assert result["status"] == "ok"
    assert result["completed"] == 12 and result["failed"] == 0
    assert result["warmup_requests"] == 2  # one per slot, excluded from the stats
    assert 30 <= result["median_ttft_ms"] <= 45
    # the server paces chunks on absolute times, so a late first chunk shortens later gaps
    assert 4.5 <= result["median_tpot_ms"] <= 9
    assert result["request_goodput"] == pytest.approx(result["request_throughput"])
    assert result["tput_per_gpu"] == pytest.approx(result["total_token_throughput"] / 2)
    assert result["model_id"] == "test-model"  # discovered from /v1/models
    assert result["workload"]["token_source"] == "server"
    assert result["workload"]["range_semantics"] == "inferencex"
    assert result["request_rate"] == "inf" and result["max_concurrency"] == 2
    # files: strict JSON result and one sidecar line per request incl. warmup
    path = tmp_path / f"{outcome.point_id}.json"
    on_disk = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(c))
    assert on_disk["schema_version"] == 2 and on_disk["load"]["completed"] == 12
    assert parse_result(on_disk) == outcome.result
    lines = (tmp_path / f"{outcome.point_id}.requests.jsonl").read_text().splitlines()
    assert len(lines) == 14
    assert sum(json.loads(line)["warmup"] for line in lines) == 2
    assert is_complete(tmp_path, outcome.point_id)
    assert not list(tmp_path.glob(".*.tmp"))


def test_failures_are_counted_and_point_marked_failed(tmp_path: Path) -> None:
    with ServerProcess(fail="http_500") as server:
        config = BenchConfig(
            base_url=server.base_url,
            model="test-model",
            workload=Workload(isl=16, osl=4),
            load=LoadProfile(concurrency=[2], num_prompts=4, warmup=0),
            output_dir=tmp_path,
        )
        [outcome] = run_bench(config, progress=False)
    result = outcome.result.flat()
    assert result["status"] == "failed"
    assert result["failure_reason"] == "no request completed successfully"
    assert result["failed"] == 4 and result["failed_by_kind"] == {"http_status": 4}
    assert result["median_ttft_ms"] is None  # never a zero-filled latency


def test_duration_stops_dispatch_and_in_flight_finish(slow_server: ServerProcess) -> None:
    config = BenchConfig(
        base_url=slow_server.base_url,
        workload=Workload(isl=16, osl=8),
        load=LoadProfile(concurrency=[2], duration_s=0.6, warmup=0),
        output_dir=None,
    )
    [outcome] = run_bench(config, progress=False)
    result = outcome.result.flat()
    assert result["stopped_by"] == "duration"
    assert result["failed"] == 0 and result["completed"] >= 4
    assert result["num_prompts_planned"] is None


def test_abort_check_fails_the_point_quickly(slow_server: ServerProcess, tmp_path: Path) -> None:
    counter = resolve_token_counter(slow_server.base_url, "test-model", None)
    deadline = time.monotonic() + 0.5
    started = time.monotonic()
    plan = ServerPlan(
        BenchTarget(slow_server.base_url, "test-model"),
        workload=Workload(isl=16, osl=400),  # ~2 s per request
        load=LoadProfile(concurrency=[2], num_prompts=20, warmup=0),
        slo=None,
        counter=counter,
        abort_check=lambda: "engine exited with code 1" if time.monotonic() > deadline else None,
        progress=False,
    )
    outcome = measure_point(plan, LoadPoint(concurrency=2), "abort", output_dir=tmp_path)
    assert time.monotonic() - started < 5
    assert outcome.result.flat()["status"] == "failed"
    assert outcome.result.flat()["failure_reason"] == "engine exited with code 1"
    assert outcome.result.flat()["stopped_by"] == "aborted"
    assert (tmp_path / "abort.json").exists()


def test_cli_bench_json_and_flags(slow_server: ServerProcess, tmp_path: Path, capsys) -> None:
    code = main(
        [
            "bench",
            "--base-url",
            slow_server.base_url,
            "--concurrency",
            "1,2",
            "--isl",
            "16",
            "--osl",
            "4",
            "--num-prompts",
            "4",
            "--warmup",
            "1",
            "--slo",
            "ttft_ms=1",
            "--output",
            str(tmp_path),
            "--json",
            "--no-progress",
        ]
    )
    assert code == 0
    results = [parse_result(r).flat() for r in json.loads(capsys.readouterr().out)]
    assert [r["max_concurrency"] for r in results] == [1, 2]
    assert all(r["request_goodput"] == 0 for r in results)  # TTFT SLO of 1 ms is unmeetable
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_cli_bench_config_file_and_errors(
    slow_server: ServerProcess, tmp_path: Path, capsys
) -> None:
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(
        f"base_url: {slow_server.base_url}\nworkload:\n  isl: 16\n  osl: 4\n"
        "load:\n  concurrency: [1]\n  num_prompts: 2\n"
    )
    assert (
        main(["bench", str(cfg), "--output", str(tmp_path / "out"), "--json", "--no-progress"]) == 0
    )
    assert json.loads(capsys.readouterr().out)[0]["load"]["completed"] == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"base_url: {slow_server.base_url}\nload:\n  concurency: [1]\n")
    assert main(["bench", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "load.concurency" in err and "did you mean 'concurrency'" in err
    assert main(["bench"]) == 2
    assert "--base-url" in capsys.readouterr().err


def test_ctrl_c_keeps_what_was_measured(slow_server: ServerProcess, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inferx_core.cli",
            "bench",
            "--base-url",
            slow_server.base_url,
            "--concurrency",
            "2",
            "--isl",
            "16",
            "--osl",
            "40",
            "--num-prompts",
            "400",
            "--warmup",
            "0",
            "--output",
            str(tmp_path),
            "--no-progress",
            "--name",
            "sigint",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # wait until requests have completed (~0.23 s each; start-up, which counts 400
    # prompts on the server's /tokenize, takes seconds on a busy 2-core machine),
    # then interrupt well before the ~46 s the 400 prompts need
    time.sleep(10)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [result_file] = tmp_path.glob("sigint-*.json")
    result = read_result(result_file).flat()
    assert result["status"] == "interrupted"
    assert result["completed"] > 0
    assert result["failed_by_kind"].get("cancelled", 0) <= 2  # only the in-flight ones
    rows = (tmp_path / f"{result['point_id']}.requests.jsonl").read_text().splitlines()
    assert len(rows) == result["completed"] + result["failed"]
    assert not is_complete(tmp_path, result["point_id"])  # --resume will run it again


def test_no_gpu_power_is_null_with_reason_and_host_is_sampled(
    slow_server: ServerProcess, tmp_path: Path
) -> None:
    config = BenchConfig(
        base_url=slow_server.base_url,
        workload=Workload(isl=16, osl=30),
        load=LoadProfile(concurrency=[2], num_prompts=8, warmup=0),
        gpus=[],
        # the window is ~1 s: sample the host often enough to land inside it
        telemetry_intervals={"host": 0.1},
        output_dir=tmp_path,
    )
    [outcome] = run_bench(config, progress=False)
    result = outcome.result.flat()
    assert result["power_valid"] is False
    assert result["power_invalid_reason"].startswith("no supported GPU")
    assert result["gpu_energy_j"] is None and result["joules_per_output_token"] is None
    assert result["power_null_reasons"]["gpu_energy_j"].startswith("no supported GPU")
    host = result["host_metrics"]["cpu_percent"]
    assert host["samples"] >= 1 and 0 <= host["mean"] <= 100
    names = {t["name"] for t in result["telemetry"]}
    assert "host" in names
    rows = (tmp_path / f"{outcome.point_id}.telemetry.jsonl").read_text().splitlines()
    assert rows and all(json.loads(r)["sampler"] in names for r in rows)


@pytest.mark.parametrize("counter_advances", [True, False])
def test_fake_nvml_gpu_energy_flows_into_the_result(
    slow_server: ServerProcess,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    counter_advances: bool,
) -> None:
    """Two fake H200s at a constant 350 W: energy = 700 W x window, per token, cross-checked."""
    import fake_pynvml

    gpus = [fake_pynvml.FakeGpu(energy_advances=counter_advances) for _ in range(2)]
    monkeypatch.setitem(__import__("sys").modules, "pynvml", fake_pynvml.FakeNvml(gpus).as_module())
    config = BenchConfig(
        base_url=slow_server.base_url,
        workload=Workload(isl=16, osl=60),
        load=LoadProfile(concurrency=[2], num_prompts=8, warmup=0),
        telemetry_intervals={"nvml": 0.05},
        output_dir=tmp_path,
    )
    [outcome] = run_bench(config, progress=False)
    r = outcome.result.flat()
    assert r["power_source"] == "nvml" and r["gpu_ids"] == [0, 1]
    assert r["gpu_power_avg_w"] == pytest.approx(700.0)
    assert r["gpu_energy_j"] == pytest.approx(700.0 * r["duration"], rel=0.02)
    assert r["joules_per_output_token"] == pytest.approx(
        r["gpu_energy_j"] / r["total_output_tokens"]
    )
    assert r["gpu_metrics"]["0.power_w"]["mean"] == pytest.approx(350.0)
    if counter_advances:
        assert r["power_valid"] is True, r["power_invalid_reason"]
        assert abs(r["energy_counter_diff_pct"]) < 5
    else:  # a counter stuck while power was drawn: the cross-check must say so
        assert r["power_valid"] is False
        assert "energy counter did not advance" in r["power_invalid_reason"]
