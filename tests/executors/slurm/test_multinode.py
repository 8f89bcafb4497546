"""Multi-node deployments as data: validation, placement, role-aware specs, GPU accounting."""

from __future__ import annotations

import types
from typing import Any

import fake_engine
import pytest
from pydantic import ValidationError

from inferx_core import LaunchSpec, hookimpl
from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.executors.multinode import (
    Deployment,
    endpoint,
    gpu_accounting,
    nodes_needed,
    place,
    role_launches,
    role_server,
)
from inferx_core.metrics.summarize import RequestRecord, summarize
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.roles import RoleContext

MS = 1_000_000
HOSTS = ["n0", "n1", "n2", "n3", "n4"]


def base(**overrides: Any) -> ServerConfig:
    data: dict[str, Any] = {
        "engine": "fake",
        "model": "org/big-moe",
        "engine_args": {"max-num-seqs": 256},
        "engine_env": {"NCCL_DEBUG": "WARN"},
    }
    data.update(overrides)
    return ServerConfig.model_validate(data)


def disagg(**overrides: Any) -> Deployment:
    data: dict[str, Any] = {
        "kind": "disaggregated",
        "port": 9000,
        "roles": [
            {"role": "prefill", "replicas": 2, "parallelism": {"tp": 4}},
            {
                "role": "decode",
                "nodes": 2,
                "parallelism": {"tp": 8, "dp": 2, "ep": 16, "dp_attention": False},
                "engine_args": {"max-num-seqs": 512},
                "engine_env": {"DECODE_ONLY": "1"},
            },
            {"role": "router"},
        ],
    }
    data.update(overrides)
    return Deployment.model_validate(data)


