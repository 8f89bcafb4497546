"""One SGLang server (``python3 -m sglang.launch_server``): its command, readiness,
metrics and tokenize routes.

The hooks module (:mod:`inferx_sglang.hooks`) answers the InferX hooks from
here; the processes of a PD or wide-EP deployment (:mod:`inferx_sglang.roles`)
start from :func:`launch_spec`.

The command follows SGLang's ServerArgs as of **v0.5.23** (``TARGET_VERSION``;
``make test`` parses every argv with that release's own parser) and the public
benchmark recipes::

    python3 -m sglang.launch_server --model-path M --served-model-name N
        --host H --port P --tensor-parallel-size TP [--pp-size PP]
        [--dp-size DP | --attn-dp-size DP] [--ep-size EP]
        [--mem-fraction-static F] [--max-running-requests N] [--context-length L]
        [--chunked-prefill-size C] [--attention-backend B] [--cuda-graph-max-bs-decode N]
        [--cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled]
        --disable-radix-cache [--kv-cache-dtype D] [--dtype D]
        --enable-metrics [engine_args...] [extra_argv...]

- DP attention (``parallelism: {dp: N, dp_attention: true}``) is
  ``--attn-dp-size N``: N attention groups inside the TP group (v0.5.22
  deprecates ``--dp-size N --enable-dp-attention``, which an older SGLang read
  from the image gets: :mod:`inferx_sglang.versions`); ``dp_attention`` without
  ``dp > 1`` is refused, never dropped.
- ``cuda_graph_max_bs`` is the decode graphs' ``--cuda-graph-max-bs-decode``;
  ``disable_cuda_graph`` disables both phases' graphs (the old
  ``--disable-cuda-graph`` is deprecated).

- ``gpu_memory_utilization`` becomes ``--mem-fraction-static`` (SGLang's
  fraction of GPU memory for weights and KV cache), ``max_num_seqs``
  ``--max-running-requests``, ``max_model_len`` ``--context-length``.
- The radix (prefix) cache is off unless ``prefix_caching: true``: random
  benchmark prompts must not hit a cache.
- ``--enable-metrics`` is always on, so InferX can scrape ``sglang:*``.
- ``plugin_options: {sglang: {...}}`` (checked, see :class:`SGLangOptions`):
  ``attention_backend``, ``chunked_prefill_size``, ``cuda_graph_max_bs``,
  ``disable_cuda_graph``.
- ``engine_args`` are SGLang flags (``{schedule-policy: lpm}``); one that
  names a flag InferX already set replaces its value (``false`` removes a
  switch). Parallelism and identity flags (``tp-size``, ``dp-size``,
  ``port``...) are refused there: InferX counts GPUs from ``parallelism``.
- ROCm switches (AITER, ``--attention-backend aiter``) come from inferx-rocm's
  fixes, never from here.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

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
    plugin_options,
    port_free_wait,
    set_flag,
    tiny_completion_probe,
)
from inferx_sglang.speculative import speculative_argv
from inferx_sglang.versions import dp_attention_argv

ENGINE = "sglang"
#: The SGLang release whose ServerArgs the argv is written for and checked against.
TARGET_VERSION = "0.5.23"
DEFAULT_EXECUTABLE = ("python3", "-m", "sglang.launch_server")
PLUGIN_OPTIONS_KEY = "sglang"

#: Flags with more than one spelling in ServerArgs: alias -> the spelling InferX emits.
ALIASES = {
    "--tp-size": "--tensor-parallel-size",
    "--pipeline-parallel-size": "--pp-size",
    "--data-parallel-size": "--dp-size",
    "--attention-data-parallel-size": "--attn-dp-size",
    "--expert-parallel-size": "--ep-size",
    "--ep": "--ep-size",
    "--model": "--model-path",
}
#: Flags InferX derives from the config; engine_args may not set them (-> the config field).
RESERVED = {
    "--model-path": "model",
    "--served-model-name": "served_model_name",
    "--host": "host",
    "--port": "port",
    "--tensor-parallel-size": "parallelism.tp",
    "--pp-size": "parallelism.pp",
    "--dp-size": "parallelism.dp",
    "--ep-size": "parallelism.ep",
    "--attn-dp-size": "parallelism.dp with parallelism.dp_attention",
    "--enable-dp-attention": "parallelism.dp_attention",
}


class SGLangOptions(BaseModel):
    """``plugin_options.sglang``: SGLang settings InferX knows by name."""

    model_config = ConfigDict(extra="forbid")

    attention_backend: str | None = Field(
        default=None, description="--attention-backend (fa3, flashinfer, triton, trtllm_mla...)"
    )
    chunked_prefill_size: int | None = Field(
        default=None, description="--chunked-prefill-size (tokens; -1 disables chunking)"
    )
    cuda_graph_max_bs: int | None = Field(
        default=None, ge=1, description="--cuda-graph-max-bs-decode (decode graphs' largest batch)"
    )
    disable_cuda_graph: bool = Field(
        default=False,
        description="--cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled",
    )


def options(server: ServerConfig) -> SGLangOptions:
    return plugin_options(server, PLUGIN_OPTIONS_KEY, SGLangOptions, "attention_backend: fa3")


def engine_info() -> EngineInfo:
    return EngineInfo(
        name=ENGINE,
        description="SGLang server (sglang.launch_server), CUDA and ROCm builds",
        homepage="https://docs.sglang.ai",
        default_port=30000,
        version_path="/get_server_info",
        version_field="version",
    )


def flag_name(key: str) -> str:
    """An engine_args key as SGLang's flag: 'chunked_prefill_size' -> '--chunked-prefill-size'."""
    flag = "--" + key.removeprefix("--").replace("_", "-")
    return ALIASES.get(flag, flag)


