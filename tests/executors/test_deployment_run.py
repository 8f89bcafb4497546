"""``inferx run`` of a deployment on one machine, with test engines that record their argv.

Every process is the scripted SSE server (tests/fake_engine.py): the engines
get the role's mode in their argv, the router the engines' URLs, so what each
was started with is checked on the processes that really ran.
"""

from __future__ import annotations

import re
import socket
import sys
import types
from pathlib import Path
from typing import Any

import fake_engine
import pytest
from free_ports import free_base_port

from inferx_core import LaunchSpec, hookimpl
from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.executors.deployment_run import deployment_launch_plan
from inferx_core.pipeline.server.run import run_configs
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Accelerator, Platform
from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.sdk.roles import RoleContext
from inferx_core.telemetry import engine_metrics

# A role that dies mid-load: the router marks a file at its first generation request
# (the load has begun), and the role's engine, which watches for it, exits with code 9.
_MARK_ON_LOAD = """
import sys
from pathlib import Path
from inferx_core.testing import server, sse_server
generate = server.ServerProtocol._generate
def generate_and_mark(self, *args, **kwargs):
    Path({flag!r}).touch()
    return generate(self, *args, **kwargs)
server.ServerProtocol._generate = generate_and_mark
sse_server.main(sys.argv[1:])
"""
_DIE_ON_MARK = """
import os, sys, threading, time
from pathlib import Path
from inferx_core.testing import sse_server
def watch():
    while not Path({flag!r}).exists():
        time.sleep(0.02)
    print("fake engine: worker died", flush=True)
    os._exit({code})
threading.Thread(target=watch, daemon=True).start()
sse_server.main(sys.argv[1:])
"""


def _argv(server: ServerConfig, role: str) -> list[str]:
    """The fake engine's argv for ``role``; plugin_options ``die_on_load: ROLE`` (with
    ``flag``, a path) makes that role die once the load reaches the router."""
    opts = server.plugin_options
    flag = opts.get("flag")
    if flag and role == "router":
        script = _MARK_ON_LOAD.format(flag=flag)
        return [sys.executable, "-c", script, *fake_engine.sse_server_args(server)]
    if flag and role == opts.get("die_on_load"):
        script = _DIE_ON_MARK.format(flag=flag, code=fake_engine.DIE_CODE)
        return [sys.executable, "-c", script, *fake_engine.sse_server_args(server)]
    return fake_engine.build_argv(server)


@hookimpl
def inferx_engine_role_spec(
    server: ServerConfig, platform: Platform, role: RoleContext
) -> LaunchSpec | None:
    """Engines: the fake server (a role's plugin_options can crash it); router: one more,
    whose --model names the engines it fronts (what a router is started with)."""
    if server.engine != fake_engine.ENGINE:
        return None
    if role.role == "router":
        peers = ",".join(url for urls in role.peers.values() for url in urls)
        server = server.model_copy(update={"served_model_name": server.name_served})
        opts = {k: v for k, v in server.plugin_options.items() if k in ("flag", "itl_ms")}
        argv = _argv(server.model_copy(update={"plugin_options": opts}), role.role)
        labels = {"peers": peers}
    else:
        modes = server.plugin_options.get("role_modes", {})
        opts = {**server.plugin_options, "mode": modes.get(role.role, "ok")}
        argv = _argv(server.model_copy(update={"plugin_options": opts}), role.role)
        labels = {}
    return LaunchSpec(
        engine=fake_engine.ENGINE,
        argv=tuple(argv),
        host=server.host,
        port=server.port,
        env=dict(server.engine_env),
        labels=labels,
        gpu_ids=() if role.role == "router" else tuple(server.gpu_ids or ()),
    )


def pm() -> Any:
    roles = types.ModuleType("fake_roles")
    roles.inferx_engine_role_spec = inferx_engine_role_spec  # type: ignore[attr-defined]
    return get_plugin_manager(
        env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine), ("fake-roles", roles)]
    )


def config(tmp_path: Path, **opts: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "engine": "fake",
            "model": "org/tiny",
            "plugin_options": opts,
            "readiness_timeout_s": 60,
            "stop_grace_s": 5,
            "deployment": {
                "kind": "disaggregated",
                "port": free_base_port(4),
                "roles": [
                    {"role": "prefill", "replicas": 2},
                    {"role": "decode"},
                    {"role": "router"},
                ],
            },
            "workload": {"isl": 16, "osl": 4},
            "load": {"concurrency": [2], "num_prompts": 4},
            "output_dir": str(tmp_path / "results"),
        }
    )


