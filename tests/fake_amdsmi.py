"""A fake ``amdsmi`` that follows AMD SMI's Python API: names, return shapes, units, errors.

Injected by tests through ``sys.modules['amdsmi']`` or a sampler's
``amdsmi=`` argument (never by product code). Modelled on amdsmi 7.0.2's
``amdsmi_interface.py`` (and, with ``api="6.1"``, on 6.0/6.1's shapes):

- handles are opaque objects; passing anything else raises
  ``AmdSmiParameterException`` as the real type checks do;
- failures raise ``AmdSmiLibraryException(err_code)`` with the real status
  codes (``get_error_code()``, ``get_error_info()``): NOT_SUPPORTED for an
  unsupported metric, NOT_FOUND for a GPU that is gone;
- "not available" fields inside a dict are the string ``"N/A"``;
- units as the library reports them: power in W, ``vram_used``/``vram_size``
  in MB, ``amdsmi_get_gpu_memory_*`` in bytes, temperatures in degrees C,
  clocks in MHz, the energy counter as ``energy_accumulator`` counts of
  ``counter_resolution`` microjoules (``power`` instead of
  ``energy_accumulator`` before 6.4).

Each device is a :class:`FakeAmdGpu`. The energy accumulator advances at the
GPU's ``power_w`` on the fake's clock (``FakeAmdSmi.now``; real time unless a
test sets ``clock``); ``set_power`` changes the draw from then on. Every
``amdsmi_*`` call made through ``as_module()`` is counted in ``FakeAmdSmi.calls``.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from types import SimpleNamespace
from typing import Any

# amdsmi_wrapper.AMDSMI_STATUS_* (subset)
AMDSMI_STATUS_SUCCESS = 0
AMDSMI_STATUS_INVAL = 1
AMDSMI_STATUS_NOT_SUPPORTED = 2
AMDSMI_STATUS_NOT_YET_IMPLEMENTED = 3
AMDSMI_STATUS_API_FAILED = 7
AMDSMI_STATUS_TIMEOUT = 8
AMDSMI_STATUS_RETRY = 9
AMDSMI_STATUS_NO_PERM = 10
AMDSMI_STATUS_IO = 12
AMDSMI_STATUS_INIT_ERROR = 18
AMDSMI_STATUS_NOT_FOUND = 31
AMDSMI_STATUS_DRIVER_NOT_LOADED = 34

_ERR_INFO = {
    AMDSMI_STATUS_INVAL: "AMDSMI_STATUS_INVAL - Invalid parameters",
    AMDSMI_STATUS_NOT_SUPPORTED: "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported",
    AMDSMI_STATUS_NOT_YET_IMPLEMENTED: (
        "AMDSMI_STATUS_NOT_YET_IMPLEMENTED - Feature not yet implemented"
    ),
    AMDSMI_STATUS_API_FAILED: "AMDSMI_STATUS_API_FAILED - API call failed",
    AMDSMI_STATUS_TIMEOUT: "AMDSMI_STATUS_TIMEOUT - Timeout in API call",
    AMDSMI_STATUS_RETRY: "AMDSMI_STATUS_RETRY - Retry operation",
    AMDSMI_STATUS_NO_PERM: "AMDSMI_STATUS_NO_PERM - Permission Denied",
    AMDSMI_STATUS_IO: "AMDSMI_STATUS_IO - I/O Error",
    AMDSMI_STATUS_INIT_ERROR: "AMDSMI_STATUS_INIT_ERROR - Initialization error",
    AMDSMI_STATUS_NOT_FOUND: "AMDSMI_STATUS_NOT_FOUND - Device Not found",
    AMDSMI_STATUS_DRIVER_NOT_LOADED: "AMDSMI_STATUS_DRIVER_NOT_LOADED - Driver not loaded",
}


class AmdSmiException(Exception):
    """Base smi exception class"""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int) -> None:
        err_code = abs(err_code)
        super().__init__(err_code)
        self.err_code = err_code
        self.err_info = _ERR_INFO.get(
            err_code, "AMDSMI_STATUS_UNKNOWN_ERROR - An unknown error occurred"
        )

    def __str__(self) -> str:
        return f"Error code:\n\t{self.err_code} | {self.err_info}"

    def get_error_info(self, detailed: bool = True) -> str:
        return self.err_info if detailed else self.err_info.split(" - ")[0]

    def get_error_code(self) -> int:
        return self.err_code


class AmdSmiRetryException(AmdSmiLibraryException):
    def __init__(self) -> None:
        super().__init__(AMDSMI_STATUS_RETRY)


class AmdSmiTimeoutException(AmdSmiLibraryException):
    def __init__(self) -> None:
        super().__init__(AMDSMI_STATUS_TIMEOUT)


class AmdSmiParameterException(AmdSmiException):
    def __init__(self, received: Any, expected: Any) -> None:
        super().__init__()
        self.err_code = None
        self.err_msg = (
            f"Invalid parameter:\nActual type: {type(received)}\nExpected type: {expected}"
        )

    def __str__(self) -> str:
        return self.err_msg


class AmdSmiInitFlags(IntEnum):
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1
    INIT_AMD_GPUS = 2
    INIT_NON_AMD_CPUS = 4
    INIT_NON_AMD_GPUS = 8
    INIT_AMD_APUS = 3


class AmdSmiTemperatureType(IntEnum):
    EDGE = 0
    HOTSPOT = 1
    JUNCTION = 1
    VRAM = 2
    HBM_0 = 3
    HBM_1 = 4
    HBM_2 = 5
    HBM_3 = 6
    PLX = 7


class AmdSmiTemperatureMetric(IntEnum):
    CURRENT = 0
    MAX = 1
    MIN = 2
    CRITICAL = 5


class AmdSmiClkType(IntEnum):
    SYS = 0
    GFX = 0
    DF = 1
    DCEF = 2
    SOC = 3
    MEM = 4
    PCIE = 5


class AmdSmiMemoryType(IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiFwBlock(IntEnum):  # 6.2+ names
    AMDSMI_FW_ID_SMU = 1
    AMDSMI_FW_ID_CP_CE = 2
    AMDSMI_FW_ID_CP_PFP = 3
    AMDSMI_FW_ID_CP_ME = 4
    AMDSMI_FW_ID_CP_MEC_JT1 = 5
    AMDSMI_FW_ID_CP_MEC_JT2 = 6
    AMDSMI_FW_ID_CP_MEC1 = 7
    AMDSMI_FW_ID_CP_MEC2 = 8
    AMDSMI_FW_ID_RLC = 9
    AMDSMI_FW_ID_PM = 68
    AMDSMI_FW_ID_PLDM_BUNDLE = 94


class AmdSmiFwBlockOld(IntEnum):  # 6.0/6.1 names
    FW_ID_SMU = 1
    FW_ID_CP_CE = 2
    FW_ID_CP_PFP = 3
    FW_ID_CP_ME = 4
    FW_ID_CP_MEC_JT1 = 5
    FW_ID_CP_MEC_JT2 = 6
    FW_ID_CP_MEC1 = 7
    FW_ID_CP_MEC2 = 8
    FW_ID_RLC = 9


ENUMS = (
    AmdSmiInitFlags,
    AmdSmiTemperatureType,
    AmdSmiTemperatureMetric,
    AmdSmiClkType,
    AmdSmiMemoryType,
)
EXCEPTIONS = (
    AmdSmiException,
    AmdSmiLibraryException,
    AmdSmiRetryException,
    AmdSmiTimeoutException,
    AmdSmiParameterException,
)


class ProcessorHandle:
    """Stands for ``amdsmi_wrapper.amdsmi_processor_handle`` (an opaque pointer)."""

    def __init__(self, position: int) -> None:
        self.position = position

    def __repr__(self) -> str:
        return f"<amdsmi_processor_handle {self.position}>"


@dataclass
class FakeAmdGpu:
    market_name: str = "AMD Instinct MI300X"
    gfx: str = "gfx942"  # target_graphics_version as amdsmi 6.4+ reports it (bare)
    board_product_name: str = "AMD INSTINCT MI300X (MCM) OAM AC MBA"
    vram_mb: int = 196592  # vram_info vram_size / vram_usage vram_total, MB
    vram_used_mb: int = 283
    power_w: float = 160  # socket power
    #: 7.x reports socket_power; 6.x only current/average (MI300: average "N/A")
    average_power_w: float | None = None
    energy_start_uj: float = 5_000_000.0
    counter_resolution: float = 15.259999275207520  # uJ per count (a c_float)
    gfx_activity: int | str = 0
    umc_activity: int | str = 0
    temps: dict[str, int] = field(
        default_factory=lambda: {"EDGE": 38, "HOTSPOT": 45, "VRAM": 41}
    )  # a sensor not listed raises NOT_SUPPORTED (MI300X has no EDGE sensor)
    gfx_clk_mhz: int = 132
    mec_fw: int = 177
    pldm_bundle: str | None = "01.25.03.12"
    compute_partition: str = "SPX"
    memory_partition: str = "NPS1"
    driver_version: str = "6.8.5"
    bdf: str = "0000:0c:00.0"
    uuid: str = "b4ff74a1-0000-1000-80a5-0bb7a3e4d2a1"
    hip_id: int | None = None  # None: the handle's position
    lost: bool = False
    #: amdsmi function names that raise NOT_SUPPORTED on this device
    unsupported: set[str] = field(default_factory=set)
    #: amdsmi function names that raise a transient error (AMDSMI_STATUS_IO)
    failing: set[str] = field(default_factory=set)


def mi300x(**kw: Any) -> FakeAmdGpu:
    kw.setdefault("temps", {"HOTSPOT": 45, "VRAM": 41})  # no edge sensor on MI300X
    return FakeAmdGpu(**kw)


def mi325x(**kw: Any) -> FakeAmdGpu:
    kw.setdefault("temps", {"HOTSPOT": 47, "VRAM": 43})
    base = {
        "market_name": "AMD Instinct MI325X",
        "board_product_name": "AMD INSTINCT MI325X OAM",
        "vram_mb": 262128,
        "driver_version": "6.10.5",
    }
    return FakeAmdGpu(**{**base, **kw})


def mi355x(**kw: Any) -> FakeAmdGpu:
    base = {
        "market_name": "AMD Instinct MI355X",
        "gfx": "gfx950",
        "board_product_name": "AMD INSTINCT MI355X OAM",
        "vram_mb": 294896,
        "driver_version": "6.14.14",
        "mec_fw": 24,
        "power_w": 230,
    }
    return FakeAmdGpu(**{**base, **kw})


class FakeAmdSmi:
    """Build with devices, then install as a module via ``as_module()``."""

    def __init__(
        self,
        gpus: list[FakeAmdGpu] | None = None,
        *,
        init_error: int | None = None,
        api: str = "7.0",
        rocm_version: str | None = "6.2.4",
        clock: Callable[[], float] | None = None,
        without: tuple[str, ...] = (),
    ) -> None:
        """``init_error``: status amdsmi_init fails with (e.g. DRIVER_NOT_LOADED);
        ``api``: "7.0" or "6.1" return shapes; ``without``: functions the module lacks."""
        self.gpus = gpus or []
        self.init_error = init_error
        self.api = api
        self.rocm_version = rocm_version
        self.clock = clock or time.perf_counter
        self.created = self.clock()
        self.without = set(without)
        self.initialised = 0
        self.calls: Counter[str] = Counter()
        self.handles = [ProcessorHandle(i) for i in range(len(self.gpus))]
        self._banked: dict[int, tuple[float, float]] = {}  # index -> (uJ, since)

    @property
    def old(self) -> bool:
        return self.api.startswith(("6.0", "6.1"))

    def as_module(self) -> SimpleNamespace:
        missing = set(self.without)
        if self.old:
            missing |= {
                "amdsmi_get_gpu_enumeration_info",
                "amdsmi_get_rocm_version",
                "amdsmi_get_gpu_memory_partition",
            }
        names = [n for n in dir(self) if n.startswith("amdsmi_") and n not in missing]
        mod = SimpleNamespace(**{n: self._counted(n) for n in names})
        for cls in (*ENUMS, *EXCEPTIONS):
            setattr(mod, cls.__name__, cls)
        mod.AmdSmiFwBlock = AmdSmiFwBlockOld if self.old else AmdSmiFwBlock
        return mod

    def _counted(self, name: str) -> Any:
        fn = getattr(self, name)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return fn(*args, **kwargs)

        return call

    def now(self) -> float:
        return self.clock()

    def _gpu(self, handle: Any, function: str | None = None) -> FakeAmdGpu:
        if not isinstance(handle, ProcessorHandle):
            raise AmdSmiParameterException(handle, "amdsmi_processor_handle")
        if not self.initialised:
            raise AmdSmiLibraryException(32)  # AMDSMI_STATUS_NOT_INIT
        gpu = self.gpus[handle.position]
        if gpu.lost:
            raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_FOUND)
        if function in gpu.unsupported:
            raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED)
        if function in gpu.failing:
            raise AmdSmiLibraryException(AMDSMI_STATUS_IO)
        return gpu

    # -- library ---------------------------------------------------------------------------

    def amdsmi_init(self, flag: AmdSmiInitFlags = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
        if not isinstance(flag, AmdSmiInitFlags):
            raise AmdSmiParameterException(flag, AmdSmiInitFlags)
        if self.init_error is not None:
            raise AmdSmiLibraryException(self.init_error)
        self.initialised += 1

    def amdsmi_shut_down(self) -> None:
        if self.initialised <= 0:
            raise AmdSmiLibraryException(32)
        self.initialised -= 1

    def amdsmi_get_processor_handles(self) -> list[ProcessorHandle]:
        if not self.initialised:
            raise AmdSmiLibraryException(32)
        return list(self.handles)

    def amdsmi_get_lib_version(self) -> dict[str, Any]:
        return {"major": 25, "minor": 5, "release": 1, "build": "0"}

    def amdsmi_get_rocm_version(self) -> tuple[bool, str]:
        if self.rocm_version is None:
            return False, "Could not find librocm-core.so"
        return True, self.rocm_version

    # -- identity --------------------------------------------------------------------------

    def amdsmi_get_gpu_enumeration_info(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_enumeration_info")
        hip = handle.position if gpu.hip_id is None else gpu.hip_id
        return {
            "drm_render": 128 + handle.position,
            "drm_card": handle.position,
            "hsa_id": hip + 1,
            "hip_id": hip,
            "hip_uuid": f"GPU-{gpu.uuid[:16]}",
        }

    def amdsmi_get_gpu_asic_info(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_asic_info")
        info: dict[str, Any] = {
            "market_name": gpu.market_name,
            "vendor_id": "0x1002",
            "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
            "subvendor_id": "0x1002",
            "device_id": "0x74a1" if gpu.gfx == "gfx942" else "0x75a3",
            "rev_id": "0x00",
            "asic_serial": "0x1B2C3D4E5F607182",
            "oam_id": handle.position,
            "num_compute_units": 304 if gpu.gfx == "gfx942" else 256,
        }
        if not self.old:
            info["target_graphics_version"] = gpu.gfx
        return info

    def amdsmi_get_gpu_board_info(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_board_info")
        return {
            "model_number": "102-G30211-00",
            "product_serial": "692251001124",
            "fru_id": "N/A",
            "product_name": gpu.board_product_name,
            "manufacturer_name": "AMD",
        }

    def amdsmi_get_gpu_vram_info(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_vram_info")
        return {
            "vram_type": 5,
            "vram_vendor": "SAMSUNG",
            "vram_size": gpu.vram_mb,
            "vram_bit_width": 8192,
            "vram_max_bandwidth": "N/A",
        }

    def amdsmi_get_gpu_memory_total(self, handle: Any, mem_type: Any) -> int:
        gpu = self._gpu(handle, "amdsmi_get_gpu_memory_total")
        if not isinstance(mem_type, AmdSmiMemoryType):
            raise AmdSmiParameterException(mem_type, AmdSmiMemoryType)
        if mem_type != AmdSmiMemoryType.VRAM:
            raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED)
        return gpu.vram_mb * 1024 * 1024

    def amdsmi_get_gpu_driver_info(self, handle: Any) -> dict[str, str]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_driver_info")
        return {"driver_name": "amdgpu", "driver_version": gpu.driver_version, "driver_date": ""}

    def amdsmi_get_gpu_device_bdf(self, handle: Any) -> str:
        return self._gpu(handle, "amdsmi_get_gpu_device_bdf").bdf

    def amdsmi_get_gpu_device_uuid(self, handle: Any) -> str:
        return self._gpu(handle, "amdsmi_get_gpu_device_uuid").uuid

    def amdsmi_get_fw_info(self, handle: Any) -> dict[str, list[dict[str, Any]]]:
        gpu = self._gpu(handle, "amdsmi_get_fw_info")
        block = AmdSmiFwBlockOld if self.old else AmdSmiFwBlock
        prefix = "FW_ID_" if self.old else "AMDSMI_FW_ID_"
        fw = [
            {"fw_name": block[prefix + "SMU"], "fw_version": "85.118.0"},
            {"fw_name": block[prefix + "CP_MEC_JT1"], "fw_version": str(gpu.mec_fw)},
            {"fw_name": block[prefix + "CP_MEC1"], "fw_version": str(gpu.mec_fw)},
            {"fw_name": block[prefix + "CP_MEC2"], "fw_version": str(gpu.mec_fw)},
            {"fw_name": block[prefix + "RLC"], "fw_version": "105"},
        ]
        if gpu.pldm_bundle and not self.old:
            fw.append({"fw_name": block.AMDSMI_FW_ID_PLDM_BUNDLE, "fw_version": gpu.pldm_bundle})
        return {"fw_list": fw}

    def amdsmi_get_gpu_compute_partition(self, handle: Any) -> str:
        return self._gpu(handle, "amdsmi_get_gpu_compute_partition").compute_partition

    def amdsmi_get_gpu_memory_partition(self, handle: Any) -> str:
        return self._gpu(handle, "amdsmi_get_gpu_memory_partition").memory_partition

    # -- telemetry -------------------------------------------------------------------------

    def amdsmi_get_power_info(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_power_info")
        average = "N/A" if gpu.average_power_w is None else gpu.average_power_w
        info: dict[str, Any] = {
            "current_socket_power": gpu.power_w,
            "average_socket_power": average,
            "gfx_voltage": "N/A",
            "soc_voltage": "N/A",
            "mem_voltage": "N/A",
            "power_limit": 750_000_000,
        }
        if not self.old:
            info = {"socket_power": gpu.power_w, **info}
        return info

    def set_power(self, index: int, watts: float) -> None:
        """Change a GPU's power draw from now on (the counter keeps what it has)."""
        gpu = self.gpus[index]
        banked, since = self._banked.get(index, (gpu.energy_start_uj, self.created))
        now = self.now()
        self._banked[index] = (banked + gpu.power_w * (now - since) * 1e6, now)
        gpu.power_w = watts

    def energy_uj(self, index: int) -> float:
        """The true energy GPU ``index``'s counter represents now (before quantisation)."""
        gpu = self.gpus[index]
        banked, since = self._banked.get(index, (gpu.energy_start_uj, self.created))
        return banked + gpu.power_w * (self.now() - since) * 1e6

    def amdsmi_get_energy_count(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_energy_count")
        count = int(self.energy_uj(handle.position) / gpu.counter_resolution)
        key = "power" if self.old else "energy_accumulator"
        return {
            key: count,
            "counter_resolution": gpu.counter_resolution,
            "timestamp": int(self.now() * 1e9),
        }

    def amdsmi_get_gpu_activity(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_activity")
        return {
            "gfx_activity": gpu.gfx_activity,
            "umc_activity": gpu.umc_activity,
            "mm_activity": "N/A",
        }

    def amdsmi_get_gpu_vram_usage(self, handle: Any) -> dict[str, int]:
        gpu = self._gpu(handle, "amdsmi_get_gpu_vram_usage")
        return {"vram_total": gpu.vram_mb, "vram_used": gpu.vram_used_mb}

    def amdsmi_get_gpu_memory_usage(self, handle: Any, mem_type: Any) -> int:
        gpu = self._gpu(handle, "amdsmi_get_gpu_memory_usage")
        if not isinstance(mem_type, AmdSmiMemoryType):
            raise AmdSmiParameterException(mem_type, AmdSmiMemoryType)
        return gpu.vram_used_mb * 1024 * 1024

    def amdsmi_get_temp_metric(self, handle: Any, sensor_type: Any, metric: Any) -> int:
        gpu = self._gpu(handle, "amdsmi_get_temp_metric")
        if not isinstance(sensor_type, AmdSmiTemperatureType):
            raise AmdSmiParameterException(sensor_type, AmdSmiTemperatureType)
        if not isinstance(metric, AmdSmiTemperatureMetric):
            raise AmdSmiParameterException(metric, AmdSmiTemperatureMetric)
        name = AmdSmiTemperatureType(sensor_type).name  # JUNCTION is an alias of HOTSPOT
        if name not in gpu.temps or metric != AmdSmiTemperatureMetric.CURRENT:
            raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED)
        return gpu.temps[name]

    def amdsmi_get_clock_info(self, handle: Any, clock_type: Any) -> dict[str, Any]:
        gpu = self._gpu(handle, "amdsmi_get_clock_info")
        if not isinstance(clock_type, AmdSmiClkType):
            raise AmdSmiParameterException(clock_type, AmdSmiClkType)
        if clock_type != AmdSmiClkType.GFX:
            raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED)  # only GFX modelled
        if self.old:
            return {"cur_clk": gpu.gfx_clk_mhz, "max_clk": 2100, "min_clk": 500, "sleep_clk": 0}
        return {
            "clk": gpu.gfx_clk_mhz,
            "min_clk": 500,
            "max_clk": 2100,
            "clk_locked": False,
            "clk_deep_sleep": 0,
        }