def _parallelism_argv(server: ServerConfig, version: str | None = None) -> list[str]:
    par = server.parallelism
    if par.dp_attention and par.dp < 2:
        raise UserFacingError(
            "parallelism.dp_attention needs parallelism.dp > 1 (the number of attention "
            f"data-parallel groups, SGLang's --attn-dp-size); got dp={par.dp}"
        )
    argv = ["--tensor-parallel-size", str(par.tp)]
    if par.pp > 1:
        argv += ["--pp-size", str(par.pp)]
    if par.dp > 1 and par.dp_attention:
        argv += dp_attention_argv(par.dp, version)[0]  # the form of the version that runs
    elif par.dp > 1:
        argv += ["--dp-size", str(par.dp)]
    ep = par.ep or (par.tp if par.expert_parallel else None)
    if ep and ep > 1:
        argv += ["--ep-size", str(ep)]
    return argv


def _tuning_argv(server: ServerConfig) -> list[str]:
    """Flags for the memory, batching and kernel settings of the config and its sglang options."""
    opts = options(server)
    argv: list[str] = []
    for flag, value in (
        ("--mem-fraction-static", server.gpu_memory_utilization),
        ("--max-running-requests", server.max_num_seqs),
        ("--context-length", server.max_model_len),
        ("--chunked-prefill-size", opts.chunked_prefill_size),
    ):
        if value is not None:
            argv += [flag, str(value)]
    if opts.attention_backend:
        argv += ["--attention-backend", opts.attention_backend]
    if opts.cuda_graph_max_bs is not None:
        argv += ["--cuda-graph-max-bs-decode", str(opts.cuda_graph_max_bs)]
    if opts.disable_cuda_graph:
        argv += ["--cuda-graph-backend-decode", "disabled"]
        argv += ["--cuda-graph-backend-prefill", "disabled"]
    if not server.prefix_caching:
        argv.append("--disable-radix-cache")
    if server.kv_cache_dtype:
        argv += ["--kv-cache-dtype", server.kv_cache_dtype]
    if server.dtype:
        argv += ["--dtype", server.dtype]
    return argv


