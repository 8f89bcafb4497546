"""AMD GPUs through ``amdsmi`` (AMD SMI's Python package, imported lazily).

Detection answers what an AMD node is: product name, gfx arch (bare, and as
``amdgpu-arch`` prints it with feature suffixes), VRAM, driver and ROCm
versions, MEC firmware and partition mode. Every call goes through the real
amdsmi API (6.x and 7.x shapes are both handled, see :func:`first_number`);
what a device does not support is left out, never guessed.

A machine without ``amdsmi`` or without an AMD GPU is normal: detection then
returns None (silent). Only where the AMD kernel driver is present
(``/dev/kfd``) and amdsmi still cannot be used does it return a note saying
why, so ``inferx doctor`` on a broken AMD node explains itself.

Device indices are the HIP device ids (``amdsmi_get_gpu_enumeration_info``'s
``hip_id``, amdsmi >= 6.4), i.e. what ``ROCR_VISIBLE_DEVICES`` counts on the
node; older amdsmi falls back to enumeration order. An inherited
``ROCR_VISIBLE_DEVICES`` (Slurm sets it for AMD GPUs) limits the GPUs reported,
so a job never launches on GPUs it was not given.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from inferx_core import Accelerator, Platform, PlatformNote

SOURCE = "rocm"
MIB = 1024 * 1024
KFD_PATH = "/dev/kfd"

# amdsmi_status_t values (amdsmi_wrapper.AMDSMI_STATUS_*; the C ABI, stable across releases).
STATUS_NOT_SUPPORTED = 2
STATUS_NOT_YET_IMPLEMENTED = 3
STATUS_NO_PERM = 10
STATUS_NOT_FOUND = 31
#: Codes meaning "this device never answers this call": reported None, not called again.
UNSUPPORTED_CODES = frozenset({STATUS_NOT_SUPPORTED, STATUS_NOT_YET_IMPLEMENTED, STATUS_NO_PERM})
#: Codes meaning the device is gone (fell off the bus, driver unbound).
LOST_CODES = frozenset({STATUS_NOT_FOUND})

# Product name -> bare arch, for amdsmi < 6.4 (no ``target_graphics_version``).
_ARCH_BY_PRODUCT = (
    ("MI355", "gfx950"),
    ("MI350", "gfx950"),
    ("MI325", "gfx942"),
    ("MI308", "gfx942"),
    ("MI300", "gfx942"),
    ("MI250", "gfx90a"),
    ("MI210", "gfx90a"),
    ("MI100", "gfx908"),
)


def load_amdsmi() -> ModuleType:
    """Import amdsmi lazily (tests put a fake in ``sys.modules['amdsmi']``).

    amdsmi loads ``libamd_smi.so`` at import time; where ROCm is missing it
    prints to stdout and raises KeyError. Both are contained here: the output
    is swallowed (it would corrupt ``--json`` output) and any failure becomes
    an ImportError carrying what amdsmi said.
    """
    if "amdsmi" in sys.modules:
        module = sys.modules["amdsmi"]
        if module is None:
            raise ImportError("amdsmi import blocked (sys.modules['amdsmi'] is None)")
        return module
    import importlib.util

    if importlib.util.find_spec("amdsmi") is None:
        raise ImportError("No module named 'amdsmi'")
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            import amdsmi
    except ImportError:
        raise
    except Exception as exc:  # KeyError('libamd_smi.so'), OSError, ...
        detail = " ".join(said.getvalue().split()) or f"{type(exc).__name__}: {exc}"
        raise ImportError(f"amdsmi cannot load its library ({detail})") from exc
    return amdsmi


def error_code(exc: BaseException) -> int | None:
    """The amdsmi status code of an AmdSmiLibraryException (None for other errors)."""
    getter = getattr(exc, "get_error_code", None)
    if callable(getter):
        with contextlib.suppress(Exception):
            return int(getter())
    code = getattr(exc, "err_code", None)
    return int(code) if isinstance(code, int) else None


def error_text(exc: BaseException) -> str:
    """One line: ``AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported`` or the message."""
    info = getattr(exc, "get_error_info", None)
    if callable(info):
        with contextlib.suppress(Exception):
            return str(info())
    return " ".join(str(exc).split()) or type(exc).__name__


def smi_errors(smi: Any) -> tuple[type[BaseException], ...]:
    """The exception classes amdsmi raises (AmdSmiException is the base in every release)."""
    found = tuple(
        cls
        for name in ("AmdSmiException", "AmdSmiLibraryException")
        if isinstance(cls := getattr(smi, name, None), type)
    )
    return found or (Exception,)


def is_unsupported(exc: BaseException) -> bool:
    return error_code(exc) in UNSUPPORTED_CODES


def is_lost(exc: BaseException) -> bool:
    return error_code(exc) in LOST_CODES


def number(value: Any) -> float | None:
    """A numeric reading, or None for amdsmi's ``"N/A"`` (and anything non-numeric)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def first_number(data: Any, keys: Iterable[str]) -> float | None:
    """The first numeric value among ``keys`` of an amdsmi dict (shapes differ by release)."""
    if not isinstance(data, dict):
        return None
    for key in keys:
        value = number(data.get(key))
        if value is not None:
            return value
    return None


