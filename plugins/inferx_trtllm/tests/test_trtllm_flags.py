"""Every flag and every YAML key inferx_trtllm emits is one trtllm-serve accepts.

TensorRT-LLM needs its own container and is not installable in InferX's test
environment, so the references are tables written from its source:
**TensorRT-LLM 1.x**, ``tensorrt_llm/commands/serve.py`` (the click options of
``trtllm-serve serve``; ``trtllm-serve MODEL`` runs ``serve``) and
``tensorrt_llm/llmapi/llm_args.py`` (TorchLlmArgs, KvCacheConfig,
CudaGraphConfig, MoeConfig: pydantic models with ``extra="forbid"``, so an
unknown YAML key stops the engine at start). An argparse parser built from
the flag table parses each representative argv whole; the YAML keys are
checked against the field tables. These tables are not TensorRT-LLM's parser:
its wheel (``tensorrt-llm``) needs CUDA's libraries to import and cannot be
installed on InferX's CPU-only test machines, so no TensorRT-LLM code reads
this argv in ``make test`` (docs/engines.md says so); a test that would only
run where tensorrt_llm imports was removed, as a check that never runs.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest
import yaml
from flag_tables import flags_of, parser_from_table, unknown_flags

from inferx_core.config.models import Parallelism, ServerConfig
from inferx_trtllm import launch

SOURCE = "TensorRT-LLM 1.x tensorrt_llm/commands/serve.py (trtllm-serve serve)"

# flag (with aliases) -> (dest, kind); kind: "value" or "switch" (click is_flag)
SERVE_FLAGS: dict[tuple[str, ...], tuple[str, str]] = {
    ("--tokenizer",): ("tokenizer", "value"),
    ("--host",): ("host", "value"),
    ("--port",): ("port", "value"),
    ("--backend",): ("backend", "value"),
    ("--log_level",): ("log_level", "value"),
    ("--max_beam_width",): ("max_beam_width", "value"),
    ("--max_batch_size",): ("max_batch_size", "value"),
    ("--max_num_tokens",): ("max_num_tokens", "value"),
    ("--max_seq_len",): ("max_seq_len", "value"),
    ("--tensor_parallel_size", "--tp_size"): ("tensor_parallel_size", "value"),
    ("--pipeline_parallel_size", "--pp_size"): ("pipeline_parallel_size", "value"),
    ("--moe_expert_parallel_size", "--ep_size"): ("moe_expert_parallel_size", "value"),
    ("--moe_cluster_parallel_size", "--cluster_size"): ("moe_cluster_parallel_size", "value"),
    ("--gpus_per_node",): ("gpus_per_node", "value"),
    ("--free_gpu_memory_fraction", "--kv_cache_free_gpu_memory_fraction"): (
        "free_gpu_memory_fraction",
        "value",
    ),
    ("--num_postprocess_workers",): ("num_postprocess_workers", "value"),
    ("--trust_remote_code",): ("trust_remote_code", "switch"),
    ("--extra_llm_api_options", "--config"): ("extra_llm_api_options", "value"),
    ("--reasoning_parser",): ("reasoning_parser", "value"),
    ("--metadata_server_config_file",): ("metadata_server_config_file", "value"),
    ("--server_role",): ("server_role", "value"),
}
FLAGS = flags_of(SERVE_FLAGS)

# LLM API (TorchLlmArgs) keys InferX may write, with the sub-fields it uses.
LLM_API_FIELDS: dict[str, set[str] | None] = {
    "kv_cache_config": {"enable_block_reuse", "dtype", "free_gpu_memory_fraction"},
    "cuda_graph_config": {"batch_sizes", "max_batch_size", "enable_padding"},
    "moe_config": {"backend"},
    "enable_attention_dp": None,
    "stream_interval": None,
    "return_perf_metrics": None,
    "enable_iter_perf_stats": None,
}


def reference_parser() -> argparse.ArgumentParser:
    return parser_from_table("trtllm-serve serve", SERVE_FLAGS, ["model"])


CONFIGS: dict[str, ServerConfig] = {
    "minimal": ServerConfig(engine="trtllm", model="meta-llama/Llama-3.1-8B-Instruct", port=8000),
    "moe-attention-dp-everything": ServerConfig(
        engine="trtllm",
        model="nvidia/DeepSeek-R1-FP4",
        port=8001,
        host="0.0.0.0",
        parallelism=Parallelism(tp=8, dp=8, dp_attention=True, ep=8),
        max_num_seqs=512,
        max_model_len=9216,
        gpu_memory_utilization=0.8,
        kv_cache_dtype="fp8",
        plugin_options={
            "trtllm": {
                "max_num_tokens": 8448,
                "moe_backend": "CUTLASS",
                "stream_interval": 10,
                "cuda_graph_batch_sizes": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
            }
        },
        engine_args={"trust_remote_code": True, "log_level": "info"},
    ),
    "pp-no-graphs-mpirun": ServerConfig(
        engine="trtllm",
        model="/models/llama-70b",
        port=8002,
        parallelism=Parallelism(tp=4, pp=2),
        prefix_caching=True,
        plugin_options={
            "trtllm": {"cuda_graphs": False, "mpi": "mpirun", "prometheus_metrics": False}
        },
    ),
}


def args_of(config: ServerConfig) -> list[str]:
    argv = launch.build_argv(config)
    return argv[argv.index(launch.DEFAULT_EXECUTABLE[0]) + 1 :]


def yaml_of(config: ServerConfig) -> dict[str, Any]:
    return yaml.safe_load(launch.llm_api_yaml(config))


@pytest.mark.parametrize("name", CONFIGS)
def test_every_emitted_flag_exists(name: str) -> None:
    unknown = unknown_flags(args_of(CONFIGS[name]), FLAGS)
    assert not unknown, f"not in {SOURCE}: {unknown}"


@pytest.mark.parametrize("name", CONFIGS)
def test_whole_argv_parses_to_what_the_config_asked_for(name: str) -> None:
    config = CONFIGS[name]
    ns = reference_parser().parse_args(args_of(config))
    par = config.parallelism
    assert ns.model == config.model and ns.backend == "pytorch"
    assert (ns.host, int(ns.port)) == (config.host, config.port)
    assert int(ns.tensor_parallel_size) == par.tp
    assert int(ns.pipeline_parallel_size) == par.pp
    assert ns.moe_expert_parallel_size == (str(par.ep) if par.ep else None)
    assert ns.max_batch_size == (str(config.max_num_seqs) if config.max_num_seqs else None)
    assert ns.max_seq_len == (str(config.max_model_len) if config.max_model_len else None)
    options = config.plugin_options.get("trtllm", {})
    assert ns.max_num_tokens == (
        str(options["max_num_tokens"]) if "max_num_tokens" in options else None
    )
    assert ns.extra_llm_api_options == "{run_dir}/extra_llm_api_options.yaml"
    assert ns.free_gpu_memory_fraction is None  # it lives in the YAML (see plugin doc)
    assert ns.trust_remote_code is bool(config.engine_args.get("trust_remote_code"))


@pytest.mark.parametrize("name", CONFIGS)
def test_yaml_keys_are_llm_api_fields(name: str) -> None:
    data = yaml_of(CONFIGS[name])
    unknown = set(data) - set(LLM_API_FIELDS)
    assert not unknown, f"not TorchLlmArgs fields: {unknown}"
    for key, value in data.items():
        fields = LLM_API_FIELDS[key]
        if fields is not None and value is not None:
            assert set(value) <= fields, (key, set(value) - fields)
    assert data["kv_cache_config"]["enable_block_reuse"] is CONFIGS[name].prefix_caching


def test_mpirun_wraps_the_same_command() -> None:
    argv = launch.build_argv(CONFIGS["pp-no-graphs-mpirun"])
    assert argv[: len(launch.DEFAULT_MPIRUN)] == list(launch.DEFAULT_MPIRUN)
    assert argv[len(launch.DEFAULT_MPIRUN)] == "trtllm-serve"


def test_own_flags_and_aliases_are_in_the_table() -> None:
    own = {
        "--backend",
        "--host",
        "--port",
        "--tp_size",
        "--pp_size",
        "--ep_size",
        "--max_batch_size",
        "--max_num_tokens",
        "--max_seq_len",
        "--extra_llm_api_options",
    }
    assert own <= FLAGS
    assert set(launch.ALIASES) <= FLAGS and set(launch.ALIASES.values()) <= FLAGS