def build_argv(server: ServerConfig, version: str | None = None) -> list[str]:
    """The launch_server argv for ``server`` (``server.port`` must be set) on SGLang
    ``version`` (None: :data:`TARGET_VERSION`'s flag forms; see :mod:`inferx_sglang.versions`)."""
    argv = [*(server.executable or DEFAULT_EXECUTABLE), "--model-path", server.model]
    argv += ["--served-model-name", server.name_served]
    argv += ["--host", server.host, "--port", str(server.port)]
    argv += _parallelism_argv(server, version)
    argv += _tuning_argv(server)
    argv += speculative_argv(server)
    argv.append("--enable-metrics")
    for key, value in server.engine_args.items():
        flag = flag_name(key)
        if flag in RESERVED:
            raise UserFacingError(
                f"engine_args.{key}: set `{RESERVED[flag]}` in the config instead (InferX "
                "derives the GPU count and the served name from it)"
            )
        set_flag(argv, flag, value)
    return argv + list(server.extra_argv)


def launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    assert server.port is not None
    # the version that will run: read from the image for a docker launch
    version = platform.software.get("sglang")
    par = server.parallelism
    warning = dp_attention_argv(par.dp, version)[1] if par.dp_attention else None
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(build_argv(server, version)),
        warnings=(warning,) if warning else (),
        env=dict(server.engine_env),
        image=server.image,
        host=server.host,
        port=server.port,
        gpu_ids=default_gpu_ids(server, platform),
        ipc_host=server.image is not None,
        shm_size="32g" if server.image else None,
        preflight=(port_free_wait(server.port),),
        labels={"engine": ENGINE, "model": server.model},
    )


def readiness_probes() -> list[ReadinessProbe]:
    return [
        # 200 once the tokenizer manager and schedulers are up (after SGLang's own warmup).
        ReadinessProbe(name="health", path="/health"),
        ReadinessProbe(
            name="model listed", path="/v1/models", expect_in_body="{served_model_name}"
        ),
        # One token through the OpenAI route the benchmark uses.
        tiny_completion_probe("tiny generation"),
    ]


def metrics_map() -> EngineMetricsMap:
    """SGLang's Prometheus names (``--enable-metrics``), one series per DP rank."""
    return EngineMetricsMap(
        kv_cache_usage="sglang:token_usage",  # 0..1 fraction of KV slots in use
        requests_running="sglang:num_running_reqs",
        requests_waiting="sglang:num_queue_reqs",
        spec_decode_accept_length="sglang:spec_accept_length",  # a gauge: mean accepted per step
        extra={
            "gen_throughput": "sglang:gen_throughput",  # tok/s, summed over DP ranks
            "kv_used_tokens": "sglang:num_used_tokens",
            "cache_hit_rate": "sglang:cache_hit_rate",  # prefix (radix) cache hit rate, 0..1
        },
    )


def _tokenize(name: str, prefix: str) -> TokenizeEndpoint:
    """SGLang's tokenizer routes (sglang/srt/entrypoints/openai/serving_tokenize.py:
    TokenizeRequest {model, prompt, add_special_tokens} -> {tokens, count, max_model_len};
    DetokenizeRequest {model, tokens} -> DetokenizeResponse {text})."""
    return TokenizeEndpoint(
        name=name,
        path=f"{prefix}/tokenize",
        text_field="prompt",
        add_special_field="add_special_tokens",
        model_field="model",
        tokens_field="tokens",
        max_model_len_field="max_model_len",
        detokenize_path=f"{prefix}/detokenize",
        detokenize_tokens_field="tokens",
        detokenize_text_fields=("text",),
    )


#: The native routes first, then the OpenAI-style ``/v1`` ones (a router may proxy only these).
TOKENIZE = (_tokenize(ENGINE, ""), _tokenize(f"{ENGINE}-v1", "/v1"))


def tokenize_endpoints() -> list[TokenizeEndpoint]:
    return list(TOKENIZE)
