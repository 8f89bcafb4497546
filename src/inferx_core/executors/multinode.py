"""Multi-node serving as data: roles, placement, role-aware LaunchSpecs, GPU accounting.

A *deployment* describes a server made of several engine processes on
several nodes (docs/multinode.md):

- ``disaggregated``: prefill servers and decode servers (each ``replicas``
  times, each spanning ``nodes`` nodes) behind a router, the OpenAI endpoint
  the benchmark client talks to;
- ``wide_ep``: one server (role ``both``) spanning many nodes with wide
  expert parallelism, optionally several replicas behind a router.

This module decides who runs where (:func:`place`), asks the engine's plugin
for each process's command through ``inferx_engine_role_spec`` with a
:class:`RoleContext` (role, replica, node rank, head address, peers), applies
the fix catalogue like a single-server launch, tags every spec with its role
(``labels``), and counts the GPUs per role for the per-GPU throughputs
(:func:`gpu_accounting`, whose :meth:`GpuAccounting.summarize_kwargs` is what
``metrics.summarize`` takes: ``num_prefill_gpus``/``num_decode_gpus`` or
``num_gpus``).

What runs it: :mod:`inferx_core.executors.deployment_run` (every process,
readiness, the stop) on this machine, or as ``srun`` steps of a SLURM job on
its nodes (:mod:`inferx_core.executors.slurm_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inferx_core.config.deployment import (
    DEFAULT_DIST_PORT,
    ENGINE_ROLES,
    Deployment,
    RoleGroup,
)
from inferx_core.config.models import Parallelism, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.roles import RoleContext

if TYPE_CHECKING:
    from inferx_core.sdk.fixes import AppliedFix, FixDecision
    from inferx_core.sdk.launch_spec import LaunchSpec
    from inferx_core.sdk.manager import InferxPluginManager
    from inferx_core.sdk.platform import Platform

__all__ = [
    "DEFAULT_DIST_PORT",
    "ENGINE_ROLES",
    "Deployment",
    "GpuAccounting",
    "Placement",
    "RoleGroup",
    "RoleLaunch",
    "endpoint",
    "gpu_accounting",
    "nodes_needed",
    "place",
    "role_launches",
    "role_server",
]

#: Default port offsets from the deployment's port: the router listens on it.
PORT_OFFSETS: dict[str, int] = {"router": 0, "both": 1, "prefill": 1, "decode": 2}
DEFAULT_PORT = 8000


def _parallelism(group: RoleGroup, base: ServerConfig) -> Parallelism:
    return group.parallelism or base.parallelism


def gpus_per_replica(group: RoleGroup, base: ServerConfig) -> int:
    return 0 if group.role == "router" else _parallelism(group, base).gpus


def gpus_per_node(group: RoleGroup, base: ServerConfig) -> int:
    total = gpus_per_replica(group, base)
    if total % group.nodes:
        raise UserFacingError(
            f"role {group.role}: {total} GPUs per replica do not split evenly over "
            f"{group.nodes} nodes"
        )
    return total // group.nodes


@dataclass(frozen=True)
class GpuAccounting:
    """GPUs of a deployment by role; what per-GPU throughput divides by."""

    kind: str
    num_gpus: int
    num_prefill_gpus: int | None = None
    num_decode_gpus: int | None = None

    def summarize_kwargs(self) -> dict[str, int]:
        """Keyword arguments for :func:`inferx_core.metrics.summarize.summarize`.

        Disaggregated: output throughput per decode GPU, input per prefill
        GPU, total per (prefill + decode) GPU (InferenceX); the router counts
        none. Wide EP: every GPU of every replica.
        """
        if self.num_prefill_gpus is not None and self.num_decode_gpus is not None:
            return {
                "num_prefill_gpus": self.num_prefill_gpus,
                "num_decode_gpus": self.num_decode_gpus,
            }
        return {"num_gpus": self.num_gpus}


def gpu_accounting(deployment: Deployment, base: ServerConfig) -> GpuAccounting:
    def total(role: str) -> int:
        if not deployment.has(role):
            return 0
        group = deployment.group(role)
        gpus_per_node(group, base)  # validates the split
        return group.replicas * gpus_per_replica(group, base)

    if deployment.kind == "disaggregated":
        prefill, decode = total("prefill"), total("decode")
        return GpuAccounting(deployment.kind, prefill + decode, prefill, decode)
    return GpuAccounting(deployment.kind, total("both"))


@dataclass(frozen=True)
class Placement:
    group: RoleGroup
    replica: int
    node_rank: int
    host: str
    head_host: str
    port: int
    gpu_ids: tuple[int, ...] = ()
    metrics_port: int | None = None  # the router's metrics listener, booked like any port


def _port(deployment: Deployment, base: ServerConfig, group: RoleGroup) -> int:
    if group.port:
        return group.port
    return (deployment.port or base.port or DEFAULT_PORT) + PORT_OFFSETS[group.role]


def nodes_needed(deployment: Deployment) -> int:
    """Nodes the engine processes need (the router shares the first one)."""
    return sum(g.replicas * g.nodes for g in deployment.roles if g.role != "router")


def one_machine(deployment: Deployment, host: str = "127.0.0.1") -> list[str]:
    """Hosts for the local executor: every process on this machine."""
    return [host] * nodes_needed(deployment)


class _HostBook:
    """Ports and GPUs already given on each host: processes sharing a machine never share them."""

    def __init__(self, base: ServerConfig) -> None:
        self.base = base
        self.ports: set[tuple[str, int]] = set()
        self.next_gpu: dict[str, int] = {}

    def port(self, host: str, wanted: int) -> int:
        port = wanted
        while (host, port) in self.ports:
            port += 1
        self.ports.add((host, port))
        return port

    def gpus(self, host: str, count: int) -> tuple[int, ...]:
        first = self.next_gpu.get(host, 0)
        self.next_gpu[host] = first + count
        indices = range(first, first + count)
        pool = self.base.gpu_ids
        if pool is None:
            return tuple(indices)
        if first + count > len(pool):
            raise UserFacingError(
                f"gpu_ids {pool}: {first + count} GPUs are needed on {host}; list more gpu_ids"
            )
        return tuple(pool[i] for i in indices)


def place(deployment: Deployment, base: ServerConfig, hosts: list[str]) -> list[Placement]:
    """Give every process a node, a port and GPUs: replicas in role order; router on the first.

    Processes that share a host (the local executor puts all on one machine)
    get distinct ports (the next free one up) and distinct GPUs.
    """
    need = nodes_needed(deployment)
    if len(hosts) < need:
        raise UserFacingError(
            f"the {deployment.kind} deployment needs {need} node(s), the allocation has "
            f"{len(hosts)}: {', '.join(hosts) or 'none'}"
        )
    book = _HostBook(base)
    placements: list[Placement] = []
    cursor = 0
    for group in deployment.engine_groups():
        wanted = _port(deployment, base, group)
        per_node = gpus_per_node(group, base)
        for replica in range(group.replicas):
            replica_hosts = hosts[cursor : cursor + group.nodes]
            cursor += group.nodes
            port = book.port(replica_hosts[0], wanted)
            for rank, host in enumerate(replica_hosts):
                node_port = port if rank == 0 else book.port(host, port)
                gpus = book.gpus(host, per_node)
                placements.append(
                    Placement(group, replica, rank, host, replica_hosts[0], node_port, gpus)
                )
    if deployment.has("router"):
        group = deployment.group("router")
        port = book.port(hosts[0], _port(deployment, base, group))
        # The router's Prometheus exporter gets a port of its own: left to its default
        # (sglang-router: 0.0.0.0:29000) a second router on the node fails to start.
        metrics = book.port(hosts[0], port + 1)
        placements.append(Placement(group, 0, 0, hosts[0], hosts[0], port, (), metrics))
    return placements


def role_server(base: ServerConfig, group: RoleGroup, port: int) -> ServerConfig:
    """The base server configuration as this role's servers run it."""
    update: dict[str, Any] = {
        "port": port,
        "engine_args": {**base.engine_args, **group.engine_args},
        "engine_env": {**base.engine_env, **group.engine_env},
        "extra_argv": [*base.extra_argv, *group.extra_argv],
    }
    if group.parallelism is not None:
        update["parallelism"] = group.parallelism
    if group.role == "router":
        update["gpu_ids"] = []
    return base.model_copy(update=update)


