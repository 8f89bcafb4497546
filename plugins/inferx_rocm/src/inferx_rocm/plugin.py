"""AMD's answers to the InferX hooks. Silent (no error) where amdsmi or AMD GPUs are absent."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from inferx_core import hookimpl
from inferx_core.platform import Accelerator, Platform, PlatformNote

SOURCE = "rocm"


def load_amdsmi() -> ModuleType:
    import amdsmi

    return amdsmi


def bare_arch(arch: str) -> str:
    """'gfx942:sramecc+:xnack-' -> 'gfx942' (what AITER pattern-matches)."""
    return arch.split(":", 1)[0].strip()


def _get(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # no amdsmi (or no ROCm library): stay silent
        return None


def detect_amd(smi: ModuleType | None = None) -> Platform | None:
    try:
        smi = smi or load_amdsmi()
    except Exception:  # amdsmi raises for unsupported metrics
        return None
    try:
        smi.amdsmi_init()
    except Exception as exc:
        return Platform(
            notes=(PlatformNote(source=SOURCE, message=f"no AMD GPU: amdsmi init failed: {exc}"),)
        )
    try:
        handles = smi.amdsmi_get_processor_handles()
        accelerators = []
        for index, handle in enumerate(handles):
            asic = _get(smi.amdsmi_get_gpu_asic_info, handle) or {}
            board = _get(smi.amdsmi_get_gpu_board_info, handle) or {}
            vram = _get(smi.amdsmi_get_gpu_vram_info, handle) or {}
            arch_full = str(asic.get("target_graphics_version") or "") or None
            name = board.get("product_name") or asic.get("market_name") or "AMD GPU"
            accelerators.append(
                Accelerator(
                    vendor="amd",
                    index=index,
                    name=str(name),
                    arch=bare_arch(arch_full) if arch_full else None,
                    arch_full=arch_full,
                    memory_total_mib=vram.get("vram_size"),
                )
            )
        return Platform(accelerators=tuple(accelerators))
    finally:
        _get(smi.amdsmi_shut_down)


@hookimpl
def inferx_detect_platform() -> Platform | None:
    return detect_amd()
