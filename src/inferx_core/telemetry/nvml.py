"""NVIDIA GPU telemetry through NVML (``pynvml`` from nvidia-ml-py, imported lazily).

One reading per GPU: board power, the cumulative energy counter, utilisation,
memory used, temperature, SM clock and the clock-event (throttle) bitmask,
named by the scheme in :mod:`inferx_core.telemetry.sampler`.

What each device supports is probed once in ``start``: a metric NVML answers
with NotSupported (or FunctionNotFound, NoPermission) is reported as None on
every read without being called again.

Failure policy, per read:

- a GPU whose power read fails (any NVMLError), or which reports
  ``NVMLError_GpuIsLost`` on any call, is left out of that reading (its keys
  are absent) while the other GPUs are still read; a lost GPU is never called
  again (calls to a GPU that fell off the bus can be slow) and is listed in
  ``lost_gpus``;
- any other NVMLError on a single metric makes that metric None for that read;
- every such error is in ``last_errors`` (this read only) and is counted; at
  ``stop`` the counts become lines in ``notes``, which the recorder copies
  into the result;
- when no GPU could be read at all, ``read`` raises :class:`NvmlReadError`,
  so the recorder records a gap with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from inferx_core.telemetry.sampler import SamplerUnavailable

MIB = 1024 * 1024

#: NVML error classes meaning "this device never answers this call".
_UNSUPPORTED_ERRORS = (
    "NVMLError_NotSupported",
    "NVMLError_FunctionNotFound",
    "NVMLError_NoPermission",
)


class NvmlReadError(RuntimeError):
    """No GPU could be read this time (every GPU failed or was lost)."""


@dataclass(frozen=True)
class _Metric:
    """One NVML call and the metric keys (suffixes) it yields."""

    keys: tuple[str, ...]
    functions: tuple[str, ...]  # candidates, first usable wins (renamed APIs)
    args: Callable[[ModuleType], tuple[Any, ...]]
    convert: Callable[[Any], tuple[float | int, ...]]


_METRICS: tuple[_Metric, ...] = (
    _Metric(("power_w",), ("nvmlDeviceGetPowerUsage",), lambda m: (), lambda v: (v / 1000.0,)),
    _Metric(
        ("energy_j",),
        ("nvmlDeviceGetTotalEnergyConsumption",),
        lambda m: (),
        lambda v: (v / 1000.0,),
    ),
    _Metric(
        ("util_percent", "mem_util_percent"),
        ("nvmlDeviceGetUtilizationRates",),
        lambda m: (),
        lambda u: (u.gpu, u.memory),
    ),
    _Metric(
        ("mem_used_mib",), ("nvmlDeviceGetMemoryInfo",), lambda m: (), lambda v: (v.used / MIB,)
    ),
    _Metric(
        ("temp_c",),
        ("nvmlDeviceGetTemperature",),
        lambda m: (m.NVML_TEMPERATURE_GPU,),
        lambda v: (v,),
    ),
    _Metric(
        ("sm_clock_mhz",),
        ("nvmlDeviceGetClockInfo",),
        lambda m: (m.NVML_CLOCK_SM,),
        lambda v: (v,),
    ),
    _Metric(
        ("throttle_reasons",),
        # "ClocksEvent" is the current name; "ClocksThrottle" the deprecated one.
        ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
        lambda m: (),
        lambda v: (int(v),),
    ),
)


@dataclass
class _Reader:
    """A bound, probed metric: ``call(handle, *args)`` then ``convert``."""

    keys: tuple[str, ...]  # full names, e.g. "gpu.0.power_w"
    function: str
    call: Callable[..., Any]
    args: tuple[Any, ...]
    convert: Callable[[Any], tuple[float | int, ...]]
    is_power: bool


@dataclass
class _Device:
    index: int
    handle: Any
    readers: list[_Reader] = field(default_factory=list)
    unsupported: dict[str, None] = field(default_factory=dict)  # keys always None


class NvmlSampler:
    """Samples the given NVML device indices (and only those).

    Attributes: ``gpu_ids`` (requested indices), ``interval_s``, ``notes``
    (lines for the result), ``last_errors`` (errors of the latest read),
    ``lost_gpus`` (indices that reported GpuIsLost), ``unsupported``
    (index -> metric names NVML does not support there, reported None).
    """

    name = "nvml"

    def __init__(
        self,
        gpu_ids: Iterable[int],
        *,
        interval_s: float = 0.5,
        nvml: ModuleType | None = None,
    ) -> None:
        self.gpu_ids: tuple[int, ...] = tuple(dict.fromkeys(int(i) for i in gpu_ids))
        self.interval_s = interval_s
        self.notes: list[str] = []
        self.last_errors: list[str] = []
        self.lost_gpus: list[int] = []
        self.unsupported: dict[int, list[str]] = {}
        self._nvml: Any = nvml  # injected by tests; else loaded in start()
        self._devices: list[_Device] = []
        self._initialised = False
        self._error_counts: dict[str, int] = {}

    # -- start -------------------------------------------------------------

    def start(self) -> None:
        """Init NVML, take handles for the requested GPUs, probe supported metrics."""
        if self._initialised:
            return
        if not self.gpu_ids:
            raise SamplerUnavailable("no supported GPU: no GPU index requested")
        nvml = self._nvml
        if nvml is None:
            from inferx_core.builtin import nvml as builtin_nvml

            try:
                nvml = builtin_nvml.load_pynvml()
            except ImportError as exc:
                raise SamplerUnavailable(
                    f"no supported GPU: pynvml not importable ({exc})"
                ) from exc
            self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as exc:  # LibraryNotFound, DriverNotLoaded, ...
            raise SamplerUnavailable(
                f"no supported GPU: NVML unavailable ({type(exc).__name__}: {exc})"
            ) from exc
        self._initialised = True
        try:
            self._open_devices(nvml)
        except SamplerUnavailable:
            self.stop()
            raise
        except Exception as exc:
            self.stop()
            raise SamplerUnavailable(
                f"no supported GPU: NVML failed ({type(exc).__name__}: {exc})"
            ) from exc

    def _open_devices(self, nvml: Any) -> None:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            raise SamplerUnavailable("no supported GPU: NVML reports 0 devices")
        missing: list[str] = []
        for index in self.gpu_ids:
            if index < 0 or index >= count:
                missing.append(f"{index} (NVML sees {count})")
                continue
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                device = self._probe(nvml, index, handle)
            except nvml.NVMLError as exc:
                missing.append(f"{index} ({type(exc).__name__}: {exc})")
                continue
            self._devices.append(device)
            if device.unsupported:
                self.unsupported[index] = list(device.unsupported)
        if missing:
            self.notes.append("GPU not sampled: " + ", ".join(missing))
        if not self._devices:
            raise SamplerUnavailable(
                "no supported GPU: none of the requested GPUs could be opened: "
                + ", ".join(missing)
            )

    def _probe(self, nvml: Any, index: int, handle: Any) -> _Device:
        """Call every metric once; unsupported ones are None from now on.

        A GpuIsLost propagates: the device is not sampled. Any other error
        keeps the metric (it may be transient; reads report it).
        """
        unsupported = tuple(getattr(nvml, n) for n in _UNSUPPORTED_ERRORS if hasattr(nvml, n))
        lost = getattr(nvml, "NVMLError_GpuIsLost", ())
        device = _Device(index=index, handle=handle)
        prefix = f"gpu.{index}."
        for metric in _METRICS:
            keys = tuple(prefix + k for k in metric.keys)
            is_power = metric.keys == ("power_w",)
            args = metric.args(nvml)
            chosen: Callable[..., Any] | None = None
            chosen_name = ""
            for fname in metric.functions:
                fn = getattr(nvml, fname, None)
                if fn is None:
                    continue
                try:
                    fn(handle, *args)
                except unsupported:
                    continue
                except lost:
                    raise
                except nvml.NVMLError:
                    pass  # a transient failure: keep the metric, reads will tell
                chosen, chosen_name = fn, fname
                break
            if chosen is None:
                device.unsupported.update(dict.fromkeys(keys))
            else:
                device.readers.append(
                    _Reader(keys, chosen_name, chosen, args, metric.convert, is_power)
                )
        return device

    # -- read --------------------------------------------------------------

    def read(self) -> Mapping[str, float | None]:
        """One reading of every GPU still present; see the module doc for failures."""
        nvml = self._nvml
        error_cls = nvml.NVMLError
        lost_cls = getattr(nvml, "NVMLError_GpuIsLost", ())
        errors: list[str] = []
        values: dict[str, float | None] = {}
        lost_now: list[_Device] = []
        for device in self._devices:
            got: dict[str, float | None] = {}
            ok = True
            for reader in device.readers:
                try:
                    raw = reader.call(device.handle, *reader.args)
                except error_cls as exc:
                    message = f"gpu {device.index}: {reader.function}: {type(exc).__name__}: {exc}"
                    errors.append(message)
                    self._count(message)
                    if isinstance(exc, lost_cls):
                        lost_now.append(device)
                        ok = False
                        break
                    if reader.is_power:
                        ok = False
                        break
                    got.update(dict.fromkeys(reader.keys))
                    continue
                got.update(zip(reader.keys, reader.convert(raw), strict=True))
            if ok:
                values.update(got)
                values.update(device.unsupported)
        for device in lost_now:
            self._devices.remove(device)
            self.lost_gpus.append(device.index)
            self.notes.append(f"gpu {device.index} lost during the run; not read since")
        self.last_errors = errors
        if not values:
            if errors:
                raise NvmlReadError("no GPU could be read: " + "; ".join(errors))
            raise NvmlReadError(f"no GPU left to read (lost: {self.lost_gpus})")
        return values

    def _count(self, message: str) -> None:
        self._error_counts[message] = self._error_counts.get(message, 0) + 1

    # -- stop --------------------------------------------------------------

    def stop(self) -> None:
        """Shut NVML down and turn error counts into notes; never raises."""
        try:
            for message, count in self._error_counts.items():
                self.notes.append(f"{message} ({count} read{'s' if count != 1 else ''})")
            self._error_counts.clear()
            self._devices = []
            if self._initialised:
                self._initialised = False
                self._nvml.nvmlShutdown()
        except Exception:  # stop must not raise; a failed shutdown changes nothing
            pass
