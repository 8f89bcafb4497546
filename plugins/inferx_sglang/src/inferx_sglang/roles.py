"""SGLang's processes of a multi-node deployment (hook ``inferx_engine_role_spec``).

Each process starts from the single-server command (:func:`inferx_sglang.launch.launch_spec`,
so flags, engine_args, env and fixes stay the same) and adds what its role
needs, as SGLang's PD-disaggregation and router docs describe
(docs.sglang.ai: advanced_features/pd_disaggregation, router):

- ``prefill``: ``--disaggregation-mode prefill --disaggregation-transfer-backend B
  --disaggregation-bootstrap-port P [--disaggregation-ib-device D]``;
- ``decode``: ``--disaggregation-mode decode --disaggregation-transfer-backend B
  [--disaggregation-ib-device D]``;
- ``both`` (``wide_ep``): the single-server command;
- a replica spanning nodes, any of these: ``--dist-init-addr HEAD:DIST_PORT
  --nnodes N --node-rank R`` (``--tensor-parallel-size`` stays the replica's
  total). Ranks above 0 serve only ``/health``; the OpenAI API is on rank 0;
- ``router``: ``python3 -m sglang_router.launch_router --pd-disaggregation
  --prefill URL BOOTSTRAP_PORT ... --decode URL ... --host H --port P``
  (``wide_ep``: ``--worker-urls URL ...``). The bootstrap port is given
  explicitly: current routers assume none when it is left out.

Every GPU process uses the first ``gpus_per_node`` GPUs of its node (or the
configured ``gpu_ids``); the platform InferX detected describes the node it
runs on, not the others.

``plugin_options.sglang`` takes, next to the single-server options:
``disaggregation_transfer_backend`` (default ``mooncake``; ``nixl``, ...),
``disaggregation_ib_device`` (``mlx5_0`` or ``mlx5_0,mlx5_1``; default: Mooncake
detects it), ``disaggregation_bootstrap_port`` (default 8998, SGLang's: the first port tried;
the core books one per prefill replica on its head node, the next free one up,
and the router names each replica's own),
``router_command`` (default ``python3 -m sglang_router.launch_router``),
``router_policy`` (``--policy``) and ``router_args`` (appended to the router's
argv; the router ignores ``engine_args`` and ``extra_argv``, which are engine
flags). The transfer backend and IB device may instead be set in
``engine_args``, which then wins, as for every flag. Prefill and decode with
different parallelism need ``disaggregation-decode-tp``/``-dp`` in the prefill
role's ``engine_args``: a role does not see its peers' parallelism.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from inferx_core import (
    LaunchSpec,
    Platform,
    RoleContext,
    ServerConfig,
    has_flag,
    node_gpu_ids,
    peer_urls,
    plugin_options,
    refuse_deployment_flags,
    role_builder,
    router_spec,
    router_tail,
)
from inferx_sglang import launch
from inferx_sglang.launch import PLUGIN_OPTIONS_KEY

DEFAULT_ROUTER = ("python3", "-m", "sglang_router.launch_router")
DEFAULT_BOOTSTRAP_PORT = 8998
#: The name of the bootstrap port in RoleContext.ports.
BOOTSTRAP_PORT = "disaggregation_bootstrap"

#: Flags the deployment sets; engine_args and extra_argv may not (-> where they come from).
DEPLOYMENT_FLAGS = {
    "--disaggregation-mode": "the role (prefill or decode)",
    "--disaggregation-bootstrap-port": "plugin_options.sglang.disaggregation_bootstrap_port",
    "--dist-init-addr": "the replica's head node and deployment.dist_port",
    "--nnodes": "the role's nodes",
    "--node-rank": "the placement",
}


class SGLangRoleOptions(BaseModel):
    """``plugin_options.sglang`` keys that only a deployment's processes read."""

    model_config = ConfigDict(extra="forbid")

    disaggregation_transfer_backend: str = Field(
        default="mooncake", description="--disaggregation-transfer-backend (mooncake, nixl...)"
    )
    disaggregation_ib_device: str | None = Field(
        default=None, description="--disaggregation-ib-device (mlx5_0 or mlx5_0,mlx5_1)"
    )
    disaggregation_bootstrap_port: int = Field(
        default=DEFAULT_BOOTSTRAP_PORT, ge=1, le=65535, description="prefill bootstrap port"
    )
    router_command: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ROUTER), min_length=1, description="router argv"
    )
    router_policy: str | None = Field(default=None, description="router --policy")
    router_args: list[str] = Field(default_factory=list, description="more router arguments")


