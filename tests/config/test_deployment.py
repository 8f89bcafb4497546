"""``deployment:`` from a config file through the real CLI: validation, sweeps, ``inferx plan``.

docs/multinode.md's examples are copied unchanged into files and given to
``inferx validate`` and ``inferx plan``; every engine process's argv is then
parsed by the engine's own parser (SGLang in .venv-sglang, vLLM in the engine
venv), as a monolithic server's is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferx_core.config.loader import load_run_configs
from inferx_core.config.points import server_id

ROOT = Path(__file__).parents[2]
PLATFORMS = ROOT / "tests" / "platforms"
REQUIRE_ENGINE_ENV = "INFERX_REQUIRE_ENGINE"


def inferx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def docs_examples() -> list[str]:
    text = (ROOT / "docs" / "multinode.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 2
    return blocks


@pytest.fixture
def examples(tmp_path: Path) -> list[Path]:
    paths = []
    for i, block in enumerate(docs_examples()):
        path = tmp_path / f"example{i}.yaml"
        path.write_text(block, encoding="utf-8")  # unchanged: what a user copies
        paths.append(path)
    return paths


def plan_json(config: Path, *more: str) -> list[dict[str, Any]]:
    proc = inferx(
        "plan", str(config), "--platform", str(PLATFORMS / "h200x8.json"), "--json", *more
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- 1. the docs' examples and validation ---------------------------------------------------------
def test_docs_examples_validate_and_plan_through_the_cli(examples: list[Path]) -> None:
    for path in examples:
        proc = inferx("validate", str(path))
        assert proc.returncode == 0, proc.stderr
        proc = inferx("plan", str(path), "--platform", str(PLATFORMS / "h200x8.json"))
        assert proc.returncode == 0, proc.stderr
        assert "load goes to: http://127.0.0.1:" in proc.stdout


def test_disaggregated_example_plan_shows_every_process(examples: list[Path]) -> None:
    (item,) = plan_json(examples[0])
    names = [p["name"] for p in item["processes"]]
    assert names == ["prefill-0", "prefill-1", "decode-0-rank0", "decode-0-rank1", "router"]
    by = {p["name"]: p for p in item["processes"]}
    assert "--disaggregation-mode" in by["prefill-1"]["engine_argv"]
    assert by["decode-0-rank1"]["engine_argv"][-2:] == ["--node-rank", "1"]
    assert by["decode-0-rank0"]["engine_argv"].count("--cuda-graph-max-bs-decode") == 1
    # one machine: ports and GPUs never shared between processes
    ports = [p["port"] for p in item["processes"]]
    assert len(set(ports)) == len(ports)
    gpus = [g for p in item["processes"] for g in p["gpu_ids"]]
    assert len(set(gpus)) == len(gpus) == 32
    assert by["router"]["gpu_ids"] == [] and item["router"]["name"] == "router"
    assert item["endpoint"] == by["router"]["url"] == "http://127.0.0.1:8000"
    assert item["gpus"]["num_prefill_gpus"] == 16 and item["gpus"]["num_decode_gpus"] == 16
    assert item["gpus"]["by_role"]["router"] == 0 and item["gpus"]["num_gpus"] == 32
    assert by["prefill-0"]["fixes_applied"], "the fix catalogue applies to every process"
    assert any("this machine has 8" in w for w in item["warnings"])


def test_wide_ep_example_plan(examples: list[Path]) -> None:
    (item,) = plan_json(examples[1])
    assert [p["headless"] for p in item["processes"]] == [False, True, True, True]
    assert item["router"] is None and item["endpoint"] == item["processes"][0]["url"]
    assert item["gpus"]["num_gpus"] == 32 and item["gpus"]["num_prefill_gpus"] is None


BASE = "engine: vllm\nmodel: org/m\n"


@pytest.mark.parametrize(
    ("deployment", "message"),
    [
        (
            "{kind: disaggregated, roles: [{role: prefill, parallelism: {tp: 0}}, "
            "{role: decode}, {role: router}]}",
            "role prefill: parallelism.tp: Input should be greater than or equal to 1",
        ),
        (
            "{kind: disaggregated, roles: [{role: prefill}, {role: decode, replica: 2}, "
            "{role: router}]}",
            "role decode: replica: Extra inputs are not permitted",
        ),
        (
            "{kind: disaggregated, roles: [{role: prefill}, "
            "{role: decode, nodes: 3, parallelism: {tp: 8}}, {role: router}]}",
            "role decode: nodes: 8 GPUs per replica",
        ),
        (
            "{kind: wide_ep, roles: [{role: both}, {role: router, replicas: 2}]}",
            "role router: replicas, nodes and parallelism are not for the router",
        ),
        ("{kind: wide_ep, roles: [{role: both, replicas: 2}]}", "role both: several wide_ep"),
        ("{kind: disaggregated, roles: [{role: prefill}, {role: decode}]}", "needs a router"),
    ],
)
def test_bad_deployments_name_the_role_and_field(
    tmp_path: Path, deployment: str, message: str
) -> None:
    path = tmp_path / "dep.yaml"
    path.write_text(f"{BASE}deployment: {deployment}\n")
    proc = inferx("validate", str(path))
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


# -- 1. sweeps vary roles like any other axis -----------------------------------------------------
SWEEP = """
base:
  engine: sglang
  model: org/m
  deployment:
    kind: disaggregated
    roles:
      - {role: prefill, parallelism: {tp: 4}}
      - {role: decode}
      - {role: router}
