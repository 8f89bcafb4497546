"""A deployment made concrete: every process, where, with what argv and env; what the load hits.

``inferx plan`` shows it and ``inferx run`` starts it, both from here, so what
the plan shows is what runs (as :mod:`inferx_core.pipeline.server.launch_plan` does
for one server). ``hosts`` is where the processes go: this machine for the
local executor (:func:`~inferx_core.executors.multinode.one_machine`), the
allocation's nodes under SLURM, or placeholders (``node0``, ...) when a SLURM
plan is shown before any node is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from inferx_core.config.deployment import Deployment
from inferx_core.config.models import RunConfig
from inferx_core.config.points import point_ids, server_id
from inferx_core.executors.multinode import (
    RoleLaunch,
    RoleLauncher,
    endpoint,
    gpu_accounting,
    nodes_needed,
    one_machine,
    role_launches,
)
from inferx_core.sdk.launcher import Launcher, ServerHandle
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.registries import launcher_named

__all__ = ["DeploymentPlan", "placeholder_hosts", "plan_deployment"]


def placeholder_hosts(deployment: Deployment) -> list[str]:
    """Node names for a plan shown before the allocation exists."""
    return [f"node{i}" for i in range(nodes_needed(deployment))]


@dataclass(frozen=True)
class DeploymentPlan:
    cfg: RunConfig
    deployment: Deployment
    launches: list[RoleLaunch]
    launcher: Launcher | RoleLauncher
    run_dir: Path
    platform: Platform

    @property
    def server_id(self) -> str:
        return server_id(self.cfg)

    @property
    def endpoint(self) -> str:
        return endpoint(self.launches)

    def process_dir(self, launch: RoleLaunch) -> Path:
        return self.run_dir / launch.process

    def describe_process(self, launch: RoleLaunch) -> dict[str, Any]:
        if isinstance(self.launcher, RoleLauncher):
            return self.launcher.describe_role(launch, self.process_dir(launch))
        return self.launcher.describe(launch.spec, self.process_dir(launch))

    def start_process(self, launch: RoleLaunch) -> ServerHandle:
        if isinstance(self.launcher, RoleLauncher):
            return self.launcher.start_role(launch, self.process_dir(launch))
        return self.launcher.start(launch.spec, self.process_dir(launch))

    def gpus(self) -> dict[str, Any]:
        acct = gpu_accounting(self.deployment, self.cfg)
        by_role: dict[str, int] = {}
        for la in self.launches:
            by_role[la.context.role] = by_role.get(la.context.role, 0) + len(la.spec.gpu_ids)
        return {
            "num_gpus": acct.num_gpus,
            "num_prefill_gpus": acct.num_prefill_gpus,
            "num_decode_gpus": acct.num_decode_gpus,
            "by_role": by_role,
            "summarize": acct.summarize_kwargs(),
        }

    def process_view(self, launch: RoleLaunch) -> dict[str, Any]:
        ctx, spec = launch.context, launch.spec
        view = self.describe_process(launch)
        return {
            "name": launch.process,
            "role": ctx.role,
            "replica": ctx.replica,
            "node_rank": ctx.node_rank,
            "nodes": ctx.nodes,
            "host": ctx.host,
            **({"node": launch.node} if launch.node is not None else {}),
            "port": launch.server.port,
            "url": launch.base_url,
            "headless": launch.headless,
            "gpu_ids": list(spec.gpu_ids),
            "plugin": launch.plugin,
            "argv": view["argv"],
            "engine_argv": list(spec.argv),
            "env": dict(spec.env),
            "unset_env": list(spec.unset_env),
            "warnings": list(spec.warnings),
            "fixes_applied": [f.model_dump() for f in launch.applied_fixes],
            "fixes_not_applied": [d.model_dump() for d in launch.decisions if not d.applied],
        }

    def view(self, pm: InferxPluginManager | None = None) -> dict[str, Any]:
        """Everything ``inferx plan --json`` shows of this deployment (secrets not yet masked);
        with ``pm``, each engine process's argv as the engine's own parser judges it."""
        processes = [self.process_view(la) for la in self.launches]
        if pm is not None:
            from inferx_core.pipeline.server.argv_check import check_argv

            for proc, la in zip(processes, self.launches, strict=True):
                if la.context.role != "router":  # the router is not the engine's parser's
                    proc["argv_check"] = check_argv(pm, la.server, la.spec).model_dump()
        warnings = self.machine_warnings()
        return {
            "server": self.server_id,
            "engine": self.cfg.engine,
            "deployment": self.deployment.kind,
            "hosts": sorted({la.context.host for la in self.launches}),
            "nodes_needed": nodes_needed(self.deployment),
            "processes": processes,
            "router": next((p for p in processes if p["role"] == "router"), None),
            "endpoint": self.endpoint,
            "gpus": self.gpus(),
            "points": [pid for _, pid in point_ids(self.cfg)],
            "warnings": warnings,
        }

    def machine_warnings(self) -> list[str]:
        """Where several processes share a machine: GPUs it does not have."""
        by_host: dict[str, tuple[int, int]] = {}  # host -> (processes, GPUs): one pass
        for la in self.launches:
            count, used = by_host.get(la.context.host, (0, 0))
            by_host[la.context.host] = (count + 1, used + len(la.spec.gpu_ids))
        warnings = []
        have = self.platform.gpu_count
        for host, (count, used) in sorted(by_host.items()):
            if count > 1 and have and used > have:
                warnings.append(
                    f"{host}: {count} processes use {used} GPUs, this machine has {have}; "
                    "run a deployment of that size with --executor slurm"
                )
        return warnings


def _on_nodes(launches: list[RoleLaunch], node_of: Mapping[str, str]) -> list[RoleLaunch]:
    """Each process with the node its step runs on."""
    return [replace(la, node=node_of.get(la.context.host, la.context.host)) for la in launches]


def plan_deployment(
    cfg: RunConfig,
    pm: InferxPluginManager,
    platform: Platform,
    *,
    hosts: list[str] | None = None,
    output_dir: Path | None = None,
    launcher: Launcher | RoleLauncher | None = None,
    node_of: Mapping[str, str] | None = None,
) -> DeploymentPlan:
    """Every process of ``cfg.deployment`` on ``hosts`` (default: all on this machine).

    ``launcher`` starts each process (default: the config's ``launcher``); ``node_of``
    maps a host to the SLURM node whose step runs there (``RoleLaunch.node``; the SLURM
    executor's, :mod:`inferx_core.executors.slurm_steps`).
    """
    if cfg.deployment is None:
        raise ValueError("plan_deployment needs a configuration with a deployment")
    hosts = hosts or one_machine(cfg.deployment)
    launches = role_launches(pm, cfg, cfg.deployment, platform, hosts)
    if launcher is None:  # picked once the processes are planned: it starts each of them
        launcher = launcher_named(pm, cfg.launcher)[1].factory()
    if node_of is not None:
        launches = _on_nodes(launches, node_of)
    run_dir = Path(output_dir or cfg.output_dir) / "servers" / server_id(cfg)
    return DeploymentPlan(cfg, cfg.deployment, launches, launcher, run_dir, platform)