def split_options(server: ServerConfig) -> tuple[ServerConfig, SGLangRoleOptions]:
    """The server as the single-server builder must see it (no role keys), and the role keys.

    The builder refuses options it does not know, so role keys are taken out;
    every other key (and a typo) is still checked by it.
    """
    raw = server.plugin_options.get(PLUGIN_OPTIONS_KEY)
    if not isinstance(raw, dict):
        return server, SGLangRoleOptions()  # the builder says what is wrong with it
    ours = {k: v for k, v in raw.items() if k in SGLangRoleOptions.model_fields}
    rest = {k: v for k, v in raw.items() if k not in ours}

    def with_options(options: dict[str, object]) -> ServerConfig:
        merged = {**server.plugin_options, PLUGIN_OPTIONS_KEY: options}
        return server.model_copy(update={"plugin_options": merged})

    opts = plugin_options(
        with_options(ours),
        PLUGIN_OPTIONS_KEY,
        SGLangRoleOptions,
        "disaggregation_transfer_backend: nixl",
    )
    return with_options(rest), opts


def role_ports(server: ServerConfig, role: RoleContext) -> dict[str, int]:
    """``EngineInfo.role_ports``: a prefill replica's bootstrap server, on its head node
    (ranks above 0 get the head's port); the core books it on that host, so two prefill
    servers on one machine no longer both take 8998."""
    if role.role != "prefill" or role.node_rank != 0:
        return {}
    _, opts = split_options(server)
    return {BOOTSTRAP_PORT: opts.disaggregation_bootstrap_port}


def bootstrap_port(role: RoleContext, opts: SGLangRoleOptions) -> int:
    """This prefill replica's booked bootstrap port (the option when nothing was booked)."""
    return role.ports.get(BOOTSTRAP_PORT, opts.disaggregation_bootstrap_port)


def add_if_absent(argv: list[str], flag: str, value: str | None) -> None:
    """Append ``flag value`` unless engine_args/extra_argv already set it (they win)."""
    if value is not None and not has_flag(argv, flag):
        argv += [flag, value]


def dist_init_addr(role: RoleContext) -> str:
    host = f"[{role.head_host}]" if ":" in role.head_host else role.head_host
    return f"{host}:{role.dist_port}"


def engine_process(
    spec: LaunchSpec, server: ServerConfig, role: RoleContext, opts: SGLangRoleOptions
) -> LaunchSpec:
    """A prefill, decode or ``both`` server process (one node of its replica)."""
    argv = list(spec.argv)
    refuse_deployment_flags(argv, role, DEPLOYMENT_FLAGS)
    if role.role in ("prefill", "decode"):
        argv += ["--disaggregation-mode", role.role]
        backend = opts.disaggregation_transfer_backend
        add_if_absent(argv, "--disaggregation-transfer-backend", backend)
        add_if_absent(argv, "--disaggregation-ib-device", opts.disaggregation_ib_device)
        if role.role == "prefill":
            argv += ["--disaggregation-bootstrap-port", str(bootstrap_port(role, opts))]
    if role.nodes > 1:
        argv += ["--dist-init-addr", dist_init_addr(role)]
        argv += ["--nnodes", str(role.nodes), "--node-rank", str(role.node_rank)]
    return spec.model_copy(update={"argv": tuple(argv), "gpu_ids": node_gpu_ids(server, role)})


def router_process(
    spec: LaunchSpec, server: ServerConfig, role: RoleContext, opts: SGLangRoleOptions
) -> LaunchSpec:
    """The sglang_router in front of the servers: the endpoint the benchmark talks to."""
    argv = list(opts.router_command)
    if role.kind == "disaggregated":
        argv.append("--pd-disaggregation")
        booked = role.peer_ports.get("prefill", ())
        for i, url in enumerate(peer_urls(role, "prefill")):
            port = booked[i].get(BOOTSTRAP_PORT) if i < len(booked) else None
            argv += ["--prefill", url, str(port or opts.disaggregation_bootstrap_port)]
        for url in peer_urls(role, "decode"):
            argv += ["--decode", url]
    else:
        argv += ["--worker-urls", *peer_urls(role, "both")]
    argv += router_tail(server, role, opts.router_policy, opts.router_args)
    return router_spec(spec, argv)


RoleBuilder = Callable[[LaunchSpec, ServerConfig, RoleContext, SGLangRoleOptions], LaunchSpec]
ROLE_BUILDERS: dict[str, RoleBuilder] = {
    "prefill": engine_process,
    "decode": engine_process,
    "both": engine_process,
    "router": router_process,
}


def role_spec(server: ServerConfig, platform: Platform, role: RoleContext) -> LaunchSpec:
    """One process of an SGLang PD or wide-EP deployment (see the module doc)."""
    engine_server, opts = split_options(server)
    spec = launch.launch_spec(engine_server, platform)
    return role_builder(ROLE_BUILDERS, launch.ENGINE, role)(spec, server, role, opts)
