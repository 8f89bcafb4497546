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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from inferx_core.config.deployment import (
    DEFAULT_DIST_PORT,
    ENGINE_ROLES,
    Deployment,
    RoleGroup,
)
from inferx_core.config.models import Parallelism, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.executors.port_book import HostBook
from inferx_core.sdk.roles import RoleContext

if TYPE_CHECKING:
    from inferx_core.sdk.fixes import AppliedFix, FixDecision
    from inferx_core.sdk.launch_spec import LaunchSpec
    from inferx_core.sdk.launcher import ServerHandle
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
    "RoleLauncher",
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
    total: dict[str, int] = {}  # GPUs per role (a role is named once; the router has none)
    for group in deployment.roles:
        gpus_per_node(group, base)  # validates the split
        total[group.role] = group.replicas * gpus_per_replica(group, base)
    if deployment.kind == "disaggregated":
        prefill, decode = total.get("prefill", 0), total.get("decode", 0)
        return GpuAccounting(deployment.kind, prefill + decode, prefill, decode)
    return GpuAccounting(deployment.kind, total.get("both", 0))


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
    dist_port: int = DEFAULT_DIST_PORT  # the replica's rendezvous port, booked on head_host

    @property
    def name(self) -> str:
        """``decode-1``, ``both-0-rank2``, ``router``: the process, in errors."""
        if self.group.role == "router":
            return "router"
        return f"{self.group.role}-{self.replica}" + (
            f"-rank{self.node_rank}" if self.group.nodes > 1 else ""
        )


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


def place(
    deployment: Deployment, base: ServerConfig, hosts: list[str], book: HostBook | None = None
) -> list[Placement]:
    """Give every process a node, a port and GPUs: replicas in role order; router on the first.

    Processes that share a host (the local executor puts all on one machine)
    get distinct ports (the next free one up, :class:`HostBook`) and distinct
    GPUs; each replica's rendezvous port is booked on its head node too.
    """
    need = nodes_needed(deployment)
    if len(hosts) < need:
        raise UserFacingError(
            f"the {deployment.kind} deployment needs {need} node(s), the allocation has "
            f"{len(hosts)}: {', '.join(hosts[:8]) or 'none'}{' ...' if len(hosts) > 8 else ''}"
        )
    book = book or HostBook(base)
    # the deployment's groups read once, before any port or GPU is booked: the engines in
    # placement order (prefill, decode, both), then the router (a role is named once)
    by_role = {g.role: g for g in deployment.roles}
    engines = [by_role[role] for role in ENGINE_ROLES if role in by_role]
    router = by_role.get("router")
    placements: list[Placement] = []
    cursor = 0
    for group in engines:
        wanted = _port(deployment, base, group)
        per_node = gpus_per_node(group, base)
        for replica in range(group.replicas):
            replica_hosts = hosts[cursor : cursor + group.nodes]
            cursor += group.nodes
            head = replica_hosts[0]
            where = f"process {group.role}-{replica}"
            port = book.port(head, wanted, f"{where} (its --port)")
            dist = book.port(head, deployment.dist_port, f"{where} (deployment.dist_port)")
            for rank, host in enumerate(replica_hosts):
                node_port = port if rank == 0 else book.port(host, port, f"{where} rank {rank}")
                gpus = book.gpus(host, per_node)
                placements.append(
                    Placement(group, replica, rank, host, head, node_port, gpus, None, dist)
                )
    if router is not None:
        port = book.port(hosts[0], _port(deployment, base, router), "the router (its --port)")
        # The router's Prometheus exporter gets a port of its own: left to its default
        # (sglang-router: 0.0.0.0:29000) a second router on the node fails to start.
        metrics = book.port(hosts[0], port + 1, "the router's metrics exporter")
        placements.append(Placement(router, 0, 0, hosts[0], hosts[0], port, (), metrics))
    return placements


def role_server(base: ServerConfig, group: RoleGroup, port: int) -> ServerConfig:
    """The base server configuration as this role's servers run it: its server fields (of a
    run configuration, none of the run's own) with the role's over them."""
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
    fields = {name: value for name, value in base if name in ServerConfig.model_fields}
    return ServerConfig(**{**fields, **update})


@dataclass(frozen=True)
class RoleLaunch:
    """One process of a deployment: where, as what, and the exact spec (fixes applied).

    Its place travels typed down to whatever starts it: ``process`` names it (logs,
    folders, a SLURM step's job name, errors), ``node`` is the SLURM node its step runs
    on (None on this machine), ``headless`` says it serves no HTTP (from its spec).
    """

    context: RoleContext
    server: ServerConfig
    plugin: str
    spec: LaunchSpec
    applied_fixes: list[AppliedFix]
    decisions: list[FixDecision]
    process: str
    node: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.context.host}:{self.server.port}"

    @property
    def headless(self) -> bool:
        return self.spec.headless

    @property
    def where(self) -> str:
        """The node it runs on, as errors name it: its SLURM node, else its host."""
        return self.node or self.context.host


