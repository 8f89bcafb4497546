"""vLLM's processes of a multi-node deployment (hook ``inferx_engine_role_spec``).

Each process starts from the single-server command (:func:`inferx_vllm.launch.launch_spec`,
so flags, engine_args, env and fixes stay the same) and adds what its role
needs, as vLLM's docs describe (docs.vllm.ai: features/nixl_connector_usage,
serving/data_parallel_deployment, serving/parallelism_scaling):

- ``prefill`` / ``decode``: ``--kv-transfer-config`` JSON with the KV connector
  (default ``NixlConnector``) and ``kv_role`` ``kv_producer`` / ``kv_consumer``
  (``kv_both`` on request; NixlConnector treats them alike, the router decides
  who prefills), plus ``VLLM_NIXL_SIDE_CHANNEL_HOST`` (this node) and
  ``VLLM_NIXL_SIDE_CHANNEL_PORT`` for NIXL's handshake across machines;
- ``both`` (``wide_ep``): the single-server command;
- a replica spanning nodes, any of these. With ``dp > 1`` (DP attention + EP,
  the wide-EP layout): ``--data-parallel-size-local dp/nodes
  --data-parallel-address HEAD --data-parallel-rpc-port DIST_PORT`` on every
  node, and ``--headless --data-parallel-start-rank R*dp/nodes`` on ranks
  above 0. With ``dp == 1`` (TP/PP over nodes, the multiprocessing backend):
  ``--nnodes N --node-rank R --master-addr HEAD --master-port DIST_PORT``, and
  ``--headless`` on ranks above 0. Headless ranks serve no HTTP at all; their
  specs say ``headless`` (readiness is the head's);
- ``router``: ``vllm-router --vllm-pd-disaggregation --prefill URL ... --decode
  URL ... --host H --port P`` (``wide_ep``: ``--worker-urls URL ...``).

Which router: vLLM's NixlConnector guide demonstrates the toy proxy
(``tests/v1/kv_connector/nixl_integration/toy_proxy_server.py``), a test script
that is not in the wheel. The vLLM project's router (``pip install
vllm-router``, github.com/vllm-project/router, a fork of SGLang's model
gateway) is its production P/D router and what vLLM's multi-node P/D recipes
run, so it is the default; with ``MooncakeConnector`` it gets ``--kv-connector
mooncake`` (the router assumes NIXL otherwise).

Every GPU process uses the first ``gpus_per_node`` GPUs of its node (or the
configured ``gpu_ids``); the platform InferX detected describes the node it
runs on, not the others.

``plugin_options.vllm`` (checked, see :class:`VLLMRoleOptions`): ``kv_connector``,
``kv_role`` (``by_role`` or ``kv_both``), ``kv_connector_extra_config`` (e.g.
``{backends: [UCX]}``), ``kv_load_failure_policy`` (``fail``/``recompute``),
``nixl_side_channel_port`` (default 5600: the first port tried; the core books
``dp`` ports from it on each process's host, the next free ones up, so
processes sharing a machine get their own), ``ucx_net_devices`` (the IB devices
NIXL's UCX uses, e.g. ``mlx5_0:1``: NCCL variables do not apply to it),
``router_command`` (default ``vllm-router``), ``router_policy`` (``--policy``)
and ``router_args`` (appended to the router's argv; the router ignores
``engine_args`` and ``extra_argv``, which are engine flags). A
``kv-transfer-config`` in ``engine_args`` replaces the one built here, and
``engine_env`` wins over the variables set here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from inferx_core import (
    LaunchSpec,
    Parallelism,
    Platform,
    RoleContext,
    ServerConfig,
    UserFacingError,
    has_flag,
    node_gpu_ids,
    peer_urls,
    plugin_options,
    refuse_deployment_flags,
    role_builder,
    router_spec,
    router_tail,
)
from inferx_vllm import launch

PLUGIN_OPTIONS_KEY = "vllm"
DEFAULT_ROUTER = ("vllm-router",)
DEFAULT_NIXL_SIDE_CHANNEL_PORT = 5600
#: The name of NIXL's side-channel port in RoleContext.ports.
NIXL_PORT = "nixl_side_channel"
KV_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}
#: KV connectors whose router needs telling (vllm-router --kv-connector; NIXL is its default).
ROUTER_KV_CONNECTOR = {"MooncakeConnector": "mooncake"}

#: Flags the deployment sets; engine_args and extra_argv may not (-> where they come from).
DEPLOYMENT_FLAGS = {
    "--headless": "the node rank",
    "--nnodes": "the role's nodes",
    "--node-rank": "the placement",
    "--master-addr": "the replica's head node",
    "--master-port": "deployment.dist_port",
    "--data-parallel-size-local": "parallelism.dp and the role's nodes",
    "--data-parallel-address": "the replica's head node",
    "--data-parallel-rpc-port": "deployment.dist_port",
    "--data-parallel-start-rank": "the node rank",
}


class VLLMRoleOptions(BaseModel):
    """``plugin_options.vllm`` keys that only a deployment's processes read."""

    model_config = ConfigDict(extra="forbid")

    kv_connector: str = Field(default="NixlConnector", description="kv_transfer_config connector")
    kv_role: Literal["by_role", "kv_both"] = Field(
        default="by_role", description="by_role: kv_producer (prefill), kv_consumer (decode)"
    )
    kv_connector_extra_config: dict[str, Any] = Field(default_factory=dict)
    kv_load_failure_policy: Literal["fail", "recompute"] | None = None
    nixl_side_channel_port: int = Field(default=DEFAULT_NIXL_SIDE_CHANNEL_PORT, ge=1, le=65535)
    ucx_net_devices: str | None = Field(default=None, description="UCX_NET_DEVICES for NIXL")
    router_command: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ROUTER), min_length=1, description="router argv"
    )
    router_policy: str | None = Field(default=None, description="router --policy")
    router_args: list[str] = Field(default_factory=list, description="more router arguments")