def bare_arch(arch: str) -> str:
    """'gfx942:sramecc+:xnack-' -> 'gfx942' (what AITER pattern-matches)."""
    return arch.split(":", 1)[0].strip().lower()


def gpu_handles(smi: Any) -> list[tuple[int, Any]]:
    """(index, handle) for every AMD GPU, by HIP device id where amdsmi reports it."""
    handles = list(smi.amdsmi_get_processor_handles())
    enumeration = getattr(smi, "amdsmi_get_gpu_enumeration_info", None)
    hip_ids: list[int | None] = []
    for handle in handles:
        hip_id = None
        if enumeration is not None:
            with contextlib.suppress(Exception):
                value = enumeration(handle).get("hip_id")
                hip_id = value if isinstance(value, int) and not isinstance(value, bool) else None
        hip_ids.append(hip_id)
    ids = [i for i in hip_ids if i is not None]
    if handles and len(ids) == len(handles) and len(set(ids)) == len(ids):
        return sorted(zip(ids, handles, strict=True), key=lambda pair: pair[0])
    return list(enumerate(handles))


def init(smi: Any) -> None:
    """``amdsmi_init`` for AMD GPUs only (raises what amdsmi raises)."""
    flags = getattr(smi, "AmdSmiInitFlags", None)
    if flags is not None and hasattr(flags, "INIT_AMD_GPUS"):
        smi.amdsmi_init(flags.INIT_AMD_GPUS)
    else:
        smi.amdsmi_init()


def _call(fn: Any, *args: Any) -> Any:
    """Call an optional amdsmi function; None when it is absent or fails."""
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception:  # unsupported on this device or this release: leave the field out
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else str(value)
    text = text.strip()
    return None if not text or text.upper() == "N/A" else text


def _arch_of(asic: dict[str, Any], name: str) -> str | None:
    raw = asic.get("target_graphics_version")
    if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
        return f"gfx{raw:x}"
    text = _text(raw)
    if text and text.lower().startswith("gfx"):
        return bare_arch(text)
    upper = name.upper()
    return next((arch for key, arch in _ARCH_BY_PRODUCT if key in upper), None)


def _firmware(smi: Any, handle: Any) -> dict[str, str]:
    """{'mec': ..., 'pldm_bundle': ...} from amdsmi_get_fw_info (names differ by release:
    ``AMDSMI_FW_ID_CP_MEC1`` in 6.2+, ``FW_ID_CP_MEC1`` before)."""
    info = _call(getattr(smi, "amdsmi_get_fw_info", None), handle)
    entries = info.get("fw_list", []) if isinstance(info, dict) else info or []
    by_name: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        fw = entry.get("fw_name")
        name = getattr(fw, "name", None) or str(fw)
        name = name.rsplit(".", 1)[-1].removeprefix("AMDSMI_").removeprefix("FW_ID_")
        version = _text(entry.get("fw_version"))
        if version:
            by_name[name.upper()] = version
    out: dict[str, str] = {}
    wanted = (("mec", ("CP_MEC1", "CP_MEC", "RS64_MEC")), ("pldm_bundle", ("PLDM_BUNDLE",)))
    for key, candidates in wanted:
        for candidate in candidates:
            if candidate in by_name:
                out[key] = by_name[candidate]
                break
    return out


def _rocm_version(smi: Any, version_file: Path | None) -> str | None:
    got = _call(getattr(smi, "amdsmi_get_rocm_version", None))
    if isinstance(got, tuple) and len(got) == 2 and got[0] and _text(got[1]):
        return _text(got[1])
    if version_file is None:
        root = os.environ.get("ROCM_PATH") or os.environ.get("ROCM_HOME") or "/opt/rocm"
        version_file = Path(root) / ".info" / "version"
    try:
        text = version_file.read_text().strip()
    except OSError:
        return None
    match = re.match(r"\d+\.\d+(\.\d+)?", text)
    return match.group(0) if match else None