@dataclass(frozen=True)
class RoleLaunch:
    """One process of a deployment: where, as what, and the exact spec (fixes applied)."""

    context: RoleContext
    server: ServerConfig
    plugin: str
    spec: LaunchSpec
    applied_fixes: list[AppliedFix]
    decisions: list[FixDecision]

    @property
    def base_url(self) -> str:
        return f"http://{self.context.host}:{self.server.port}"


def _peer_urls(placements: list[Placement]) -> dict[str, tuple[str, ...]]:
    """Per role, the URL of each replica's first node (the router is nobody's peer)."""
    peers: dict[str, list[str]] = {}
    for p in placements:
        if p.group.role != "router" and p.node_rank == 0:
            peers.setdefault(p.group.role, []).append(f"http://{p.host}:{p.port}")
    return {role: tuple(urls) for role, urls in peers.items()}


def _role_context(
    p: Placement, deployment: Deployment, base: ServerConfig, peers: dict[str, tuple[str, ...]]
) -> RoleContext:
    return RoleContext(
        kind=deployment.kind,
        role=p.group.role,
        replica=p.replica,
        replicas=p.group.replicas,
        node_rank=p.node_rank,
        nodes=p.group.nodes,
        host=p.host,
        head_host=p.head_host,
        dist_port=deployment.dist_port,
        gpus_per_node=gpus_per_node(p.group, base),
        peers=dict(peers),  # each context gets its own mapping
        metrics_port=p.metrics_port,
    )


