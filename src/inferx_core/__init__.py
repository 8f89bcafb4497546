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
    from inferx_core._version import __version__ as __version__
    from inferx_core.config.models import LoadProfile as LoadProfile
    from inferx_core.config.models import Parallelism as Parallelism
    from inferx_core.config.models import RunConfig as RunConfig
    from inferx_core.config.models import ServerConfig as ServerConfig
    from inferx_core.config.sweep import SweepConfig as SweepConfig
    from inferx_core.errors import UserFacingError as UserFacingError
    from inferx_core.evals.registry import evaluators as evaluators
    from inferx_core.launch.process import ProcessLauncher as ProcessLauncher
    from inferx_core.launch.process import resolve_run_dir as resolve_run_dir
    from inferx_core.launch.resolve import ResolvedLaunch as ResolvedLaunch
    from inferx_core.launch.resolve import resolve_launch as resolve_launch
    from inferx_core.sdk.argv_check import ArgvVerdict as ArgvVerdict
    from inferx_core.sdk.argv_probe import NoParserHere as NoParserHere
    from inferx_core.sdk.argv_probe import ParserAnswer as ParserAnswer
    from inferx_core.sdk.argv_probe import ProbeFailed as ProbeFailed
    from inferx_core.sdk.argv_probe import argv_verdict as argv_verdict
    from inferx_core.sdk.argv_probe import run_probe as run_probe
    from inferx_core.sdk.engine import EngineInfo as EngineInfo
    from inferx_core.sdk.evaluator import AccuracyRecord as AccuracyRecord
    from inferx_core.sdk.evaluator import EvalTarget as EvalTarget
    from inferx_core.sdk.evaluator import EvalTask as EvalTask
    from inferx_core.sdk.evaluator import Evaluator as Evaluator
    from inferx_core.sdk.evaluator import EvaluatorInfo as EvaluatorInfo
    from inferx_core.sdk.executor import Executor as Executor
    from inferx_core.sdk.executor import ExecutorError as ExecutorError
    from inferx_core.sdk.executor import ExecutorInfo as ExecutorInfo
    from inferx_core.sdk.executor import JobRef as JobRef
    from inferx_core.sdk.executor import JobStatus as JobStatus
    from inferx_core.sdk.executor import Submission as Submission
    from inferx_core.sdk.fix_helpers import checked_plugin_options as checked_plugin_options
    from inferx_core.sdk.fixes import AppliedFix as AppliedFix
    from inferx_core.sdk.fixes import DuplicateFixError as DuplicateFixError
    from inferx_core.sdk.fixes import Fix as Fix
    from inferx_core.sdk.fixes import FixContext as FixContext
    from inferx_core.sdk.fixes import FixDecision as FixDecision
    from inferx_core.sdk.fixes import FixVerdict as FixVerdict
    from inferx_core.sdk.fixes import apply_fixes as apply_fixes
    from inferx_core.sdk.helpers import PORT_WAIT_S as PORT_WAIT_S
    from inferx_core.sdk.helpers import default_gpu_ids as default_gpu_ids
    from inferx_core.sdk.helpers import options_error as options_error
    from inferx_core.sdk.helpers import plugin_options as plugin_options
    from inferx_core.sdk.helpers import port_free_wait as port_free_wait
    from inferx_core.sdk.helpers import set_flag as set_flag
    from inferx_core.sdk.helpers import tiny_completion_probe as tiny_completion_probe
    from inferx_core.sdk.launch_spec import LaunchSpec as LaunchSpec
    from inferx_core.sdk.launch_spec import Mount as Mount
    from inferx_core.sdk.launch_spec import PreflightWait as PreflightWait
    from inferx_core.sdk.launcher import Launcher as Launcher
    from inferx_core.sdk.launcher import LauncherInfo as LauncherInfo
    from inferx_core.sdk.launcher import ServerHandle as ServerHandle
    from inferx_core.sdk.manager import InferxPluginManager as InferxPluginManager
    from inferx_core.sdk.manager import PluginError as PluginError
    from inferx_core.sdk.manager import PluginHookError as PluginHookError
    from inferx_core.sdk.manager import get_plugin_manager as get_plugin_manager
    from inferx_core.sdk.markers import PROJECT_NAME as PROJECT_NAME
    from inferx_core.sdk.markers import hookimpl as hookimpl
    from inferx_core.sdk.markers import hookspec as hookspec
    from inferx_core.sdk.names import EngineConflictError as EngineConflictError
    from inferx_core.sdk.names import EngineNotFoundError as EngineNotFoundError
    from inferx_core.sdk.names import LauncherConflictError as LauncherConflictError
    from inferx_core.sdk.platform import Accelerator as Accelerator
    from inferx_core.sdk.platform import HostInfo as HostInfo
    from inferx_core.sdk.platform import Platform as Platform
    from inferx_core.sdk.platform import PlatformNote as PlatformNote
    from inferx_core.sdk.probes import EngineMetricsMap as EngineMetricsMap
    from inferx_core.sdk.probes import ReadinessProbe as ReadinessProbe
    from inferx_core.sdk.registries import detect_platform as detect_platform
    from inferx_core.sdk.registries import engine_registry as engine_registry
    from inferx_core.sdk.registries import fix_catalogue as fix_catalogue
    from inferx_core.sdk.registries import launchers as launchers
    from inferx_core.sdk.role_helpers import has_flag as has_flag
    from inferx_core.sdk.role_helpers import node_gpu_ids as node_gpu_ids
    from inferx_core.sdk.role_helpers import peer_urls as peer_urls
    from inferx_core.sdk.role_helpers import refuse_deployment_flags as refuse_deployment_flags
    from inferx_core.sdk.role_helpers import role_builder as role_builder
    from inferx_core.sdk.role_helpers import router_spec as router_spec
    from inferx_core.sdk.role_helpers import router_tail as router_tail
    from inferx_core.sdk.roles import RoleContext as RoleContext
    from inferx_core.sdk.sampler import Sampler as Sampler
    from inferx_core.sdk.sampler import SamplerUnavailable as SamplerUnavailable
    from inferx_core.sdk.server_timing_api import ServerTiming as ServerTiming
    from inferx_core.sdk.tokenize_api import TokenizeEndpoint as TokenizeEndpoint
    from inferx_core.telemetry.device import MIB as MIB
    from inferx_core.telemetry.device import Device as Device
    from inferx_core.telemetry.device import DeviceReadError as DeviceReadError
    from inferx_core.telemetry.device import DeviceSampler as DeviceSampler
    from inferx_core.telemetry.device import Metric as Metric
    from inferx_core.telemetry.device import Reader as Reader

__all__, __getattr__, __dir__ = _lazy.attach(globals())
