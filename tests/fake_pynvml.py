"""A fake ``pynvml`` that follows nvidia-ml-py's names, units and error classes.

Injected by tests through ``sys.modules`` or a sampler's ``nvml=`` argument
(never by product code). Devices are :class:`FakeGpu` records; power in mW,
energy in mJ, memory in bytes, clocks in MHz, temperature in degrees C, as
NVML reports. Every ``nvml*`` call made through ``as_module()`` is counted in
``FakeNvml.calls`` (function name -> count).
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2

nvmlClocksEventReasonGpuIdle = 0x1
nvmlClocksEventReasonSwPowerCap = 0x4
nvmlClocksEventReasonSwThermalSlowdown = 0x20


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


class NVMLError_NoPermission(NVMLError):
    def __init__(self) -> None:
        super().__init__(4, "Insufficient Permissions")


class NVMLError_FunctionNotFound(NVMLError):
    def __init__(self) -> None:
        super().__init__(13, "Function Not Found")


class NVMLError_Unknown(NVMLError):
    def __init__(self) -> None:
        super().__init__(999, "Unknown Error")


ERROR_CLASSES = (
    NVMLError,
    NVMLError_LibraryNotFound,
    NVMLError_NotSupported,
    NVMLError_GpuIsLost,
    NVMLError_NoPermission,
    NVMLError_FunctionNotFound,
    NVMLError_Unknown,
)


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    cc: tuple[int, int] = (9, 0)
    memory_total: int = 141 * 1024**3
    memory_used: int = 1024**3
    power_mw: int = 350_000
    energy_mj: int | None = 1_000_000  # None: NotSupported
    # True: the counter advances by power x elapsed time, like a real GPU's.
    energy_advances: bool = False
    lost: bool = False
    util_gpu: int = 87
    util_memory: int = 41
    temp_c: int = 54
    sm_clock_mhz: int = 1980
    clocks_event_reasons: int = nvmlClocksEventReasonSwPowerCap
    pci_bus_id: str = "00000000:19:00.0"
    #: nvml function names that raise NVMLError_NotSupported on this device
    unsupported: set[str] = field(default_factory=set)
    #: nvml function names that raise NVMLError_Unknown (a transient failure)
    failing: set[str] = field(default_factory=set)


class FakeNvml:
    """Build with devices, then install as a module via ``as_module()``."""

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        *,
        library_missing: bool = False,
        without: tuple[str, ...] = (),
    ):
        """``without``: nvml function names the module lacks (older nvidia-ml-py)."""
        self.gpus = gpus or []
        self.library_missing = library_missing
        self.without = set(without)
        self.initialised = 0
        self.calls: Counter[str] = Counter()
        self.created = time.perf_counter()

    def as_module(self) -> SimpleNamespace:
        names = [n for n in dir(self) if n.startswith("nvml") and n not in self.without]
        mod = SimpleNamespace(**{n: self._counted(n) for n in names})
        for cls in ERROR_CLASSES:
            setattr(mod, cls.__name__, cls)
        for const, value in globals().items():
            if const.startswith(("NVML_", "nvmlClocksEventReason")):
                setattr(mod, const, value)
        return mod

    def _counted(self, name: str) -> Any:
        fn = getattr(self, name)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return fn(*args, **kwargs)

        return call

    def _gpu(self, handle: Any, function: str | None = None) -> FakeGpu:
        gpu = self.gpus[handle]
        if gpu.lost:
            raise NVMLError_GpuIsLost()
        if function in gpu.unsupported:
            raise NVMLError_NotSupported()
        if function in gpu.failing:
            raise NVMLError_Unknown()
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
        gpu = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
        return SimpleNamespace(
            total=gpu.memory_total, used=gpu.memory_used, free=gpu.memory_total - gpu.memory_used
        )

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetPowerUsage").power_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetTotalEnergyConsumption")
        if gpu.energy_mj is None:
            raise NVMLError_NotSupported()
        if gpu.energy_advances:
            return gpu.energy_mj + int(gpu.power_mw * (time.perf_counter() - self.created))
        return gpu.energy_mj

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        gpu = self._gpu(handle, "nvmlDeviceGetUtilizationRates")
        return SimpleNamespace(gpu=gpu.util_gpu, memory=gpu.util_memory)

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetTemperature")
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError(2, "Invalid Argument")
        return gpu.temp_c

    def nvmlDeviceGetClockInfo(self, handle: int, type: int) -> int:
        gpu = self._gpu(handle, "nvmlDeviceGetClockInfo")
        if type != NVML_CLOCK_SM:
            raise NVMLError_NotSupported()  # only the SM clock is modelled
        return gpu.sm_clock_mhz

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> int:
        return self._gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons").clocks_event_reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: int) -> int:  # deprecated name
        return self._gpu(handle, "nvmlDeviceGetCurrentClocksThrottleReasons").clocks_event_reasons

    def nvmlDeviceGetPciInfo(self, handle: int) -> SimpleNamespace:
        gpu = self._gpu(handle, "nvmlDeviceGetPciInfo")
        return SimpleNamespace(busId=gpu.pci_bus_id.encode(), bus=0x19, device=0, domain=0)

    def nvmlSystemGetNVMLVersion(self) -> str:
        return "12.570.124.06"