def _with_role_labels(spec: LaunchSpec, ctx: RoleContext) -> LaunchSpec:
    labels = {
        **spec.labels,
        "role": ctx.role,
        "replica": str(ctx.replica),
        "node_rank": str(ctx.node_rank),
    }
    return spec.model_copy(update={"labels": labels})


def role_launches(
    pm: InferxPluginManager,
    base: ServerConfig,
    deployment: Deployment,
    platform: Platform,
    hosts: list[str],
) -> list[RoleLaunch]:
    """Every process of the deployment with its role-aware LaunchSpec, router last."""
    from inferx_core.sdk.fixes import FixContext, apply_fixes
    from inferx_core.sdk.registries import engine_registry, fix_catalogue

    entry = engine_registry(pm).get(base.engine)
    placements = place(deployment, base, hosts)
    peers = _peer_urls(placements)
    fixes = [fix for _, fix in fix_catalogue(pm)]
    spread = len({p.host for p in placements}) > 1
    launches = []
    for p in placements:
        server = role_server(base, p.group, p.port)
        if p.group.role != "router":
            server = server.model_copy(update={"gpu_ids": list(p.gpu_ids)})
        if spread:
            server = server.model_copy(update={"host": "0.0.0.0"})  # reachable from other nodes
        ctx = _role_context(p, deployment, base, peers)
        plugin, spec = pm.call_first(
            "inferx_engine_role_spec", server=server, platform=platform, role=ctx
        )
        if spec is None:
            raise UserFacingError(
                f"engine {base.engine!r} (plugin {entry.plugin!r}) gives no launch for role "
                f"{ctx.role!r} of a {deployment.kind} deployment: its plugin does not implement "
                "inferx_engine_role_spec for it"
            )
        fixed, applied, decisions = apply_fixes(
            _with_role_labels(spec, ctx),
            fixes,
            FixContext(server=server, platform=platform),
            disabled=base.disable_fixes,
        )
        launches.append(RoleLaunch(ctx, server, plugin or entry.plugin, fixed, applied, decisions))
    return launches


def endpoint(launches: list[RoleLaunch]) -> str:
    """The URL the benchmark client uses: the router's, else the single server's head."""
    for launch in launches:
        if launch.context.role == "router":
            return launch.base_url
    heads = [la for la in launches if la.context.node_rank == 0]
    if len(heads) != 1:
        raise UserFacingError("several servers and no router: give the deployment a router role")
    return heads[0].base_url