matrix:
  roles:
    prefill: {replicas: [1, 2]}
    decode: {tp: [8, 16], nodes: [NODES]}
"""


def test_sweep_varies_roles_replicas_and_parallelism(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP.replace("NODES", "1, 2"))
    runs = load_run_configs(path)
    shapes = [server_id(r).removeprefix("m-sglang-") for r in runs]
    assert shapes == [
        "p1xtp4-d1xtp8",
        "p1xtp4-d1xtp16",
        "p1xtp4-d1xtp8n2",
        "p1xtp4-d1xtp16n2",
        "p2xtp4-d1xtp8",
        "p2xtp4-d1xtp16",
        "p2xtp4-d1xtp8n2",
        "p2xtp4-d1xtp16n2",
    ]
    last = runs[-1].deployment
    assert last is not None
    assert last.group("prefill").replicas == 2 and last.group("decode").nodes == 2
    assert last.group("decode").parallelism is not None
    assert last.group("decode").parallelism.tp == 16


def test_sweep_combination_that_cannot_split_names_the_axis(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP.replace("NODES", "3"))
    proc = inferx("validate", str(path))
    assert proc.returncode == 2
    assert "roles.decode.nodes=3" in proc.stderr and "role decode: nodes" in proc.stderr


def test_sweep_role_the_base_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP.replace("NODES", "1").replace("prefill: {replicas", "both: {replicas"))
    proc = inferx("validate", str(path))
    assert proc.returncode == 2 and "matrix.roles.both" in proc.stderr


# -- 2. every role's argv parsed by the engine's own parser ---------------------------------------
def _sglang_python() -> Path:
    python = Path(os.environ.get("INFERX_SGLANG_PYTHON") or ROOT / ".venv-sglang/bin/python")
    if not python.is_file():
        why = "no SGLang interpreter: run `make sglang` (makes .venv-sglang)"
        if os.environ.get(REQUIRE_ENGINE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENGINE_ENV}=1 but {why}", pytrace=False)
        pytest.skip(why)
    return python


def _engine_processes(item: dict[str, Any]) -> dict[str, list[str]]:
    return {p["name"]: p["engine_argv"] for p in item["processes"] if p["role"] != "router"}


@pytest.mark.slow
def test_sglang_parser_accepts_every_disaggregated_role(examples: list[Path]) -> None:
    from inferx_sglang import argv_check

    python = _sglang_python()
    (item,) = plan_json(examples[0])
    argvs = {
        name: argv_check.engine_args_of(argv) for name, argv in _engine_processes(item).items()
    }
    answer = argv_check.probe(python, argvs)
    for name, result in answer["results"].items():
        assert argv_check.verdict(result) is None, (name, argvs[name])
    decode = answer["results"]["decode-0-rank1"]["namespace"]
    assert decode["disaggregation_mode"] == "decode" and decode["node_rank"] == 1
    assert answer["results"]["prefill-0"]["namespace"]["disaggregation_mode"] == "prefill"


VLLM_PD = """
engine: vllm
model: org/m
deployment:
  kind: disaggregated
  roles:
    - {role: prefill, replicas: 2, parallelism: {tp: 4}}
    - {role: decode, nodes: 2, parallelism: {tp: 8, dp: 2, ep: 16}}
    - {role: router}
"""


@pytest.mark.slow
def test_vllm_parser_accepts_every_wide_ep_role(examples: list[Path], tmp_path: Path) -> None:
    from inferx_core.demo.engine import find_engine_python
    from inferx_vllm import argv_check

    python = find_engine_python()
    if python is None:
        if os.environ.get(REQUIRE_ENGINE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENGINE_ENV}=1 but no vLLM engine python", pytrace=False)
        pytest.skip("no vLLM engine python (.venv-engine)")
    (wide,) = plan_json(examples[1])
    dis = tmp_path / "vllm-pd.yaml"
    dis.write_text(VLLM_PD)
    (pd,) = plan_json(dis)
    argvs = {
        f"{tag}-{name}": argv_check.engine_args_of(argv)
        for tag, item in (("wide", wide), ("pd", pd))
        for name, argv in _engine_processes(item).items()
    }
    answer = argv_check.probe(python, argvs)
    for name, result in answer["results"].items():
        assert argv_check.verdict(result) is None, (name, argvs[name])
    assert answer["results"]["wide-both-0-rank3"]["namespace"]["headless"] is True
    assert "kv_consumer" in str(answer["results"]["pd-decode-0-rank0"]["namespace"])