def _lib_version(smi: Any) -> str | None:
    got = _call(getattr(smi, "amdsmi_get_lib_version", None))
    if isinstance(got, dict) and "major" in got:
        parts = [got.get(k) for k in ("major", "minor", "release")]
        return ".".join(str(p) for p in parts if p is not None)
    return _text(got)


def amdgpu_arch_lines(timeout_s: float = 20.0) -> list[str]:
    """What ``amdgpu-arch`` prints (one arch per GPU, with feature suffixes); [] if absent."""
    root = os.environ.get("ROCM_PATH") or "/opt/rocm"
    for candidate in (Path(root) / "llvm" / "bin" / "amdgpu-arch", shutil.which("amdgpu-arch")):
        if candidate and Path(candidate).is_file():
            try:
                proc = subprocess.run(
                    [str(candidate)], capture_output=True, text=True, timeout=timeout_s
                )
            except (OSError, subprocess.SubprocessError):
                return []
            return [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    return []


def _full_arch(arch: str | None, asic: dict[str, Any], probed: list[str]) -> str | None:
    """The arch with its feature suffixes: amdsmi never has them; amdgpu-arch prints them."""
    raw = _text(asic.get("target_graphics_version"))
    if raw and ":" in raw:
        return raw
    for line in probed:
        if ":" in line and arch and bare_arch(line) == arch:
            return line
    return None


def detect_amd(
    smi: ModuleType | None = None,
    *,
    kfd_path: str = KFD_PATH,
    arch_probe: Callable[[], list[str]] | None = None,
    rocm_version_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Platform | None:
    """Enumerate AMD GPUs; None when there is no amdsmi or no AMD GPU (silent).

    ``env`` (default ``os.environ``): an inherited ``ROCR_VISIBLE_DEVICES``
    (e.g. from Slurm) limits the GPUs reported to those this process may use.
    """
    driver_present = os.path.exists(kfd_path)
    try:
        smi = smi or load_amdsmi()
    except ImportError as exc:
        if driver_present:
            return _note(
                f"AMD GPU driver present ({kfd_path}) but amdsmi is not usable: {exc}; install "
                "inferx-rocm[amdsmi] or ROCm's own amdsmi package (/opt/rocm/share/amd_smi)"
            )
        return None
    try:
        init(smi)
    except Exception as exc:  # AMDSMI_STATUS_DRIVER_NOT_LOADED, INIT_ERROR, ...
        if driver_present:
            return _note(f"AMD GPU driver present but amdsmi_init failed: {error_text(exc)}")
        return None
    try:
        return _enumerate(
            smi,
            arch_probe or amdgpu_arch_lines,
            rocm_version_file,
            os.environ if env is None else env,
        )
    except Exception as exc:  # e.g. a GPU vanishing mid-enumeration
        return _note(f"AMD detection failed: {type(exc).__name__}: {error_text(exc)}")
    finally:
        with contextlib.suppress(Exception):
            smi.amdsmi_shut_down()


def _hip_uuid(smi: Any, handle: Any) -> str | None:
    enumeration = getattr(smi, "amdsmi_get_gpu_enumeration_info", None)
    info = _call(enumeration, handle)
    return _text(info.get("hip_uuid")) if isinstance(info, dict) else None


def visible_to_rocr(
    smi: Any, pairs: list[tuple[int, Any]], value: str | None
) -> tuple[list[tuple[int, Any]], str | None]:
    """The GPUs an inherited ``ROCR_VISIBLE_DEVICES`` lets this process use, and a note.

    Indices keep their node-wide numbering (what the engine's own
    ROCR_VISIBLE_DEVICES will name); UUID entries (``GPU-...``) match
    amdsmi's ``hip_uuid``. Unset or empty: every GPU, no note.
    """
    if value is None or not value.strip():
        return pairs, None
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    by_index = dict(pairs)
    chosen: list[int] = []
    unknown: list[str] = []
    uuids: dict[str, int] | None = None
    for token in tokens:
        if token.isdigit() and int(token) in by_index:
            chosen.append(int(token))
            continue
        if uuids is None:
            uuids = {}
            for index, handle in pairs:
                uuid = _hip_uuid(smi, handle)
                if uuid:
                    uuids[uuid.lower()] = index
        if token.lower() in uuids:
            chosen.append(uuids[token.lower()])
        else:
            unknown.append(token)
    kept = [(i, h) for i, h in pairs if i in set(chosen)]
    note = f"ROCR_VISIBLE_DEVICES={value} in this environment: only AMD GPU(s) " + (
        ", ".join(str(i) for i, _ in kept) or "none"
    )
    note += " are used" + (f"; no AMD GPU matches {', '.join(unknown)}" if unknown else "")
    return kept, note


def _memory_total_mib(smi: Any, handle: Any, vram_type: Any) -> int | None:
    """VRAM size in MiB: the memory-total call when the library has it, else the VRAM info."""
    total = None
    if vram_type is not None:
        total_bytes = number(
            _call(getattr(smi, "amdsmi_get_gpu_memory_total", None), handle, vram_type)
        )
        total = int(total_bytes) // MIB if total_bytes else None
    if not total:
        vram = _call(getattr(smi, "amdsmi_get_gpu_vram_info", None), handle) or {}
        size = number(vram.get("vram_size"))  # MB
        total = int(size) if size else None
    return total


def _extra_fields(smi: Any, handle: Any, asic: Mapping[str, Any]) -> dict[str, str]:
    extra: dict[str, str] = {}
    memory_partition = _text(_call(getattr(smi, "amdsmi_get_gpu_memory_partition", None), handle))
    if memory_partition:
        extra["memory_partition"] = memory_partition
    for key, field in (("device_id", "device_id"), ("compute_units", "num_compute_units")):
        value = _text(asic.get(field))
        if value:
            extra[key] = value
    return extra


def _accelerator(
    smi: Any,
    index: int,
    handle: Any,
    probe: Callable[[], list[str]],
    rocm: str | None,
    vram_type: Any,
) -> tuple[Accelerator, str | None]:
    """(the GPU behind ``handle``, its driver version); ``probe`` runs the arch probe once."""
    asic = _call(smi.amdsmi_get_gpu_asic_info, handle) or {}
    board = _call(getattr(smi, "amdsmi_get_gpu_board_info", None), handle) or {}
    name = _text(asic.get("market_name")) or _text(board.get("product_name")) or "AMD GPU"
    arch = _arch_of(asic, name)
    arch_full = _full_arch(arch, asic, [])
    if arch_full is None and arch:
        arch_full = _full_arch(arch, asic, probe())
    total = _memory_total_mib(smi, handle, vram_type)
    driver_info = _call(getattr(smi, "amdsmi_get_gpu_driver_info", None), handle) or {}
    driver = _text(driver_info.get("driver_version"))
    extra = _extra_fields(smi, handle, asic)
    accelerator = Accelerator(
        vendor="amd",
        index=index,
        name=name,
        arch=arch,
        arch_full=arch_full,
        memory_total_mib=total,
        uuid=_text(_call(getattr(smi, "amdsmi_get_gpu_device_uuid", None), handle)),
        pci_bus_id=_text(_call(getattr(smi, "amdsmi_get_gpu_device_bdf", None), handle)),
        driver_version=driver,
        runtime_version=rocm,
        firmware=_firmware(smi, handle),
        partition_mode=_text(_call(getattr(smi, "amdsmi_get_gpu_compute_partition", None), handle)),
        extra=extra,
    )
    return accelerator, driver


def _software(smi: Any, rocm: str | None, drivers: set[str]) -> dict[str, str]:
    software: dict[str, str] = {}
    if rocm:
        software["rocm"] = rocm
    if len(drivers) == 1:
        software["amdgpu_driver"] = next(iter(drivers))
    lib = _lib_version(smi)
    if lib:
        software["amdsmi"] = lib
    return software


def _enumerate(
    smi: Any,
    arch_probe: Callable[[], list[str]],
    rocm_version_file: Path | None,
    env: Mapping[str, str],
) -> Platform | None:
    pairs = gpu_handles(smi)
    if not pairs:
        return None
    pairs, visibility_note = visible_to_rocr(smi, pairs, env.get("ROCR_VISIBLE_DEVICES"))
    rocm = _rocm_version(smi, rocm_version_file)
    probed: list[str] | None = None

    def probe_once() -> list[str]:  # the probe is slow: only when needed, and only once
        nonlocal probed
        if probed is None:
            probed = list(arch_probe())
        return probed

    vram_type = getattr(getattr(smi, "AmdSmiMemoryType", None), "VRAM", None)
    accelerators = []
    drivers: set[str] = set()
    for index, handle in pairs:
        accelerator, driver = _accelerator(smi, index, handle, probe_once, rocm, vram_type)
        accelerators.append(accelerator)
        if driver:
            drivers.add(driver)
    notes = (PlatformNote(source=SOURCE, message=visibility_note),) if visibility_note else ()
    return Platform(
        accelerators=tuple(accelerators), software=_software(smi, rocm, drivers), notes=notes
    )


def _note(message: str) -> Platform:
    return Platform(notes=(PlatformNote(source=SOURCE, message=message),))
