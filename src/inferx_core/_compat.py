"""Old module paths (InferX 0.1, schema 1 era) keep importing, with a deprecation warning.

The core was reorganised into layered packages; a third-party plugin that
imported ``inferx_core.engine_helpers`` or ``inferx_core.launch.spec`` keeps
working and is told where the name lives now (best: the ``inferx_core``
namespace itself). Installed by ``inferx_core/__init__.py``; costs nothing
until an old name is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: old module -> new module
MOVED_MODULES: dict[str, str] = {
    "inferx_core.hookspecs": "inferx_core.sdk.hookspecs",
    "inferx_core.plugins": "inferx_core.sdk.manager",
    "inferx_core.registry": "inferx_core.sdk.registries",
    "inferx_core.engines": "inferx_core.sdk.engine",
    "inferx_core.platform": "inferx_core.sdk.platform",
    "inferx_core.probes": "inferx_core.sdk.probes",
    "inferx_core.engine_helpers": "inferx_core.sdk.helpers",
    "inferx_core.fixes": "inferx_core.builtin.nvidia",
    "inferx_core.fixes.common": "inferx_core.sdk.fix_helpers",
    "inferx_core.fixes.nvidia": "inferx_core.builtin.nvidia.fixes",
    "inferx_core.fixes.flashinfer_prefetch": "inferx_core.builtin.nvidia.flashinfer_prefetch",
    "inferx_core.launch.spec": "inferx_core.sdk.launch_spec",
    "inferx_core.launch.launcher": "inferx_core.sdk.launcher",
    "inferx_core.launch.fixes": "inferx_core.sdk.fixes",
    "inferx_core.telemetry.sampler": "inferx_core.sdk.sampler",
    "inferx_core.telemetry.nvml": "inferx_core.builtin.nvidia.sampler",
    "inferx_core.telemetry.summary": "inferx_core.telemetry.window",
    "inferx_core.builtin.nvml": "inferx_core.builtin.nvidia.plugin",
    "inferx_core.redact": "inferx_core.sdk.redact",
    "inferx_core.log": "inferx_core.sdk.log",
    "inferx_core.config_loader": "inferx_core.config.loader",
    "inferx_core.sweep": "inferx_core.config.sweep",
    "inferx_core.readiness": "inferx_core.launch.readiness",
    "inferx_core.progress": "inferx_core.load.schedule.progress",
    "inferx_core.stats": "inferx_core.metrics.stats",
    "inferx_core.summary": "inferx_core.report.console",
    "inferx_core.bench": "inferx_core.pipeline.point",
    "inferx_core.runner": "inferx_core.pipeline.run",
    "inferx_core.cli_bench": "inferx_core.cli.bench",
    "inferx_core.cli_run": "inferx_core.cli.run",
    "inferx_core.cli_fixes": "inferx_core.cli.fixes",
    "inferx_core.cli_report": "inferx_core.cli.report",
    "inferx_core.cli_filters": "inferx_core.cli.filters",
    "inferx_core.doctor": "inferx_core.cli.doctor",
    "inferx_core.analysis.load": "inferx_core.results.read",
}


def deprecation(old: str, new: str) -> str:
    return (
        f"{old} moved to {new} in inferx-core 0.2; import public names from "
        "`inferx_core` itself (`inferx docs writing-a-plugin` lists them)"
    )


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(deprecation(spec.name, self.new), DeprecationWarning, stacklevel=3)
        module = importlib.import_module(self.new)
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module: ModuleType) -> None:  # already executed as `new`
        return None


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Resolves an old module path to the module it became."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> object:
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())


def lazy_reexport(package: str, target: str, name: str) -> object:
    """``package.name`` for a package that used to be a module: found in ``target``."""
    module = importlib.import_module(target)
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    warnings.warn(deprecation(f"{package}.{name}", f"{target}.{name}"), DeprecationWarning, 3)
    return value
