"""What ``inferx bench`` sets up around its points: the client's CPUs, whether to ask for
per-chunk usage, which tokenize routes to ask (the named engine's plugin's), and the
local telemetry (the client often runs on the serving node); :func:`bench_target`,
:func:`bench_tools` and :func:`bench_plan` are that setup for ``run_bench`` and the
capacity search alike."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from inferx_core.config.cpus import client_cores, split_cpus
from inferx_core.config.models import BenchConfig, ServerConfig
from inferx_core.config.points import slug
from inferx_core.launch.interrupts import handle_interrupts
from inferx_core.load.schedule.client_load import pinned
from inferx_core.load.tokens.counter import CounterResolution, resolve_token_counter
from inferx_core.load.transport.server_clock import engine_server_timing
from inferx_core.pipeline.point.inputs import check_server_context, check_workload_files
from inferx_core.pipeline.point.requests import BenchTarget, continuous_usage_for, discover_model
from inferx_core.pipeline.point.server_plan import ServerPlan
from inferx_core.results.files import ensure_writable
from inferx_core.telemetry.session import TelemetryPlan

if TYPE_CHECKING:
    from inferx_core.sdk.manager import InferxPluginManager

__all__ = [
    "bench_plan",
    "bench_target",
    "bench_tools",
    "client_cpus",
    "engine_server",
    "local_telemetry",
    "usage_support",
]


def bench_target(config: BenchConfig) -> tuple[BenchTarget, str]:
    """The checked server to benchmark and the prefix of its point ids."""
    check_workload_files(config.workload)
    if config.output_dir is not None:
        ensure_writable(config.output_dir)  # before a point's work, not after it
    headers = config.request_headers()
    model = config.model or discover_model(config.base_url, headers)
    served_len = check_server_context(config.workload, config.base_url, model, headers)
    target = BenchTarget(config.base_url, model, headers, *usage_support(config), served_len)
    server, pm = engine_server(config)  # with --engine: where its replies carry its clock
    target.server_timing = engine_server_timing(server, pm) if server is not None else None
    return target, config.name or slug(model.rsplit("/", 1)[-1])


@contextlib.contextmanager
def bench_tools(
    config: BenchConfig, target: BenchTarget
) -> Iterator[tuple[CounterResolution, TelemetryPlan | None]]:
    """The token counter and telemetry plan, with signals handled and the client pinned.

    With ``engine:`` (``--engine``) only that engine's plugin is asked for its tokenize
    routes; without it every plugin's are tried."""
    server, pm = engine_server(config)
    counter = resolve_token_counter(
        config.base_url,
        target.model,
        str(config.workload.tokenizer) if config.workload.tokenizer else None,
        headers=target.headers,
        server=server,
        pm=pm,
    )
    telemetry = local_telemetry(config) if config.telemetry else None
    try:
        # SIGTERM and SIGHUP write the point as Ctrl-C does; client_cpus pins the client
        with handle_interrupts(), pinned(client_cpus(config)):
            yield counter, telemetry
    finally:
        if hasattr(counter.counter, "close"):
            counter.counter.close()  # a server tokenizer's keep-alive client and threads


def bench_plan(
    config: BenchConfig,
    target: BenchTarget,
    counter: CounterResolution,
    telemetry: TelemetryPlan | None,
    progress: bool | None,
) -> ServerPlan:
    """What every point of ``inferx bench`` against ``target`` shares."""
    return ServerPlan(
        target,
        config.workload,
        config.load,
        counter,
        slo=config.slo,
        percentiles=config.percentiles,
        num_gpus=config.num_gpus,
        telemetry=telemetry,
        validity_limits=config.validity,
        progress=progress,
        speculative=config.speculative,
    )


def engine_server(
    config: BenchConfig,
) -> tuple[ServerConfig | None, InferxPluginManager | None]:
    """The named engine as the server its plugin answers hooks for, and the plugin manager
    (both None without ``engine:``); an unknown engine is a clear error."""
    if not config.engine:
        return None, None
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.registries import engine_registry

    pm = get_plugin_manager()
    engine_registry(pm).get(config.engine)
    return ServerConfig(engine=config.engine, model=config.model or "?"), pm


def client_cpus(config: BenchConfig) -> tuple[int, ...]:
    """The CPUs the load generator is pinned to (none: any)."""
    if not config.client_cpus:
        return ()
    # an unknown CPU is a user error naming it, not an OSError from the kernel
    return split_cpus(client_cores(), client_cpus=config.client_cpus).client


def usage_support(config: BenchConfig) -> tuple[bool, str | None]:
    """Per-chunk usage is asked for when the named engine's plugin says it is supported."""
    if not config.engine:
        return continuous_usage_for(None)
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.registries import engine_registry

    return continuous_usage_for(engine_registry(get_plugin_manager()).get(config.engine).info)


def local_telemetry(config: BenchConfig) -> TelemetryPlan:
    """Against an external server the client often runs on the serving node: sample the
    local GPUs (``gpus``, default all visible), the host, and the engine's /metrics when
    the engine is named."""
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.registries import detect_platform, engine_registry
    from inferx_core.telemetry.session import build_plan

    pm = get_plugin_manager()
    platform = detect_platform(pm)
    gpu_ids = config.gpus if config.gpus is not None else [a.index for a in platform.accelerators]
    metrics_map = None
    if config.engine:
        engine_registry(pm).get(config.engine)  # a clear error for an unknown engine
        probe = ServerConfig(engine=config.engine, model=config.model or "?")
        metrics_map = pm.call_first("inferx_engine_metrics", server=probe)[1]
    return build_plan(
        pm,
        platform,
        gpu_ids,
        base_url=config.base_url,
        metrics_map=metrics_map,
        interval_overrides=config.telemetry_intervals,
    )
