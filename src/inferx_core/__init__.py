"""InferX core: hook specs, plugin manager and a hardware-agnostic benchmark loop.

Importing this package is cheap on purpose: the CLI's ``--version`` and
``--help`` must answer without pydantic, engines or vendor libraries. The
public types are resolved lazily on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

from inferx_core._version import __version__

PROJECT_NAME = "inferx"

#: Marker for plugin hook implementations: ``@inferx_core.hookimpl``.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
#: Marker for hook specifications (used by ``inferx_core.hookspecs``).
hookspec = pluggy.HookspecMarker(PROJECT_NAME)

_LAZY_EXPORTS = {
    "Accelerator": "inferx_core.platform",
    "HostInfo": "inferx_core.platform",
    "Platform": "inferx_core.platform",
    "LaunchSpec": "inferx_core.launch.spec",
    "Mount": "inferx_core.launch.spec",
    "PreflightWait": "inferx_core.launch.spec",
    "Fix": "inferx_core.launch.fixes",
    "FixContext": "inferx_core.launch.fixes",
    "FixVerdict": "inferx_core.launch.fixes",
    "ReadinessProbe": "inferx_core.probes",
    "EngineMetricsMap": "inferx_core.probes",
    "EngineInfo": "inferx_core.engines",
    "Sampler": "inferx_core.telemetry.sampler",
    "SamplerUnavailable": "inferx_core.telemetry.sampler",
    "LauncherInfo": "inferx_core.launch.launcher",
    "ServerConfig": "inferx_core.config",
    "RunConfig": "inferx_core.config",
    "SweepConfig": "inferx_core.config",
    "get_plugin_manager": "inferx_core.plugins",
}

__all__ = [
    "PROJECT_NAME",
    "Accelerator",
    "EngineInfo",
    "EngineMetricsMap",
    "Fix",
    "FixContext",
    "FixVerdict",
    "HostInfo",
    "LaunchSpec",
    "LauncherInfo",
    "Mount",
    "Platform",
    "PreflightWait",
    "ReadinessProbe",
    "RunConfig",
    "Sampler",
    "SamplerUnavailable",
    "ServerConfig",
    "SweepConfig",
    "__version__",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'inferx_core' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from inferx_core.config import RunConfig, ServerConfig, SweepConfig
    from inferx_core.engines import EngineInfo
    from inferx_core.launch.fixes import Fix, FixContext, FixVerdict
    from inferx_core.launch.launcher import LauncherInfo
    from inferx_core.launch.spec import LaunchSpec, Mount, PreflightWait
    from inferx_core.platform import Accelerator, HostInfo, Platform
    from inferx_core.plugins import get_plugin_manager
    from inferx_core.probes import EngineMetricsMap, ReadinessProbe
    from inferx_core.telemetry.sampler import Sampler, SamplerUnavailable
