"""NvmlSampler and the built-in NVML telemetry hook, against the fake nvidia-ml-py."""

from __future__ import annotations

import sys

import fake_pynvml as fake
import gpu_sampler_checks as checks
import pytest

from inferx_core.builtin.nvidia import plugin as builtin_nvml
from inferx_core.builtin.nvidia.sampler import NvmlReadError, NvmlSampler
from inferx_core.sdk.platform import Accelerator, HostInfo, Platform
from inferx_core.sdk.sampler import SamplerUnavailable

KEYS = (
    "power_w",
    "energy_j",
    "util_percent",
    "mem_util_percent",
    "mem_used_mib",
    "temp_c",
    "sm_clock_mhz",
    "throttle_reasons",
)


NVIDIA = checks.Vendor(
    sampler=NvmlSampler,
    name="nvml",
    lib_arg="nvml",
    library=fake.FakeNvml,
    gpu=fake.FakeGpu,
    gpu_with_power=lambda w: fake.FakeGpu(power_mw=w * 1000),
    watts=pytest.approx,
    default_watts=350.0,
    keys=KEYS,
    power_function="nvmlDeviceGetPowerUsage",
    power_error="gpu 1: nvmlDeviceGetPowerUsage",
    lost_text="GPU is lost",
    read_error=NvmlReadError,
    zero_devices="no supported GPU: NVML reports 0 devices",
    shutdown="nvmlShutdown",
    shutdown_error=fake.NVMLError_Unknown,
)


def started(nvml: fake.FakeNvml, gpu_ids: list[int]) -> NvmlSampler:
    sampler = NvmlSampler(gpu_ids, nvml=nvml.as_module())
    sampler.start()
    return sampler


def test_follows_the_sampler_protocol() -> None:
    checks.follows_the_sampler_protocol(NVIDIA)


def test_units_are_converted() -> None:
    gpu = fake.FakeGpu(
        power_mw=412_345,
        energy_mj=7_654_321,
        memory_used=3 * 1024**3 + 512 * 1024**2,
        util_gpu=93,
        util_memory=37,
        temp_c=61,
        sm_clock_mhz=1755,
        clocks_event_reasons=fake.nvmlClocksEventReasonSwPowerCap,
    )
    sampler = started(fake.FakeNvml([gpu]), [0])
    values = sampler.read()
    assert values == {
        "gpu.0.power_w": pytest.approx(412.345),
        "gpu.0.energy_j": pytest.approx(7654.321),
        "gpu.0.util_percent": 93,
        "gpu.0.mem_util_percent": 37,
        "gpu.0.mem_used_mib": pytest.approx(3584.0),
        "gpu.0.temp_c": 61,
        "gpu.0.sm_clock_mhz": 1755,
        "gpu.0.throttle_reasons": 0x4,
    }
    assert sampler.last_errors == []
    sampler.stop()


def test_only_requested_gpus_are_sampled() -> None:
    nvml = fake.FakeNvml([fake.FakeGpu() for _ in range(4)])
    sampler = started(nvml, [1, 3])
    values = sampler.read()
    assert {k.split(".")[1] for k in values} == {"1", "3"}
    assert sorted(values) == sorted(f"gpu.{i}.{k}" for i in (1, 3) for k in KEYS)
    assert nvml.calls["nvmlDeviceGetHandleByIndex"] == 2
    sampler.stop()


def test_requested_gpu_not_present_is_a_note() -> None:
    checks.requested_gpu_not_present_is_a_note(NVIDIA)


def test_unsupported_energy_is_none_without_repeated_calls() -> None:
    nvml = fake.FakeNvml([fake.FakeGpu(energy_mj=None), fake.FakeGpu()])
    sampler = started(nvml, [0, 1])
    probe_calls = nvml.calls["nvmlDeviceGetTotalEnergyConsumption"]
    assert probe_calls == 2  # probed once per device
    for _ in range(5):
        values = sampler.read()
        assert "gpu.0.energy_j" in values and values["gpu.0.energy_j"] is None
        assert values["gpu.1.energy_j"] == pytest.approx(1000.0)
        assert values["gpu.0.power_w"] == pytest.approx(350.0)
        assert sampler.last_errors == []
    # only GPU 1 was asked again, once per read
    assert nvml.calls["nvmlDeviceGetTotalEnergyConsumption"] == probe_calls + 5
    assert sampler.unsupported == {0: ["gpu.0.energy_j"]}
    sampler.stop()
    assert not any("energy" in n for n in sampler.notes)  # no error per read


def test_throttle_reasons_fall_back_to_the_deprecated_name() -> None:
    nvml = fake.FakeNvml([fake.FakeGpu()], without=("nvmlDeviceGetCurrentClocksEventReasons",))
    sampler = started(nvml, [0])
    assert sampler.read()["gpu.0.throttle_reasons"] == fake.nvmlClocksEventReasonSwPowerCap
    assert nvml.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 2
    sampler.stop()


def test_new_throttle_api_preferred_and_old_used_when_new_not_supported() -> None:
    nvml = fake.FakeNvml([fake.FakeGpu()])
    sampler = started(nvml, [0])
    sampler.read()
    assert nvml.calls["nvmlDeviceGetCurrentClocksEventReasons"] == 2
    assert nvml.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 0
    old_driver = fake.FakeGpu(unsupported={"nvmlDeviceGetCurrentClocksEventReasons"})
    nvml = fake.FakeNvml([old_driver])
    sampler = started(nvml, [0])
    assert sampler.read()["gpu.0.throttle_reasons"] == fake.nvmlClocksEventReasonSwPowerCap
    assert nvml.calls["nvmlDeviceGetCurrentClocksEventReasons"] == 1  # the probe only


