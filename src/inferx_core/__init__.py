# ruff: noqa: F401 (the imports below are the public names, resolved lazily)
"""InferX core: hook specs, plugin manager and a hardware-agnostic benchmark loop.

This namespace is the plugin author's SDK: everything a plugin (or a plugin's
tests) needs is importable from ``inferx_core`` itself, and the shipped
plugins use nothing else (tests/test_public_api.py). The modules behind it
may move between releases; these names stay. docs/writing-a-plugin.md lists
them (a test keeps the two equal). The other public modules are
``inferx_core.api`` (benchmark from Python, read, export and import results),
``inferx_core.executors`` (the job helpers an executor plugin submits with)
and ``inferx_core.testing`` (test doubles and the plugin test kit).

Each name is declared once, by the import below; importing this package is
cheap on purpose (no pydantic, engines or vendor libraries): the names are
resolved on first use (``inferx_core._lazy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferx_core import _lazy

if TYPE_CHECKING:  # the public names: each imported on first use (_lazy.attach)
    from inferx_core._version import __version__
    from inferx_core.config.models import LoadProfile, Parallelism, RunConfig, ServerConfig
    from inferx_core.config.sweep import SweepConfig
    from inferx_core.errors import UserFacingError
    from inferx_core.evals.registry import evaluators
    from inferx_core.launch.process import ProcessLauncher, resolve_run_dir
    from inferx_core.launch.resolve import ResolvedLaunch, resolve_launch
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
    from inferx_core.sdk.markers import PROJECT_NAME, hookimpl, hookspec
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
    from inferx_core.sdk.role_helpers import (
        has_flag,
        node_gpu_ids,
        peer_urls,
        refuse_deployment_flags,
        role_builder,
        router_spec,
    )
    from inferx_core.sdk.roles import RoleContext
    from inferx_core.sdk.sampler import Sampler, SamplerUnavailable
    from inferx_core.sdk.server_timing_api import ServerTiming
    from inferx_core.sdk.tokenize_api import TokenizeEndpoint
    from inferx_core.telemetry.device import (
        MIB,
        Device,
        DeviceReadError,
        DeviceSampler,
        Metric,
        Reader,
    )

__all__, __getattr__, __dir__ = _lazy.attach(globals())
