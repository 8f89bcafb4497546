"""inferx_sglang.roles: the processes of a PD or wide-EP deployment, exactly as launched."""

from __future__ import annotations

from typing import Any

import pytest

from inferx_core.config.models import ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.executors.multinode import Deployment, endpoint, role_launches
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.roles import RoleContext
from inferx_sglang import hooks

MODEL = "deepseek-ai/DeepSeek-R1"
PEERS = {
    "prefill": ("http://n0:30001", "http://n1:30001"),
    "decode": ("http://n2:30002",),
}


def server(**kw: Any) -> ServerConfig:
    kw.setdefault("engine", "sglang")
    kw.setdefault("model", MODEL)
    kw.setdefault("host", "0.0.0.0")
    kw.setdefault("port", 30001)
    kw.setdefault("parallelism", {"tp": 8})
    return ServerConfig(**kw)


def context(**kw: Any) -> RoleContext:
    data: dict[str, Any] = {
        "kind": "disaggregated",
        "role": "prefill",
        "replica": 0,
        "replicas": 1,
        "node_rank": 0,
        "nodes": 1,
        "host": "n0",
        "head_host": "n0",
        "dist_port": 29500,
        "gpus_per_node": 8,
        "peers": PEERS,
    }
    data.update(kw)
    return RoleContext(**data)


def spec(srv: ServerConfig, ctx: RoleContext):
    return hooks.inferx_engine_role_spec(server=srv, platform=Platform(), role=ctx)


def head(port: int, tp: int = 8) -> list[str]:
    """The single-server argv every engine process starts with."""
    return [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        MODEL,
        "--served-model-name",
        MODEL,
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(tp),
    ]


def multinode(addr: str, nodes: int, rank: int) -> tuple[str, ...]:
    return ("--dist-init-addr", addr, "--nnodes", str(nodes), "--node-rank", str(rank))


def test_prefill_runs_a_bootstrap_server() -> None:
    got = spec(server(engine_env={"NCCL_DEBUG": "WARN"}), context())
    assert list(got.argv) == [
        *head(30001),
        "--disable-radix-cache",
        "--enable-metrics",
        "--disaggregation-mode",
        "prefill",
        "--disaggregation-transfer-backend",
        "mooncake",
        "--disaggregation-bootstrap-port",
        "8998",
    ]
    assert got.env == {"NCCL_DEBUG": "WARN"}
    assert (got.host, got.port, got.gpu_ids) == ("0.0.0.0", 30001, tuple(range(8)))
    assert got.labels == {"engine": "sglang", "model": MODEL}


def test_decode_with_options_next_to_the_single_server_ones() -> None:
    options = {
        "attention_backend": "fa3",  # a single-server option, still honoured
        "disaggregation_transfer_backend": "nixl",
        "disaggregation_ib_device": "mlx5_0,mlx5_1",
    }
    srv = server(port=30002, gpu_ids=[4, 5, 6, 7], plugin_options={"sglang": options})
    got = spec(srv, context(role="decode", host="n2", head_host="n2", gpus_per_node=4))
    assert list(got.argv) == [
        *head(30002),
        "--attention-backend",
        "fa3",
        "--disable-radix-cache",
        "--enable-metrics",
        "--disaggregation-mode",
        "decode",
        "--disaggregation-transfer-backend",
        "nixl",
        "--disaggregation-ib-device",
        "mlx5_0,mlx5_1",
    ]
    assert (got.port, got.gpu_ids) == (30002, (4, 5, 6, 7))


def test_engine_args_transfer_backend_wins() -> None:
    srv = server(engine_args={"disaggregation-transfer-backend": "nixl"})
    got = spec(srv, context())
    assert got.flag_value("--disaggregation-transfer-backend") == "nixl"
    assert got.argv.count("--disaggregation-transfer-backend") == 1


def test_router_gives_every_prefill_its_bootstrap_port() -> None:
    got = spec(server(port=30000), context(role="router", gpus_per_node=0))
    assert list(got.argv) == [
        "python3",
        "-m",
        "sglang_router.launch_router",
        "--pd-disaggregation",
        "--prefill",
        "http://n0:30001",
        "8998",
        "--prefill",
        "http://n1:30001",
        "8998",
        "--decode",
        "http://n2:30002",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
    ]
    assert (got.port, got.gpu_ids, got.shm_size, got.ipc_host) == (30000, (), None, False)


def test_router_options() -> None:
    options = {
        "disaggregation_bootstrap_port": 9100,
        "router_command": ["sglang-router"],
        "router_policy": "cache_aware",
        "router_args": ["--request-timeout-secs", "3600"],
    }
    srv = server(port=30000, plugin_options={"sglang": options})
    got = spec(srv, context(role="router", gpus_per_node=0))
    assert list(got.argv) == [
        "sglang-router",
        "--pd-disaggregation",
        "--prefill",
        "http://n0:30001",
        "9100",
        "--prefill",
        "http://n1:30001",
        "9100",
        "--decode",
        "http://n2:30002",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--policy",
        "cache_aware",
        "--request-timeout-secs",
        "3600",
    ]
    prefill = spec(srv, context())
    assert prefill.flag_value("--disaggregation-bootstrap-port") == "9100"
    wide = context(kind="wide_ep", role="router", gpus_per_node=0, peers={"both": PEERS["prefill"]})
    got = spec(server(port=30000), wide)
    assert got.argv[3:6] == ("--worker-urls", "http://n0:30001", "http://n1:30001")