def test_gpu_lost_mid_run_keeps_the_other_gpu() -> None:
    checks.gpu_lost_mid_run_keeps_the_other_gpu(NVIDIA)


def test_power_read_error_drops_that_gpu_for_this_read_only() -> None:
    checks.power_read_error_drops_that_gpu_for_this_read_only(NVIDIA)


def test_other_metric_error_is_none_for_that_read() -> None:
    nvml = fake.FakeNvml([fake.FakeGpu()])
    sampler = started(nvml, [0])
    nvml.gpus[0].failing.add("nvmlDeviceGetUtilizationRates")
    values = sampler.read()
    assert values["gpu.0.util_percent"] is None and values["gpu.0.mem_util_percent"] is None
    assert values["gpu.0.power_w"] == pytest.approx(350.0)
    assert len(sampler.last_errors) == 1
    sampler.stop()


def test_every_gpu_failing_raises_so_the_recorder_records_a_gap() -> None:
    checks.every_gpu_failing_raises_so_the_recorder_records_a_gap(NVIDIA)


def test_missing_library_is_unavailable() -> None:
    sampler = NvmlSampler([0], nvml=fake.FakeNvml(library_missing=True).as_module())
    with pytest.raises(SamplerUnavailable, match="no supported GPU") as info:
        sampler.start()
    assert "Library Not Found" in str(info.value)
    sampler.stop()  # after a failed start: no error
    sampler.stop()


def test_pynvml_not_importable_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    sampler = NvmlSampler([0])
    with pytest.raises(SamplerUnavailable, match="no supported GPU: pynvml not importable"):
        sampler.start()
    sampler.stop()


def test_loader_uses_sys_modules_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = fake.FakeNvml([fake.FakeGpu()])
    monkeypatch.setitem(sys.modules, "pynvml", nvml.as_module())
    sampler = NvmlSampler([0])
    sampler.start()
    assert sampler.read()["gpu.0.power_w"] == pytest.approx(350.0)
    sampler.stop()
    assert nvml.initialised == 0


def test_zero_devices_and_no_ids_are_unavailable() -> None:
    checks.zero_devices_and_no_ids_are_unavailable(NVIDIA)


def test_only_lost_gpus_requested_is_unavailable() -> None:
    checks.only_lost_gpus_requested_is_unavailable(NVIDIA)


def test_stop_never_raises_and_shuts_down_once() -> None:
    checks.stop_never_raises_and_shuts_down_once(NVIDIA)


def test_real_pynvml_here() -> None:
    pytest.importorskip("pynvml")
    sampler = NvmlSampler([0])
    try:
        sampler.start()
    except SamplerUnavailable as exc:  # the normal case on a machine without a GPU
        assert str(exc).startswith("no supported GPU")
    else:  # a GPU is present: a reading follows the naming scheme
        values = sampler.read()
        assert values and all(k.startswith("gpu.0.") for k in values)
        assert values["gpu.0.power_w"] is None or 0 < values["gpu.0.power_w"] < 5000
    finally:
        sampler.stop()


# -- the hook ---------------------------------------------------------------


def h200(index: int) -> Accelerator:
    return Accelerator(vendor="nvidia", index=index, name="NVIDIA H200", compute_capability="9.0")


def test_hook_returns_none_on_a_cpu_platform() -> None:
    cpu = Platform(host=HostInfo(hostname="box"))
    assert builtin_nvml.inferx_telemetry_samplers(platform=cpu, gpu_ids=[]) is None
    assert builtin_nvml.inferx_telemetry_samplers(platform=cpu, gpu_ids=[0]) is None


def test_hook_returns_a_sampler_for_the_nvidia_gpus_used() -> None:
    platform = Platform(accelerators=(h200(0), h200(1), h200(2)))
    samplers = builtin_nvml.inferx_telemetry_samplers(platform=platform, gpu_ids=[2, 0, 7])
    assert samplers is not None and len(samplers) == 1
    (sampler,) = samplers
    assert isinstance(sampler, NvmlSampler) and sampler.gpu_ids == (2, 0)
    amd = Platform(accelerators=(Accelerator(vendor="amd", index=0, name="AMD Instinct MI300X"),))
    assert builtin_nvml.inferx_telemetry_samplers(platform=amd, gpu_ids=[0]) is None


def test_hook_through_the_plugin_manager() -> None:
    from inferx_core.sdk.manager import get_plugin_manager

    pm = get_plugin_manager(load_entry_points=False)
    platform = Platform(accelerators=(h200(0),))
    answers = pm.call_each(
        "inferx_telemetry_samplers", platform=platform, gpu_ids=[0], engine_pid=None
    )
    names = [(plugin, s.name) for plugin, answer in answers for s in answer]
    assert names == [("inferx.nvml", "nvml"), ("inferx.host", "host")]  # host is trylast
    cpu_only = pm.call_each(
        "inferx_telemetry_samplers", platform=Platform(), gpu_ids=[], engine_pid=None
    )
    assert [plugin for plugin, _ in cpu_only] == ["inferx.host"]


def test_detection_reports_pci_bus_id_and_nvml_version() -> None:
    platform = builtin_nvml.detect_nvidia(fake.FakeNvml([fake.FakeGpu()]).as_module())
    assert platform.accelerators[0].pci_bus_id == "00000000:19:00.0"
    assert platform.software["nvml"] == "12.570.124.06"
    no_pci = fake.FakeNvml([fake.FakeGpu(unsupported={"nvmlDeviceGetPciInfo"})])
    assert builtin_nvml.detect_nvidia(no_pci.as_module()).accelerators[0].pci_bus_id is None
