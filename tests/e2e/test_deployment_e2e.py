"""A deployment end to end: two vLLM CPU replicas behind the real SGLang router.

What a user does: a run config with ``deployment:`` (``wide_ep``, role
``both`` x2 and a ``router``; the vLLM plugin's ``router_command`` set to
``sglang-router``, the Rust router from PyPI), then ``inferx run`` of it.
Checked on what really ran: both replicas served measured requests (their own
access logs), the result records every process and the GPUs per role, the
InferenceX multinode export reads the result, and every process is gone.

Slow (two vLLM CPU start-ups, a few minutes on two cores). ``make test`` sets
INFERX_REQUIRE_ENGINE=1: there a missing engine or router is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from free_ports import free_base_port

from inferx_core.demo.run import SERVED_NAME, demo_config
from inferx_core.launch.process import LOG_NAME
from inferx_core.results.files import read_result

pytestmark = pytest.mark.engine

REPLICAS = 2
NUM_PROMPTS = 8
CONCURRENCY = 2
COMPLETION_LINE = '"POST /v1/completions HTTP/1.1" 200'


def router_command() -> list[str]:
    """The sglang-router of this venv (the ``dev`` group); missing: fail under make test."""
    if importlib.util.find_spec("sglang_router") is None:
        message = "sglang-router is not installed: `pip install sglang-router` (make install)"
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return [sys.executable, "-m", "sglang_router.launch_router"]


def deployment_yaml(root: Path, engine_python: Path) -> Path:
    """The demo's tiny vLLM CPU config as a two-replica deployment, written as a user would."""
    base = demo_config(
        output_dir=root / "results",
        engine_python=str(engine_python),
        concurrency=[CONCURRENCY],
        isl=24,
        osl=8,
        num_prompts=NUM_PROMPTS,
        model_dir=root / "model",
    )
    config: dict[str, Any] = base.model_dump(mode="json", exclude_unset=True)
    config["max_model_len"] = 256
    config["max_num_seqs"] = 4
    config["engine_env"] = {**config["engine_env"], "VLLM_CPU_KVCACHE_SPACE": "1"}
    # the router's counters read often: their window increases interpolate little
    config["telemetry_intervals"] = {**config.get("telemetry_intervals", {}), "router_metrics": 0.1}
    config["plugin_options"] = {
        "vllm": {"router_command": router_command(), "router_policy": "round_robin"}
    }
    config["deployment"] = {
        "kind": "wide_ep",
        "port": free_base_port(4),
        "roles": [{"role": "both", "replicas": REPLICAS}, {"role": "router"}],
    }
    path = root / "deployment.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def deployment_run(engine_python: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("deployment-e2e")
    config = deployment_yaml(root, engine_python)
    inferx = Path(sys.executable).with_name("inferx")
    proc = subprocess.run(
        [str(inferx), "run", str(config)],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=root,
    )
    results = sorted((root / "results").glob("*.json"))
    return root, proc, results


def test_inferx_run_of_the_deployment_succeeds(deployment_run) -> None:
    _, proc, results = deployment_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = results
    result = read_result(path).flat()
    assert result["status"] == "ok"
    assert result["completed"] == NUM_PROMPTS and result["failed"] == 0
    assert result["model_id"] == SERVED_NAME
    assert result["output_token_sources"]["usage"] == NUM_PROMPTS


def launcher_view(results: list[Path]) -> dict[str, Any]:
    return read_result(results[0]).flat()["launch"]["launcher"]


def test_every_process_recorded_with_gpus_per_role(deployment_run) -> None:
    _, _, results = deployment_run
    launcher = launcher_view(results)
    names = [p["name"] for p in launcher["processes"]]
    assert names == ["both-0", "both-1", "router"]
    router = launcher["processes"][-1]
    assert router["argv"][1:3] == ["-m", "sglang_router.launch_router"]
    workers = [p["url"] for p in launcher["processes"][:2]]
    assert router["argv"][router["argv"].index("--worker-urls") + 1 :][:2] == workers
    assert launcher["endpoint"] == router["url"]
    gpus = launcher["gpus"]
    assert gpus["by_role"]["router"] == 0  # the router never counts
    assert gpus["by_role"]["both"] == REPLICAS and gpus["num_gpus"] == REPLICAS
    result = read_result(results[0]).flat()
    assert result["tput_per_gpu"] is None  # a CPU build: no GPU to divide by


