"""AMD GPU telemetry through amdsmi, named by the vendor-neutral scheme of
:mod:`inferx_core.sdk.sampler` so energy is computed exactly as for NVIDIA.

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

Failure policy (:mod:`inferx_core.telemetry.device`'s, shared with the NVML
sampler so both vendors fail alike): what a device answers with
AMDSMI_STATUS_NOT_SUPPORTED (or NOT_YET_IMPLEMENTED, NO_PERM) at start, or
only with "N/A", is None on every read without being called again; a GPU
whose power read fails, or which reports AMDSMI_STATUS_NOT_FOUND (lost), is
left out of that reading (a lost GPU is never called again, ``lost_gpus``);
any other error makes that metric None for that read; errors are counted
into ``notes`` at stop; when no GPU can be read ``read`` raises
:class:`AmdSmiReadError` so the recorder records a gap.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from types import ModuleType
from typing import Any

from inferx_core import (
    MIB,
    Device,
    DeviceReadError,
    DeviceSampler,
    Metric,
    Platform,
    Reader,
    Sampler,
    SamplerUnavailable,
)
from inferx_rocm import smi as smi_lib

__all__ = ["MIB", "AmdSmiReadError", "AmdSmiSampler"]

POWER_KEYS = ("socket_power", "current_socket_power", "average_socket_power")
ENERGY_KEYS = ("energy_accumulator", "power")  # 6.4+ / before
CLOCK_KEYS = ("clk", "cur_clk")  # 6.2+ / before
UJ_PER_J = 1_000_000.0


class AmdSmiReadError(DeviceReadError):
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


_METRICS: tuple[Metric, ...] = (
    Metric(("power_w",), ("amdsmi_get_power_info",), lambda m: (), _power),
    Metric(("energy_j",), ("amdsmi_get_energy_count",), lambda m: (), _energy),
    Metric(
        ("util_percent", "mem_util_percent"),
        ("amdsmi_get_gpu_activity",),
        lambda m: (),
        _activity,
    ),
    Metric(("mem_used_mib",), ("amdsmi_get_gpu_vram_usage",), lambda m: (), _vram_used),
    # only for releases/devices without vram_usage (same keys: a fallback)
    Metric(
        ("mem_used_mib",),
        ("amdsmi_get_gpu_memory_usage",),
        lambda m: _one(m, "AmdSmiMemoryType", "VRAM"),
        _bytes_to_mib,
    ),
    Metric(("temp_c",), ("amdsmi_get_temp_metric",), _temp_args("EDGE"), _scalar),
    Metric(
        ("temp_junction_c", "temp_hotspot_c"),
        ("amdsmi_get_temp_metric",),
        _temp_args("JUNCTION"),
        lambda v: (smi_lib.number(v), smi_lib.number(v)),
    ),
    Metric(("temp_mem_c",), ("amdsmi_get_temp_metric",), _temp_args("VRAM"), _scalar),
    Metric(
        ("sm_clock_mhz",),
        ("amdsmi_get_clock_info",),
        lambda m: _one(m, "AmdSmiClkType", "GFX"),
        _clock,
    ),
)


class AmdSmiSampler(DeviceSampler):
    """Samples the given AMD GPU indices (and only those) through amdsmi.

    Attributes as :class:`~inferx_core.builtin.nvidia.sampler.NvmlSampler`'s:
    ``gpu_ids``, ``interval_s``, ``notes``, ``last_errors``, ``lost_gpus``,
    ``unsupported`` (index -> metric names reported None).
    """

    name = "amdsmi"
    library = "amdsmi"
    module_name = "amdsmi"
    metrics = _METRICS
    read_error = AmdSmiReadError
    gpus_label = "AMD GPUs"

    def __init__(
        self,
        gpu_ids: Iterable[int],
        *,
        interval_s: float = 0.5,
        amdsmi: ModuleType | Any | None = None,
    ) -> None:
        super().__init__(gpu_ids, interval_s=interval_s, lib=amdsmi)
        self._junction_as_temp: list[int] = []

    def _load(self) -> Any:
        return smi_lib.load_amdsmi()

    def _init(self, lib: Any) -> None:
        smi_lib.init(lib)

    def _shutdown(self, lib: Any) -> None:
        lib.amdsmi_shut_down()

    def _handles(self, lib: Any) -> tuple[Container[int], Callable[[int], Any], str]:
        by_index = dict(smi_lib.gpu_handles(lib))
        if not by_index:
            raise SamplerUnavailable("no supported GPU: amdsmi reports 0 AMD GPUs")
        return by_index, by_index.__getitem__, f"amdsmi sees {sorted(by_index)}"

    def _errors(self, lib: Any) -> tuple[type[BaseException], ...]:
        return smi_lib.smi_errors(lib)

    def _is_unsupported(self, lib: Any, exc: BaseException) -> bool:
        return smi_lib.is_unsupported(exc)

    def _is_lost(self, lib: Any, exc: BaseException) -> bool:
        return smi_lib.is_lost(exc)

    def _describe(self, exc: BaseException) -> str:
        return smi_lib.error_text(exc)

    def _failure_text(self, exc: BaseException) -> str:
        return f"{type(exc).__name__}: {smi_lib.error_text(exc)}"

    def _answers(self, metric: Metric, raw: Any) -> bool:
        """Only "N/A" in every field is amdsmi's way of saying "not supported here"."""
        return not all(v is None for v in metric.convert(raw))

    def _open_notes(self) -> list[str]:
        if not self._junction_as_temp:
            return []
        gpus = ",".join(str(i) for i in self._junction_as_temp)
        return [f"gpu {gpus}: no edge temperature sensor; temp_c is the junction temperature"]

    def _probed(self, device: Device) -> None:
        """No edge sensor (MI300X): temp_c is the junction temperature, said once."""
        prefix = f"gpu.{device.index}."
        temp_c = prefix + "temp_c"
        if temp_c not in device.unsupported:
            return
        junction = next((r for r in device.readers if prefix + "temp_junction_c" in r.keys), None)
        if junction is None:
            return
        del device.unsupported[temp_c]
        device.readers.remove(junction)
        device.readers.append(
            Reader(
                (temp_c, *junction.keys),
                junction.function,
                junction.call,
                junction.args,
                lambda v: (smi_lib.number(v),) * 3,
                False,
            )
        )
        self._junction_as_temp.append(device.index)


def samplers_for(platform: Platform, gpu_ids: list[int]) -> list[Sampler] | None:
    """One :class:`AmdSmiSampler` for the AMD devices among ``gpu_ids``, else None."""
    amd = {a.index for a in platform.accelerators_of("amd")}
    ids = [i for i in gpu_ids if i in amd]
    if not ids:
        return None
    return [AmdSmiSampler(ids)]
