"""The example plugin's answers to the InferX hooks: the entry point.

Only the hook implementations live here, each delegating to the module that
does the work (:mod:`.tpu`, :mod:`.launch`, :mod:`.fixes`); nothing
imports this module back.
"""

from __future__ import annotations

from inferx_core import (
    EngineInfo,
    Fix,
    LaunchSpec,
    Platform,
    ReadinessProbe,
    ServerConfig,
    hookimpl,
)
from inferx_example_plugin import fixes, launch, tpu


@hookimpl
def inferx_platform() -> Platform:
    return tpu.detect()


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
def inferx_container_fixes() -> list[Fix]:
    return fixes.catalogue()
