"""TensorRT-LLM's answers to the InferX hooks: the entry point (``[project.entry-points.inferx]``).

Only the hook implementations live here, each delegating to
:mod:`inferx_trtllm.launch` (the command, its LLM API options file, readiness
and metrics). Nothing imports this module back.
"""

from __future__ import annotations

from inferx_core import (
    EngineInfo,
    EngineMetricsMap,
    LaunchSpec,
    Platform,
    ReadinessProbe,
    ServerConfig,
    hookimpl,
)
from inferx_trtllm import launch


@hookimpl
def inferx_engines() -> list[EngineInfo]:
    return [launch.engine_info()]


@hookimpl
def inferx_engine_launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    return launch.launch_spec(server, platform)


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe]:
    return launch.readiness_probes()


@hookimpl
def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap | None:
    """``/prometheus/metrics``, unless ``plugin_options.trtllm.prometheus_metrics`` is off."""
    return launch.metrics_map(server)
