"""A fake ``pynvml`` that follows nvidia-ml-py's names, units and error classes.

Injected by tests through ``sys.modules`` (never by product code). Devices are
plain dicts; power in mW, energy in mJ, memory in bytes, as NVML reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1


class NVMLError(Exception):
    def __init__(self, value: int = 999, msg: str = "Unknown Error") -> None:
        super().__init__(msg)
        self.value = value


class NVMLError_LibraryNotFound(NVMLError):
    def __init__(self) -> None:
        super().__init__(12, "NVML Shared Library Not Found")


class NVMLError_NotSupported(NVMLError):
    def __init__(self) -> None:
        super().__init__(3, "Not Supported")


class NVMLError_GpuIsLost(NVMLError):
    def __init__(self) -> None:
        super().__init__(15, "GPU is lost")


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    cc: tuple[int, int] = (9, 0)
    memory_total: int = 141 * 1024**3
    memory_used: int = 1024**3
    power_mw: int = 350_000
    energy_mj: int | None = 1_000_000  # None: NotSupported
    lost: bool = False


class FakeNvml:
    """Build with devices, then install as a module via ``as_module()``."""

    def __init__(self, gpus: list[FakeGpu] | None = None, *, library_missing: bool = False):
        self.gpus = gpus or []
        self.library_missing = library_missing
        self.initialised = 0

    def as_module(self) -> SimpleNamespace:
        names = [n for n in dir(self) if n.startswith("nvml")]
        mod = SimpleNamespace(**{n: getattr(self, n) for n in names})
        for cls in (
            NVMLError,
            NVMLError_LibraryNotFound,
            NVMLError_NotSupported,
            NVMLError_GpuIsLost,
        ):
            setattr(mod, cls.__name__, cls)
        mod.NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
        mod.NVML_CLOCK_SM = NVML_CLOCK_SM
        return mod

    def _gpu(self, handle: Any) -> FakeGpu:
        gpu = self.gpus[handle]
        if gpu.lost:
            raise NVMLError_GpuIsLost()
        return gpu

    def nvmlInit(self) -> None:
        if self.library_missing:
            raise NVMLError_LibraryNotFound()
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self.initialised -= 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlSystemGetDriverVersion(self) -> str:
        return "570.124.06"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 12080

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if index >= len(self.gpus):
            raise NVMLError(2, "Invalid Argument")
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self._gpu(handle).name

    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return f"GPU-0000-{handle}"

    def nvmlDeviceGetCudaComputeCapability(self, handle: int) -> tuple[int, int]:
        return self._gpu(handle).cc

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        gpu = self._gpu(handle)
        return SimpleNamespace(
            total=gpu.memory_total, used=gpu.memory_used, free=gpu.memory_total - gpu.memory_used
        )

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        return self._gpu(handle).power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        gpu = self._gpu(handle)
        if gpu.energy_mj is None:
            raise NVMLError_NotSupported()
        return gpu.energy_mj
