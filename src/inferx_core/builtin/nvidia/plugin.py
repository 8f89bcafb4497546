"""Built-in NVIDIA detection and telemetry through NVML (``pynvml`` from nvidia-ml-py,
imported lazily; the sampler is :class:`~inferx_core.builtin.nvidia.sampler.NvmlSampler`).

No NVIDIA GPU is a normal state: the answer is a platform with a note that
says why (library missing, driver not loaded, zero devices), never an error.

It also offers the NVIDIA fix catalogue (:mod:`inferx_core.builtin.nvidia.fixes`);
each fix decides for itself whether it applies, so on a platform without
NVIDIA GPUs none does.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from inferx_core import hookimpl
from inferx_core.builtin.nvidia.sampler import NvmlSampler, load_pynvml
from inferx_core.sdk.platform import Accelerator, Platform, PlatformNote
from inferx_core.sdk.sampler import Sampler

if TYPE_CHECKING:
    from inferx_core.sdk.fixes import Fix

SOURCE = "inferx.nvml"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _cuda_version(nvml: ModuleType) -> str | None:
    try:
        v = nvml.nvmlSystemGetCudaDriverVersion_v2()
    except Exception:
        return None
    return f"{v // 1000}.{(v % 1000) // 10}"


def _pci_bus_id(nvml: ModuleType, handle: Any) -> str | None:
    try:
        return _text(nvml.nvmlDeviceGetPciInfo(handle).busId)
    except Exception:
        return None


def _nvml_version(nvml: ModuleType) -> str | None:
    try:
        return _text(nvml.nvmlSystemGetNVMLVersion())
    except Exception:
        return None


def detect_nvidia(nvml: ModuleType | None = None) -> Platform:
    """Enumerate NVIDIA GPUs; every failure is a note with the reason."""
    try:
        nvml = nvml or load_pynvml()
    except ImportError as exc:
        return _note(f"no NVIDIA GPU: pynvml not importable ({exc})")
    try:
        nvml.nvmlInit()
    except Exception as exc:  # LibraryNotFound, DriverNotLoaded, ...
        return _note(f"no NVIDIA GPU: NVML unavailable ({type(exc).__name__}: {exc})")
    try:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            return _note("no NVIDIA GPU: NVML reports 0 devices")
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        cuda = _cuda_version(nvml)
        accelerators = []
        for index in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            accelerators.append(
                Accelerator(
                    vendor="nvidia",
                    index=index,
                    name=_text(nvml.nvmlDeviceGetName(handle)),
                    arch=f"sm_{major}{minor}",
                    compute_capability=f"{major}.{minor}",
                    memory_total_mib=int(memory.total) // (1024 * 1024),
                    uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
                    pci_bus_id=_pci_bus_id(nvml, handle),
                    driver_version=driver,
                    runtime_version=cuda,
                )
            )
        software = {"nvidia_driver": driver}
        if cuda:
            software["cuda_driver"] = cuda
        nvml_version = _nvml_version(nvml)
        if nvml_version:
            software["nvml"] = nvml_version
        return Platform(accelerators=tuple(accelerators), software=software)
    except Exception as exc:  # e.g. a GPU vanishing mid-enumeration
        return _note(f"NVIDIA detection failed: {type(exc).__name__}: {exc}")
    finally:
        with contextlib.suppress(Exception):  # shutdown errors do not matter here
            nvml.nvmlShutdown()


def _note(message: str) -> Platform:
    return Platform(notes=(PlatformNote(source=SOURCE, message=message),))


@hookimpl
def inferx_platform() -> Platform:
    return detect_nvidia()


@hookimpl
def inferx_telemetry_samplers(platform: Platform, gpu_ids: list[int]) -> list[Sampler] | None:
    """One :class:`NvmlSampler` for the NVIDIA devices among ``gpu_ids``, else None."""
    nvidia = {a.index for a in platform.accelerators_of("nvidia")}
    ids = [i for i in gpu_ids if i in nvidia]
    if not ids:
        return None
    return [NvmlSampler(ids)]


@hookimpl
def inferx_container_fixes() -> list[Fix]:
    """The NVIDIA catalogue (docs/fixes.md); imported lazily, like every launch-time module."""
    from inferx_core.builtin.nvidia.fixes import catalogue

    return catalogue()
