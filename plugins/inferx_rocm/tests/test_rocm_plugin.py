"""inferx_rocm: silent without amdsmi, detection against a fake of amdsmi's API."""

from __future__ import annotations

from types import SimpleNamespace

from inferx_core.plugins import get_plugin_manager
from inferx_rocm import plugin


class AmdSmiLibraryException(Exception):  # the real library's exception name
    pass


def fake_amdsmi(n: int) -> SimpleNamespace:
    def not_supported(handle):
        raise AmdSmiLibraryException("AMDSMI_STATUS_NOT_SUPPORTED")

    return SimpleNamespace(
        amdsmi_init=lambda *a: None,
        amdsmi_shut_down=lambda: None,
        amdsmi_get_processor_handles=lambda: [f"h{i}" for i in range(n)],
        amdsmi_get_gpu_asic_info=lambda h: {
            "market_name": "AMD Instinct MI300X",
            "target_graphics_version": "gfx942:sramecc+:xnack-",
        },
        amdsmi_get_gpu_board_info=not_supported,
        amdsmi_get_gpu_vram_info=lambda h: {"vram_size": 196592},
        AmdSmiLibraryException=AmdSmiLibraryException,
    )


def test_plugin_loads_and_is_silent_without_amd() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "rocm"})
    assert pm.record_for("rocm").status == "ok"
    answers = dict(pm.call_each("inferx_detect_platform"))
    result = answers.get("rocm")
    assert result is None or not result.accelerators


def test_detects_mi300x_with_bare_and_full_arch() -> None:
    platform = plugin.detect_amd(fake_amdsmi(2))
    assert len(platform.accelerators) == 2
    gpu = platform.accelerators[0]
    assert gpu.name == "AMD Instinct MI300X" and gpu.vendor == "amd"
    assert gpu.arch == "gfx942" and gpu.arch_full == "gfx942:sramecc+:xnack-"
    assert gpu.memory_total_mib == 196592


def test_bare_arch() -> None:
    assert plugin.bare_arch("gfx950:sramecc+:xnack-") == "gfx950"
    assert plugin.bare_arch("gfx942") == "gfx942"
