"""InferX core: hook specs, plugin manager and a hardware-agnostic benchmark loop.

This namespace is the public SDK: everything a plugin (or a plugin's tests)
needs is importable from ``inferx_core`` itself, and the shipped plugins use
nothing else (tests/test_public_api.py). The modules behind it may move
between releases; these names stay. docs/writing-a-plugin.md lists them.

Importing this package is cheap on purpose: the CLI's ``--version`` and
``--help`` must answer without pydantic, engines or vendor libraries. The
public names are resolved lazily on first attribute access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inferx_core import _compat
from inferx_core._version import __version__
from inferx_core.sdk.markers import PROJECT_NAME, hookimpl, hookspec

_compat.install()

#: module -> the public names it provides, imported on first use.
_EXPORTS: dict[str, tuple[str, ...]] = {
    # writing a plugin
    "inferx_core.errors": ("UserFacingError",),
    "inferx_core.config.models": (
        "SLO",
        "BenchConfig",
        "LoadProfile",
        "Parallelism",
        "RunConfig",
        "ServerConfig",
        "Workload",
    ),
    "inferx_core.config.sweep": ("SweepConfig",),
    "inferx_core.sdk.platform": ("Accelerator", "HostInfo", "Platform", "PlatformNote"),
    # engines: what to start, when it is ready, what it exposes, multi-node roles
    "inferx_core.sdk.engine": ("EngineInfo",),
    "inferx_core.sdk.launch_spec": ("LaunchSpec", "Mount", "PreflightWait"),
    "inferx_core.sdk.probes": ("EngineMetricsMap", "ReadinessProbe"),
    "inferx_core.sdk.argv_check": ("ArgvVerdict",),
    "inferx_core.sdk.roles": ("RoleContext",),
    "inferx_core.sdk.helpers": (
        "PORT_WAIT_S",
        "default_gpu_ids",
        "options_error",
        "plugin_options",
        "port_free_wait",
        "set_flag",
        "tiny_completion_probe",
    ),
    # fixes
    "inferx_core.sdk.fixes": (
        "AppliedFix",
        "DuplicateFixError",
        "Fix",
        "FixContext",
        "FixDecision",
        "FixVerdict",
        "apply_fixes",
    ),
    "inferx_core.sdk.fix_helpers": ("checked_plugin_options",),
    # telemetry: the sampler protocol and the vendor-neutral GPU sampler machinery
    "inferx_core.sdk.sampler": ("Sampler", "SamplerUnavailable"),
    "inferx_core.telemetry.device": (
        "MIB",
        "Device",
        "DeviceReadError",
        "DeviceSampler",
        "Metric",
        "Reader",
    ),
    # launchers and executors
    "inferx_core.sdk.launcher": ("Launcher", "LauncherInfo", "ServerHandle"),
    "inferx_core.launch.process": ("ProcessLauncher", "resolve_run_dir"),
    "inferx_core.sdk.executor": (
        "Executor",
        "ExecutorError",
        "ExecutorInfo",
        "JobRef",
        "JobStatus",
        "Submission",
    ),
    "inferx_core.executors.jobs": (
        "MANIFEST_NAME",
        "job_root",
        "manifest_data",
        "new_job_dir",
        "plan_units",
        "secret_environment",
    ),
    "inferx_core.results.files": ("read_result", "write_json_atomic"),
    # evaluators: accuracy beside throughput (inferx_evaluators)
    "inferx_core.sdk.evaluator": (
        "AccuracyRecord",
        "EvalTarget",
        "EvalTask",
        "Evaluator",
        "EvaluatorInfo",
    ),
    "inferx_core.evals.registry": ("evaluators",),
    # the plugin manager and the questions the core asks it (for a plugin's tests)
    "inferx_core.sdk.manager": (
        "InferxPluginManager",
        "PluginError",
        "PluginHookError",
        "get_plugin_manager",
    ),
    "inferx_core.sdk.names": (
        "EngineConflictError",
        "EngineNotFoundError",
        "LauncherConflictError",
    ),
    "inferx_core.sdk.registries": (
        "detect_platform",
        "engine_registry",
        "fix_catalogue",
        "launchers",
    ),
    "inferx_core.launch.resolve": ("ResolvedLaunch", "resolve_launch"),
    # embedding: benchmark a running server from Python (examples/embed_in_pipeline.py)
    "inferx_core.pipeline.bench_api": ("arun_bench", "run_bench"),
    # results in and out: typed results, vLLM/InferenceX/CSV/Parquet (docs/interop.md)
    "inferx_core.results.model": ("parse_result",),
    "inferx_core.interop.export": ("ExportOptions", "export_paths", "export_results"),
    "inferx_core.interop.importers": ("import_file",),
}
_LAZY_EXPORTS = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "MANIFEST_NAME",
    "MIB",
    "PORT_WAIT_S",
    "PROJECT_NAME",
    "SLO",
    "Accelerator",
    "AccuracyRecord",
    "AppliedFix",
    "ArgvVerdict",
    "BenchConfig",
    "Device",
    "DeviceReadError",
    "DeviceSampler",
    "DuplicateFixError",
    "EngineConflictError",
    "EngineInfo",
    "EngineMetricsMap",
    "EngineNotFoundError",
    "EvalTarget",
    "EvalTask",
    "Evaluator",
    "EvaluatorInfo",
    "Executor",
    "ExecutorError",
    "ExecutorInfo",
    "ExportOptions",
    "Fix",
    "FixContext",
    "FixDecision",
    "FixVerdict",
    "HostInfo",
    "InferxPluginManager",
    "JobRef",
    "JobStatus",
    "LaunchSpec",
    "Launcher",
    "LauncherConflictError",
    "LauncherInfo",
    "LoadProfile",
    "Metric",
    "Mount",
    "Parallelism",
    "Platform",
    "PlatformNote",
    "PluginError",
    "PluginHookError",
    "PreflightWait",
    "ProcessLauncher",
    "Reader",
    "ReadinessProbe",
    "ResolvedLaunch",
    "RoleContext",
    "RunConfig",
    "Sampler",
    "SamplerUnavailable",
    "ServerConfig",
    "ServerHandle",
    "Submission",
    "SweepConfig",
    "UserFacingError",
    "Workload",
    "__version__",
    "apply_fixes",
    "arun_bench",
    "checked_plugin_options",
    "default_gpu_ids",
    "detect_platform",
    "engine_registry",
    "evaluators",
    "export_paths",
    "export_results",
    "fix_catalogue",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "import_file",
    "job_root",
    "launchers",
    "manifest_data",
    "new_job_dir",
    "options_error",
    "parse_result",
    "plan_units",
    "plugin_options",
    "port_free_wait",
    "read_result",
    "resolve_launch",
    "resolve_run_dir",
    "run_bench",
    "secret_environment",
    "set_flag",
    "tiny_completion_probe",
    "write_json_atomic",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'inferx_core' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from inferx_core.config.models import (
        SLO,
        BenchConfig,
        LoadProfile,
        Parallelism,
        RunConfig,
        ServerConfig,
        Workload,
    )
    from inferx_core.config.sweep import SweepConfig
    from inferx_core.errors import UserFacingError
    from inferx_core.evals.registry import evaluators
    from inferx_core.executors.jobs import (
        MANIFEST_NAME,
        job_root,
        manifest_data,
        new_job_dir,
        plan_units,
        secret_environment,
    )
    from inferx_core.interop.export import ExportOptions, export_paths, export_results
    from inferx_core.interop.importers import import_file
    from inferx_core.launch.process import ProcessLauncher, resolve_run_dir
    from inferx_core.launch.resolve import ResolvedLaunch, resolve_launch
    from inferx_core.pipeline.bench_api import arun_bench, run_bench
    from inferx_core.results.files import read_result, write_json_atomic
    from inferx_core.results.model import parse_result
    from inferx_core.sdk.argv_check import ArgvVerdict
    from inferx_core.sdk.engine import EngineInfo
    from inferx_core.sdk.evaluator import (
        AccuracyRecord,
        EvalTarget,
        EvalTask,
        Evaluator,
        EvaluatorInfo,
    )
    from inferx_core.sdk.executor import (
        Executor,
        ExecutorError,
        ExecutorInfo,
        JobRef,
        JobStatus,
        Submission,
    )
    from inferx_core.sdk.fix_helpers import checked_plugin_options
    from inferx_core.sdk.fixes import (
        AppliedFix,
        DuplicateFixError,
        Fix,
        FixContext,
        FixDecision,
        FixVerdict,
        apply_fixes,
    )
    from inferx_core.sdk.helpers import (
        PORT_WAIT_S,
        default_gpu_ids,
        options_error,
        plugin_options,
        port_free_wait,
        set_flag,
        tiny_completion_probe,
    )
    from inferx_core.sdk.launch_spec import LaunchSpec, Mount, PreflightWait
    from inferx_core.sdk.launcher import Launcher, LauncherInfo, ServerHandle
    from inferx_core.sdk.manager import (
        InferxPluginManager,
        PluginError,
        PluginHookError,
        get_plugin_manager,
    )
    from inferx_core.sdk.names import (
        EngineConflictError,
        EngineNotFoundError,
        LauncherConflictError,
    )
    from inferx_core.sdk.platform import Accelerator, HostInfo, Platform, PlatformNote
    from inferx_core.sdk.probes import EngineMetricsMap, ReadinessProbe
    from inferx_core.sdk.registries import (
        detect_platform,
        engine_registry,
        fix_catalogue,
        launchers,
    )
    from inferx_core.sdk.roles import RoleContext
    from inferx_core.sdk.sampler import Sampler, SamplerUnavailable
    from inferx_core.telemetry.device import (
        MIB,
        Device,
        DeviceReadError,
        DeviceSampler,
        Metric,
        Reader,
    )

# TEMPORARY (issues 28/31), remove once the __init__ rewrite lists these in _EXPORTS/__all__:
_ROLE_HELPERS = ("has_flag", "node_gpu_ids", "peer_urls", "refuse_deployment_flags", "role_builder", "router_spec")  # noqa: E501  # fmt: skip
_LAZY_EXPORTS.update({n: "inferx_core.sdk.role_helpers" for n in _ROLE_HELPERS}, TokenizeEndpoint="inferx_core.sdk.tokenize_api")  # noqa: E501  # fmt: skip
__all__ += [*_ROLE_HELPERS, "TokenizeEndpoint"]
