"""Every argv inferx_sglang produces is one SGLang 0.5.23's own parser accepts, undeprecated.

SGLang runs in its own interpreter (``.venv-sglang``, made by ``make test``:
``sglang==0.5.23`` installed without its CUDA kernels, plus torch's CPU wheel and
the light modules ``sglang.srt.server_args`` imports). One subprocess there
parses every representative argv with ``prepare_server_args`` -- the function
``sglang.launch_server`` calls -- and the tests check that it parses, that
SGLang warns of no deprecated flag, and that the parsed values are what the
config asked for. The argvs are the plugin's single-server command, every
role of a PD and a wide-EP deployment, and ``inferx plan``'s launch on NVIDIA
and AMD nodes with their fixes applied.

Without the SGLang interpreter the tests skip, saying why; under
``INFERX_REQUIRE_ENGINE=1`` (``make test``) they fail instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.run import plan
from inferx_core.config.models import Parallelism, RunConfig, ServerConfig
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform, load_platform
from inferx_core.sdk.roles import RoleContext
from inferx_sglang import argv_check, hooks, launch, roles

ROOT = Path(__file__).resolve().parents[3]
PLATFORMS = ROOT / "tests" / "platforms"
SGLANG_PYTHON_ENV = "INFERX_SGLANG_PYTHON"
REQUIRE_ENGINE_ENV = "INFERX_REQUIRE_ENGINE"
DSR1 = "deepseek-ai/DeepSeek-R1"

CONFIGS: dict[str, ServerConfig] = {
    "minimal": ServerConfig(engine="sglang", model="Qwen/Qwen3-8B", port=30000),
    "dp-attention-ep-everything": ServerConfig(
        engine="sglang",
        model=DSR1,
        served_model_name="r1",
        port=30001,
        host="0.0.0.0",
        parallelism=Parallelism(tp=8, pp=2, dp=8, dp_attention=True, ep=8),
        gpu_memory_utilization=0.85,
        max_num_seqs=512,
        max_model_len=32768,
        kv_cache_dtype="fp8_e4m3",
        dtype="bfloat16",
        plugin_options={
            "sglang": {
                "chunked_prefill_size": 16384,
                "attention_backend": "fa3",
                "cuda_graph_max_bs": 256,
                "disable_cuda_graph": True,
            }
        },
        engine_args={
            "schedule-policy": "lpm",
            "cuda_graph_bs_decode": ["1", "2", "4"],
            "trust-remote-code": True,
            "moe-a2a-backend": "deepep",
        },
    ),
    "prefix-cache-expert-parallel": ServerConfig(
        engine="sglang",
        model="/models/qwen3-moe",
        port=30002,
        parallelism=Parallelism(tp=4, dp=2, expert_parallel=True),
        prefix_caching=True,
        plugin_options={"sglang": {"chunked_prefill_size": -1}},
        engine_args={"mem_fraction_static": 0.7, "disable-overlap-schedule": True},
    ),
}

ROLE_SERVER = ServerConfig(
    engine="sglang",
    model=DSR1,
    host="0.0.0.0",
    port=30001,
    parallelism=Parallelism(tp=16, dp=16, ep=16, dp_attention=True),
    plugin_options={"sglang": {"disaggregation_ib_device": "mlx5_0,mlx5_1"}},
)
PEERS = {"prefill": ("http://n0:30001",), "decode": ("http://n2:30002",)}


def role_context(role: str, kind: str = "disaggregated", **kw: Any) -> RoleContext:
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


ROLES: dict[str, RoleContext] = {
    "role-prefill": role_context("prefill"),
    "role-decode-rank1-of-2": role_context("decode", nodes=2, node_rank=1, head_host="n2"),
    "role-wide-ep-both-rank3-of-4": role_context("both", "wide_ep", nodes=4, node_rank=3),
}
NODES = ("h100x8", "h200x8", "b200x8", "gb200x4", "mi300x8", "mi325x8", "mi355x8")


def single_server_argv(config: ServerConfig) -> list[str]:
    return argv_check.engine_args_of(launch.build_argv(config))


def role_argv(ctx: RoleContext) -> list[str]:
    spec = hooks.inferx_engine_role_spec(server=ROLE_SERVER, platform=Platform(), role=ctx)
    assert spec is not None
    return argv_check.engine_args_of(spec.argv)


def planned_argv(node: str, output: Path) -> list[str]:
    """``inferx plan`` on a node file: the launch with every fix for that node applied."""
    platform = load_platform(PLATFORMS / f"{node}.json")
    cfg = RunConfig(
        engine="sglang",
        model=DSR1,
        parallelism={"tp": platform.gpu_count, "dp": platform.gpu_count, "dp_attention": True},
        max_num_seqs=256,
        plugin_options={"sglang": {"chunked_prefill_size": 16384}},
        output_dir=output,
    )
    (item,) = plan([cfg], get_plugin_manager(env={}), platform)
    return argv_check.engine_args_of(item["spec"]["argv"])


def sglang_python() -> Path | None:
    given = os.environ.get(SGLANG_PYTHON_ENV)
    python = Path(given) if given else ROOT / ".venv-sglang" / "bin" / "python"
    return python if python.is_file() else None


@pytest.fixture(scope="module")
def argvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    cache = tmp_path_factory.mktemp("cache")
    os.environ.setdefault("INFERX_CACHE_DIR", str(cache))  # the fixes' caches, not the user's
    out = tmp_path_factory.mktemp("results")
    named = {name: single_server_argv(cfg) for name, cfg in CONFIGS.items()}
    named |= {name: role_argv(ctx) for name, ctx in ROLES.items()}
    named |= {f"plan-{node}": planned_argv(node, out / node) for node in NODES}
    return named


@pytest.fixture(scope="module")
def sglang(argvs: dict[str, list[str]]) -> dict[str, Any]:
    """SGLang's verdict on every argv, from one run of its parser."""
    python = sglang_python()
    if python is None:
        why = (
            f"no SGLang interpreter: run `make sglang` (makes .venv-sglang) or set "
            f"{SGLANG_PYTHON_ENV} to a python with sglang=={launch.TARGET_VERSION}"
        )
        if os.environ.get(REQUIRE_ENGINE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENGINE_ENV}=1 but {why}", pytrace=False)
        pytest.skip(why)
    return argv_check.probe(python, argvs)


