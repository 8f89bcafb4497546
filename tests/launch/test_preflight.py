"""Preflight waits: port free, GPUs drained below a memory threshold (fake NVML)."""

from __future__ import annotations

import socket

import fake_pynvml
import pytest

from inferx_core.builtin.nvidia.sampler import NvmlSampler
from inferx_core.launch.preflight import PreflightTimeout, run_preflight
from inferx_core.sdk.launch_spec import LaunchSpec, PreflightWait
from inferx_core.sdk.platform import Accelerator, Platform

GIB = 1024**3
PLATFORM = Platform(
    accelerators=tuple(
        Accelerator(vendor="nvidia", index=i, name="NVIDIA H200", memory_total_mib=100 * 1024)
        for i in range(2)
    )
)


def spec(*waits: PreflightWait, port: int = 8000) -> LaunchSpec:
    return LaunchSpec(engine="vllm", argv=("vllm",), port=port, gpu_ids=(0, 1), preflight=waits)


def test_gpus_that_drain_in_time_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [fake_pynvml.FakeGpu(memory_total=100 * GIB, memory_used=60 * GIB) for _ in range(2)]
    nvml = fake_pynvml.FakeNvml(gpus)
    sleeps = []

    def sleep(seconds: float) -> None:  # the previous job drains while we wait
        sleeps.append(seconds)
        for gpu in gpus:
            gpu.memory_used = max(gpu.memory_used - 30 * GIB, 1 * GIB)

    checks = run_preflight(
        spec(PreflightWait(kind="gpu_memory_below", threshold=0.10, timeout_s=60)),
        PLATFORM,
        lambda: [NvmlSampler([0, 1], nvml=nvml.as_module())],
        sleep=sleep,
    )
    assert len(sleeps) == 2
    assert checks[0]["ok"] is True and checks[0]["used"] == {"0": 0.01, "1": 0.01}
    assert nvml.initialised == 0  # the sampler was stopped


def test_busy_gpu_times_out_naming_it() -> None:
    gpus = [
        fake_pynvml.FakeGpu(memory_total=100 * GIB, memory_used=1 * GIB),
        fake_pynvml.FakeGpu(memory_total=100 * GIB, memory_used=62 * GIB),
    ]
    nvml = fake_pynvml.FakeNvml(gpus)
    with pytest.raises(PreflightTimeout, match=r"gpu 1 at 62% of memory in use, limit 10%"):
        run_preflight(
            spec(PreflightWait(kind="gpu_memory_below", threshold=0.10, timeout_s=0.01)),
            PLATFORM,
            lambda: [NvmlSampler([0, 1], nvml=nvml.as_module())],
            sleep=lambda s: None,
        )


def test_no_memory_reading_is_reported_as_not_checked() -> None:
    checks = run_preflight(
        spec(PreflightWait(kind="gpu_memory_below", threshold=0.1)), PLATFORM, lambda: []
    )
    assert checks[0]["ok"] is None and "not checked" in checks[0]["note"]


def test_port_in_use_times_out_and_free_port_passes() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(PreflightTimeout, match=f"port {port} is still in use"):
            run_preflight(
                spec(PreflightWait(kind="port_free", timeout_s=0.01), port=port),
                PLATFORM,
                lambda: [],
                sleep=lambda s: None,
            )
    assert (
        run_preflight(spec(PreflightWait(kind="port_free"), port=port), PLATFORM, lambda: [])[0][
            "ok"
        ]
        is True
    )


def test_path_unlocked_waits_for_the_holder(tmp_path) -> None:
    import fcntl

    lock = tmp_path / "cache.lock"
    assert (
        run_preflight(
            spec(PreflightWait(kind="path_unlocked", path=str(lock))), PLATFORM, lambda: []
        )[0]["note"]
        == "no lock file"
    )
    holder = open(lock, "a")  # noqa: SIM115 - held across the calls below
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    released = []

    def sleep(seconds: float) -> None:  # the cache filler finishes while we wait
        fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
        released.append(seconds)

    wait = PreflightWait(kind="path_unlocked", path=str(lock), timeout_s=30)
    assert run_preflight(spec(wait), PLATFORM, lambda: [], sleep=sleep)[0]["ok"] is True
    assert released
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    short = PreflightWait(kind="path_unlocked", path=str(lock), timeout_s=0.01, reason="flashinfer")
    with pytest.raises(PreflightTimeout, match=r"still locked .*\(flashinfer\)"):
        run_preflight(spec(short), PLATFORM, lambda: [], sleep=lambda s: None)
    holder.close()


def test_a_gpu_without_reading_is_not_reported_as_passed() -> None:
    gpus = [fake_pynvml.FakeGpu(memory_total=100 * GIB, memory_used=1 * GIB)]
    nvml = fake_pynvml.FakeNvml(gpus)  # only GPU 0 exists; the spec wants 0 and 1
    checks = run_preflight(
        spec(PreflightWait(kind="gpu_memory_below", threshold=0.10)),
        PLATFORM,
        lambda: [NvmlSampler([0, 1], nvml=nvml.as_module())],
        sleep=lambda s: None,
    )
    assert checks[0]["ok"] is None and checks[0]["unchecked"] == [1]
