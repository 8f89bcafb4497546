"""The example engine: its name, the command that starts it and what "ready" means."""

from __future__ import annotations

from inferx_core import EngineInfo, LaunchSpec, Platform, ReadinessProbe, ServerConfig

ENGINE = "example-tpu"


def engine_info() -> EngineInfo:
    return EngineInfo(
        name=ENGINE,
        description="Example: an OpenAI-compatible server on Google TPU",
        default_port=9000,
        vendors=("google",),
    )


def launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
    # InferX resolves the port before it asks (a free one when the config gave none);
    # ServerConfig types it optional, so a strict checker wants this said.
    assert server.port is not None, "the port is resolved before this hook"
    argv = [
        *(server.executable or ["python3", "-m", "example_tpu_server"]),
        "--model",
        server.model,
        "--port",
        str(server.port),
        "--tensor-parallel-size",
        str(server.parallelism.tp),
    ]
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(argv + list(server.extra_argv)),
        env=dict(server.engine_env),
        host=server.host,
        port=server.port,
        gpu_ids=tuple(a.index for a in platform.accelerators_of("google"))[: server.num_gpus],
    )


def readiness_probes() -> list[ReadinessProbe]:
    return [ReadinessProbe(name="health", path="/health")]