def split_options(server: ServerConfig) -> tuple[ServerConfig, VLLMRoleOptions]:
    """The role keys, checked, and the server without them (for the single-server builder).

    The vLLM builder reads no ``plugin_options.vllm`` today, so every key is
    checked here (a typo is an error); if it gets options of its own, the two
    models must be combined, as for SGLang.
    """
    opts = plugin_options(server, PLUGIN_OPTIONS_KEY, VLLMRoleOptions, "kv_role: kv_both")
    raw = server.plugin_options.get(PLUGIN_OPTIONS_KEY) or {}
    rest = {k: v for k, v in raw.items() if k not in VLLMRoleOptions.model_fields}
    merged = {**server.plugin_options, PLUGIN_OPTIONS_KEY: rest}
    return server.model_copy(update={"plugin_options": merged}), opts


def kv_transfer_config(role: RoleContext, opts: VLLMRoleOptions) -> str:
    config: dict[str, Any] = {
        "kv_connector": opts.kv_connector,
        "kv_role": KV_ROLES[role.role] if opts.kv_role == "by_role" else "kv_both",
    }
    if opts.kv_load_failure_policy:
        config["kv_load_failure_policy"] = opts.kv_load_failure_policy
    if opts.kv_connector_extra_config:
        config["kv_connector_extra_config"] = opts.kv_connector_extra_config
    return json.dumps(config, separators=(",", ":"))


def role_ports(server: ServerConfig, role: RoleContext) -> dict[str, tuple[int, int]]:
    """``EngineInfo.role_ports``: NIXL's side channel, which vLLM opens at the port plus the
    process's data-parallel index, so ``dp`` ports in a row per process; the core books them
    on the process's host (two prefill servers on one machine no longer share 5600)."""
    _, opts = split_options(server)
    if role.role not in KV_ROLES or opts.kv_connector != "NixlConnector":
        return {}
    return {NIXL_PORT: (opts.nixl_side_channel_port, server.parallelism.dp)}


