"""vLLM's answers to the InferX hooks: the entry point (``[project.entry-points.inferx]``).

Only the hook implementations live here, each delegating down: the single
server to :mod:`inferx_vllm.launch`, the processes of a multi-node deployment
to :mod:`inferx_vllm.roles` (which builds on ``launch``), the argv check to
:mod:`inferx_vllm.argv_check`. Nothing imports this module back.
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
from inferx_vllm import argv_check, launch, roles, server_timing


@hookimpl
def inferx_engines() -> list[EngineInfo]:
    # role_ports: the ports a deployment's process opens beside --port, booked by the core
    return [launch.engine_info().model_copy(update={"role_ports": roles.role_ports})]


@hookimpl
def inferx_engine_launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    return launch.server_spec(server, platform)


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe]:
    return launch.readiness_probes(spec)


@hookimpl
def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap:
    return launch.metrics_map()


@hookimpl
def inferx_engine_argv_verdict(spec: LaunchSpec) -> ArgvVerdict:
    """vLLM's own parser, in the interpreter the launch runs (``inferx plan --check-args``)."""
    return argv_check.check_launch(spec)


@hookimpl
def inferx_engine_role_spec(
    server: ServerConfig, platform: Platform, role: RoleContext
) -> LaunchSpec | None:
    """One process of a vLLM P/D or wide-EP deployment (see :mod:`inferx_vllm.roles`)."""
    return roles.role_spec(server, platform, role)


@hookimpl
def inferx_engine_tokenize_endpoints() -> list[TokenizeEndpoint]:
    """vLLM's ``/tokenize`` and ``/detokenize`` (see :data:`inferx_vllm.launch.TOKENIZE`)."""
    return launch.tokenize_endpoints()


@hookimpl
def inferx_engine_server_timing(server: ServerConfig) -> ServerTiming | None:
    """vLLM's per-request ``metrics`` (see :mod:`inferx_vllm.server_timing`)."""
    return server_timing.server_timing(server)
