"""How TensorRT-LLM is launched (``trtllm-serve MODEL --backend pytorch``);
:mod:`inferx_trtllm.hooks` answers the InferX hooks from here.

The command follows ``trtllm-serve serve`` of TensorRT-LLM 1.x (``trtllm-serve
MODEL`` runs the ``serve`` sub-command)::

    trtllm-serve MODEL --backend pytorch --host H --port P --tp_size TP --pp_size PP
        [--ep_size EP] [--max_batch_size N] [--max_num_tokens T] [--max_seq_len L]
        --extra_llm_api_options {run_dir}/extra_llm_api_options.yaml
        [engine_args...] [extra_argv...]

The YAML file holds the LLM API settings that have no flag, written from the
config into the run folder before the start (``LaunchSpec.files``; the
launcher replaces ``{run_dir}``) and recorded in every result with the spec:

- ``kv_cache_config``: ``enable_block_reuse`` (false unless
  ``prefix_caching: true``; TensorRT-LLM's default is true), ``dtype`` from
  ``kv_cache_dtype``, ``free_gpu_memory_fraction``. The fraction lives here and
  not in ``--kv_cache_free_gpu_memory_fraction``: a ``kv_cache_config`` in
  the YAML replaces the whole KvCacheConfig the flag built.
- ``cuda_graph_config``: ``enable_padding`` and ``max_batch_size`` (or
  ``batch_sizes``), or null to turn CUDA graphs off.
- ``moe_config.backend``, ``enable_attention_dp`` (``parallelism.dp_attention``),
  ``stream_interval``, and ``return_perf_metrics`` + ``enable_iter_perf_stats``
  so ``/prometheus/metrics`` has the numbers InferX scrapes.
- ``plugin_options.trtllm.extra_llm_api_options``: anything else, merged last.

Inside a SLURM allocation or under an MPI launcher, trtllm-serve would try to
join that MPI world and hang; ``plugin_options.trtllm.mpi`` chooses:
``unset_env`` (default: SLURM_*, PMI*, PMIX_*, OMPI_* removed from its
environment), ``mpirun`` (also wrapped in ``mpirun -n 1 --oversubscribe
--allow-run-as-root``, or ``mpirun_argv``), or ``inherit`` (left alone).
"""

from __future__ import annotations

from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from inferx_core import (
    EngineInfo,
    EngineMetricsMap,
    LaunchSpec,
    Platform,
    ReadinessProbe,
    ServerConfig,
    UserFacingError,
    default_gpu_ids,
    plugin_options,
    port_free_wait,
    set_flag,
    tiny_completion_probe,
)
from inferx_trtllm.speculative import speculative_options

ENGINE = "trtllm"
DEFAULT_EXECUTABLE = ("trtllm-serve",)
PLUGIN_OPTIONS_KEY = "trtllm"
EXTRA_OPTIONS_FILE = "extra_llm_api_options.yaml"
#: The launcher replaces {run_dir} with the run folder as the engine sees it.
EXTRA_OPTIONS_PATH = "{run_dir}/" + EXTRA_OPTIONS_FILE
# trtllm-serve started inside a SLURM allocation or an MPI launcher tries to
# join that MPI world and hangs; the engine must not inherit these.
MPI_ENV_PATTERNS = ("SLURM_*", "PMI*", "PMIX_*", "OMPI_*")
DEFAULT_MPIRUN = ("mpirun", "-n", "1", "--oversubscribe", "--allow-run-as-root")
#: moe_config.backend values of TensorRT-LLM 1.x.
MOE_BACKENDS = ("CUTLASS", "TRTLLM", "DEEPGEMM", "WIDEEP", "CUTEDSL", "TRITON", "VANILLA")
#: NVIDIA's recommended limits for TensorRT-LLM containers (docker run --ulimit).
CONTAINER_ULIMITS = {"memlock": -1, "stack": 67108864}

#: Flag spellings trtllm-serve accepts for one option: alias -> the one InferX emits.
ALIASES = {
    "--tensor_parallel_size": "--tp_size",
    "--pipeline_parallel_size": "--pp_size",
    "--moe_expert_parallel_size": "--ep_size",
    "--config": "--extra_llm_api_options",
    "--free_gpu_memory_fraction": "--kv_cache_free_gpu_memory_fraction",
}
#: Flags engine_args may not set, and where the value belongs instead.
RESERVED = {
    "--host": "host",
    "--port": "port",
    "--tp_size": "parallelism.tp",
    "--pp_size": "parallelism.pp",
    "--ep_size": "parallelism.ep",
    "--extra_llm_api_options": "plugin_options.trtllm.extra_llm_api_options",
    "--kv_cache_free_gpu_memory_fraction": (
        "plugin_options.trtllm.kv_cache_free_gpu_memory_fraction (the YAML's kv_cache_config "
        "replaces the value of this flag)"
    ),
}
#: LLM API keys the free-form YAML may not set, and where the value belongs instead.
RESERVED_API_KEYS = {
    "model": "model",
    "tensor_parallel_size": "parallelism.tp",
    "pipeline_parallel_size": "parallelism.pp",
    "moe_expert_parallel_size": "parallelism.ep",
    "enable_attention_dp": "parallelism.dp_attention",
    "backend": "engine_args.backend",
    "speculative_config": "speculative",
}


