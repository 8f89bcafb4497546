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

Starting the processes on the nodes of a SLURM allocation (one ``srun`` step
per node), waiting for all of them and the router, then benchmarking the
router, is the runner's next step; the data here is what it will run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from inferx_core.config.base import StrictModel
from inferx_core.config.models import ArgValue, Parallelism, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.roles import Role, RoleContext

if TYPE_CHECKING:
    from inferx_core.sdk.fixes import AppliedFix, FixDecision
    from inferx_core.sdk.launch_spec import LaunchSpec
    from inferx_core.sdk.manager import InferxPluginManager
    from inferx_core.sdk.platform import Platform

ENGINE_ROLES: tuple[Role, ...] = ("prefill", "decode", "both")
#: Default port offsets from the deployment's port: the router listens on it.
PORT_OFFSETS: dict[str, int] = {"router": 0, "both": 1, "prefill": 1, "decode": 2}
DEFAULT_PORT = 8000
DEFAULT_DIST_PORT = 29500


class RoleGroup(StrictModel):
    """The servers of one role: ``replicas`` identical servers, each on ``nodes`` nodes.

    Unset fields inherit the base server configuration; ``engine_args`` and
    ``engine_env`` are merged over the base's, ``extra_argv`` is appended.
    """

    role: Role
    replicas: int = Field(default=1, ge=1)
    nodes: int = Field(default=1, ge=1, description="Nodes per replica")
    parallelism: Parallelism | None = Field(
        default=None, description="Per replica; GPUs = tp x pp x dp, spread over its nodes"
    )
    engine_args: dict[str, ArgValue] = Field(default_factory=dict)
    engine_env: dict[str, str] = Field(default_factory=dict)
    extra_argv: list[str] = Field(default_factory=list)
    port: int | None = Field(default=None, ge=1, le=65535)


class Deployment(StrictModel):
    """Several engine processes serving as one endpoint (see the module doc)."""

    kind: Literal["disaggregated", "wide_ep"]
    roles: list[RoleGroup] = Field(min_length=1)
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Router port; engines use port+1, port+2"
    )
    dist_port: int = Field(
        default=DEFAULT_DIST_PORT, ge=1, le=65535, description="Rendezvous port of a replica"
    )

    @model_validator(mode="after")
    def _roles_fit_kind(self) -> Deployment:
        names = [g.role for g in self.roles]
        if len(set(names)) != len(names):
            raise ValueError(f"each role once, got {names}")
        if self.kind == "disaggregated":
            if "prefill" not in names or "decode" not in names:
                raise ValueError("a disaggregated deployment needs a prefill and a decode role")
            if "both" in names:
                raise ValueError("role 'both' is for wide_ep; disaggregated has prefill/decode")
            if "router" not in names:
                raise ValueError("a disaggregated deployment needs a router role (the endpoint)")
        else:
            if names.count("both") != 1 or set(names) - {"both", "router"}:
                raise ValueError("a wide_ep deployment has one 'both' role (and maybe a router)")
            both = self.group("both")
            if both.replicas > 1 and "router" not in names:
                raise ValueError("several wide_ep replicas need a router in front")
        router = self.roles[names.index("router")] if "router" in names else None
        if router and (router.replicas != 1 or router.nodes != 1 or router.parallelism):
            raise ValueError("the router is one process on one node and uses no GPU")
        return self

    def group(self, role: str) -> RoleGroup:
        for g in self.roles:
            if g.role == role:
                return g
        raise KeyError(role)

    def has(self, role: str) -> bool:
        return any(g.role == role for g in self.roles)


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


def _port(deployment: Deployment, base: ServerConfig, group: RoleGroup) -> int:
    if group.port:
        return group.port
    return (deployment.port or base.port or DEFAULT_PORT) + PORT_OFFSETS[group.role]


def nodes_needed(deployment: Deployment) -> int:
    """Nodes the engine processes need (the router shares the first one)."""
    return sum(g.replicas * g.nodes for g in deployment.roles if g.role != "router")


def place(deployment: Deployment, base: ServerConfig, hosts: list[str]) -> list[Placement]:
    """Give every process a node: replicas in role order, one node each; router on the first."""
    need = nodes_needed(deployment)
    if len(hosts) < need:
        raise UserFacingError(
            f"the {deployment.kind} deployment needs {need} node(s), the allocation has "
            f"{len(hosts)}: {', '.join(hosts) or 'none'}"
        )
    placements: list[Placement] = []
    cursor = 0
    for role in ENGINE_ROLES:
        if not deployment.has(role):
            continue
        group = deployment.group(role)
        port = _port(deployment, base, group)
        for replica in range(group.replicas):
            replica_hosts = hosts[cursor : cursor + group.nodes]
            cursor += group.nodes
            for rank, host in enumerate(replica_hosts):
                placements.append(Placement(group, replica, rank, host, replica_hosts[0], port))
    if deployment.has("router"):
        group = deployment.group("router")
        port = _port(deployment, base, group)
        placements.append(Placement(group, 0, 0, hosts[0], hosts[0], port))
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