def kv_env(role: RoleContext, opts: VLLMRoleOptions) -> dict[str, str]:
    env: dict[str, str] = {}
    if opts.kv_connector == "NixlConnector":
        env["VLLM_NIXL_SIDE_CHANNEL_HOST"] = role.host
        port = role.ports.get(NIXL_PORT, opts.nixl_side_channel_port)
        env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(port)
    if opts.ucx_net_devices:
        env["UCX_NET_DEVICES"] = opts.ucx_net_devices
    return env


def multinode_flags(par: Parallelism, role: RoleContext) -> list[str]:
    """How one node joins its replica: DP ranks per node, or TP/PP over nodes."""
    head = "--headless" if role.node_rank > 0 else None
    if par.dp > 1:
        if par.dp % role.nodes:
            raise UserFacingError(
                f"role {role.role!r}: vLLM places whole data-parallel ranks on each node; "
                f"dp={par.dp} does not split over {role.nodes} nodes"
            )
        local = par.dp // role.nodes
        flags = ["--data-parallel-size-local", str(local)]
        flags += ["--data-parallel-address", role.head_host]
        flags += ["--data-parallel-rpc-port", str(role.dist_port)]
        if head:
            flags += [head, "--data-parallel-start-rank", str(role.node_rank * local)]
        return flags
    flags = ["--nnodes", str(role.nodes), "--node-rank", str(role.node_rank)]
    flags += ["--master-addr", role.head_host, "--master-port", str(role.dist_port)]
    return [*flags, head] if head else flags


def engine_process(
    spec: LaunchSpec, server: ServerConfig, role: RoleContext, opts: VLLMRoleOptions
) -> LaunchSpec:
    """A prefill, decode or ``both`` server process (one node of its replica)."""
    argv = list(spec.argv)
    refuse_deployment_flags(argv, role, DEPLOYMENT_FLAGS)
    env: dict[str, str] = {}
    if role.role in KV_ROLES:
        if not has_flag(argv, "--kv-transfer-config"):
            argv += ["--kv-transfer-config", kv_transfer_config(role, opts)]
        env = kv_env(role, opts)
    if role.nodes > 1:
        argv += multinode_flags(server.parallelism, role)
    update = {
        "argv": tuple(argv),
        "env": {**env, **spec.env},
        "gpu_ids": node_gpu_ids(server, role),
        "headless": role.nodes > 1 and role.node_rank > 0,  # --headless: no HTTP server
    }
    return spec.model_copy(update=update)


def router_process(
    spec: LaunchSpec, server: ServerConfig, role: RoleContext, opts: VLLMRoleOptions
) -> LaunchSpec:
    """vllm-router in front of the servers: the endpoint the benchmark talks to."""
    argv = list(opts.router_command)
    if role.kind == "disaggregated":
        argv.append("--vllm-pd-disaggregation")
        connector = ROUTER_KV_CONNECTOR.get(opts.kv_connector)
        if connector:
            argv += ["--kv-connector", connector]
        for url in peer_urls(role, "prefill"):
            argv += ["--prefill", url]
        for url in peer_urls(role, "decode"):
            argv += ["--decode", url]
    else:
        argv += ["--worker-urls", *peer_urls(role, "both")]
    argv += router_tail(server, role, opts.router_policy, opts.router_args)
    return router_spec(spec, argv)


RoleBuilder = Callable[[LaunchSpec, ServerConfig, RoleContext, VLLMRoleOptions], LaunchSpec]
ROLE_BUILDERS: dict[str, RoleBuilder] = {
    "prefill": engine_process,
    "decode": engine_process,
    "both": engine_process,
    "router": router_process,
}


def role_spec(server: ServerConfig, platform: Platform, role: RoleContext) -> LaunchSpec:
    """One process of a vLLM P/D or wide-EP deployment (see the module doc)."""
    engine_server, opts = split_options(server)
    spec = launch.launch_spec(engine_server, platform)
    return role_builder(ROLE_BUILDERS, launch.ENGINE, role)(spec, server, role, opts)
