"""One server configuration made concrete: port, resolved LaunchSpec, launcher, run folder.

``inferx run`` (which then starts it) and ``inferx plan`` (which only shows
it) both build the launch here, so what the plan shows is what runs. They
differ only in the port: a run picks a free one when none is configured, a
plan shows the engine's default and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.config.points import server_id
from inferx_core.launch.resolve import ResolvedLaunch, resolve_launch
from inferx_core.sdk.launcher import Launcher
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.registries import launcher_named


@dataclass(frozen=True)
class LaunchPlan:
    cfg: RunConfig
    server: ServerConfig
    resolved: ResolvedLaunch
    launcher: Launcher
    run_dir: Path
    #: What per-GPU figures divide by when it is not the launch's GPUs: a deployment's
    #: prefill/decode split, never its router (``GpuAccounting.summarize_kwargs``).
    gpu_split: dict[str, int] | None = None

    @property
    def server_id(self) -> str:
        return server_id(self.cfg)

    def launcher_view(self) -> dict[str, Any]:
        return self.launcher.describe(self.resolved.spec, self.run_dir)


def plan_launch(
    cfg: RunConfig, pm: InferxPluginManager, platform: Platform, *, port: int, output_dir: Path
) -> LaunchPlan:
    """Resolve the launch of ``cfg`` on ``port`` (engine plugin + fixes + launcher)."""
    server = cfg.server().model_copy(update={"port": port})
    resolved = resolve_launch(pm, server, platform, cfg.load)
    entry = launcher_named(pm, server.launcher)
    run_dir = Path(output_dir) / "servers" / server_id(cfg)
    return LaunchPlan(cfg, server, resolved, entry[1].factory(), run_dir)


def launch_context(plan: LaunchPlan, platform: Platform) -> dict[str, Any]:
    """What every result of this server carries: config, engine, platform, launch, fixes."""
    resolved = plan.resolved
    return {
        "config": plan.cfg.model_dump(mode="json"),
        "engine": {"name": plan.server.engine, "plugin": resolved.plugin, "version": None},
        "platform": platform.model_dump(mode="json"),
        "launch": {
            "spec": resolved.spec.model_dump(mode="json"),
            "launcher": plan.launcher_view(),
        },
        "fixes_applied": [f.model_dump() for f in resolved.applied_fixes],
        "fix_decisions": [d.model_dump() for d in resolved.decisions],
    }
