"""llama.cpp's answers to the InferX hooks: the entry point (``[project.entry-points.inferx]``).

Only the hook implementations live here, each delegating down: the launch,
readiness, metrics and tokenizer to :mod:`inferx_llamacpp.launch`, the argv
check to :mod:`inferx_llamacpp.argv_check`, the per-request clock to
:mod:`inferx_llamacpp.server_timing`. Nothing imports this module back.
"""

from __future__ import annotations

from inferx_core import (
    ArgvVerdict,
    EngineInfo,
    EngineMetricsMap,
    LaunchSpec,
    LoadProfile,
    Platform,
    ReadinessProbe,
    ServerConfig,
    ServerTiming,
    TokenizeEndpoint,
    hookimpl,
)
from inferx_llamacpp import argv_check, launch, server_timing


@hookimpl
def inferx_engines() -> list[EngineInfo]:
    return [launch.engine_info()]


@hookimpl
def inferx_engine_launch_spec(
    server: ServerConfig, platform: Platform, load: LoadProfile | None
) -> LaunchSpec:
    # `load` has no default: pluggy passes only the parameters an implementation names
    # without one.
    return launch.launch_spec(server, platform, load)


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe]:
    return launch.readiness_probes()


@hookimpl
def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap:
    return launch.metrics_map()


@hookimpl
def inferx_engine_argv_verdict(spec: LaunchSpec) -> ArgvVerdict:
    """llama-server's own --help, from the binary the launch runs (``inferx plan --check-args``)."""
    return argv_check.check_launch(spec)


@hookimpl
def inferx_engine_tokenize_endpoints() -> list[TokenizeEndpoint]:
    """llama-server's ``/tokenize`` and ``/detokenize`` (see :data:`.launch.TOKENIZE`)."""
    return launch.tokenize_endpoints()


@hookimpl
def inferx_engine_server_timing() -> ServerTiming:
    """llama-server's ``timings`` (see :mod:`inferx_llamacpp.server_timing`)."""
    return server_timing.SERVER_TIMING
