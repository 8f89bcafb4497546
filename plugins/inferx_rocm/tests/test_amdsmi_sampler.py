"""AmdSmiSampler and the rocm telemetry hook, against the fake amdsmi (6.x and 7.x shapes)."""

from __future__ import annotations

import sys

import fake_amdsmi as fake
import gpu_sampler_checks as checks
import pytest

from inferx_core.sdk.platform import Accelerator, HostInfo, Platform
from inferx_core.sdk.sampler import SamplerUnavailable
from inferx_rocm import hooks
from inferx_rocm.sampler import AmdSmiReadError, AmdSmiSampler

KEYS = (
    "power_w",
    "energy_j",
    "util_percent",
    "mem_util_percent",
    "mem_used_mib",
    "temp_c",
    "temp_junction_c",
    "temp_hotspot_c",
    "temp_mem_c",
    "sm_clock_mhz",
)


AMD = checks.Vendor(
    sampler=AmdSmiSampler,
    name="amdsmi",
    lib_arg="amdsmi",
    library=fake.FakeAmdSmi,
    gpu=fake.FakeAmdGpu,
    gpu_with_power=lambda w: fake.FakeAmdGpu(power_w=w),
    watts=lambda w: w,  # amdsmi reports whole watts: compared exactly
    default_watts=160.0,
    keys=KEYS,
    power_function="amdsmi_get_power_info",
    power_error="gpu 1: amdsmi_get_power_info: AMDSMI_STATUS_IO",
    lost_text="AMDSMI_STATUS_NOT_FOUND",
    read_error=AmdSmiReadError,
    zero_devices="no supported GPU: amdsmi reports 0 AMD GPUs",
    shutdown="amdsmi_shut_down",
    shutdown_error=lambda: fake.AmdSmiLibraryException(fake.AMDSMI_STATUS_API_FAILED),
)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def started(amd: fake.FakeAmdSmi, gpu_ids: list[int]) -> AmdSmiSampler:
    sampler = AmdSmiSampler(gpu_ids, amdsmi=amd.as_module())
    sampler.start()
    return sampler


def test_follows_the_sampler_protocol() -> None:
    checks.follows_the_sampler_protocol(AMD)


def test_units_are_converted() -> None:
    clock = Clock()
    gpu = fake.FakeAmdGpu(
        power_w=612,
        energy_start_uj=7_654_321.0,
        counter_resolution=15.259999275207520,
        vram_used_mb=3584,
        gfx_activity=93,
        umc_activity=37,
        temps={"EDGE": 51, "HOTSPOT": 61, "VRAM": 55},
        gfx_clk_mhz=2100,
    )
    amd = fake.FakeAmdSmi([gpu], clock=clock)
    sampler = started(amd, [0])
    count = int(7_654_321.0 / 15.259999275207520)
    assert sampler.read() == {
        "gpu.0.power_w": 612.0,
        # accumulator counts x counter_resolution (uJ) -> J
        "gpu.0.energy_j": pytest.approx(count * 15.259999275207520 / 1e6),
        "gpu.0.util_percent": 93,
        "gpu.0.mem_util_percent": 37,
        "gpu.0.mem_used_mib": 3584,
        "gpu.0.temp_c": 51,
        "gpu.0.temp_junction_c": 61,
        "gpu.0.temp_hotspot_c": 61,
        "gpu.0.temp_mem_c": 55,
        "gpu.0.sm_clock_mhz": 2100,
    }
    clock.t += 10.0  # 10 s at 612 W
    assert sampler.read()["gpu.0.energy_j"] == pytest.approx(7.654321 + 6120.0, abs=1e-4)
    assert sampler.last_errors == []
    sampler.stop()
    assert amd.initialised == 0


def test_mi300x_without_edge_sensor_reports_junction_as_temp_c() -> None:
    amd = fake.FakeAmdSmi([fake.mi300x(temps={"HOTSPOT": 44, "VRAM": 39})])
    sampler = started(amd, [0])
    values = sampler.read()
    assert values["gpu.0.temp_c"] == values["gpu.0.temp_junction_c"] == 44
    assert values["gpu.0.temp_hotspot_c"] == 44 and values["gpu.0.temp_mem_c"] == 39
    assert any("no edge temperature sensor" in n for n in sampler.notes)
    assert 0 not in sampler.unsupported  # nothing is None: temp_c comes from junction