@runtime_checkable
class RoleLauncher(Protocol):
    """A launcher that starts a deployment's process knowing its place (a SLURM step pinned
    to its node); a plain :class:`~inferx_core.sdk.launcher.Launcher` is given the spec."""

    def describe_role(self, launch: RoleLaunch, run_dir: Path) -> dict[str, Any]: ...

    def start_role(self, launch: RoleLaunch, run_dir: Path) -> ServerHandle: ...


Ports = dict[str, int]


def _peers(
    placements: list[Placement], ports: list[Ports]
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[Ports, ...]]]:
    """Per role, the URL and the booked ports of each replica's first node (the router is
    nobody's peer)."""
    urls: dict[str, list[str]] = {}
    booked: dict[str, list[Ports]] = {}
    for p, own in zip(placements, ports, strict=True):
        if p.group.role != "router" and p.node_rank == 0:
            urls.setdefault(p.group.role, []).append(f"http://{p.host}:{p.port}")
            booked.setdefault(p.group.role, []).append(own)
    return (
        {role: tuple(u) for role, u in urls.items()},
        {role: tuple(b) for role, b in booked.items()},
    )


def _role_context(
    p: Placement, deployment: Deployment, base: ServerConfig, **more: Any
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
        dist_port=p.dist_port,
        gpus_per_node=gpus_per_node(p.group, base),
        metrics_port=p.metrics_port,
        **more,
    )


def _plugin_ports(
    book: HostBook, p: Placement, server: ServerConfig, ctx: RoleContext, asked: Any
) -> Ports:
    """Each port the engine's ``EngineInfo.role_ports`` names for this process, booked on
    its host like ``--port``."""
    if asked is None or p.group.role == "router":
        return {}
    ports: Ports = {}
    for name, wanted in dict(asked(server, ctx)).items():
        first, span = wanted if isinstance(wanted, tuple) else (wanted, 1)
        ports[name] = book.port(p.host, int(first), f"process {p.name} ({name} port)", int(span))
    return ports


def _with_role_labels(spec: LaunchSpec, ctx: RoleContext) -> LaunchSpec:
    labels = {
        **spec.labels,
        "role": ctx.role,
        "replica": str(ctx.replica),
        "node_rank": str(ctx.node_rank),
    }
    return spec.model_copy(update={"labels": labels})


def _servers(base: ServerConfig, placements: list[Placement]) -> list[ServerConfig]:
    spread = len({p.host for p in placements}) > 1
    servers = []
    for p in placements:
        server = role_server(base, p.group, p.port)
        update: dict[str, Any] = {}
        if p.group.role != "router":
            update["gpu_ids"] = list(p.gpu_ids)
        if spread:
            update["host"] = "0.0.0.0"  # reachable from other nodes
        servers.append(server.model_copy(update=update) if update else server)
    return servers


def role_contexts(
    base: ServerConfig,
    deployment: Deployment,
    hosts: list[str],
    role_ports: Any = None,
) -> list[tuple[Placement, ServerConfig, RoleContext]]:
    """Every process placed, with its server and its context: every port it listens on
    (``--port``, the rendezvous port, the plugin's ``role_ports``) booked on its host."""
    book = HostBook(base)
    placements = place(deployment, base, hosts, book)
    servers = _servers(base, placements)
    ports = [
        _plugin_ports(book, p, server, _role_context(p, deployment, base), role_ports)
        for p, server in zip(placements, servers, strict=True)
    ]
    peers, peer_ports = _peers(placements, ports)
    heads: dict[tuple[str, int], Ports] = {}
    out = []
    for p, server, own in zip(placements, servers, ports, strict=True):
        if p.node_rank == 0:
            heads[(p.group.role, p.replica)] = own
        else:  # a name only the head booked is the head's (SGLang's bootstrap port)
            own = {**heads.get((p.group.role, p.replica), {}), **own}
        ctx = _role_context(p, deployment, base, ports=own)
        # peers are set without validation (built above, of the right types): N processes
        # each validating N peer URLs made a plan quadratic; each gets its own mapping
        shared = {"peers": dict(peers), "peer_ports": dict(peer_ports)}
        out.append((p, server, ctx.model_copy(update=shared)))
    return out


def role_launches(
    pm: InferxPluginManager,
    base: ServerConfig,
    deployment: Deployment,
    platform: Platform,
    hosts: list[str],
) -> list[RoleLaunch]:
    """Every process of the deployment with its role-aware LaunchSpec, router last: each
    through the hook-and-fixes step of a single server's launch
    (:func:`~inferx_core.launch.resolve.hooked_launch`), its hook the role's."""
    from inferx_core.launch.resolve import hooked_launch
    from inferx_core.sdk.registries import engine_registry

    entry = engine_registry(pm).get(base.engine)
    launches = []
    for p, server, ctx in role_contexts(base, deployment, hosts, entry.info.role_ports):
        resolved = hooked_launch(
            pm,
            "inferx_engine_role_spec",
            server,
            platform,
            adjust=partial(_with_role_labels, ctx=ctx),
            role=ctx,
        )
        launches.append(
            RoleLaunch(
                ctx,
                server,
                resolved.plugin,
                resolved.spec,
                resolved.applied_fixes,
                resolved.decisions,
                process=p.name,
            )
        )
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
