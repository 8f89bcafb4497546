"""SGLang's answers to the InferX hooks: the entry point (``[project.entry-points.inferx]``).

Only the hook implementations live here, each delegating down: the single
server to :mod:`inferx_sglang.launch`, the processes of a PD or wide-EP
deployment to :mod:`inferx_sglang.roles` (which builds on ``launch``), the
argv check to :mod:`inferx_sglang.argv_check`. Nothing imports this module back.
"""

from __future__ import annotations

from inferx_core import (
    ArgvVerdict,
    EngineInfo,
    EngineMetricsMap,
    LaunchSpec,
    Platform,
    ReadinessProbe,
    RoleContext,
    ServerConfig,
    ServerTiming,
    TokenizeEndpoint,
    hookimpl,
)
from inferx_sglang import argv_check, launch, roles, server_timing


@hookimpl
def inferx_engines() -> list[EngineInfo]:
    # role_ports: the ports a deployment's process opens beside --port, booked by the core
    return [launch.engine_info().model_copy(update={"role_ports": roles.role_ports})]


@hookimpl
def inferx_engine_launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    return launch.launch_spec(server, platform)


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe]:
    return launch.readiness_probes()


@hookimpl
def inferx_engine_argv_verdict(spec: LaunchSpec) -> ArgvVerdict:
    """SGLang's own parser, in the interpreter the launch runs (``inferx plan --check-args``)."""
    return argv_check.check_launch(spec)


@hookimpl
def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap:
    """SGLang's Prometheus names (``--enable-metrics``), one series per DP rank."""
    return launch.metrics_map()


@hookimpl
def inferx_engine_role_spec(
    server: ServerConfig, platform: Platform, role: RoleContext
) -> LaunchSpec | None:
    """One process of an SGLang PD or wide-EP deployment (see :mod:`inferx_sglang.roles`)."""
    return roles.role_spec(server, platform, role)


@hookimpl
def inferx_engine_tokenize_endpoints() -> list[TokenizeEndpoint]:
    """SGLang's ``/tokenize`` and ``/v1/tokenize`` (see :data:`inferx_sglang.launch.TOKENIZE`)."""
    return launch.tokenize_endpoints()


@hookimpl
def inferx_engine_server_timing() -> ServerTiming:
    """SGLang's per-request speculative and cache details (:mod:`inferx_sglang.server_timing`)."""
    return server_timing.SERVER_TIMING