class TrtllmOptions(BaseModel):
    """``plugin_options.trtllm``: TensorRT-LLM settings InferX knows by name."""

    model_config = ConfigDict(extra="forbid")

    mpi: Literal["unset_env", "mpirun", "inherit"] = Field(
        default="unset_env",
        description="how the engine escapes an outer SLURM/MPI world (see module doc)",
    )
    mpirun_argv: list[str] = Field(
        default_factory=lambda: list(DEFAULT_MPIRUN), description="prefix for mpi: mpirun"
    )
    max_num_tokens: int | None = Field(default=None, ge=1, description="--max_num_tokens")
    kv_cache_free_gpu_memory_fraction: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="kv_cache_config.free_gpu_memory_fraction (of the memory left after the "
        "weights); default: gpu_memory_utilization when set",
    )
    cuda_graphs: bool = Field(default=True, description="false: cuda_graph_config: null")
    cuda_graph_batch_sizes: list[int] | None = Field(
        default=None, description="cuda_graph_config.batch_sizes"
    )
    cuda_graph_max_batch_size: int | None = Field(
        default=None, ge=1, description="cuda_graph_config.max_batch_size (default max_num_seqs)"
    )
    cuda_graph_padding: bool = Field(default=True, description="cuda_graph_config.enable_padding")
    moe_backend: str | None = Field(default=None, description="moe_config.backend")
    stream_interval: int | None = Field(default=None, ge=1, description="stream_interval")
    prometheus_metrics: bool = Field(
        default=True,
        description="return_perf_metrics + enable_iter_perf_stats for /prometheus/metrics",
    )
    extra_llm_api_options: dict[str, Any] = Field(
        default_factory=dict, description="more LLM API settings, merged last"
    )


def options(server: ServerConfig) -> TrtllmOptions:
    opts = plugin_options(server, PLUGIN_OPTIONS_KEY, TrtllmOptions, "moe_backend: TRTLLM")
    if opts.moe_backend is not None and opts.moe_backend not in MOE_BACKENDS:
        raise UserFacingError(
            f"plugin_options.{PLUGIN_OPTIONS_KEY}.moe_backend: {opts.moe_backend!r} is not one "
            f"of {', '.join(MOE_BACKENDS)} (TensorRT-LLM 1.x); a newer backend can go in "
            "extra_llm_api_options: {moe_config: {backend: ...}}"
        )
    for key, field in RESERVED_API_KEYS.items():
        if key in opts.extra_llm_api_options:
            raise UserFacingError(
                f"plugin_options.{PLUGIN_OPTIONS_KEY}.extra_llm_api_options.{key}: set `{field}` "
                "in the config instead (InferX counts the GPUs from it)"
            )
    if opts.mpi == "mpirun" and not opts.mpirun_argv:
        raise UserFacingError(f"plugin_options.{PLUGIN_OPTIONS_KEY}.mpirun_argv is empty")
    return opts


def engine_info() -> EngineInfo:
    return EngineInfo(
        name=ENGINE,
        description="TensorRT-LLM OpenAI-compatible server (trtllm-serve, PyTorch backend)",
        homepage="https://nvidia.github.io/TensorRT-LLM/",
        default_port=8000,
        vendors=("nvidia",),
        version_path="/version",
        version_field="version",
    )


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _check_parallelism(server: ServerConfig) -> None:
    par = server.parallelism
    if par.dp > 1 and not par.dp_attention:
        raise UserFacingError(
            f"trtllm-serve runs one model replica; parallelism.dp={par.dp} needs "
            "dp_attention: true (attention data parallel across the tp ranks), or one server "
            "per replica"
        )
    if par.dp_attention and par.dp not in (1, par.tp):
        raise UserFacingError(
            f"TensorRT-LLM's attention data parallelism spans the tp ranks: parallelism.dp "
            f"({par.dp}) must equal tp ({par.tp}) with dp_attention"
        )


def llm_api_options(server: ServerConfig, opts: TrtllmOptions | None = None) -> dict[str, Any]:
    """The ``--extra_llm_api_options`` settings for ``server`` (see module doc)."""
    opts = opts or options(server)
    kv: dict[str, Any] = {"enable_block_reuse": bool(server.prefix_caching)}
    if server.kv_cache_dtype:
        kv["dtype"] = server.kv_cache_dtype
    fraction = opts.kv_cache_free_gpu_memory_fraction or server.gpu_memory_utilization
    if fraction is not None:
        kv["free_gpu_memory_fraction"] = fraction
    data: dict[str, Any] = {"kv_cache_config": kv}
    if opts.cuda_graphs:
        graphs: dict[str, Any] = {"enable_padding": opts.cuda_graph_padding}
        if opts.cuda_graph_batch_sizes:
            graphs["batch_sizes"] = sorted(set(opts.cuda_graph_batch_sizes))
        else:
            max_bs = opts.cuda_graph_max_batch_size or server.max_num_seqs
            if max_bs is not None:
                graphs["max_batch_size"] = max_bs
        data["cuda_graph_config"] = graphs
    else:
        data["cuda_graph_config"] = None
    if server.parallelism.dp_attention:
        data["enable_attention_dp"] = True
    if opts.moe_backend:
        data["moe_config"] = {"backend": opts.moe_backend}
    if opts.stream_interval is not None:
        data["stream_interval"] = opts.stream_interval
    if opts.prometheus_metrics:
        data["return_perf_metrics"] = True
        data["enable_iter_perf_stats"] = True
    data.update(speculative_options(server))
    return _deep_merge(data, opts.extra_llm_api_options)