def test_the_parser_is_the_targeted_release(sglang: dict[str, Any]) -> None:
    assert sglang["version"] == launch.TARGET_VERSION


@pytest.mark.parametrize("name", [*CONFIGS, *ROLES, *(f"plan-{n}" for n in NODES)])
def test_sglang_takes_the_argv_as_it_is(name: str, sglang: dict[str, Any]) -> None:
    problem = argv_check.verdict(sglang["results"][name])
    assert problem is None, f"{name}: {problem}"


def as_text(value: Any) -> Any:
    """SGLang's typed value and the config's, compared as the command line spells them."""
    if isinstance(value, bool):
        return value
    return [str(v) for v in value] if isinstance(value, list) else str(value)


@pytest.mark.parametrize("name", CONFIGS)
def test_parsed_values_are_what_the_config_asked_for(name: str, sglang: dict[str, Any]) -> None:
    config = CONFIGS[name]
    ns = sglang["results"][name]["namespace"]
    par = config.parallelism
    assert ns["model_path"] == config.model
    assert ns["served_model_name"] == config.name_served
    assert (ns["host"], int(ns["port"])) == (config.host, config.port)
    assert int(ns["tp_size"]) == par.tp
    assert int(ns["pp_size"] or 1) == par.pp
    if par.dp_attention:
        assert (int(ns["attn_dp_size"]), int(ns["dp_size"] or 1)) == (par.dp, 1)
    else:
        assert int(ns["dp_size"] or 1) == par.dp
    assert int(ns["ep_size"] or 1) == (par.ep or (par.tp if par.expert_parallel else 1))
    assert ns["disable_radix_cache"] is (not config.prefix_caching)
    assert ns["enable_metrics"] is True
    options = config.plugin_options.get("sglang", {})
    expected = {
        "mem_fraction_static": config.gpu_memory_utilization,
        "max_running_requests": config.max_num_seqs,
        "context_length": config.max_model_len,
        "kv_cache_dtype": config.kv_cache_dtype,
        "dtype": config.dtype,
        "chunked_prefill_size": options.get("chunked_prefill_size"),
        "attention_backend": options.get("attention_backend"),
        "cuda_graph_max_bs_decode": options.get("cuda_graph_max_bs"),
    }
    expected |= {key.replace("-", "_"): value for key, value in config.engine_args.items()}
    for dest, value in expected.items():
        if value is not None:
            assert as_text(ns[dest]) == as_text(value), dest
    if options.get("disable_cuda_graph"):
        assert ns["cuda_graph_backend_decode"] == ns["cuda_graph_backend_prefill"] == "disabled"