def test_amdsmi_6_1_return_shapes() -> None:
    """current_socket_power (no socket_power), 'power' accumulator key, 'cur_clk'."""
    clock = Clock()
    amd = fake.FakeAmdSmi([fake.mi300x(power_w=333, gfx_clk_mhz=1900)], api="6.1", clock=clock)
    sampler = started(amd, [0])
    first = sampler.read()
    assert first["gpu.0.power_w"] == 333.0 and first["gpu.0.sm_clock_mhz"] == 1900
    clock.t += 2.0
    assert sampler.read()["gpu.0.energy_j"] - first["gpu.0.energy_j"] == pytest.approx(
        666.0, abs=1e-4
    )


def test_average_socket_power_when_current_is_not_available() -> None:
    amd = fake.FakeAmdSmi([fake.mi300x()], api="6.1")
    module = amd.as_module()
    module.amdsmi_get_power_info = lambda handle: {
        "current_socket_power": "N/A",
        "average_socket_power": 245,
        "gfx_voltage": "N/A",
        "soc_voltage": "N/A",
        "mem_voltage": "N/A",
        "power_limit": 750,
    }
    sampler = AmdSmiSampler([0], amdsmi=module)
    sampler.start()
    assert sampler.read()["gpu.0.power_w"] == 245.0


def test_only_requested_gpus_are_sampled() -> None:
    amd = fake.FakeAmdSmi([fake.FakeAmdGpu() for _ in range(4)])
    sampler = started(amd, [1, 3])
    values = sampler.read()
    assert sorted(values) == sorted(f"gpu.{i}.{k}" for i in (1, 3) for k in KEYS)
    assert amd.calls["amdsmi_get_power_info"] == 4  # probe + read, GPUs 1 and 3 only
    sampler.stop()


def test_indices_follow_hip_ids() -> None:
    gpus = [fake.FakeAmdGpu(hip_id=1, power_w=100), fake.FakeAmdGpu(hip_id=0, power_w=200)]
    sampler = started(fake.FakeAmdSmi(gpus), [0])
    assert sampler.read()["gpu.0.power_w"] == 200.0  # HIP device 0 is the second handle


def test_requested_gpu_not_present_is_a_note() -> None:
    checks.requested_gpu_not_present_is_a_note(AMD)


def test_unsupported_metrics_are_none_without_repeated_calls() -> None:
    gpu0 = fake.FakeAmdGpu(
        unsupported={"amdsmi_get_energy_count"}, gfx_activity="N/A", umc_activity="N/A"
    )
    amd = fake.FakeAmdSmi([gpu0, fake.FakeAmdGpu()])
    sampler = started(amd, [0, 1])
    probe_calls = amd.calls["amdsmi_get_energy_count"]
    activity_calls = amd.calls["amdsmi_get_gpu_activity"]
    assert probe_calls == 2  # probed once per device
    for _ in range(5):
        values = sampler.read()
        assert "gpu.0.energy_j" in values and values["gpu.0.energy_j"] is None
        assert values["gpu.0.util_percent"] is None and values["gpu.0.mem_util_percent"] is None
        assert values["gpu.1.energy_j"] is not None
        assert sampler.last_errors == []
    assert amd.calls["amdsmi_get_energy_count"] == probe_calls + 5  # GPU 1 only
    assert amd.calls["amdsmi_get_gpu_activity"] == activity_calls + 5
    assert sorted(sampler.unsupported[0]) == [
        "gpu.0.energy_j",
        "gpu.0.mem_util_percent",
        "gpu.0.util_percent",
    ]
    sampler.stop()
    assert not any("energy" in n for n in sampler.notes)


def test_vram_usage_falls_back_to_memory_usage_in_bytes() -> None:
    amd = fake.FakeAmdSmi(
        [fake.FakeAmdGpu(vram_used_mb=1234)], without=("amdsmi_get_gpu_vram_usage",)
    )
    sampler = started(amd, [0])
    assert sampler.read()["gpu.0.mem_used_mib"] == pytest.approx(1234.0)
    assert amd.calls["amdsmi_get_gpu_memory_usage"] == 2


def test_gpu_lost_mid_run_keeps_the_other_gpu() -> None:
    checks.gpu_lost_mid_run_keeps_the_other_gpu(AMD)


def test_power_read_error_drops_that_gpu_for_this_read_only() -> None:
    checks.power_read_error_drops_that_gpu_for_this_read_only(AMD)


def test_other_metric_error_is_none_for_that_read() -> None:
    amd = fake.FakeAmdSmi([fake.FakeAmdGpu()])
    sampler = started(amd, [0])
    amd.gpus[0].failing.add("amdsmi_get_gpu_activity")
    values = sampler.read()
    assert values["gpu.0.util_percent"] is None and values["gpu.0.mem_util_percent"] is None
    assert values["gpu.0.power_w"] == 160.0
    assert len(sampler.last_errors) == 1
    amd.gpus[0].failing.clear()
    assert sampler.read()["gpu.0.util_percent"] == 0