def completions_served(root: Path, name: str) -> int:
    (log,) = (root / "results" / "servers").glob(f"*/{name}/{LOG_NAME}")
    return log.read_text(errors="replace").count(COMPLETION_LINE)


def test_both_replicas_served_measured_requests(deployment_run) -> None:
    root, _, _ = deployment_run
    served = [completions_served(root, f"both-{i}") for i in range(REPLICAS)]
    # each replica's own readiness probe sends one tiny completion; round robin
    # spreads the router's probe, the warmup and the measured requests over both
    assert sum(served) >= REPLICAS + NUM_PROMPTS, served
    assert min(served) >= 1 + NUM_PROMPTS // REPLICAS - 1, served


def test_engines_and_the_router_report_their_own_metrics(deployment_run) -> None:
    """Engine metrics come from the replicas (the router's port serves none); the router's
    own, from its exporter, count the measured requests and spread them over both."""
    _, _, results = deployment_run
    result = read_result(results[0]).flat()
    engine = result["engine_metrics"]
    # readings of the replicas reach past both edges of the window (the router's port serves
    # none): a counter's increase is read; a gauge may have no reading inside a point shorter
    # than its interval (a quiet machine ran the 8 prompts in 0.23 s at 0.5 s), and then says so
    assert engine["preemptions_total"]["increase"] is not None, engine
    running = engine["requests_running"]
    assert running["samples"] > 0 or "no finite reading inside the window" in running["why"]
    router = result["router_metrics"]
    workers = [f"http://127.0.0.1:{p['port']}" for p in launcher_view(results)["processes"][:2]]
    assert sorted(router["workers"]) == sorted(workers)
    served = [router["workers"][w]["successes_total"] for w in workers]
    # The router counts a request when it takes it, a worker's outcome when the worker has
    # answered: at each window edge the two differ by the requests then in flight (at most the
    # concurrency), so their interpolated increases agree within one concurrency, not exactly
    # (a CI run saw 6.74 served against 6.11 taken).
    assert sum(served) == pytest.approx(router["requests_total"]["increase"], abs=CONCURRENCY)
    # the router counts a streamed request when its worker answers (headers): the window
    # opens at the first send, so the edge's interpolation may miss up to a concurrency's
    assert sum(served) == pytest.approx(NUM_PROMPTS, abs=2), router
    assert min(served) >= 1, router  # round robin: both replicas served the window
    assert router["request_duration_s"]["mean"] > 0


def test_every_process_is_gone(deployment_run) -> None:
    root, _, results = deployment_run
    ports = {p["port"] for p in launcher_view(results)["processes"]}
    listening = [
        c.laddr.port
        for c in psutil.net_connections(kind="tcp")
        if c.laddr and c.laddr.port in ports and c.status == psutil.CONN_LISTEN
    ]
    assert listening == []
    leftovers = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"] and str(root) in " ".join(p.info["cmdline"])
    ]
    assert leftovers == []


def test_inferencex_multinode_export_of_the_real_run(deployment_run, tmp_path: Path) -> None:
    """Replicas behind a router: InferenceX's multi-node aggregate without decode workers,
    its per-GPU figures over both replicas' GPUs (the deployment's, not one replica's TP)."""
    from inferx_core.interop.export import ExportOptions, export_paths

    root, _, results = deployment_run
    report = export_paths([root / "results"], ExportOptions(("inferencex",), tmp_path))
    result = read_result(results[0]).flat()
    if report.skipped:  # a starved client on 2 cores may read a whole reply at once
        ((_, _, why),) = report.skipped
        assert "1000/TPOT" in why and result["median_tpot_ms"] == 0.0
        return
    (agg_path,) = tmp_path.glob("agg_*.json")
    agg = json.loads(agg_path.read_text())
    assert agg["is_multinode"] is True and agg["disagg"] is False
    assert (agg["prefill_num_workers"], agg["prefill_tp"]) == (REPLICAS, 1)
    assert (agg["num_prefill_gpu"], agg["num_decode_gpu"]) == (REPLICAS, 0)
    assert agg["hw"] == "cpu" and agg["framework"] == "vllm" and agg["power_valid"] == 0
    assert agg["tput_per_gpu"] == pytest.approx(result["total_token_throughput"] / REPLICAS)
    assert agg["output_tput_per_gpu"] == pytest.approx(result["output_throughput"] / REPLICAS)
