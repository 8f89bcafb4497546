"""AMD GPU telemetry through amdsmi, named by the vendor-neutral scheme of
:mod:`inferx_core.telemetry.sampler` so energy is computed exactly as for NVIDIA.

One reading per GPU:

- ``gpu.<i>.power_w``: socket power (W) from ``amdsmi_get_power_info``; the
  first numeric of ``socket_power`` (7.x), ``current_socket_power``,
  ``average_socket_power`` (6.x; MI300 reports only the current one);
- ``gpu.<i>.energy_j``: the cumulative energy accumulator,
  ``energy_accumulator`` (``power`` before 6.4) x ``counter_resolution`` (uJ
  per count) / 1e6;
- ``gpu.<i>.util_percent`` / ``mem_util_percent``: ``gfx_activity`` /
  ``umc_activity`` of ``amdsmi_get_gpu_activity``;
- ``gpu.<i>.mem_used_mib``: ``vram_used`` (MB) of ``amdsmi_get_gpu_vram_usage``
  (falls back to ``amdsmi_get_gpu_memory_usage(VRAM)`` in bytes);
- ``gpu.<i>.temp_c``: the edge sensor; on GPUs without one (MI300X) the
  junction sensor, said once in ``notes``; plus ``temp_junction_c`` and
  ``temp_hotspot_c`` (one sensor in amdsmi: JUNCTION == HOTSPOT) and
  ``temp_mem_c`` (VRAM), each where the library reports it;
- ``gpu.<i>.sm_clock_mhz``: the current GFX clock (``clk``, ``cur_clk``
  before 6.2) of ``amdsmi_get_clock_info(handle, AmdSmiClkType.GFX)``.

Failure policy (as the NVML sampler's): what a device answers with
AMDSMI_STATUS_NOT_SUPPORTED (or NOT_YET_IMPLEMENTED, NO_PERM) at start, or
only with "N/A", is None on every read without being called again; a GPU
whose power read fails, or which reports AMDSMI_STATUS_NOT_FOUND (lost), is
left out of that reading (a lost GPU is never called again, ``lost_gpus``);
any other error makes that metric None for that read; errors are counted
into ``notes`` at stop; when no GPU can be read ``read`` raises
:class:`AmdSmiReadError` so the recorder records a gap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from inferx_core.telemetry.sampler import SamplerUnavailable
from inferx_rocm import smi as smi_lib

MIB = 1024 * 1024
POWER_KEYS = ("socket_power", "current_socket_power", "average_socket_power")
ENERGY_KEYS = ("energy_accumulator", "power")  # 6.4+ / before
CLOCK_KEYS = ("clk", "cur_clk")  # 6.2+ / before
UJ_PER_J = 1_000_000.0


class AmdSmiReadError(RuntimeError):
    """No GPU could be read this time (every GPU failed or was lost)."""


def _power(info: Any) -> tuple[float | None]:
    return (smi_lib.first_number(info, POWER_KEYS),)


def _energy(info: Any) -> tuple[float | None]:
    count = smi_lib.first_number(info, ENERGY_KEYS)
    resolution = smi_lib.first_number(info, ("counter_resolution",))
    if count is None or resolution is None or resolution <= 0:
        return (None,)
    return (count * resolution / UJ_PER_J,)


def _activity(info: Any) -> tuple[float | None, float | None]:
    return (
        smi_lib.first_number(info, ("gfx_activity",)),
        smi_lib.first_number(info, ("umc_activity",)),
    )


def _vram_used(info: Any) -> tuple[float | None]:
    return (smi_lib.first_number(info, ("vram_used",)),)


def _bytes_to_mib(value: Any) -> tuple[float | None]:
    v = smi_lib.number(value)
    return (None if v is None else v / MIB,)


def _clock(info: Any) -> tuple[float | None]:
    return (smi_lib.first_number(info, CLOCK_KEYS),)


def _scalar(value: Any) -> tuple[float | None]:
    return (smi_lib.number(value),)


@dataclass(frozen=True)
class _Metric:
    """One amdsmi call and the metric keys (suffixes) it yields."""

    name: str
    keys: tuple[str, ...]
    functions: tuple[str, ...]  # candidates, first usable wins
    args: Callable[[Any], tuple[Any, ...] | None]  # None: the module lacks an enum
    convert: Callable[[Any], tuple[float | None, ...]]


def _enum(smi: Any, enum: str, member: str) -> Any:
    return getattr(getattr(smi, enum, None), member, None)


def _temp_args(sensor: str) -> Callable[[Any], tuple[Any, ...] | None]:
    def args(smi: Any) -> tuple[Any, ...] | None:
        kind = _enum(smi, "AmdSmiTemperatureType", sensor)
        current = _enum(smi, "AmdSmiTemperatureMetric", "CURRENT")
        return None if kind is None or current is None else (kind, current)

    return args


def _one(smi: Any, enum: str, member: str) -> tuple[Any, ...] | None:
    value = _enum(smi, enum, member)
    return None if value is None else (value,)


_METRICS: tuple[_Metric, ...] = (
    _Metric("power", ("power_w",), ("amdsmi_get_power_info",), lambda m: (), _power),
    _Metric("energy", ("energy_j",), ("amdsmi_get_energy_count",), lambda m: (), _energy),
    _Metric(
        "activity",
        ("util_percent", "mem_util_percent"),
        ("amdsmi_get_gpu_activity",),
        lambda m: (),
        _activity,
    ),
    _Metric("vram", ("mem_used_mib",), ("amdsmi_get_gpu_vram_usage",), lambda m: (), _vram_used),
    _Metric(
        "vram_bytes",
        ("mem_used_mib",),
        ("amdsmi_get_gpu_memory_usage",),
        lambda m: _one(m, "AmdSmiMemoryType", "VRAM"),
        _bytes_to_mib,
    ),
    _Metric("temp_edge", ("temp_c",), ("amdsmi_get_temp_metric",), _temp_args("EDGE"), _scalar),
    _Metric(
        "temp_junction",
        ("temp_junction_c", "temp_hotspot_c"),
        ("amdsmi_get_temp_metric",),
        _temp_args("JUNCTION"),
        lambda v: (smi_lib.number(v), smi_lib.number(v)),
    ),
    _Metric("temp_mem", ("temp_mem_c",), ("amdsmi_get_temp_metric",), _temp_args("VRAM"), _scalar),
    _Metric(
        "clock",
        ("sm_clock_mhz",),
        ("amdsmi_get_clock_info",),
        lambda m: _one(m, "AmdSmiClkType", "GFX"),
        _clock,
    ),
)


@dataclass
class _Reader:
    """A bound, probed metric: ``call(handle, *args)`` then ``convert``."""

    keys: tuple[str, ...]  # full names, e.g. "gpu.0.power_w"
    function: str
    call: Callable[..., Any]
    args: tuple[Any, ...]
    convert: Callable[[Any], tuple[float | None, ...]]
    is_power: bool


@dataclass
class _Device:
    index: int
    handle: Any
    readers: list[_Reader] = field(default_factory=list)
    unsupported: dict[str, None] = field(default_factory=dict)  # keys always None


class AmdSmiSampler:
    """Samples the given AMD GPU indices (and only those) through amdsmi.

    Attributes as :class:`~inferx_core.telemetry.nvml.NvmlSampler`'s:
    ``gpu_ids``, ``interval_s``, ``notes``, ``last_errors``, ``lost_gpus``,
    ``unsupported`` (index -> metric names reported None).
    """

    name = "amdsmi"

    def __init__(
        self,
        gpu_ids: Iterable[int],
        *,
        interval_s: float = 0.5,
        amdsmi: ModuleType | Any | None = None,
    ) -> None:
        self.gpu_ids: tuple[int, ...] = tuple(dict.fromkeys(int(i) for i in gpu_ids))
        self.interval_s = interval_s
        self.notes: list[str] = []
        self.last_errors: list[str] = []
        self.lost_gpus: list[int] = []
        self.unsupported: dict[int, list[str]] = {}
        self._smi: Any = amdsmi  # injected by tests; else loaded in start()
        self._devices: list[_Device] = []
        self._initialised = False
        self._error_counts: dict[str, int] = {}
        self._junction_as_temp: list[int] = []

    # -- start -------------------------------------------------------------

    def start(self) -> None:
        """Init amdsmi, take handles for the requested GPUs, probe supported metrics."""
        if self._initialised:
            return
        if not self.gpu_ids:
            raise SamplerUnavailable("no supported GPU: no GPU index requested")
        smi = self._smi
        if smi is None:
            try:
                smi = smi_lib.load_amdsmi()
            except ImportError as exc:
                raise SamplerUnavailable(
                    f"no supported GPU: amdsmi not importable ({exc})"
                ) from exc
            self._smi = smi
        try:
            smi_lib.init(smi)
        except Exception as exc:
            raise SamplerUnavailable(
                f"no supported GPU: amdsmi unavailable ({smi_lib.error_text(exc)})"
            ) from exc
        self._initialised = True
        try:
            self._open_devices(smi)
        except SamplerUnavailable:
            self.stop()
            raise
        except Exception as exc:
            self.stop()
            raise SamplerUnavailable(
                f"no supported GPU: amdsmi failed ({type(exc).__name__}: {smi_lib.error_text(exc)})"
            ) from exc

    def _open_devices(self, smi: Any) -> None:
        by_index = dict(smi_lib.gpu_handles(smi))
        if not by_index:
            raise SamplerUnavailable("no supported GPU: amdsmi reports 0 AMD GPUs")
        missing: list[str] = []
        for index in self.gpu_ids:
            if index not in by_index:
                missing.append(f"{index} (amdsmi sees {sorted(by_index)})")
                continue
            try:
                device = self._probe(smi, index, by_index[index])
            except smi_lib.smi_errors(smi) as exc:
                missing.append(f"{index} ({smi_lib.error_text(exc)})")
                continue
            self._devices.append(device)
            if device.unsupported:
                self.unsupported[index] = list(device.unsupported)
        if missing:
            self.notes.append("GPU not sampled: " + ", ".join(missing))
        if self._junction_as_temp:
            gpus = ",".join(str(i) for i in self._junction_as_temp)
            self.notes.append(
                f"gpu {gpus}: no edge temperature sensor; temp_c is the junction temperature"
            )
        if not self._devices:
            raise SamplerUnavailable(
                "no supported GPU: none of the requested AMD GPUs could be opened: "
                + ", ".join(missing)
            )

    def _probe(self, smi: Any, index: int, handle: Any) -> _Device:
        """Call every metric once; unsupported ones are None from now on.

        A lost device (NOT_FOUND) propagates: the device is not sampled. Any
        other error keeps the metric (it may be transient; reads report it).
        """
        errors = smi_lib.smi_errors(smi)
        device = _Device(index=index, handle=handle)
        prefix = f"gpu.{index}."
        have: set[str] = set()
        for metric in _METRICS:
            keys = tuple(prefix + k for k in metric.keys)
            if metric.name == "vram_bytes" and "mem_used_mib" in have:
                continue  # the fallback is only for releases/devices without vram_usage
            args = metric.args(smi)
            chosen: Callable[..., Any] | None = None
            chosen_name = ""
            for fname in metric.functions:
                fn = getattr(smi, fname, None)
                if fn is None or args is None:
                    continue
                try:
                    raw = fn(handle, *args)
                except errors as exc:
                    if smi_lib.is_lost(exc):
                        raise
                    if smi_lib.is_unsupported(exc):
                        continue
                    chosen, chosen_name = fn, fname  # transient: keep, reads will tell
                    break
                if all(v is None for v in metric.convert(raw)):
                    continue  # answered, but only "N/A": not supported here
                chosen, chosen_name = fn, fname
                break
            if chosen is None:
                if metric.name != "vram":  # vram_bytes decides mem_used_mib
                    device.unsupported.update(dict.fromkeys(keys))
                continue
            have.update(metric.keys)
            is_power = metric.name == "power"
            device.readers.append(
                _Reader(keys, chosen_name, chosen, args or (), metric.convert, is_power)
            )
        self._fallback_temp(device, prefix)
        return device

    def _fallback_temp(self, device: _Device, prefix: str) -> None:
        """No edge sensor (MI300X): temp_c is the junction temperature, said once."""
        temp_c = prefix + "temp_c"
        if temp_c not in device.unsupported:
            return
        junction = next((r for r in device.readers if prefix + "temp_junction_c" in r.keys), None)
        if junction is None:
            return
        del device.unsupported[temp_c]
        device.readers.remove(junction)
        device.readers.append(
            _Reader(
                (temp_c, *junction.keys),
                junction.function,
                junction.call,
                junction.args,
                lambda v: (smi_lib.number(v),) * 3,
                False,
            )
        )
        self._junction_as_temp.append(device.index)

    # -- read --------------------------------------------------------------

    def read(self) -> Mapping[str, float | None]:
        """One reading of every GPU still present; see the module doc for failures."""
        errors_cls = smi_lib.smi_errors(self._smi)
        errors: list[str] = []
        values: dict[str, float | None] = {}
        lost_now: list[_Device] = []
        for device in self._devices:
            got: dict[str, float | None] = {}
            ok = True
            for reader in device.readers:
                try:
                    raw = reader.call(device.handle, *reader.args)
                except errors_cls as exc:
                    message = f"gpu {device.index}: {reader.function}: {smi_lib.error_text(exc)}"
                    errors.append(message)
                    self._count(message)
                    if smi_lib.is_lost(exc):
                        lost_now.append(device)
                        ok = False
                        break
                    if reader.is_power:
                        ok = False
                        break
                    got.update(dict.fromkeys(reader.keys))
                    continue
                converted = reader.convert(raw)
                if reader.is_power and converted[0] is None:
                    message = f"gpu {device.index}: {reader.function}: no numeric socket power"
                    errors.append(message)
                    self._count(message)
                    ok = False
                    break
                got.update(zip(reader.keys, converted, strict=True))
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
                raise AmdSmiReadError("no GPU could be read: " + "; ".join(errors))
            raise AmdSmiReadError(f"no GPU left to read (lost: {self.lost_gpus})")
        return values

    def _count(self, message: str) -> None:
        self._error_counts[message] = self._error_counts.get(message, 0) + 1

    # -- stop --------------------------------------------------------------

    def stop(self) -> None:
        """Shut amdsmi down and turn error counts into notes; never raises."""
        try:
            for message, count in self._error_counts.items():
                self.notes.append(f"{message} ({count} read{'s' if count != 1 else ''})")
            self._error_counts.clear()
            self._devices = []
            if self._initialised:
                self._initialised = False
                self._smi.amdsmi_shut_down()
        except Exception:  # stop must not raise; a failed shutdown changes nothing
            pass
