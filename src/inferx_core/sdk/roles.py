"""Roles of a multi-node deployment, as the ``inferx_engine_role_spec`` hook speaks of them.

A contract type: the hook specs name it, so it lives in the SDK; the
placement that fills it in is :mod:`inferx_core.executors.multinode`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from inferx_core.config.deployment import DeploymentKind, Role

__all__ = ["Role", "RoleContext"]


class RoleContext(BaseModel):
    """What an engine plugin needs to build one process of a multi-node deployment.

    Passed to ``inferx_engine_role_spec`` as ``role``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: DeploymentKind
    role: Role
    replica: int = Field(ge=0, description="Which replica of this role (0-based)")
    replicas: int = Field(ge=1)
    node_rank: int = Field(ge=0, description="This process's node within its replica")
    nodes: int = Field(ge=1, description="Nodes of this replica")
    host: str = Field(description="Node this process runs on")
    head_host: str = Field(description="Node rank 0 of this replica (rendezvous address)")
    dist_port: int = Field(description="Rendezvous port on head_host")
    gpus_per_node: int = Field(ge=0)
    metrics_port: int | None = Field(
        default=None,
        description="A port booked for this process's metrics listener on host (the router's "
        "Prometheus exporter); None for engine processes",
    )
    ports: dict[str, int] = Field(
        default_factory=dict,
        description="The ports the engine's EngineInfo.role_ports named for this process, each "
        "booked on host like --port (the first of its span); a node rank above 0 also gets "
        "those only its replica's head booked; empty for an engine naming none",
    )
    #: role -> base URLs of every replica's head server (the router proxies to these)
    peers: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    #: role -> the booked ``ports`` of each of those servers, in the order of ``peers``
    #: (SGLang's router names each prefill server's bootstrap port)
    peer_ports: dict[str, tuple[dict[str, int], ...]] = Field(default_factory=dict)
