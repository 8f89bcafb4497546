"""What ``inferx bench`` sets up around its points: the client's CPUs, whether to ask for
per-chunk usage, and the local telemetry (the client often runs on the serving node)."""

from __future__ import annotations

from inferx_core.config.cpus import client_cores, split_cpus
from inferx_core.config.models import BenchConfig
from inferx_core.pipeline.requests import continuous_usage_for
from inferx_core.telemetry.session import TelemetryPlan

__all__ = ["client_cpus", "local_telemetry", "usage_support"]


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
        from inferx_core.config.models import ServerConfig

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
