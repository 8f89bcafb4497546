"""InferX core: hook specs, plugin manager and a hardware-agnostic benchmark loop.

Importing this package is cheap on purpose: the CLI's ``--version`` and
``--help`` must answer without pydantic, engines or vendor libraries. The
public types are resolved lazily on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inferx_core import _compat
from inferx_core._version import __version__
from inferx_core.sdk.markers import PROJECT_NAME, hookimpl, hookspec

_compat.install()

_LAZY_EXPORTS = {
    "Accelerator": "inferx_core.sdk.platform",
    "HostInfo": "inferx_core.sdk.platform",
    "Platform": "inferx_core.sdk.platform",
    "LaunchSpec": "inferx_core.sdk.launch_spec",
    "Mount": "inferx_core.sdk.launch_spec",
    "PreflightWait": "inferx_core.sdk.launch_spec",
    "Fix": "inferx_core.sdk.fixes",
    "FixContext": "inferx_core.sdk.fixes",
    "FixVerdict": "inferx_core.sdk.fixes",
    "ReadinessProbe": "inferx_core.sdk.probes",
    "EngineMetricsMap": "inferx_core.sdk.probes",
    "EngineInfo": "inferx_core.sdk.engine",
    "Sampler": "inferx_core.sdk.sampler",
    "SamplerUnavailable": "inferx_core.sdk.sampler",
    "LauncherInfo": "inferx_core.sdk.launcher",
    "ServerConfig": "inferx_core.config.models",
    "RunConfig": "inferx_core.config.models",
    "SweepConfig": "inferx_core.config.sweep",
    "get_plugin_manager": "inferx_core.sdk.manager",
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
    from inferx_core.config.models import RunConfig, ServerConfig
    from inferx_core.config.sweep import SweepConfig
    from inferx_core.sdk.engine import EngineInfo
    from inferx_core.sdk.fixes import Fix, FixContext, FixVerdict
    from inferx_core.sdk.launch_spec import LaunchSpec, Mount, PreflightWait
    from inferx_core.sdk.launcher import LauncherInfo
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.platform import Accelerator, HostInfo, Platform
    from inferx_core.sdk.probes import EngineMetricsMap, ReadinessProbe
    from inferx_core.sdk.sampler import Sampler, SamplerUnavailable
