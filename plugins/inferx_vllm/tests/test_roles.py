"""inferx_vllm.roles: the processes of a P/D or wide-EP deployment, exactly as launched."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inferx_core.config.models import ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.executors.multinode import Deployment, endpoint, role_launches
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Accelerator, Platform
from inferx_core.sdk.roles import RoleContext
from inferx_vllm import hooks

H200x8 = Platform(
    accelerators=tuple(
        Accelerator(vendor="nvidia", index=i, name="NVIDIA H200", compute_capability="9.0")
        for i in range(8)
    )
)
MODEL = "deepseek-ai/DeepSeek-V3"
PEERS = {
    "prefill": ("http://n0:8001", "http://n1:8001"),
    "decode": ("http://n2:8002",),
}
NIXL_ENV = {"VLLM_NIXL_SIDE_CHANNEL_PORT": "5600"}


def server(**kw: Any) -> ServerConfig:
    kw.setdefault("engine", "vllm")
    kw.setdefault("model", MODEL)
    kw.setdefault("host", "0.0.0.0")
    kw.setdefault("port", 8001)
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
    return hooks.inferx_engine_role_spec(server=srv, platform=H200x8, role=ctx)


def head(port: int, tp: int = 8) -> list[str]:
    """The single-server argv every engine process starts with."""
    return [
        "vllm",
        "serve",
        MODEL,
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--served-model-name",
        MODEL,
        "--tensor-parallel-size",
        str(tp),
    ]


def test_prefill_is_a_nixl_kv_producer() -> None:
    got = spec(server(parallelism={"tp": 8}), context())
    assert list(got.argv) == [
        *head(8001),
        "--gpu-memory-utilization",
        "0.9",
        "--no-enable-prefix-caching",
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}',
    ]
    assert got.env == {"VLLM_NIXL_SIDE_CHANNEL_HOST": "n0", **NIXL_ENV}
    assert (got.host, got.port, got.gpu_ids) == ("0.0.0.0", 8001, tuple(range(8)))
    assert got.labels == {"engine": "vllm", "model": MODEL}


def test_decode_is_a_kv_consumer_and_options_shape_it() -> None:
    options = {
        "kv_role": "kv_both",
        "kv_load_failure_policy": "fail",
        "kv_connector_extra_config": {"backends": ["UCX"]},
        "nixl_side_channel_port": 5700,
        "ucx_net_devices": "mlx5_0:1",
    }
    srv = server(
        port=8002,
        parallelism={"tp": 4},
        engine_env={"UCX_NET_DEVICES": "mlx5_1:1"},  # the user's env wins
        plugin_options={"vllm": options},
    )
    got = spec(srv, context(role="decode", host="n2", head_host="n2", gpus_per_node=4))
    assert got.argv[-2:] == (
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"fail",'
        '"kv_connector_extra_config":{"backends":["UCX"]}}',
    )
    assert got.env == {
        "VLLM_NIXL_SIDE_CHANNEL_HOST": "n2",
        "VLLM_NIXL_SIDE_CHANNEL_PORT": "5700",
        "UCX_NET_DEVICES": "mlx5_1:1",
    }
    assert (got.port, got.gpu_ids) == (8002, (0, 1, 2, 3))


def test_engine_args_kv_transfer_config_replaces_the_built_one() -> None:
    own = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"})
    got = spec(server(engine_args={"kv-transfer-config": own}), context())
    assert got.flag_value("--kv-transfer-config") == own
    assert got.argv.count("--kv-transfer-config") == 1


def test_router_routes_prefill_then_decode_and_uses_no_gpu() -> None:
    got = spec(server(port=8000), context(role="router", gpus_per_node=0))
    assert list(got.argv) == [
        "vllm-router",
        "--vllm-pd-disaggregation",
        "--prefill",
        "http://n0:8001",
        "--prefill",
        "http://n1:8001",
        "--decode",
        "http://n2:8002",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
    ]
    assert (got.port, got.gpu_ids, got.env) == (8000, (), {})


def test_router_options_and_mooncake() -> None:
    options = {
        "kv_connector": "MooncakeConnector",
        "router_command": ["/opt/router/bin/vllm-router"],
        "router_policy": "consistent_hash",
        "router_args": ["--request-timeout-secs", "86400"],
    }
    srv = server(port=8000, plugin_options={"vllm": options})
    got = spec(srv, context(role="router", gpus_per_node=0))
    assert list(got.argv) == [
        "/opt/router/bin/vllm-router",
        "--vllm-pd-disaggregation",
        "--kv-connector",
        "mooncake",
        "--prefill",
        "http://n0:8001",
        "--prefill",
        "http://n1:8001",
        "--decode",
        "http://n2:8002",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--policy",
        "consistent_hash",
        "--request-timeout-secs",
        "86400",
    ]
    wide = context(kind="wide_ep", role="router", gpus_per_node=0, peers={"both": PEERS["prefill"]})
    got = spec(server(port=8000), wide)
    assert got.argv[:4] == ("vllm-router", "--worker-urls", "http://n0:8001", "http://n1:8001")


def test_rank_above_zero_of_a_tp_replica_is_headless() -> None:
    srv = server(port=8002, parallelism={"tp": 16})
    ctx = context(role="decode", nodes=2, node_rank=1, host="n3", head_host="n2")
    got = spec(srv, ctx)
    assert got.argv[-11:] == (
        "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}',
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--master-addr",
        "n2",
        "--master-port",
        "29500",
        "--headless",
    )
    assert got.headless and "headless" not in got.labels
    assert got.env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "n3"  # its own node
    assert got.gpu_ids == tuple(range(8))
    rank0 = spec(srv, ctx.model_copy(update={"node_rank": 0, "host": "n2"}))
    assert rank0.argv[-8:] == (
        "--nnodes",
        "2",
        "--node-rank",
        "0",
        "--master-addr",
        "n2",
        "--master-port",
        "29500",
    )
    assert "headless" not in rank0.labels


def test_wide_ep_ranks_take_their_share_of_dp() -> None:
    par = {"tp": 1, "dp": 32, "ep": 32, "expert_parallel": True}
    ctx = context(kind="wide_ep", role="both", nodes=4, node_rank=2, host="n2", peers={})
    got = spec(server(port=8001, parallelism=par), ctx)
    assert list(got.argv) == [
        *head(8001, tp=1),
        "--data-parallel-size",
        "32",
        "--enable-expert-parallel",
        "--gpu-memory-utilization",
        "0.9",
        "--no-enable-prefix-caching",
        "--data-parallel-size-local",
        "8",
        "--data-parallel-address",
        "n0",
        "--data-parallel-rpc-port",
        "29500",
        "--headless",
        "--data-parallel-start-rank",
        "16",
    ]
    assert got.env == {}  # no KV transfer without disaggregation
    with pytest.raises(UserFacingError, match="dp=6 does not split over 4 nodes"):
        spec(server(parallelism={"tp": 1, "dp": 6}), ctx)


@pytest.mark.parametrize(
    ("srv", "ctx", "message"),
    [
        (server(engine_args={"headless": True}), context(), "--headless is set by the"),
        (server(extra_argv=["--node-rank=1"]), context(), "--node-rank is set by the"),
        (server(plugin_options={"vllm": {"kv_rol": "x"}}), context(), "kv_rol: unknown option"),
        (server(), context(role="router", peers={"prefill": ("http://a:1",)}), "needs decode"),
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
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "vllm"})
    base = server(host="127.0.0.1", port=None, engine_args={"max-num-seqs": 256})
    deployment = Deployment.model_validate(
        {
            "kind": "disaggregated",
            "port": 9000,
            "roles": [
                {"role": "prefill", "replicas": 2, "parallelism": {"tp": 8}},
                {"role": "decode", "nodes": 2, "parallelism": {"tp": 8, "dp": 2, "ep": 16}},
                {"role": "router"},
            ],
        }
    )
    launches = role_launches(pm, base, deployment, H200x8, ["n0", "n1", "n2", "n3"])
    by = {(la.context.role, la.context.replica, la.context.node_rank): la for la in launches}
    assert list(by) == [
        ("prefill", 0, 0),
        ("prefill", 1, 0),
        ("decode", 0, 0),
        ("decode", 0, 1),
        ("router", 0, 0),
    ]
    assert {la.plugin for la in launches} == {"vllm"}
    prefill = by[("prefill", 1, 0)].spec
    assert prefill.flag_value("--kv-transfer-config") == (
        '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
    )
    assert prefill.env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "n1"
    assert (prefill.host, prefill.port, prefill.labels["role"]) == ("0.0.0.0", 9001, "prefill")
    decode1 = by[("decode", 0, 1)].spec
    assert decode1.argv[-9:] == (
        "--data-parallel-size-local",
        "1",
        "--data-parallel-address",
        "n2",
        "--data-parallel-rpc-port",
        "29500",
        "--headless",
        "--data-parallel-start-rank",
        "1",
    )
    assert decode1.flag_value("--max-num-seqs") == "256"  # engine_args merged from the base
    assert decode1.gpu_ids == tuple(range(8))
    router = by[("router", 0, 0)].spec
    assert list(router.argv) == [
        "vllm-router",
        "--vllm-pd-disaggregation",
        "--prefill",
        "http://n0:9001",
        "--prefill",
        "http://n1:9001",
        "--decode",
        "http://n2:9002",
        "--host",
        "0.0.0.0",
        "--port",
        "9000",
        # its metrics on a port booked on its node (n0:9001 is prefill 0's)
        "--prometheus-host",
        "0.0.0.0",
        "--prometheus-port",
        "9002",
    ]
    assert router.gpu_ids == ()
    assert endpoint(launches) == "http://n0:9000"


def test_the_router_is_ready_by_a_completion_through_it_not_by_its_model_list() -> None:
    """sglang-router lists vLLM workers' model as ``unknown`` (it asks SGLang's own
    /get_model_info), so waiting for the served name there would never end."""

    pm = get_plugin_manager(env={"INFERX_PLUGINS": "vllm"})
    deployment = Deployment.model_validate(
        {"kind": "wide_ep", "roles": [{"role": "both", "replicas": 2}, {"role": "router"}]}
    )
    base = server(host="127.0.0.1", port=None)
    launches = role_launches(pm, base, deployment, Platform(), ["h", "h"])
    paths = {
        la.context.role: [
            p.path for p in hooks.inferx_engine_readiness(server=la.server, spec=la.spec)
        ]
        for la in launches
    }
    assert paths == {
        "both": ["/health", "/v1/models", "/v1/completions"],
        "router": ["/health", "/v1/completions"],
    }
