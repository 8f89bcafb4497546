"""inferx_rocm detection: silent without amdsmi or AMD GPUs, exact against a fake amdsmi."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import fake_amdsmi as fake
import pytest

from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import load_platform
from inferx_rocm import hooks, smi

PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"
NO_KFD = "/nonexistent/kfd"
MI300X_ARCH = "gfx942:sramecc+:xnack-"


def detect(amd: fake.FakeAmdSmi, **kw):
    kw.setdefault("kfd_path", NO_KFD)
    kw.setdefault("env", {})
    kw.setdefault("arch_probe", lambda: [MI300X_ARCH] * len(amd.gpus))
    return smi.detect_amd(amd.as_module(), **kw)


def test_plugin_loads_and_is_silent_without_amd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "rocm"})
    record = pm.record_for("rocm")
    assert record is not None and record.status == "ok"
    assert {
        "inferx_platform",
        "inferx_telemetry_samplers",
        "inferx_container_fixes",
    } <= set(record.hooks)
    answers = dict(pm.call_each("inferx_platform"))
    result = answers.get("rocm")
    assert result is None or not (result.accelerators or result.notes)


def test_no_amdsmi_and_no_driver_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import amdsmi -> ImportError
    assert smi.detect_amd(kfd_path=NO_KFD) is None


def test_no_amdsmi_on_an_amd_node_says_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    kfd = tmp_path / "kfd"
    kfd.touch()
    platform = smi.detect_amd(kfd_path=str(kfd))
    assert platform is not None and not platform.accelerators
    (note,) = platform.notes
    assert note.source == "rocm"
    assert "amdsmi is not usable" in note.message and "inferx-rocm[amdsmi]" in note.message


def test_driver_not_loaded_is_silent_unless_the_node_has_the_driver(tmp_path: Path) -> None:
    amd = fake.FakeAmdSmi([fake.mi300x()], init_error=fake.AMDSMI_STATUS_DRIVER_NOT_LOADED)
    assert detect(amd) is None
    kfd = tmp_path / "kfd"
    kfd.touch()
    platform = detect(amd, kfd_path=str(kfd))
    assert platform is not None
    assert "AMDSMI_STATUS_DRIVER_NOT_LOADED" in platform.notes[0].message


def test_zero_gpus_is_silent_and_shuts_down() -> None:
    amd = fake.FakeAmdSmi([])
    assert detect(amd) is None
    assert amd.initialised == 0


def test_detects_an_mi300x_node_like_the_platform_file() -> None:
    expected = load_platform(PLATFORMS / "mi300x8.json")
    amd = fake.FakeAmdSmi([fake.mi300x(mec_fw=170) for _ in range(8)], rocm_version="6.2.4")
    platform = detect(amd)
    assert amd.initialised == 0  # amdsmi_shut_down after detection
    assert platform is not None and platform.gpu_count == 8 and platform.vendors == ("amd",)
    fields = (
        "vendor",
        "index",
        "name",
        "arch",
        "arch_full",
        "memory_total_mib",
        "driver_version",
        "runtime_version",
    )
    for got, want in zip(platform.accelerators, expected.accelerators, strict=True):
        assert {f: getattr(got, f) for f in fields} == {f: getattr(want, f) for f in fields}
        assert got.firmware["mec"] == want.firmware["mec"] == "170"
    gpu = platform.accelerators[0]
    assert gpu.partition_mode == "SPX"
    assert gpu.extra["memory_partition"] == "NPS1"
    assert gpu.firmware == {"mec": "170", "pldm_bundle": "01.25.03.12"}
    assert gpu.pci_bus_id == "0000:0c:00.0" and gpu.uuid
    assert platform.software == {"rocm": "6.2.4", "amdgpu_driver": "6.8.5", "amdsmi": "25.5.1"}


@pytest.mark.parametrize(
    ("maker", "file", "arch"),
    [(fake.mi325x, "mi325x8.json", "gfx942"), (fake.mi355x, "mi355x8.json", "gfx950")],
)
def test_detects_mi325x_and_mi355x(maker, file: str, arch: str) -> None:
    want = load_platform(PLATFORMS / file).accelerators[0]
    amd = fake.FakeAmdSmi([maker(mec_fw=int(want.firmware["mec"]))], rocm_version="6.3.1")
    (gpu,) = detect(amd, arch_probe=lambda: [f"{arch}:sramecc+:xnack-"]).accelerators
    assert (gpu.name, gpu.arch, gpu.arch_full) == (want.name, arch, want.arch_full)
    assert gpu.memory_total_mib == want.memory_total_mib
    assert gpu.driver_version == want.driver_version
    assert gpu.firmware["mec"] == want.firmware["mec"]


def test_memory_total_falls_back_to_vram_info() -> None:
    amd = fake.FakeAmdSmi([fake.mi300x(unsupported={"amdsmi_get_gpu_memory_total"})])
    assert detect(amd).accelerators[0].memory_total_mib == 196592


def test_indices_are_hip_device_ids() -> None:
    gpus = [fake.mi300x(hip_id=1, bdf="0000:8c:00.0"), fake.mi300x(hip_id=0, bdf="0000:0c:00.0")]
    platform = detect(fake.FakeAmdSmi(gpus))
    assert [(a.index, a.pci_bus_id) for a in platform.accelerators] == [
        (0, "0000:0c:00.0"),
        (1, "0000:8c:00.0"),
    ]


def test_full_arch_only_from_amdgpu_arch() -> None:
    amd = fake.FakeAmdSmi([fake.mi300x()])
    (gpu,) = detect(amd, arch_probe=lambda: []).accelerators
    assert gpu.arch == "gfx942" and gpu.arch_full is None  # never invented
    probes = []

    def probe() -> list[str]:
        probes.append(1)
        return ["gfx950:sramecc+:xnack-", MI300X_ARCH]

    platform = detect(fake.FakeAmdSmi([fake.mi300x(), fake.mi300x()]), arch_probe=probe)
    assert [a.arch_full for a in platform.accelerators] == [MI300X_ARCH] * 2
    assert probes == [1]  # amdgpu-arch runs once per detection


def test_amdsmi_6_1_shapes(tmp_path: Path) -> None:
    """No target_graphics_version, FW_ID_* names, no rocm_version(), no enumeration info."""
    version = tmp_path / "version"
    version.write_text("6.1.2-119\n")
    amd = fake.FakeAmdSmi([fake.mi300x(mec_fw=165), fake.mi300x()], api="6.1")
    platform = detect(amd, rocm_version_file=version)
    gpu = platform.accelerators[0]
    assert gpu.arch == "gfx942" and gpu.arch_full == MI300X_ARCH  # arch from the product name
    assert gpu.firmware == {"mec": "165"}
    assert gpu.runtime_version == "6.1.2" and platform.software["rocm"] == "6.1.2"
    assert [a.index for a in platform.accelerators] == [0, 1]
    assert gpu.partition_mode == "SPX" and "memory_partition" not in gpu.extra


def test_a_failing_optional_call_leaves_only_that_field_out() -> None:
    amd = fake.FakeAmdSmi(
        [fake.mi300x(unsupported={"amdsmi_get_fw_info", "amdsmi_get_gpu_compute_partition"})]
    )
    (gpu,) = detect(amd).accelerators
    assert gpu.firmware == {} and gpu.partition_mode is None
    assert gpu.name == "AMD Instinct MI300X" and gpu.memory_total_mib == 196592


def test_a_gpu_vanishing_mid_detection_is_a_note() -> None:
    amd = fake.FakeAmdSmi([fake.mi300x()])
    module = amd.as_module()

    def gone() -> list:
        raise fake.AmdSmiLibraryException(fake.AMDSMI_STATUS_NOT_FOUND)

    module.amdsmi_get_processor_handles = gone
    platform = smi.detect_amd(module, kfd_path=NO_KFD, arch_probe=list)
    assert "AMDSMI_STATUS_NOT_FOUND" in platform.notes[0].message
    assert amd.initialised == 0


def test_inherited_rocr_visible_devices_limits_the_gpus() -> None:
    """Slurm sets ROCR_VISIBLE_DEVICES for the job's GPUs: only those are reported."""
    amd = fake.FakeAmdSmi([fake.mi300x(uuid=f"{i:08x}-aaaa-bbbb-cccc-{i:012x}") for i in range(8)])
    platform = detect(amd, env={"ROCR_VISIBLE_DEVICES": "6,2"})
    assert [a.index for a in platform.accelerators] == [2, 6]  # node-wide numbering kept
    assert platform.notes[0].message.startswith("ROCR_VISIBLE_DEVICES=6,2 in this environment")
    uuid5 = f"GPU-{amd.gpus[5].uuid[:16]}"  # the fake's hip_uuid, ROCr's UUID form
    platform = detect(amd, env={"ROCR_VISIBLE_DEVICES": f"1,{uuid5},GPU-deadbeef"})
    assert [a.index for a in platform.accelerators] == [1, 5]
    assert "no AMD GPU matches GPU-deadbeef" in platform.notes[0].message
    assert detect(amd, env={"ROCR_VISIBLE_DEVICES": ""}).gpu_count == 8
    assert detect(amd, env={}).notes == ()