def test_roles_parse_to_their_disaggregation_settings(sglang: dict[str, Any]) -> None:
    prefill = sglang["results"]["role-prefill"]["namespace"]
    assert prefill["disaggregation_mode"] == "prefill"
    assert int(prefill["disaggregation_bootstrap_port"]) == roles.DEFAULT_BOOTSTRAP_PORT
    assert prefill["disaggregation_ib_device"] == "mlx5_0,mlx5_1"
    decode = sglang["results"]["role-decode-rank1-of-2"]["namespace"]
    assert decode["disaggregation_mode"] == "decode"
    assert (decode["dist_init_addr"], int(decode["nnodes"]), int(decode["node_rank"])) == (
        "n2:29500",
        2,
        1,
    )
    both = sglang["results"]["role-wide-ep-both-rank3-of-4"]["namespace"]
    assert both["disaggregation_mode"] in (None, "null")
    assert (int(both["nnodes"]), int(both["node_rank"])) == (4, 3)


def test_the_amd_fixes_reach_sglang(sglang: dict[str, Any], argvs: dict[str, list[str]]) -> None:
    """The ROCm variants: inferx-rocm's AITER fix adds its backend, which SGLang parses."""
    ns = sglang["results"]["plan-mi355x8"]["namespace"]
    assert "--attention-backend" in argvs["plan-mi355x8"]
    assert ns["attention_backend"] == "aiter"


def test_a_flag_sglang_does_not_know_fails_with_sglangs_own_message(sglang: Any) -> None:
    python = sglang_python()
    assert python is not None
    answer = argv_check.probe(
        python,
        {
            "unknown": ["--model-path", "m", "--cuda-graph-max-bs", "8"],
            "prefix": ["--model-path", "m", "--enable-metric"],
            "deprecated": ["--model-path", "m", "--dp-size", "2", "--enable-dp-attention"],
        },
    )
    unknown = argv_check.verdict(answer["results"]["unknown"])
    assert unknown is not None and "ambiguous option: --cuda-graph-max-bs could match" in unknown
    prefix = argv_check.verdict(answer["results"]["prefix"])
    assert prefix is not None and "--enable-metric" in prefix
    deprecated = argv_check.verdict(answer["results"]["deprecated"])
    assert deprecated is not None and "--enable-dp-attention" in deprecated
    assert "--attn-dp-size" in deprecated  # SGLang's own advice comes through


# -- `inferx plan --check-args`: the same parser, for a user who has SGLang -----------------------


def plan_config(tmp_path: Path, python: Path | str, **extra: Any) -> Path:
    cfg = {
        "engine": "sglang",
        "model": DSR1,
        "port": 30000,
        "parallelism": {"tp": 8, "dp": 8, "dp_attention": True},
        "executable": [str(python), "-m", "sglang.launch_server"],
        "output_dir": str(tmp_path / "results"),
        **extra,
    }
    path = tmp_path / "sglang.json"
    path.write_text(json.dumps(cfg))
    return path


def inferx_plan(config: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    platform = str(PLATFORMS / "h200x8.json")
    env = {**os.environ, "INFERX_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "inferx_core.cli", "plan", str(config), "--check-args"]
    return subprocess.run(
        [*command, "--platform", platform], capture_output=True, text=True, env=env, timeout=900
    )


def test_plan_check_args_passes_what_sglang_accepts(sglang: Any, tmp_path: Path) -> None:
    python = sglang_python()
    assert python is not None
    done = inferx_plan(plan_config(tmp_path, python), tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"argv accepted by sglang {launch.TARGET_VERSION}'s own parser" in done.stdout


def test_plan_check_args_fails_with_sglangs_own_message(sglang: Any, tmp_path: Path) -> None:
    python = sglang_python()
    assert python is not None
    config = plan_config(tmp_path, python, engine_args={"cuda-graph-max-bs": 8})
    done = inferx_plan(config, tmp_path)
    assert done.returncode == 2
    assert "argv refused" in done.stderr
    assert "ambiguous option: --cuda-graph-max-bs could match" in done.stderr


def test_plan_check_args_says_when_sglang_is_not_where_the_launch_runs(tmp_path: Path) -> None:
    done = inferx_plan(plan_config(tmp_path, sys.executable), tmp_path)  # InferX's: no SGLang
    assert done.returncode == 2
    assert "argv not checked" in done.stderr and "could not run SGLang's parser" in done.stderr