def test_transient_error_at_start_keeps_the_metric() -> None:
    amd = fake.FakeAmdSmi([fake.FakeAmdGpu(failing={"amdsmi_get_clock_info"})])
    sampler = started(amd, [0])
    assert sampler.read()["gpu.0.sm_clock_mhz"] is None
    amd.gpus[0].failing.clear()
    assert sampler.read()["gpu.0.sm_clock_mhz"] == 132


def test_every_gpu_failing_raises_so_the_recorder_records_a_gap() -> None:
    checks.every_gpu_failing_raises_so_the_recorder_records_a_gap(AMD)


def test_driver_not_loaded_is_unavailable() -> None:
    amd = fake.FakeAmdSmi([fake.FakeAmdGpu()], init_error=fake.AMDSMI_STATUS_DRIVER_NOT_LOADED)
    sampler = AmdSmiSampler([0], amdsmi=amd.as_module())
    with pytest.raises(SamplerUnavailable, match="no supported GPU") as info:
        sampler.start()
    assert "AMDSMI_STATUS_DRIVER_NOT_LOADED" in str(info.value)
    sampler.stop()  # after a failed start: no error
    sampler.stop()


def test_amdsmi_not_importable_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    sampler = AmdSmiSampler([0])
    with pytest.raises(SamplerUnavailable, match="no supported GPU: amdsmi not importable"):
        sampler.start()
    sampler.stop()


def test_loader_uses_sys_modules_amdsmi(monkeypatch: pytest.MonkeyPatch) -> None:
    amd = fake.FakeAmdSmi([fake.FakeAmdGpu()])
    monkeypatch.setitem(sys.modules, "amdsmi", amd.as_module())
    sampler = AmdSmiSampler([0])
    sampler.start()
    assert sampler.read()["gpu.0.power_w"] == 160.0
    sampler.stop()
    assert amd.initialised == 0


def test_zero_devices_and_no_ids_are_unavailable() -> None:
    checks.zero_devices_and_no_ids_are_unavailable(AMD)


def test_only_lost_gpus_requested_is_unavailable() -> None:
    checks.only_lost_gpus_requested_is_unavailable(AMD)


def test_stop_never_raises_and_shuts_down_once() -> None:
    checks.stop_never_raises_and_shuts_down_once(AMD)


def test_real_amdsmi_here() -> None:
    sampler = AmdSmiSampler([0])
    try:
        sampler.start()
    except SamplerUnavailable as exc:  # the normal case on a machine without an AMD GPU
        assert str(exc).startswith("no supported GPU")
    else:
        values = sampler.read()
        assert values and all(k.startswith("gpu.0.") for k in values)
    finally:
        sampler.stop()


# -- the hook ---------------------------------------------------------------------------------


def mi300x(index: int) -> Accelerator:
    return Accelerator(vendor="amd", index=index, name="AMD Instinct MI300X", arch="gfx942")


def test_hook_returns_none_without_amd_gpus() -> None:
    cpu = Platform(host=HostInfo(hostname="box"))
    assert hooks.inferx_telemetry_samplers(platform=cpu, gpu_ids=[]) is None
    assert hooks.inferx_telemetry_samplers(platform=cpu, gpu_ids=[0]) is None
    h200 = Platform(accelerators=(Accelerator(vendor="nvidia", index=0, name="NVIDIA H200"),))
    assert hooks.inferx_telemetry_samplers(platform=h200, gpu_ids=[0]) is None


def test_hook_returns_a_sampler_for_the_amd_gpus_used() -> None:
    platform = Platform(accelerators=(mi300x(0), mi300x(1), mi300x(2)))
    (sampler,) = hooks.inferx_telemetry_samplers(platform=platform, gpu_ids=[2, 0, 7])
    assert isinstance(sampler, AmdSmiSampler) and sampler.gpu_ids == (2, 0)


def test_hook_through_the_plugin_manager() -> None:
    from inferx_core.sdk.manager import get_plugin_manager

    pm = get_plugin_manager(env={"INFERX_PLUGINS": "rocm"})
    platform = Platform(accelerators=(mi300x(0),))
    answers = pm.call_each(
        "inferx_telemetry_samplers", platform=platform, gpu_ids=[0], engine_pid=None
    )
    names = [(p, s.name) for p, answer in answers for s in answer]
    assert ("rocm", "amdsmi") in names and ("inferx.nvml", "nvml") not in names
    assert names[-1] == ("inferx.host", "host")  # host is trylast