def test_detection_through_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCR_VISIBLE_DEVICES", raising=False)
    amd = fake.FakeAmdSmi([fake.mi355x() for _ in range(2)])
    monkeypatch.setitem(sys.modules, "amdsmi", amd.as_module())
    monkeypatch.setattr(smi, "amdgpu_arch_lines", lambda: ["gfx950:sramecc+:xnack-"] * 2)
    platform = hooks.inferx_platform()
    assert [a.name for a in platform.accelerators] == ["AMD Instinct MI355X"] * 2
    assert platform.accelerators[1].arch_full == "gfx950:sramecc+:xnack-"
    # the doctor JSON round-trips through the platform loader (what --platform reads)
    assert load_platform_json(platform.model_dump(mode="json")) == platform


def load_platform_json(data: dict) -> object:
    from inferx_core.sdk.platform import Platform

    return Platform.model_validate(json.loads(json.dumps(data)))


def test_load_amdsmi_contains_the_library_s_print_and_keyerror(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without libamd_smi.so the real package prints to stdout and raises KeyError."""
    package = tmp_path / "amdsmi"
    package.mkdir()
    (package / "__init__.py").write_text(
        "print('Could not load libamd_smi.so')\n"
        "print('Unable to find libamd_smi.so library try installing amd-smi-lib')\n"
        "raise KeyError('libamd_smi.so')\n"
    )
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"Unable to find libamd_smi\.so"):
        smi.load_amdsmi()
    assert capsys.readouterr().out == ""
    assert smi.detect_amd(kfd_path=NO_KFD) is None
    assert capsys.readouterr().out == ""


def test_real_amdsmi_here() -> None:
    """Whatever is installed here: no AMD GPU is silence, an AMD GPU is detected."""
    platform = smi.detect_amd()
    if platform is not None:
        for acc in platform.accelerators:
            assert acc.vendor == "amd" and acc.arch and acc.arch.startswith("gfx")


def test_bare_arch() -> None:
    assert smi.bare_arch("gfx950:sramecc+:xnack-") == "gfx950"
    assert smi.bare_arch("gfx942") == "gfx942"
    assert smi.bare_arch("GFX90A:xnack+") == "gfx90a"