# -- the description ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "disaggregated", "roles": [{"role": "prefill"}]}, "needs a prefill and a decode"),
        (
            {"kind": "disaggregated", "roles": [{"role": "prefill"}, {"role": "decode"}]},
            "needs a router",
        ),
        ({"kind": "wide_ep", "roles": [{"role": "prefill"}]}, "one 'both' role"),
        ({"kind": "wide_ep", "roles": [{"role": "both", "replicas": 2}]}, "need a router"),
        (
            {"kind": "wide_ep", "roles": [{"role": "both"}, {"role": "router", "nodes": 2}]},
            "uses no GPU",
        ),
        ({"kind": "wide_ep", "roles": [{"role": "both"}, {"role": "both"}]}, "each role once"),
        ({"kind": "wide_ep", "roles": [{"role": "both", "gpus": 8}]}, "Extra inputs"),
    ],
)
def test_invalid_deployments_say_why(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Deployment.model_validate(data)


def test_role_server_merges_over_the_base() -> None:
    dep = disagg()
    decode = role_server(base(), dep.group("decode"), 9002)
    assert decode.port == 9002
    assert decode.parallelism.tp == 8 and decode.parallelism.dp == 2
    assert decode.engine_args == {"max-num-seqs": 512}
    assert decode.engine_env == {"NCCL_DEBUG": "WARN", "DECODE_ONLY": "1"}
    router = role_server(base(), dep.group("router"), 9000)
    assert router.gpu_ids == [] and router.parallelism == base().parallelism


def test_a_run_configuration_as_the_base_gives_plain_server_configurations() -> None:
    """plan_deployment hands the run configuration down as the base: each role's server is
    its server fields with the role's over them, none of the run's own (workload, load)."""
    run = RunConfig.model_validate(
        {**base().model_dump(), "deployment": disagg().model_dump(), "output_dir": "out"}
    )
    decode = role_server(run, disagg().group("decode"), 9002)
    assert type(decode) is ServerConfig
    assert decode == role_server(run.server(), disagg().group("decode"), 9002)
    launches = role_launches(pm_with_roles(), run, disagg(), Platform(), HOSTS)
    assert {type(la.server) for la in launches} == {ServerConfig}


# -- GPU accounting -------------------------------------------------------------------------------
def test_gpu_accounting_counts_prefill_plus_decode_never_the_router() -> None:
    acct = gpu_accounting(disagg(), base())
    # prefill: 2 replicas x tp4 = 8; decode: 1 replica x tp8 x dp2 = 16 over 2 nodes
    assert (acct.num_prefill_gpus, acct.num_decode_gpus, acct.num_gpus) == (8, 16, 24)
    assert acct.summarize_kwargs() == {"num_prefill_gpus": 8, "num_decode_gpus": 16}
    wide = Deployment.model_validate(
        {
            "kind": "wide_ep",
            "roles": [
                {"role": "both", "nodes": 4, "parallelism": {"tp": 8, "dp": 4, "ep": 32}},
            ],
        }
    )
    assert gpu_accounting(wide, base()).summarize_kwargs() == {"num_gpus": 32}
    roles = [
        {"role": "prefill"},
        {"role": "decode", "nodes": 3, "parallelism": {"tp": 8}},
        {"role": "router"},
    ]
    uneven = disagg(roles=roles)
    with pytest.raises(UserFacingError, match="8 GPUs per replica do not split evenly over 3"):
        gpu_accounting(uneven, base())


def test_summarize_divides_by_the_right_gpus() -> None:
    records = [
        RequestRecord(
            i,
            100,
            10,
            send_ns=0,
            chunk_ns=[(10 + k) * MS for k in range(10)],
            usage_output_tokens=10,
            usage_prompt_tokens=100,
        )
        for i in range(4)
    ]
    acct = gpu_accounting(disagg(), base())
    result = summarize(
        records, window_start_ns=0, window_end_ns=1000 * MS, **acct.summarize_kwargs()
    )
    assert result["num_gpus"] == 24
    assert result["num_prefill_gpus"] == 8 and result["num_decode_gpus"] == 16
    assert result["output_tput_per_gpu"] == pytest.approx(40 / 16)
    assert result["input_tput_per_gpu"] == pytest.approx(400 / 8)
    assert result["tput_per_gpu"] == pytest.approx(440 / 24)


# -- placement and role-aware specs ---------------------------------------------------------------
def test_placement_one_node_per_process_router_on_the_first() -> None:
    dep = disagg()
    assert nodes_needed(dep) == 4
    placed = [
        (p.group.role, p.replica, p.node_rank, p.host, p.head_host, p.port)
        for p in place(dep, base(), HOSTS)
    ]
    assert placed == [
        ("prefill", 0, 0, "n0", "n0", 9001),
        ("prefill", 1, 0, "n1", "n1", 9001),
        ("decode", 0, 0, "n2", "n2", 9002),
        ("decode", 0, 1, "n3", "n2", 9002),
        ("router", 0, 0, "n0", "n0", 9000),
    ]
    with pytest.raises(UserFacingError, match="needs 4 node\\(s\\), the allocation has 3"):
        place(dep, base(), HOSTS[:3])


@hookimpl
def inferx_engine_role_spec(
    server: ServerConfig, platform: Platform, role: RoleContext
) -> LaunchSpec | None:
    """A role-aware fake: the shape of a real PD plugin's answer."""
    if server.engine != fake_engine.ENGINE:
        return None
    if role.role == "router":
        argv = ["router", "--port", str(server.port)]
        for url in role.peers.get("prefill", ()):
            argv += ["--prefill", url]
        for url in role.peers.get("decode", ()):
            argv += ["--decode", url]
    else:
        argv = ["serve", server.model, "--port", str(server.port), "--mode", role.role]
        argv += ["--tp", str(server.parallelism.tp)]
        if role.nodes > 1:
            argv += ["--node-rank", str(role.node_rank)]
            argv += ["--dist", f"{role.head_host}:{role.dist_port}"]
    return LaunchSpec(
        engine=fake_engine.ENGINE,
        argv=tuple(argv),
        host=server.host,
        port=server.port,
        env=dict(server.engine_env),
        gpu_ids=tuple(range(role.gpus_per_node)),
    )


def pm_with_roles() -> Any:
    roles = types.ModuleType("fake_roles")
    roles.inferx_engine_role_spec = inferx_engine_role_spec  # type: ignore[attr-defined]
    return get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("fake", fake_engine), ("fake-roles", roles)],
    )


