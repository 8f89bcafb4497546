"""``deployment:``: one endpoint served by several engine processes (docs/multinode.md).

The description a run or sweep configuration carries; who runs where and the
process commands are :mod:`inferx_core.executors.multinode`'s. Every error
names the role and the field (``role decode: parallelism.tp: ...``), since a
list index (``roles.1``) tells a user nothing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from inferx_core.config.base import StrictModel
from inferx_core.config.parallelism import ArgValue, Parallelism

__all__ = [
    "DEFAULT_DIST_PORT",
    "DEPLOYMENT_KINDS",
    "ENGINE_ROLES",
    "MAX_NODES",
    "MAX_PROCESSES",
    "MAX_REPLICAS",
    "ROLE_LETTERS",
    "Deployment",
    "DeploymentKind",
    "Role",
    "RoleGroup",
    "check_gpu_split",
    "deployment_shape",
]

#: The processes of a deployment (sdk.roles' RoleContext speaks the same names).
Role = Literal["prefill", "decode", "both", "router"]
DeploymentKind = Literal["disaggregated", "wide_ep"]
DEPLOYMENT_KINDS: tuple[DeploymentKind, ...] = ("disaggregated", "wide_ep")
ENGINE_ROLES: tuple[Role, ...] = ("prefill", "decode", "both")
DEFAULT_DIST_PORT = 29500
#: The most replicas of one role, nodes of one replica, and engine processes of a deployment.
#: The largest published deployments (InferenceX's GB200 NVL72 disaggregated runs, wide-EP
#: over 96 nodes) are far below; past them a plan is a typo, and it would book ports and
#: build argvs for every process before anything could say so (1e9 replicas: MemoryError).
MAX_REPLICAS = 1024
MAX_NODES = 1024
MAX_PROCESSES = 4096
#: Short role names in server ids: p2xtp8-d1xtp16.
ROLE_LETTERS = {"prefill": "p", "decode": "d", "both": "w"}


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

    @field_validator("replicas", "nodes")
    @classmethod
    def _bounded(cls, value: int, info: ValidationInfo) -> int:
        most = MAX_REPLICAS if info.field_name == "replicas" else MAX_NODES
        if value > most:
            raise ValueError(
                f"{value} is more than {most}, the most InferX plans; a deployment that size "
                "is a typo, or needs splitting into several deployments"
            )
        return value


def _role_name(item: object, index: int) -> str:
    role = item.get("role") if isinstance(item, dict) else getattr(item, "role", None)
    return str(role) if isinstance(role, str) else f"#{index + 1}"


def _check_role(item: object, index: int) -> RoleGroup:
    """One role, or a ValueError that names it and the field (not ``roles.1``)."""
    if isinstance(item, RoleGroup):
        return item
    try:
        return RoleGroup.model_validate(item)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'role'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        raise ValueError(f"role {_role_name(item, index)}: {problems}") from None


class Deployment(StrictModel):
    """Several engine processes serving as one endpoint (see the module doc)."""

    kind: DeploymentKind
    roles: list[RoleGroup] = Field(min_length=1)
    port: int | None = Field(
        default=None, ge=1, le=65535, description="Router port; engines use port+1, port+2"
    )
    dist_port: int = Field(
        default=DEFAULT_DIST_PORT, ge=1, le=65535, description="Rendezvous port of a replica"
    )

    @field_validator("roles", mode="before")
    @classmethod
    def _each_role_named(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [_check_role(item, i) for i, item in enumerate(value)]

    @model_validator(mode="after")
    def _roles_fit_kind(self) -> Deployment:
        processes = sum(g.replicas * g.nodes for g in self.roles if g.role != "router")
        if processes > MAX_PROCESSES:
            shape = ", ".join(f"{g.role} {g.replicas}x{g.nodes}" for g in self.engine_groups())
            raise ValueError(
                f"roles: {processes} engine processes (replicas x nodes: {shape}) is more than "
                f"{MAX_PROCESSES}, the most InferX plans; lower replicas or nodes"
            )
        names = [g.role for g in self.roles]
        if len(set(names)) != len(names):
            raise ValueError(f"roles: each role once, got {names}")
        if self.kind == "disaggregated":
            if "prefill" not in names or "decode" not in names:
                raise ValueError("a disaggregated deployment needs a prefill and a decode role")
            if "both" in names:
                raise ValueError("role both is for wide_ep; disaggregated has prefill/decode")
            if "router" not in names:
                raise ValueError("a disaggregated deployment needs a router role (the endpoint)")
        else:
            if names.count("both") != 1 or set(names) - {"both", "router"}:
                raise ValueError("a wide_ep deployment has one 'both' role (and maybe a router)")
            if self.group("both").replicas > 1 and "router" not in names:
                raise ValueError("role both: several wide_ep replicas need a router in front")
        router = self.roles[names.index("router")] if "router" in names else None
        if router and (router.replicas != 1 or router.nodes != 1 or router.parallelism):
            raise ValueError(
                "role router: replicas, nodes and parallelism are not for the router: it is one "
                "process on one node and uses no GPU"
            )
        return self

    def group(self, role: str) -> RoleGroup:
        for g in self.roles:
            if g.role == role:
                return g
        raise KeyError(role)

    def has(self, role: str) -> bool:
        return any(g.role == role for g in self.roles)

    def engine_groups(self) -> list[RoleGroup]:
        """The roles with engine processes, in placement order (prefill, decode, both)."""
        return [self.group(r) for r in ENGINE_ROLES if self.has(r)]


def check_gpu_split(deployment: Deployment, base: Parallelism) -> None:
    """Each replica's GPUs split evenly over its nodes (ValueError naming role and fields)."""
    for group in deployment.engine_groups():
        par = group.parallelism or base
        if par.gpus % group.nodes:
            where = "parallelism" if group.parallelism else "the base parallelism"
            raise ValueError(
                f"role {group.role}: nodes: {par.gpus} GPUs per replica ({where}: tp x pp x dp) "
                f"do not split evenly over {group.nodes} nodes"
            )


def deployment_shape(deployment: Deployment, base: Parallelism) -> str:
    """The deployment in a server id: ``p2xtp8-d1xtp16n2`` (replicas x parallelism, nodes)."""
    parts = []
    for group in deployment.engine_groups():
        par = group.parallelism or base
        text = f"{ROLE_LETTERS[group.role]}{group.replicas}xtp{par.tp}"
        text += f"pp{par.pp}" if par.pp > 1 else ""
        text += f"dp{par.dp}" if par.dp > 1 else ""
        text += f"ep{par.ep}" if par.ep else ""
        text += f"n{group.nodes}" if group.nodes > 1 else ""
        parts.append(text)
    return "-".join(parts)
