"""SGLang's answers to the InferX hooks (``python3 -m sglang.launch_server``)."""

from __future__ import annotations

from inferx_core import EngineInfo, EngineMetricsMap, LaunchSpec, ReadinessProbe, hookimpl
from inferx_core.config import ServerConfig
from inferx_core.platform import Platform

ENGINE = "sglang"
DEFAULT_EXECUTABLE = ("python3", "-m", "sglang.launch_server")


@hookimpl
def inferx_register_engines() -> list[EngineInfo]:
    return [
        EngineInfo(
            name=ENGINE,
            description="SGLang server (sglang.launch_server), CUDA and ROCm builds",
            homepage="https://docs.sglang.ai",
            default_port=30000,
            version_path="/get_server_info",
        )
    ]


def _flag(key: str, value: object) -> list[str]:
    flag = "--" + key.replace("_", "-").removeprefix("--")
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    if isinstance(value, list):
        return [flag, *(str(v) for v in value)]
    return [flag, str(value)]


def build_argv(server: ServerConfig) -> list[str]:
    par = server.parallelism
    argv = [*(server.executable or DEFAULT_EXECUTABLE), "--model-path", server.model]
    argv += ["--served-model-name", server.name_served]
    argv += ["--host", server.host, "--port", str(server.port)]
    argv += ["--tensor-parallel-size", str(par.tp)]
    if par.dp > 1:
        argv += ["--dp-size", str(par.dp)]
        if par.dp_attention:
            argv.append("--enable-dp-attention")
    if par.ep and par.ep > 1:
        argv += ["--ep-size", str(par.ep)]
    if server.gpu_memory_utilization is not None:
        argv += ["--mem-fraction-static", str(server.gpu_memory_utilization)]
    if server.max_num_seqs is not None:
        argv += ["--max-running-requests", str(server.max_num_seqs)]
    if server.max_model_len is not None:
        argv += ["--context-length", str(server.max_model_len)]
    if not server.prefix_caching:
        argv.append("--disable-radix-cache")
    if server.kv_cache_dtype:
        argv += ["--kv-cache-dtype", server.kv_cache_dtype]
    if server.dtype:
        argv += ["--dtype", server.dtype]
    argv.append("--enable-metrics")
    for key, value in server.engine_args.items():
        argv += _flag(key, value)
    return argv + list(server.extra_argv)


@hookimpl
def inferx_engine_launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec | None:
    if server.engine != ENGINE:
        return None
    assert server.port is not None
    gpu_ids = (
        tuple(server.gpu_ids)
        if server.gpu_ids is not None
        else tuple(a.index for a in platform.accelerators)[: server.num_gpus]
    )
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(build_argv(server)),
        env=dict(server.engine_env),
        image=server.image,
        host=server.host,
        port=server.port,
        gpu_ids=gpu_ids,
        ipc_host=server.image is not None,
        shm_size="32g" if server.image else None,
        labels={"engine": ENGINE, "model": server.model},
    )


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe] | None:
    if server.engine != ENGINE:
        return None
    return [
        ReadinessProbe(name="health", path="/health"),
        ReadinessProbe(
            name="tiny generation",
            method="POST",
            path="/generate",
            json_body={"text": "Hello", "sampling_params": {"max_new_tokens": 1}},
            timeout_s=120,
        ),
    ]


@hookimpl
def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap | None:
    if server.engine != ENGINE:
        return None
    return EngineMetricsMap(
        kv_cache_usage="sglang:token_usage",
        requests_running="sglang:num_running_reqs",
        requests_waiting="sglang:num_queue_reqs",
    )