def test_role_launches_are_role_aware_with_fixes_applied() -> None:
    launches = role_launches(pm_with_roles(), base(), disagg(), Platform(), HOSTS)
    by = {(la.context.role, la.context.replica, la.context.node_rank): la for la in launches}
    assert list(by) == [
        ("prefill", 0, 0),
        ("prefill", 1, 0),
        ("decode", 0, 0),
        ("decode", 0, 1),
        ("router", 0, 0),
    ]
    for la in launches:
        assert la.plugin == "fake-roles"
        assert la.spec.labels["role"] == la.context.role
        assert la.spec.labels["node_rank"] == str(la.context.node_rank)
        # the fake plugin's fix catalogue applies to every process, as for one server
        assert [f.id for f in la.applied_fixes] == ["fake-unbuffered-log"]
        assert la.spec.env["PYTHONUNBUFFERED"] == "1"
        assert la.server.host == "0.0.0.0"  # spread over nodes: reachable from peers
    decode1 = by[("decode", 0, 1)]
    assert decode1.spec.argv[-4:] == ("--node-rank", "1", "--dist", "n2:29500")
    assert decode1.spec.gpu_ids == tuple(range(8))
    assert decode1.spec.env["DECODE_ONLY"] == "1"
    assert by[("prefill", 1, 0)].spec.flag_value("--tp") == "4"
    router = by[("router", 0, 0)]
    assert router.spec.gpu_ids == ()
    assert router.spec.argv == (
        "router",
        "--port",
        "9000",
        "--prefill",
        "http://n0:9001",
        "--prefill",
        "http://n1:9001",
        "--decode",
        "http://n2:9002",
    )
    assert endpoint(launches) == "http://n0:9000"
    # the place travels typed: named, on no SLURM node here, none headless; no label for it
    names = ["prefill-0", "prefill-1", "decode-0-rank0", "decode-0-rank1", "router"]
    assert [la.process for la in launches] == names
    assert all(la.node is None and la.where == la.context.host for la in launches)
    assert not any(la.headless for la in launches)
    assert all(not {"process", "node", "headless"} & set(la.spec.labels) for la in launches)


def test_role_and_single_launches_share_one_hook_and_fixes_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inferx_core.launch import resolve

    hooks: list[str] = []
    real = resolve.hooked_launch

    def spy(pm: Any, hook: str, *args: Any, **kwargs: Any) -> Any:
        hooks.append(hook)
        return real(pm, hook, *args, **kwargs)

    monkeypatch.setattr(resolve, "hooked_launch", spy)
    pm = pm_with_roles()
    role_launches(pm, base(), disagg(), Platform(), HOSTS)
    single = resolve.resolve_launch(pm, base(port=8000), Platform())
    assert hooks == ["inferx_engine_role_spec"] * 5 + ["inferx_engine_launch_spec"]
    assert [f.id for f in single.applied_fixes] == ["fake-unbuffered-log"]


def test_an_engine_without_role_support_is_an_error_not_a_monolith() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    with pytest.raises(UserFacingError, match=r"engine 'fake' .* no launch for role 'prefill'"):
        role_launches(pm, base(), disagg(), Platform(), HOSTS)


def test_docs_multinode_examples_are_valid() -> None:
    import re
    from pathlib import Path

    import yaml

    from inferx_core.config.models import RunConfig

    text = (Path(__file__).parents[3] / "docs" / "multinode.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 2
    for block in blocks:
        run = RunConfig.model_validate(yaml.safe_load(block))  # the whole example, as the CLI
        deployment = run.deployment
        assert deployment is not None
        acct = gpu_accounting(deployment, run.server())
        assert acct.num_gpus > 0 and nodes_needed(deployment) > 1
