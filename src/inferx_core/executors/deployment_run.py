"""``inferx run`` of a deployment: every process started, all ready, the load on the endpoint.

The runner's single-server session (:mod:`inferx_core.pipeline.server.run`) does the
rest unchanged (points, watchdog, results, every exit path stopping the
server), because a deployment is handed to it as one server:

- its spec is the endpoint's (the router, else the single head server), whose
  readiness the session waits for last;
- its launcher (:class:`DeploymentLauncher`) starts every engine process,
  waits until each head is ready (engines before the router; a process that
  dies ends the wait naming its role), then starts the router;
- its handle (:class:`DeploymentHandle`) is alive only while every process
  is, says which one died (``exited_process``: the session's failure reasons
  name it) and its log, and stops them all, router first; telemetry scrapes its
  engine processes (``engine_urls``) and its router's exporter
  (``router_metrics_url``), never engine metrics from the router.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferx_core.config.models import RunConfig
from inferx_core.executors.deployment_plan import DeploymentPlan, plan_deployment
from inferx_core.executors.multinode import RoleLaunch
from inferx_core.launch.readiness import DEFAULT_PROBES, EngineExited, wait_until_ready
from inferx_core.launch.resolve import ResolvedLaunch
from inferx_core.pipeline.server.launch_plan import LaunchPlan, plan_launch
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.launcher import Launcher, ServerHandle
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.platform import Platform

__all__ = [
    "DeploymentHandle",
    "DeploymentLauncher",
    "deployment_launch_plan",
    "slurm_deployment_launch_plan",
]


class DeploymentHandle:
    """Every process of a deployment as one server handle."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.processes: list[tuple[RoleLaunch, ServerHandle]] = []

    def dead(self) -> tuple[RoleLaunch, ServerHandle] | None:
        return next(((la, h) for la, h in self.processes if not h.alive()), None)

    def alive(self) -> bool:
        return bool(self.processes) and self.dead() is None

    def returncode(self) -> int | None:
        gone = self.dead()
        return gone[1].returncode() if gone else None

    def exited_process(self) -> str | None:
        """The process that died, as failure reasons name it: ``role decode (decode-1 on
        node0)``; None while every process runs."""
        gone = self.dead()
        if gone is None:
            return None
        la = gone[0]
        return f"role {la.context.role} ({la.process} on {la.where})"

    def log_tail(self, lines: int = 40) -> str:
        gone = self.dead()
        if gone is None:
            return "\n".join(f"== {la.process}\n{h.log_tail(lines)}" for la, h in self.processes)
        handle = gone[1]
        return (
            f"{self.exited_process()} exited with "
            f"code {handle.returncode()}:\n{handle.log_tail(lines)}"
        )

    def engine_urls(self) -> list[str]:
        """Every engine head process's base URL (what serves engine ``/metrics``), never the
        router's; headless processes (a replica's other nodes) serve no HTTP."""
        return [
            _url(la) for la, _ in self.processes if la.context.role != "router" and not la.headless
        ]

    def router_metrics_url(self) -> str | None:
        """The router's Prometheus exporter (its booked ``metrics_port``), None without one."""
        for la, _ in self.processes:
            if la.context.role == "router" and la.context.metrics_port is not None:
                return f"http://{_local(la.context.host)}:{la.context.metrics_port}/metrics"
        return None

    def stop(self, grace_s: float = 30.0) -> None:
        """Stop every process, router first (it talks to the others), each whatever the rest do."""
        errors = []
        for _launch, handle in reversed(self.processes):
            try:
                handle.stop(grace_s)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]


class DeploymentLauncher:
    """Starts a planned deployment; ``spec`` is the endpoint's (see the module doc)."""

    def __init__(self, plan: DeploymentPlan, pm: InferxPluginManager) -> None:
        self.plan = plan
        self.pm = pm

    def describe(self, spec: LaunchSpec, run_dir: Path) -> dict[str, Any]:
        return {"launcher": "deployment", "argv": list(spec.argv), **self.plan.view()}

    def start(self, spec: LaunchSpec, run_dir: Path) -> DeploymentHandle:
        handle = DeploymentHandle(self.plan.endpoint)
        try:
            routers = [la for la in self.plan.launches if la.context.role == "router"]
            engines = [la for la in self.plan.launches if la.context.role != "router"]
            for launch in engines:
                self._start_one(handle, launch)
            for launch in engines:
                if not launch.headless:
                    self._wait_ready(handle, launch)
            for launch in routers:  # its readiness is the session's (the endpoint's)
                self._start_one(handle, launch)
        except BaseException:
            handle.stop(0.0)
            raise
        return handle

    def _start_one(self, handle: DeploymentHandle, launch: RoleLaunch) -> None:
        handle.processes.append((launch, self.plan.start_process(launch)))

    def _wait_ready(self, handle: DeploymentHandle, launch: RoleLaunch) -> None:
        """One engine head ready; any process of the deployment dying ends the wait."""
        server = launch.server
        _, probes = self.pm.call_first("inferx_engine_readiness", server=server, spec=launch.spec)
        try:
            wait_until_ready(
                _Watch(handle, launch),
                probes or DEFAULT_PROBES,
                served_model_name=server.name_served,
                model=server.model,
                timeout_s=server.readiness_timeout_s,
                headers=server.auth_headers(),
            )
        except EngineExited as exc:
            raise ValueError(f"deployment not ready: {exc.log_tail.splitlines()[0]}") from None