def test_rank_above_zero_joins_its_replica_head() -> None:
    par = {"tp": 16, "dp": 16, "ep": 16, "dp_attention": True}
    ctx = context(role="decode", nodes=2, node_rank=1, host="n3", head_host="n2")
    got = spec(server(port=30002, parallelism=par), ctx)
    assert list(got.argv) == [
        *head(30002, tp=16),
        "--attn-dp-size",
        "16",
        "--ep-size",
        "16",
        "--disable-radix-cache",
        "--enable-metrics",
        "--disaggregation-mode",
        "decode",
        "--disaggregation-transfer-backend",
        "mooncake",
        "--dist-init-addr",
        "n2:29500",
        "--nnodes",
        "2",
        "--node-rank",
        "1",
    ]
    assert (got.port, got.gpu_ids) == (30002, tuple(range(8)))
    both = context(kind="wide_ep", role="both", nodes=4, node_rank=3, head_host="fd00::1")
    got = spec(server(parallelism={"tp": 32}), both)
    assert got.argv[-6:] == multinode("[fd00::1]:29500", nodes=4, rank=3)
    assert "--disaggregation-mode" not in got.argv


@pytest.mark.parametrize(
    ("srv", "ctx", "message"),
    [
        (server(engine_args={"nnodes": 2}), context(), "--nnodes is set by the"),
        (
            server(extra_argv=["--disaggregation-bootstrap-port=1"]),
            context(),
            "plugin_options.sglang.disaggregation_bootstrap_port",
        ),
        (
            server(plugin_options={"sglang": {"disaggregation_bootstrap_port": "x"}}),
            context(),
            "disaggregation_bootstrap_port: Input should be a valid integer",
        ),
        (server(plugin_options={"sglang": {"transfer": "nixl"}}), context(), "unknown option"),
        (server(), context(role="router", peers={}), "needs prefill servers"),
        (
            server(),
            RoleContext.model_construct(**{**context().model_dump(), "role": "encode"}),
            "cannot run role 'encode'.*it runs: prefill, decode, both, router",
        ),
    ],
)
def test_errors_name_what_to_change(srv: ServerConfig, ctx: RoleContext, message: str) -> None:
    with pytest.raises(UserFacingError, match=message):
        spec(srv, ctx)


def test_role_launches_with_the_real_plugin() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "sglang"})
    base = server(host="127.0.0.1", port=None, engine_args={"mem-fraction-static": 0.85})
    deployment = Deployment.model_validate(
        {
            "kind": "disaggregated",
            "port": 8000,
            "roles": [
                {"role": "prefill", "replicas": 2, "parallelism": {"tp": 8}},
                {
                    "role": "decode",
                    "nodes": 2,
                    "parallelism": {"tp": 16, "dp": 16, "ep": 16, "dp_attention": True},
                    "engine_args": {"cuda-graph-max-bs-decode": 256},
                },
                {"role": "router"},
            ],
        }
    )
    launches = role_launches(pm, base, deployment, Platform(), ["n0", "n1", "n2", "n3"])
    by = {(la.context.role, la.context.replica, la.context.node_rank): la for la in launches}
    assert list(by) == [
        ("prefill", 0, 0),
        ("prefill", 1, 0),
        ("decode", 0, 0),
        ("decode", 0, 1),
        ("router", 0, 0),
    ]
    assert {la.plugin for la in launches} == {"sglang"}
    prefill = by[("prefill", 1, 0)].spec
    assert prefill.flag_value("--disaggregation-mode") == "prefill"
    assert prefill.flag_value("--mem-fraction-static") == "0.85"  # merged from the base
    assert (prefill.host, prefill.port, prefill.labels["role"]) == ("0.0.0.0", 8001, "prefill")
    decode1 = by[("decode", 0, 1)].spec
    assert decode1.argv[-6:] == multinode("n2:29500", nodes=2, rank=1)
    assert decode1.flag_value("--cuda-graph-max-bs-decode") == "256"
    assert decode1.gpu_ids == tuple(range(8))
    assert decode1.labels["node_rank"] == "1"
    router = by[("router", 0, 0)].spec
    assert list(router.argv) == [
        "python3",
        "-m",
        "sglang_router.launch_router",
        "--pd-disaggregation",
        "--prefill",
        "http://n0:8001",
        "8998",
        "--prefill",
        "http://n1:8001",
        "8998",
        "--decode",
        "http://n2:8002",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        # its metrics on a port booked on its node (n0:8001 is prefill 0's)
        "--prometheus-host",
        "0.0.0.0",
        "--prometheus-port",
        "8002",
    ]
    assert router.gpu_ids == ()
    assert endpoint(launches) == "http://n0:8000"
