"""TensorRT-LLM's answers to the InferX hooks (``trtllm-serve MODEL --backend pytorch``)."""

from __future__ import annotations

from inferx_core import EngineInfo, LaunchSpec, ReadinessProbe, hookimpl
from inferx_core.config import ServerConfig
from inferx_core.platform import Platform

ENGINE = "trtllm"
DEFAULT_EXECUTABLE = ("trtllm-serve",)
# trtllm-serve started inside a SLURM allocation or an MPI launcher tries to
# join that MPI world and hangs; the engine must not inherit these.
MPI_ENV_PATTERNS = ("SLURM_*", "PMI*", "PMIX_*", "OMPI_*")


@hookimpl
def inferx_register_engines() -> list[EngineInfo]:
    return [
        EngineInfo(
            name=ENGINE,
            description="TensorRT-LLM OpenAI-compatible server (trtllm-serve, PyTorch backend)",
            homepage="https://nvidia.github.io/TensorRT-LLM/",
            default_port=8000,
            vendors=("nvidia",),
        )
    ]


@hookimpl
def inferx_engine_launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec | None:
    if server.engine != ENGINE:
        return None
    assert server.port is not None
    par = server.parallelism
    argv = [*(server.executable or DEFAULT_EXECUTABLE), server.model, "--backend", "pytorch"]
    argv += ["--host", server.host, "--port", str(server.port)]
    argv += ["--tp_size", str(par.tp), "--pp_size", str(par.pp)]
    if par.ep:
        argv += ["--ep_size", str(par.ep)]
    if server.max_num_seqs is not None:
        argv += ["--max_batch_size", str(server.max_num_seqs)]
    if server.max_model_len is not None:
        argv += ["--max_seq_len", str(server.max_model_len)]
    argv += list(server.extra_argv)
    gpu_ids = (
        tuple(server.gpu_ids)
        if server.gpu_ids is not None
        else tuple(a.index for a in platform.accelerators)[: server.num_gpus]
    )
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(argv),
        env=dict(server.engine_env),
        unset_env=MPI_ENV_PATTERNS,
        image=server.image,
        host=server.host,
        port=server.port,
        gpu_ids=gpu_ids,
        ipc_host=server.image is not None,
        labels={"engine": ENGINE, "model": server.model},
    )


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe] | None:
    if server.engine != ENGINE:
        return None
    return [ReadinessProbe(name="health", path="/health")]
