"""Built-in NVIDIA detection against a fake of nvidia-ml-py's API surface."""

from __future__ import annotations

import fake_pynvml as fake
import pytest

from inferx_core.builtin.nvidia.plugin import detect_nvidia


def test_no_library_is_a_note_not_an_error() -> None:
    platform = detect_nvidia(fake.FakeNvml(library_missing=True).as_module())
    assert platform.accelerators == ()
    assert "no NVIDIA GPU" in platform.notes[0].message
    assert "Library Not Found" in platform.notes[0].message


def test_zero_devices() -> None:
    platform = detect_nvidia(fake.FakeNvml([]).as_module())
    assert platform.notes[0].message == "no NVIDIA GPU: NVML reports 0 devices"


def test_h200_and_b200_detected_with_versions() -> None:
    nvml = fake.FakeNvml([fake.FakeGpu(), fake.FakeGpu(name="NVIDIA B200", cc=(10, 0))])
    platform = detect_nvidia(nvml.as_module())
    assert [a.name for a in platform.accelerators] == ["NVIDIA H200", "NVIDIA B200"]
    h200, b200 = platform.accelerators
    assert h200.arch == "sm_90" and h200.compute_capability == "9.0"
    assert b200.compute_capability_major == 10
    assert h200.memory_total_mib == 141 * 1024
    assert h200.driver_version == "570.124.06" and h200.runtime_version == "12.8"
    assert platform.software["cuda_driver"] == "12.8"
    assert nvml.initialised == 0  # shut down again


def test_gpu_lost_during_enumeration_is_reported() -> None:
    nvml = fake.FakeNvml([fake.FakeGpu(), fake.FakeGpu(lost=True)])
    platform = detect_nvidia(nvml.as_module())
    assert platform.accelerators == ()
    assert "GPU is lost" in platform.notes[0].message


def test_real_pynvml_here_reports_absence() -> None:
    pytest.importorskip("pynvml")
    platform = detect_nvidia()
    # This machine class has no NVIDIA GPU; if one appears the detection must list it.
    if platform.accelerators:
        assert all(a.vendor == "nvidia" for a in platform.accelerators)
    else:
        assert platform.notes and "no NVIDIA GPU" in platform.notes[0].message
