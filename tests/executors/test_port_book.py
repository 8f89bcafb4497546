"""Every port a deployment's process opens is booked on its host, like ``--port``; plans of
huge counts fail fast with a clear message; booking is linear in the processes (issue 39)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.deployment import MAX_PROCESSES, Deployment
from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.executors import port_book
from inferx_core.executors.deployment_plan import plan_deployment
from inferx_core.executors.multinode import role_contexts
from inferx_core.executors.port_book import MAX_PORT, HostBook
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform

ROOT = Path(__file__).parents[2]
H200 = Platform.model_validate_json((ROOT / "tests" / "platforms" / "h200x8.json").read_text())
BASE = ServerConfig(engine="vllm", model="org/m", port=8000)


@settings(max_examples=40, deadline=None)
@given(asks=st.lists(st.tuples(st.sampled_from("ab"), st.integers(1, 65530), st.integers(1, 4))))
def test_no_two_bookings_on_a_host_share_a_port(asks: list[tuple[str, int, int]]) -> None:
    book = HostBook(BASE)
    taken: dict[str, set[int]] = {}
    for host, wanted, span in asks:
        try:
            first = book.port(host, wanted, span=span)
        except UserFacingError as exc:
            assert "no free port" in str(exc)
            continue
        ports = set(range(first, first + span))
        assert first >= wanted and max(ports) <= MAX_PORT
        assert not ports & taken.setdefault(host, set())
        taken[host] |= ports


def test_booking_is_linear_in_the_ports_booked(monkeypatch: pytest.MonkeyPatch) -> None:
    """3000 processes asking for 8000 on one machine: each free-port test a constant number of
    times, not a rescan of every port below (the count of checks, never a timing)."""
    calls = 0
    free = HostBook._free

    def counted(self: HostBook, host: str, port: int, span: int) -> bool:
        nonlocal calls
        calls += 1
        return free(self, host, port, span)

    monkeypatch.setattr(HostBook, "_free", counted)
    book = HostBook(BASE)
    ports = [book.port("h", 8000) for _ in range(3000)]
    assert ports == list(range(8000, 11000))
    assert calls <= 2 * 3000


def test_a_port_past_65535_is_a_clear_error_naming_the_process() -> None:
    deployment = {
        "kind": "disaggregated",
        "port": 65534,  # router 65534, prefill 65535, decode 65536
        "roles": [{"role": "prefill"}, {"role": "decode"}, {"role": "router"}],
    }
    with pytest.raises(
        UserFacingError,
        match=r"process decode-0 \(its --port\) on 127.0.0.1: no free port from 65536",
    ):
        role_contexts(BASE, Deployment.model_validate(deployment), ["127.0.0.1"] * 2)


HUGE = {
    "replicas": ([{"role": "both", "replicas": 10**9}, {"role": "router"}], "replicas: 1000000000"),
    "nodes": ([{"role": "both", "nodes": 10**6}], "nodes: 1000000 is more than 1024"),
    "processes": (
        [{"role": "both", "replicas": 1024, "nodes": 8}, {"role": "router"}],
        f"8192 engine processes .* more than {MAX_PROCESSES}",
    ),
}


@pytest.mark.parametrize("name", sorted(HUGE))
def test_huge_counts_fail_fast_naming_the_field(name: str) -> None:
    roles, says = HUGE[name]
    with pytest.raises(ValueError, match=says):
        Deployment.model_validate({"kind": "wide_ep", "roles": roles})


def disaggregated(engine: str, **more: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "engine": engine,
            "model": "org/m",
            "parallelism": {"tp": 1},
            "deployment": {
                "kind": "disaggregated",
                "roles": [
                    {"role": "prefill", "replicas": 3},
                    {"role": "decode", "replicas": 2, "nodes": 2, "parallelism": {"tp": 2}},
                    {"role": "router"},
                ],
            },
            **more,
        }
    )


def pm() -> Any:
    return get_plugin_manager(env={"INFERX_DISABLE_PLUGINS": "example-tpu"})


def test_vllm_processes_on_one_machine_get_their_own_nixl_and_rendezvous_ports() -> None:
    plan = plan_deployment(disaggregated("vllm"), pm(), H200)
    engines = [la for la in plan.launches if la.context.role != "router"]
    nixl = [int(la.spec.env["VLLM_NIXL_SIDE_CHANNEL_PORT"]) for la in engines]
    assert len(set(nixl)) == len(engines) and min(nixl) == 5600
    # each replica's own rendezvous port: the decode replicas span two "nodes" on one machine
    decode_heads = [
        la for la in engines if la.context.role == "decode" and la.context.node_rank == 0
    ]
    masters = {la.spec.argv[la.spec.argv.index("--master-port") + 1] for la in decode_heads}
    assert len(masters) == 2
    every = [(la.context.host, p) for la in plan.launches for p in _ports_of(la)]
    assert len(every) == len(set(every)), "two processes on one host share a port"


def _ports_of(launch: Any) -> list[int]:
    ports = [launch.server.port, *launch.context.ports.values()]
    if launch.context.metrics_port:
        ports.append(launch.context.metrics_port)
    return ports


def test_sglang_prefill_servers_get_their_own_bootstrap_port_and_the_router_names_each(
    tmp_path: Path,
) -> None:
    """Through ``inferx plan --json``: what a user reads is what would run."""
    config = tmp_path / "pd.json"
    config.write_text(disaggregated("sglang").model_dump_json(exclude_defaults=True))
    proc = subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "plan", str(config), "--json",
         "--platform", str(ROOT / "tests" / "platforms" / "h200x8.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (item,) = json.loads(proc.stdout)
    by = {p["name"]: p["engine_argv"] for p in item["processes"]}
    boot = [
        by[f"prefill-{i}"][by[f"prefill-{i}"].index("--disaggregation-bootstrap-port") + 1]
        for i in range(3)
    ]
    assert boot == ["8998", "8999", "9000"]
    router = item["router"]["engine_argv"]
    given_to_router = [router[i + 2] for i, a in enumerate(router) if a == "--prefill"]
    assert given_to_router == boot
    inits = {
        by[f"decode-{r}-rank0"][by[f"decode-{r}-rank0"].index("--dist-init-addr") + 1]
        for r in range(2)
    }
    assert len(inits) == 2  # each replica its own rendezvous port (prefill took 29500..29502)


def test_a_thousand_processes_plan_with_a_linear_number_of_port_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    free = HostBook._free

    def counted(self: HostBook, host: str, port: int, span: int) -> bool:
        nonlocal calls
        calls += 1
        return free(self, host, port, span)

    monkeypatch.setattr(port_book.HostBook, "_free", counted)
    deployment = Deployment.model_validate(
        {"kind": "wide_ep", "roles": [{"role": "both", "replicas": 1000}, {"role": "router"}]}
    )
    contexts = role_contexts(BASE, deployment, ["127.0.0.1"] * 1000)
    assert len({ctx.dist_port for _, _, ctx in contexts if ctx.role == "both"}) == 1000
    assert calls <= 4 * 2001
