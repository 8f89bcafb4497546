"""End to end on the real engine: vLLM's CPU build, launched through inferx_vllm.

Slow (about a minute: vLLM start-up dominates). `make test` installs the
engine venv and sets INFERX_REQUIRE_ENGINE=1, so there a missing engine is a
failure, never a silent skip.
"""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from inferx_core.demo.run import SERVED_NAME, demo_config
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import read_result

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def vllm_run(engine_python: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("vllm-e2e")
    config = demo_config(
        output_dir=root / "results",
        engine_python=str(engine_python),
        concurrency=[1, 3],
        isl=40,
        osl=48,
        num_prompts=6,
        model_dir=root / "model",
    )
    # ~2 s windows: sample often enough to see the engine busy inside them
    config = config.model_copy(update={"telemetry_intervals": {"host": 0.2, "engine_metrics": 0.2}})
    summary = run_configs([config], progress=False)
    return config, summary


def test_every_point_completed_with_server_usage(vllm_run) -> None:
    _, summary = vllm_run
    assert summary.ok, [o.result.failure_reason for o in summary.outcomes]
    assert len(summary.outcomes) == 2
    for outcome in summary.outcomes:
        result = read_result(outcome.path).flat()
        assert result["status"] == "ok"
        assert result["completed"] == 6 and result["failed"] == 0
        assert result["model_id"] == SERVED_NAME
        # usage came from the server for every request, nothing estimated
        assert result["output_tokens_estimated"] is False
        assert result["output_token_sources"]["usage"] == 6
        assert result["median_ttft_ms"] > 0
        # A starved client (2 cores, the engine busy on both) can read a whole
        # stream in one go, so TPOT may be ~0, but never negative or missing.
        assert result["mean_tpot_ms"] >= 0
        assert result["median_e2el_ms"] >= result["median_ttft_ms"]
        assert result["output_throughput"] > 0
        # prompts were built to exact lengths with the server's tokenizer
        assert result["workload"]["token_source"] == "server"
        assert result["workload"]["missed_target"] == 0
        assert result["engine"]["name"] == "vllm" and result["engine"]["version"]
        assert "--no-enable-prefix-caching" in result["launch"]["spec"]["argv"]
        assert result["tput_per_gpu"] is None  # CPU build: no GPU to divide by
        assert "no GPU" in result["null_reasons"]["tput_per_gpu"]


def test_ignore_eos_forced_exact_output_lengths(vllm_run) -> None:
    _, summary = vllm_run
    for outcome in summary.outcomes:
        sidecar = outcome.path.with_name(outcome.point_id + ".requests.jsonl")
        rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
        measured = [r for r in rows if not r["warmup"]]
        assert len(measured) == 6
        for row in measured:
            assert row["usage_output_tokens"] == row["max_tokens"]
            assert row["usage_prompt_tokens"] == row["prompt_tokens"]
            assert len(row["chunk_ns"]) >= 1 and row["chunk_ns"][0] > row["send_ns"]


def test_engine_stopped_and_log_kept(vllm_run) -> None:
    config, summary = vllm_run
    result = read_result(summary.outcomes[0].path).flat()
    port = int(result["launch"]["spec"]["port"])
    listening = [
        c
        for c in psutil.net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
    ]
    assert listening == []
    leftovers = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"] and str(config.model) in " ".join(p.info["cmdline"])
    ]
    assert leftovers == []
    log = Path(result["launch"]["launcher"]["log"])
    assert log.exists() and "Application startup complete" in log.read_text(errors="replace")


def test_telemetry_host_engine_metrics_and_null_gpu_power(vllm_run) -> None:
    _, summary = vllm_run
    result = read_result(summary.outcomes[-1].path).flat()  # c=3: requests overlap
    # no GPU here: power is null with the reason, never a fake 0
    assert result["power_valid"] is False
    assert result["power_invalid_reason"].startswith("no supported GPU")
    assert result["gpu_energy_j"] is None and result["gpu_power_avg_w"] is None
    # The series (warmup included) are in the sidecar; window statistics in the result
    # count only samples inside the measured window, which a starved 2-core machine
    # can leave empty, so the sidecar is where the readings are checked.
    sidecar = summary.outcomes[-1].path.with_name(
        summary.outcomes[-1].point_id + ".telemetry.jsonl"
    )
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
    host_rows = [r for r in rows if r["sampler"] == "host" and "error" not in r]
    engine_rows = [r for r in rows if r["sampler"] == "engine_metrics" and "error" not in r]
    # host samples, including the engine's own process tree (API server + EngineCore + worker)
    assert max(r["host.engine_rss_mib"] or 0 for r in host_rows) > 50
    assert max(r["host.engine_cpu_percent"] or 0 for r in host_rows) > 10
    # vLLM's Prometheus names, mapped through inferx_vllm's name map (numbers, not missing)
    assert engine_rows
    for row in engine_rows:
        assert row["engine.requests_running"] >= 0
        assert 0 <= row["engine.kv_cache_usage"] <= 1
        assert row["engine.preemptions_total"] >= 0
    assert set(result["engine_metrics"]) >= {"requests_running", "kv_cache_usage"}
    assert set(result["host_metrics"]) >= {"engine_rss_mib", "cpu_percent"}


def test_continuous_usage_gives_per_token_itl(vllm_run) -> None:
    """vLLM's plugin declares continuous_usage_stats, so every chunk carries its tokens."""
    _, summary = vllm_run
    for outcome in summary.outcomes:
        result = outcome.result.flat()
        assert result["itl_per_token_requests"] == 6
        assert result["mean_itl_per_token_ms"] is not None
        for rec in (r for r in outcome.records if not r.warmup):
            assert rec.chunk_tokens is not None and sum(rec.chunk_tokens) == rec.output_tokens


def test_real_results_export_for_vllm_and_inferencex(vllm_run, tmp_path: Path) -> None:
    from inferx_core.interop.export import ExportOptions, export_paths

    config, summary = vllm_run
    options = ExportOptions(("vllm", "inferencex"), tmp_path)  # metadata from the run
    report = export_paths([config.output_dir], options)
    skipped = {pid: why for pid, _, why in report.skipped}
    for outcome in summary.outcomes:
        vllm = json.loads((tmp_path / f"{outcome.point_id}.json").read_text())
        assert vllm["completed"] == 6
        assert vllm["total_output_tokens"] == outcome.result.metric("total_output_tokens")
        assert all(isinstance(v, float) for k, v in vllm.items() if k.endswith("_ms"))
        if outcome.point_id in skipped:
            # a starved client on 2 cores reads a whole reply at once: TPOT 0, no 1000/TPOT
            assert "1000/TPOT" in skipped[outcome.point_id]
            assert vllm["median_tpot_ms"] == 0.0 and outcome.result.metric("itl_zero_gap_fraction")
            continue
        agg = json.loads((tmp_path / f"agg_{outcome.point_id}.json").read_text())
        assert agg["hw"] == "cpu" and agg["framework"] == "vllm" and agg["power_valid"] == 0
        assert agg["precision"] == "fp32" and agg["tp"] == 1  # the demo's dtype, tp
        assert agg["median_intvty"] == pytest.approx(1000 / vllm["median_tpot_ms"])