class _Watch:
    """One process's URL, alive only while every process of the deployment is."""

    def __init__(self, handle: DeploymentHandle, launch: RoleLaunch) -> None:
        self.handle = handle
        self.base_url = _url(launch)

    def alive(self) -> bool:
        return self.handle.alive()

    def returncode(self) -> int | None:
        return self.handle.returncode()

    def log_tail(self, lines: int = 40) -> str:
        return self.handle.log_tail(lines)


def _local(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "localhost") else host


def _url(launch: RoleLaunch) -> str:
    return f"http://{_local(launch.context.host)}:{launch.server.port}"


def deployment_launch_plan(
    cfg: RunConfig,
    pm: InferxPluginManager,
    platform: Platform,
    *,
    port: int | None = None,
    output_dir: Path,
    hosts: list[str] | None = None,
) -> LaunchPlan:
    """The deployment as one server for the runner's session (see the module doc);
    a configuration without a deployment is planned as one server. ``port`` is a
    single server's: a deployment's ports are its own (``deployment.port``)."""
    if cfg.deployment is None:
        assert port is not None
        return plan_launch(cfg, pm, platform, port=port, output_dir=output_dir)
    plan = plan_deployment(cfg, pm, platform, hosts=hosts, output_dir=output_dir)
    return _as_one_server(plan, pm, platform)


def slurm_deployment_launch_plan(
    cfg: RunConfig,
    pm: InferxPluginManager,
    platform: Platform,
    *,
    port: int | None = None,
    output_dir: Path,
    nodes: list[str] | None = None,
) -> LaunchPlan:
    """The planner of a SLURM job's runner for a deployment: its processes are steps of the
    job on its nodes (``nodes``, default the job's allocation; see
    :mod:`inferx_core.executors.slurm_steps`). The job picks it only for a deployment (a
    single server is :func:`~inferx_core.pipeline.server.launch_plan.plan_launch`'s); ``port``
    is a single server's, unused: a deployment's ports are its own (``deployment.port``)."""
    if cfg.deployment is None:
        raise ValueError("slurm_deployment_launch_plan plans a deployment; this has none")
    from inferx_core.executors.multinode import nodes_needed
    from inferx_core.executors.slurm_steps import (
        StepLauncher,
        allocation_nodes,
        deployment_hosts,
    )

    need = nodes_needed(cfg.deployment)
    hosts, node_of = deployment_hosts(cfg.deployment, nodes or allocation_nodes(), need)
    plan = plan_deployment(
        cfg,
        pm,
        platform,
        hosts=hosts,
        output_dir=output_dir,
        launcher=StepLauncher(),
        node_of=node_of,
    )
    return _as_one_server(plan, pm, platform)


def _as_one_server(plan: DeploymentPlan, pm: InferxPluginManager, platform: Platform) -> LaunchPlan:
    endpoint = next(
        (la for la in plan.launches if la.context.role == "router"),
        next(la for la in plan.launches if la.context.node_rank == 0),
    )
    here = {la.context.host for la in plan.launches if la.context.host == endpoint.context.host}
    gpus = sorted({g for la in plan.launches if la.context.host in here for g in la.spec.gpu_ids})
    spec = endpoint.spec.model_copy(
        update={"gpu_ids": tuple(gpus) if platform.gpu_count else (), "cpus": ()}
    )
    resolved = ResolvedLaunch(
        endpoint.plugin, spec, spec, endpoint.applied_fixes, endpoint.decisions
    )
    server = endpoint.server.model_copy(update={"host": _local(endpoint.context.host)})
    launcher: Launcher = DeploymentLauncher(plan, pm)
    split = plan.gpus()["summarize"]
    return LaunchPlan(plan.cfg, server, resolved, launcher, plan.run_dir, gpu_split=split)