def llm_api_yaml(server: ServerConfig, opts: TrtllmOptions | None = None) -> str:
    header = (
        "# trtllm-serve --extra_llm_api_options, written by InferX from the run config\n"
        f"# (engine {ENGINE}, model {server.model}); recorded in every result with the launch.\n"
    )
    return header + yaml.safe_dump(llm_api_options(server, opts), sort_keys=True)


def flag_name(key: str) -> str:
    """An engine_args key as trtllm-serve's flag: 'trust-remote-code' -> '--trust_remote_code'."""
    flag = "--" + key.removeprefix("--").replace("-", "_")
    return ALIASES.get(flag, flag)


def build_argv(server: ServerConfig, opts: TrtllmOptions | None = None) -> list[str]:
    """The trtllm-serve argv for ``server`` (``server.port`` must be set)."""
    opts = opts or options(server)
    _check_parallelism(server)
    par = server.parallelism
    argv = [*(server.executable or DEFAULT_EXECUTABLE), server.model, "--backend", "pytorch"]
    argv += ["--host", server.host, "--port", str(server.port)]
    argv += ["--tp_size", str(par.tp), "--pp_size", str(par.pp)]
    ep = par.ep or (par.tp if par.expert_parallel else None)
    if ep:
        argv += ["--ep_size", str(ep)]
    if server.max_num_seqs is not None:
        argv += ["--max_batch_size", str(server.max_num_seqs)]
    if opts.max_num_tokens is not None:
        argv += ["--max_num_tokens", str(opts.max_num_tokens)]
    if server.max_model_len is not None:
        argv += ["--max_seq_len", str(server.max_model_len)]
    argv += ["--extra_llm_api_options", EXTRA_OPTIONS_PATH]
    for key, value in server.engine_args.items():
        flag = flag_name(key)
        if flag in RESERVED:
            raise UserFacingError(f"engine_args.{key}: set `{RESERVED[flag]}` instead")
        set_flag(argv, flag, value)
    argv += list(server.extra_argv)
    if opts.mpi == "mpirun":
        argv = [*opts.mpirun_argv, *argv]
    return argv


def launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    assert server.port is not None
    opts = options(server)
    warnings = []
    if server.served_model_name and server.served_model_name != server.model:
        warnings.append(
            "trtllm-serve has no --served_model_name: it serves the model as "
            f"{server.model!r} (a local folder as its base name); served_model_name "
            f"{server.served_model_name!r} is what InferX puts in its requests"
        )
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(build_argv(server, opts)),
        env=dict(server.engine_env),
        unset_env=() if opts.mpi == "inherit" else MPI_ENV_PATTERNS,
        image=server.image,
        host=server.host,
        port=server.port,
        gpu_ids=default_gpu_ids(server, platform),
        ipc_host=server.image is not None,
        ulimits=dict(CONTAINER_ULIMITS) if server.image else {},
        preflight=(port_free_wait(server.port),),
        files={EXTRA_OPTIONS_FILE: llm_api_yaml(server, opts)},
        warnings=tuple(warnings),
        labels={"engine": ENGINE, "model": server.model},
    )


def readiness_probes() -> list[ReadinessProbe]:
    return [
        # 200 once the executor is up (503 "LLM is unavailable" while it is not).
        ReadinessProbe(name="health", path="/health"),
        # trtllm-serve lists the model under its own name (a local folder's base name), so
        # no /v1/models name check; one token through the route the benchmark uses instead.
        tiny_completion_probe("tiny generation"),
    ]


def metrics_map(server: ServerConfig) -> EngineMetricsMap | None:
    """``/prometheus/metrics`` (TensorRT-LLM's MetricsCollector, ``trtllm_*``).

    Served when ``return_perf_metrics`` is on; the iteration gauges (KV cache,
    running, waiting) also need ``enable_iter_perf_stats`` and a TensorRT-LLM
    recent enough to export them: older releases have the request histograms
    only, and the missing families are recorded as null.
    """
    if not options(server).prometheus_metrics:
        return None
    return EngineMetricsMap(
        path="/prometheus/metrics",
        kv_cache_usage="trtllm_kv_cache_utilization",
        requests_running="trtllm_num_requests_running",
        requests_waiting="trtllm_num_requests_waiting",
        extra={"generation_tokens_total": "trtllm_generation_tokens_total"},
    )