def test_a_deployment_runs_every_role_and_benchmarks_the_router(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    summary = run_configs([cfg], pm=pm(), platform=Platform(), planner=deployment_launch_plan)
    (outcome,) = summary.outcomes
    assert outcome.status == "ok", outcome.result
    result = outcome.result.model_dump(mode="json")
    launcher = result["provenance"]["launch"]["launcher"]
    names = [p["name"] for p in launcher["processes"]]
    assert names == ["prefill-0", "prefill-1", "decode-0", "router"]
    ports = {p["name"]: p["port"] for p in launcher["processes"]}
    base = cfg.deployment.port  # type: ignore[union-attr]
    assert ports == {"prefill-0": base + 1, "prefill-1": base + 2, "decode-0": base + 3,
                     "router": base}  # fmt: skip
    assert launcher["endpoint"] == f"http://127.0.0.1:{base}"
    assert launcher["gpus"]["by_role"]["router"] == 0
    # every process wrote its own log, and the router was started with the engines' URLs
    runs = cfg.output_dir / "servers"
    (server_dir,) = runs.iterdir()
    assert sorted(p.name for p in server_dir.iterdir() if p.is_dir()) == sorted(names)
    router = launcher["processes"][-1]
    assert router["url"] == launcher["endpoint"]


def test_a_role_that_dies_fails_the_point_naming_the_role(tmp_path: Path) -> None:
    cfg = config(tmp_path, role_modes={"decode": "crash_on_start"})
    summary = run_configs([cfg], pm=pm(), platform=Platform(), planner=deployment_launch_plan)
    (outcome,) = summary.outcomes
    assert outcome.status != "ok"
    text = str(outcome.result.model_dump(mode="json"))
    assert "role decode" in text and fake_engine.CRASH_MESSAGE in text
    # nothing left running: every engine's port is free again
    for port in range(cfg.deployment.port, cfg.deployment.port + 4):  # type: ignore[union-attr]
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_role_that_dies_during_the_load_is_named_in_the_failure_reason(
    tmp_path: Path,
) -> None:
    """Not only in the log tail: the reason says which role and process, on which host."""
    flag = tmp_path / "load-started"
    cfg = config(tmp_path, die_on_load="decode", flag=str(flag), itl_ms=10)
    cfg = cfg.model_copy(update={"workload": cfg.workload.model_copy(update={"osl": 200})})
    summary = run_configs([cfg], pm=pm(), platform=Platform(), planner=deployment_launch_plan)
    (outcome,) = summary.outcomes
    assert flag.exists(), "the load never reached the router"
    assert outcome.status == "failed", outcome.result
    reason = outcome.result.failure_reason or ""
    pattern = (
        rf"^role decode \(decode-0 on [^)]+\) exited with code {fake_engine.DIE_CODE} "
        "during the load"
    )
    assert re.match(pattern, reason), reason
    tail = outcome.result.model_dump(mode="json")["provenance"]["engine_log_tail"]
    assert "role decode (decode-0 on " in tail and "worker died" in tail


def test_per_gpu_figures_divide_by_prefill_and_decode_gpus_never_the_router(
    tmp_path: Path,
) -> None:
    """Two prefill GPUs and one decode GPU on a 3-GPU machine: the InferenceX split."""
    cfg = config(tmp_path)
    gpus = tuple(Accelerator(vendor="nvidia", index=i, name="NVIDIA H200") for i in range(3))
    summary = run_configs(
        [cfg], pm=pm(), platform=Platform(accelerators=gpus), planner=deployment_launch_plan
    )
    (outcome,) = summary.outcomes
    assert outcome.status == "ok", outcome.result
    flat = outcome.result.flat()
    assert (flat["num_prefill_gpus"], flat["num_decode_gpus"], flat["num_gpus"]) == (2, 1, 3)
    total, output = flat["total_token_throughput"], flat["output_throughput"]
    assert flat["tput_per_gpu"] == pytest.approx(total / 3)
    assert flat["output_tput_per_gpu"] == pytest.approx(output / 1)
    assert flat["input_tput_per_gpu"] == pytest.approx((total - output) / 2)


def test_telemetry_scrapes_every_engine_process_and_the_routers_exporter_never_the_router(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Engine metrics from each engine head (prefill-0, prefill-1, decode-0), the router's
    own from its booked metrics port; the fake router has no exporter: unavailable, empty."""
    scraped: dict[str, Any] = {}

    class Engines(engine_metrics.EngineMetricsSampler):
        def __init__(self, base_url: Any, names: Any, interval_s: float = 1.0) -> None:
            scraped["engines"] = base_url
            super().__init__(base_url, names, interval_s)

    monkeypatch.setattr(engine_metrics, "EngineMetricsSampler", Engines)
    names = types.ModuleType("fake_metrics")
    names.inferx_engine_metrics = lambda server: EngineMetricsMap(requests_running="x")  # type: ignore[attr-defined]
    manager = pm()
    manager.register(names, name="fake-metrics")
    cfg = config(tmp_path)
    summary = run_configs([cfg], pm=manager, platform=Platform(), planner=deployment_launch_plan)
    (outcome,) = summary.outcomes
    assert outcome.status == "ok", outcome.result
    base = cfg.deployment.port  # type: ignore[union-attr]
    assert scraped["engines"] == [f"http://127.0.0.1:{base + i}" for i in (1, 2, 3)]
    telemetry = outcome.result.model_dump(mode="json")["telemetry"]
    router = next(s for s in telemetry["samplers"] if s["name"] == "router_metrics")
    launcher = outcome.result.model_dump(mode="json")["provenance"]["launch"]["launcher"]
    assert "router metrics unreachable at http://127.0.0.1:" in router["unavailable"]
    assert telemetry["router_metrics"] == {}
    assert f":{base}/" not in router["unavailable"] and launcher["processes"][-1]["port"] == base


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERX_CACHE_DIR", str(tmp_path / "cache"))
