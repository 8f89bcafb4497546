"""NVIDIA GPU telemetry through NVML (``pynvml`` from nvidia-ml-py, imported lazily).

One reading per GPU: board power, the cumulative energy counter, utilisation,
memory used, temperature, SM clock and the clock-event (throttle) bitmask,
named by the scheme in :mod:`inferx_core.sdk.sampler`.

What each device supports is probed once in ``start``: a metric NVML answers
with NotSupported (or FunctionNotFound, NoPermission) is reported as None on
every read without being called again.

The failure policy is :mod:`inferx_core.telemetry.device`'s (shared with the
AMD sampler): a GPU whose power read fails (any NVMLError) or which reports
``NVMLError_GpuIsLost`` is left out of that reading (a lost GPU is never
called again, ``lost_gpus``); any other NVMLError makes that metric None for
that read; errors are counted into ``notes`` at stop; when no GPU can be read
``read`` raises :class:`NvmlReadError` so the recorder records a gap.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from types import ModuleType
from typing import Any

from inferx_core.sdk.sampler import SamplerUnavailable
from inferx_core.telemetry.device import MIB, DeviceReadError, DeviceSampler, Metric

__all__ = ["MIB", "NvmlReadError", "NvmlSampler"]

#: NVML error classes meaning "this device never answers this call".
_UNSUPPORTED_ERRORS = (
    "NVMLError_NotSupported",
    "NVMLError_FunctionNotFound",
    "NVMLError_NoPermission",
)


def load_pynvml() -> ModuleType:
    """Import pynvml lazily (tests replace ``sys.modules['pynvml']`` with a fake)."""
    import pynvml

    return pynvml


class NvmlReadError(DeviceReadError):
    """No GPU could be read this time (every GPU failed or was lost)."""


_METRICS: tuple[Metric, ...] = (
    Metric(("power_w",), ("nvmlDeviceGetPowerUsage",), lambda m: (), lambda v: (v / 1000.0,)),
    Metric(
        ("energy_j",),
        ("nvmlDeviceGetTotalEnergyConsumption",),
        lambda m: (),
        lambda v: (v / 1000.0,),
    ),
    Metric(
        ("util_percent", "mem_util_percent"),
        ("nvmlDeviceGetUtilizationRates",),
        lambda m: (),
        lambda u: (u.gpu, u.memory),
    ),
    Metric(
        ("mem_used_mib",), ("nvmlDeviceGetMemoryInfo",), lambda m: (), lambda v: (v.used / MIB,)
    ),
    Metric(
        ("temp_c",),
        ("nvmlDeviceGetTemperature",),
        lambda m: (m.NVML_TEMPERATURE_GPU,),
        lambda v: (v,),
    ),
    Metric(
        ("sm_clock_mhz",),
        ("nvmlDeviceGetClockInfo",),
        lambda m: (m.NVML_CLOCK_SM,),
        lambda v: (v,),
    ),
    Metric(
        ("throttle_reasons",),
        # "ClocksEvent" is the current name; "ClocksThrottle" the deprecated one.
        ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
        lambda m: (),
        lambda v: (int(v),),
    ),
)


class NvmlSampler(DeviceSampler):
    """Samples the given NVML device indices (and only those).

    Attributes: ``gpu_ids`` (requested indices), ``interval_s``, ``notes``
    (lines for the result), ``last_errors`` (errors of the latest read),
    ``lost_gpus`` (indices that reported GpuIsLost), ``unsupported``
    (index -> metric names NVML does not support there, reported None).
    """

    name = "nvml"
    library = "NVML"
    module_name = "pynvml"
    metrics = _METRICS
    read_error = NvmlReadError

    def __init__(
        self,
        gpu_ids: Iterable[int],
        *,
        interval_s: float = 0.5,
        nvml: ModuleType | None = None,
    ) -> None:
        super().__init__(gpu_ids, interval_s=interval_s, lib=nvml)

    def _load(self) -> Any:
        return load_pynvml()

    def _init(self, lib: Any) -> None:
        lib.nvmlInit()

    def _shutdown(self, lib: Any) -> None:
        lib.nvmlShutdown()

    def _handles(self, lib: Any) -> tuple[Container[int], Callable[[int], Any], str]:
        count = lib.nvmlDeviceGetCount()
        if count == 0:
            raise SamplerUnavailable("no supported GPU: NVML reports 0 devices")
        return range(count), lib.nvmlDeviceGetHandleByIndex, f"NVML sees {count}"

    def _errors(self, lib: Any) -> type[BaseException]:
        return lib.NVMLError

    def _is_unsupported(self, lib: Any, exc: BaseException) -> bool:
        classes = tuple(getattr(lib, n) for n in _UNSUPPORTED_ERRORS if hasattr(lib, n))
        return isinstance(exc, classes)

    def _is_lost(self, lib: Any, exc: BaseException) -> bool:
        return isinstance(exc, getattr(lib, "NVMLError_GpuIsLost", ()))
