"""A TPU vendor's first InferX plugin, written against the public hooks only.

It shows every kind of hook a vendor usually needs: detection, an engine
with its launch spec and readiness, and a fix. Nothing in inferx-core knows
about it; installing this distribution is enough (see
docs/writing-a-plugin.md).
"""

from __future__ import annotations

import glob

from inferx_core import (
    Accelerator,
    EngineInfo,
    Fix,
    FixContext,
    FixVerdict,
    LaunchSpec,
    Platform,
    PlatformNote,
    ReadinessProbe,
    ServerConfig,
    hookimpl,
)

ENGINE = "example-tpu"


def find_tpu_devices(pattern: str = "/dev/accel*") -> list[str]:
    """TPU VMs expose one /dev/accelN node per chip."""
    return sorted(glob.glob(pattern))


@hookimpl
def inferx_platform() -> Platform:
    devices = find_tpu_devices()
    if not devices:
        return Platform(
            notes=(PlatformNote(source="example-tpu", message="no TPU: no /dev/accel* device"),)
        )
    return Platform(
        accelerators=tuple(
            Accelerator(vendor="google", index=i, name="Google TPU", arch="tpu")
            for i, _ in enumerate(devices)
        )
    )


@hookimpl
def inferx_engines() -> list[EngineInfo]:
    return [
        EngineInfo(
            name=ENGINE,
            description="Example: an OpenAI-compatible server on Google TPU",
            default_port=9000,
            vendors=("google",),
        )
    ]


@hookimpl
def inferx_engine_launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec:
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


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe]:
    return [ReadinessProbe(name="health", path="/health")]


def _on_tpu(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    chips = len(ctx.platform.accelerators_of("google"))
    if spec.engine == ENGINE and chips:
        return FixVerdict(True, f"{chips} TPU chip(s) detected")
    return FixVerdict(False, "no TPU on this platform")


@hookimpl
def inferx_container_fixes() -> list[Fix]:
    return [
        Fix(
            id="example-tpu-megacore",
            title="Enable megacore fusion for TPU servers",
            symptom="Lower decode throughput when each core runs its own program",
            condition_text="engine example-tpu on a platform with Google TPU chips",
            change_text="sets LIBTPU_INIT_ARGS=--xla_tpu_enable_megacore_fusion=true",
            reference="docs/writing-a-plugin.md",
            condition=_on_tpu,
            change=lambda spec, ctx: spec.with_env(
                LIBTPU_INIT_ARGS="--xla_tpu_enable_megacore_fusion=true"
            ),
        )
    ]
