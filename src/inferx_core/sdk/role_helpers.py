"""Pieces every engine plugin's multi-node roles share (hook ``inferx_engine_role_spec``).

A role's process starts from the engine's single-server launch spec; what is
the same for every engine is here: the GPUs a process takes on its own node,
refusing a flag the deployment sets when engine_args set it too, the peers a
router proxies to, the router's process (no GPUs), and choosing the builder of
a role. Each plugin keeps its own flags and options (see inferx_vllm.roles and
inferx_sglang.roles).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from inferx_core.config.models import ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.roles import RoleContext

__all__ = [
    "has_flag",
    "node_gpu_ids",
    "peer_urls",
    "refuse_deployment_flags",
    "role_builder",
    "router_spec",
    "router_tail",
]

Builder = TypeVar("Builder")


def node_gpu_ids(server: ServerConfig, role: RoleContext) -> tuple[int, ...]:
    """The GPUs one process uses on its own node: the first ``gpus_per_node`` of the
    configured ``gpu_ids``, else GPUs ``0 .. gpus_per_node-1`` (the platform InferX
    detected describes the node it runs on, not the others)."""
    if server.gpu_ids is not None:
        return tuple(server.gpu_ids[: role.gpus_per_node])
    return tuple(range(role.gpus_per_node))


def has_flag(argv: Sequence[str], flag: str) -> bool:
    """``flag`` in argv, as ``--flag``, ``--flag=...`` or dotted ``--flag.key`` (vLLM's
    JSON-config flags)."""
    return any(a == flag or a.startswith((flag + "=", flag + ".")) for a in argv)


def refuse_deployment_flags(
    argv: Sequence[str], role: RoleContext, flags: Mapping[str, str]
) -> None:
    """Raise UserFacingError when argv (engine_args, extra_argv) sets a flag the
    deployment sets itself; ``flags`` maps each such flag to where its value comes from."""
    for flag, source in flags.items():
        if has_flag(argv, flag):
            raise UserFacingError(
                f"{flag} is set by the {role.kind} deployment for role {role.role!r} "
                f"(from {source}); remove it from engine_args/extra_argv"
            )


def peer_urls(role: RoleContext, peer: str) -> tuple[str, ...]:
    """The base URLs of the ``peer`` role's servers a router proxies to; none is an error."""
    urls = role.peers.get(peer, ())
    if not urls:
        raise UserFacingError(
            f"the router of a {role.kind} deployment needs {peer} servers to route to; "
            f"it got peers {dict(role.peers) or 'none'}"
        )
    return urls


def router_spec(spec: LaunchSpec, argv: Sequence[str]) -> LaunchSpec:
    """The router's process: ``argv`` instead of the engine's, on no GPU, without the
    engine's host IPC and shared memory (env, image, ports and labels stay)."""
    update = {"argv": tuple(argv), "gpu_ids": (), "ipc_host": False, "shm_size": None}
    return spec.model_copy(update=update)


def router_tail(
    server: ServerConfig, role: RoleContext, policy: str | None, extra: Sequence[str]
) -> list[str]:
    """The end of an sglang_router-style router's argv (SGLang's ``sglang_router`` and its
    fork ``vllm-router`` take the same flags): where it listens, its Prometheus exporter on
    the port booked for it (left to its default, 0.0.0.0:29000, a second router on the node
    fails to start), its ``--policy`` and the user's ``router_args``, last."""
    argv = ["--host", server.host, "--port", str(server.port)]
    if role.metrics_port is not None:
        argv += ["--prometheus-host", server.host, "--prometheus-port", str(role.metrics_port)]
    if policy:
        argv += ["--policy", policy]
    return [*argv, *extra]


def role_builder(builders: Mapping[str, Builder], engine: str, role: RoleContext) -> Builder:
    """The builder of ``role.role`` from the plugin's table; a role it lacks is an error
    naming the engine and the roles it runs."""
    build = builders.get(role.role)
    if build is None:
        raise UserFacingError(
            f"the {engine} plugin cannot run role {role.role!r} of a {role.kind} deployment; "
            f"it runs: {', '.join(builders)}"
        )
    return build
