"""The SDK's role helpers (inferx_core.sdk.role_helpers) that engine plugins share."""

from __future__ import annotations

import pytest

from inferx_core import (
    LaunchSpec,
    RoleContext,
    ServerConfig,
    UserFacingError,
    has_flag,
    node_gpu_ids,
    peer_urls,
    refuse_deployment_flags,
    role_builder,
    router_spec,
    router_tail,
)


def ctx(**kw: object) -> RoleContext:
    base = dict(
        kind="disaggregated", role="prefill", replica=0, replicas=1, node_rank=0, nodes=1,
        host="n0", head_host="n0", dist_port=29500, gpus_per_node=4,
        peers={"prefill": ("http://n0:8001",)},
    )  # fmt: skip
    return RoleContext(**{**base, **kw})  # type: ignore[arg-type]


def test_node_gpu_ids() -> None:
    server = ServerConfig(engine="e", model="m")
    assert node_gpu_ids(server, ctx()) == (0, 1, 2, 3)
    pinned = server.model_copy(update={"gpu_ids": [4, 5, 6, 7, 0]})
    assert node_gpu_ids(pinned, ctx(gpus_per_node=2)) == (4, 5)


def test_has_flag_and_refusing_the_deployments_flags() -> None:
    argv = ["serve", "--nnodes=2", "--kv-transfer-config.kv_role", "x"]
    assert has_flag(argv, "--nnodes") and has_flag(argv, "--kv-transfer-config")
    assert not has_flag(argv, "--nnode") and not has_flag(argv, "serve-")
    refuse_deployment_flags(["serve"], ctx(), {"--nnodes": "the role's nodes"})
    with pytest.raises(UserFacingError, match=r"--nnodes is set by the disaggregated .*nodes"):
        refuse_deployment_flags(argv, ctx(), {"--nnodes": "the role's nodes"})


def test_peer_urls() -> None:
    assert peer_urls(ctx(), "prefill") == ("http://n0:8001",)
    with pytest.raises(UserFacingError, match="needs decode servers to route to"):
        peer_urls(ctx(), "decode")


def test_router_spec_runs_on_no_gpu() -> None:
    spec = LaunchSpec(
        engine="e", argv=("serve",), port=9000, gpu_ids=(0, 1), ipc_host=True, shm_size="16g",
        env={"A": "1"},
    )  # fmt: skip
    router = router_spec(spec, ["router", "--port", "9000"])
    assert router.argv == ("router", "--port", "9000") and router.gpu_ids == ()
    assert not router.ipc_host and router.shm_size is None and router.env == {"A": "1"}


def test_role_builder() -> None:
    builders = {"prefill": "p", "router": "r"}
    assert role_builder(builders, "e", ctx()) == "p"
    with pytest.raises(
        UserFacingError, match=r"the e plugin cannot run role 'decode'.*prefill, router"
    ):
        role_builder(builders, "e", ctx(role="decode"))


def test_router_tail_listens_exports_and_ends_with_the_users_args() -> None:
    server = ServerConfig(engine="e", model="m", host="0.0.0.0", port=9000)
    plain = router_tail(server, ctx(role="router"), None, [])
    assert plain == ["--host", "0.0.0.0", "--port", "9000"]
    booked = router_tail(server, ctx(role="router", metrics_port=9001), "round_robin", ["--x"])
    assert booked == [
        *plain,
        *("--prometheus-host", "0.0.0.0", "--prometheus-port", "9001"),
        *("--policy", "round_robin"),
        "--x",
    ]
