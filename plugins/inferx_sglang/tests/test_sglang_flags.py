"""Every flag inferx_sglang emits is one SGLang's launch_server accepts, with the right arity.

SGLang needs a GPU build and is not installable in InferX's test environment,
so the reference is a table of ServerArgs flags written from SGLang's source:
**sglang v0.5.x** (v0.5.2 to v0.5.5), ``python/sglang/srt/server_args.py``,
``ServerArgs.add_cli_args``; only flags present throughout v0.5.x are listed.
An argparse parser built from the table parses each representative argv
whole, and the parsed values must be what the config asked for. Where SGLang
itself is importable, the last test checks the same argvs against its real
parser instead.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest
from flag_tables import flags_of, parser_from_table, unknown_flags

from inferx_core.config.models import Parallelism, ServerConfig
from inferx_sglang import plugin

SOURCE = "sglang v0.5.x python/sglang/srt/server_args.py ServerArgs.add_cli_args"

# flag (with aliases) -> (dest, kind); kind: "value", "switch" (store_true) or "list" (nargs="+")
SERVER_ARGS: dict[tuple[str, ...], tuple[str, str]] = {
    ("--model-path", "--model"): ("model_path", "value"),
    ("--tokenizer-path",): ("tokenizer_path", "value"),
    ("--host",): ("host", "value"),
    ("--port",): ("port", "value"),
    ("--skip-server-warmup",): ("skip_server_warmup", "switch"),
    ("--trust-remote-code",): ("trust_remote_code", "switch"),
    ("--dtype",): ("dtype", "value"),
    ("--kv-cache-dtype",): ("kv_cache_dtype", "value"),
    ("--quantization",): ("quantization", "value"),
    ("--load-format",): ("load_format", "value"),
    ("--context-length",): ("context_length", "value"),
    ("--served-model-name",): ("served_model_name", "value"),
    ("--revision",): ("revision", "value"),
    ("--mem-fraction-static",): ("mem_fraction_static", "value"),
    ("--max-running-requests",): ("max_running_requests", "value"),
    ("--max-total-tokens",): ("max_total_tokens", "value"),
    ("--chunked-prefill-size",): ("chunked_prefill_size", "value"),
    ("--max-prefill-tokens",): ("max_prefill_tokens", "value"),
    ("--schedule-policy",): ("schedule_policy", "value"),
    ("--schedule-conservativeness",): ("schedule_conservativeness", "value"),
    ("--page-size",): ("page_size", "value"),
    ("--tensor-parallel-size", "--tp-size"): ("tp_size", "value"),
    ("--pipeline-parallel-size", "--pp-size"): ("pp_size", "value"),
    ("--data-parallel-size", "--dp-size"): ("dp_size", "value"),
    ("--expert-parallel-size", "--ep-size", "--ep"): ("ep_size", "value"),
    ("--enable-dp-attention",): ("enable_dp_attention", "switch"),
    ("--enable-dp-lm-head",): ("enable_dp_lm_head", "switch"),
    ("--moe-a2a-backend",): ("moe_a2a_backend", "value"),
    ("--moe-runner-backend",): ("moe_runner_backend", "value"),
    ("--stream-interval",): ("stream_interval", "value"),
    ("--random-seed",): ("random_seed", "value"),
    ("--watchdog-timeout",): ("watchdog_timeout", "value"),
    ("--base-gpu-id",): ("base_gpu_id", "value"),
    ("--log-level",): ("log_level", "value"),
    ("--enable-metrics",): ("enable_metrics", "switch"),
    ("--attention-backend",): ("attention_backend", "value"),
    ("--sampling-backend",): ("sampling_backend", "value"),
    ("--disable-radix-cache",): ("disable_radix_cache", "switch"),
    ("--cuda-graph-max-bs",): ("cuda_graph_max_bs", "value"),
    ("--cuda-graph-bs",): ("cuda_graph_bs", "list"),
    ("--disable-cuda-graph",): ("disable_cuda_graph", "switch"),
    ("--disable-cuda-graph-padding",): ("disable_cuda_graph_padding", "switch"),
    ("--enable-torch-compile",): ("enable_torch_compile", "switch"),
    ("--disable-overlap-schedule",): ("disable_overlap_schedule", "switch"),
    ("--enable-mixed-chunk",): ("enable_mixed_chunk", "switch"),
    ("--speculative-algorithm",): ("speculative_algorithm", "value"),
    ("--dist-init-addr",): ("dist_init_addr", "value"),
    ("--nnodes",): ("nnodes", "value"),
    ("--node-rank",): ("node_rank", "value"),
}
FLAGS = flags_of(SERVER_ARGS)


def reference_parser() -> argparse.ArgumentParser:
    return parser_from_table("sglang.launch_server", SERVER_ARGS)


CONFIGS: dict[str, ServerConfig] = {
    "minimal": ServerConfig(engine="sglang", model="Qwen/Qwen3-8B", port=30000),
    "dp-attention-ep-everything": ServerConfig(
        engine="sglang",
        model="deepseek-ai/DeepSeek-R1",
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
            "cuda_graph_bs": ["1", "2", "4"],
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


def args_of(config: ServerConfig) -> list[str]:
    return plugin.build_argv(config)[len(plugin.DEFAULT_EXECUTABLE) :]


@pytest.mark.parametrize("name", CONFIGS)
def test_every_emitted_flag_exists(name: str) -> None:
    unknown = unknown_flags(args_of(CONFIGS[name]), FLAGS)
    assert not unknown, f"not in {SOURCE}: {unknown}"


@pytest.mark.parametrize("name", CONFIGS)
def test_whole_argv_parses_to_what_the_config_asked_for(name: str) -> None:
    config = CONFIGS[name]
    ns = reference_parser().parse_args(args_of(config))
    par = config.parallelism
    assert ns.model_path == config.model
    assert ns.served_model_name == config.name_served
    assert (ns.host, int(ns.port)) == (config.host, config.port)
    assert int(ns.tp_size) == par.tp
    assert int(ns.pp_size or 1) == par.pp
    assert int(ns.dp_size or 1) == par.dp
    assert ns.enable_dp_attention is (par.dp > 1 and par.dp_attention)
    expected_ep = par.ep or (par.tp if par.expert_parallel else 1)
    assert int(ns.ep_size or 1) == expected_ep
    assert ns.disable_radix_cache is (not config.prefix_caching)
    assert ns.enable_metrics is True
    fields = {
        "mem_fraction_static": config.gpu_memory_utilization,
        "max_running_requests": config.max_num_seqs,
        "context_length": config.max_model_len,
        "kv_cache_dtype": config.kv_cache_dtype,
        "dtype": config.dtype,
    }
    options = config.plugin_options.get("sglang", {})
    fields |= {k: v for k, v in options.items() if k != "disable_cuda_graph"}
    for key, value in config.engine_args.items():
        fields[key.replace("-", "_")] = value
    for dest, value in fields.items():
        if value is None:
            continue
        got = getattr(ns, dest)
        if isinstance(value, bool):
            assert got is value, dest
        elif isinstance(value, list):
            assert got == value, dest
        else:
            assert str(got) == str(value), dest
    assert ns.disable_cuda_graph is bool(options.get("disable_cuda_graph"))


def test_flags_inferx_itself_emits_are_in_the_table() -> None:
    own = {
        "--model-path",
        "--served-model-name",
        "--host",
        "--port",
        "--tensor-parallel-size",
        "--pp-size",
        "--dp-size",
        "--enable-dp-attention",
        "--ep-size",
        "--mem-fraction-static",
        "--max-running-requests",
        "--context-length",
        "--chunked-prefill-size",
        "--attention-backend",
        "--cuda-graph-max-bs",
        "--disable-cuda-graph",
        "--disable-radix-cache",
        "--kv-cache-dtype",
        "--dtype",
        "--enable-metrics",
    }
    assert own <= FLAGS
    assert set(plugin.ALIASES) <= FLAGS and set(plugin.ALIASES.values()) <= FLAGS


def test_against_the_real_server_args_when_sglang_is_installed() -> None:
    server_args = pytest.importorskip("sglang.srt.server_args", reason="sglang not installed")
    parser = argparse.ArgumentParser()
    server_args.ServerArgs.add_cli_args(parser)
    for name, config in CONFIGS.items():
        ns: Any = parser.parse_args(args_of(config))
        assert ns.model_path == config.model, name
