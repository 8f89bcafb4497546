"""Checks of the failure policy every GPU sampler shares (inferx_core.telemetry.device).

The NVML and amdsmi samplers run the same machinery, so their tests check the
same things; each test file describes its vendor once in a :class:`Vendor`
and calls these, keeping the assertions in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from inferx_core.sdk.sampler import Sampler, SamplerUnavailable


@dataclass(frozen=True)
class Vendor:
    """A sampler class and the fake library it is tested against."""

    sampler: type[Any]  # NvmlSampler, AmdSmiSampler
    name: str  # the sampler's ``name``
    lib_arg: str  # the constructor's keyword for the library module
    library: Callable[[list[Any]], Any]  # fake library over fake GPUs
    gpu: Callable[..., Any]  # a fake GPU
    gpu_with_power: Callable[[int], Any]  # a fake GPU drawing this many W
    watts: Callable[[float], Any]  # what a reading of W compares equal to
    default_watts: float  # a default fake GPU's power
    keys: tuple[str, ...]  # metric suffixes of one GPU
    power_function: str
    power_error: str  # start of the error of a failing power read on GPU 1
    lost_text: str  # how the library says "lost"
    read_error: type[Exception]
    zero_devices: str  # start of the message when the library sees no GPU
    shutdown: str  # the library's shutdown function
    shutdown_error: Callable[[], Exception]

    def make(self, gpu_ids: list[int], lib: Any) -> Any:
        return self.sampler(gpu_ids, **{self.lib_arg: lib.as_module()})

    def started(self, lib: Any, gpu_ids: list[int]) -> Any:
        sampler = self.make(gpu_ids, lib)
        sampler.start()
        return sampler


def follows_the_sampler_protocol(v: Vendor) -> None:
    sampler = v.sampler([0])
    assert isinstance(sampler, Sampler)
    assert sampler.name == v.name and sampler.interval_s == 0.5
    assert v.sampler([0], interval_s=0.1).interval_s == 0.1


def requested_gpu_not_present_is_a_note(v: Vendor) -> None:
    sampler = v.started(v.library([v.gpu()]), [0, 5])
    assert set(sampler.read()) == {f"gpu.0.{k}" for k in v.keys}
    assert any("GPU not sampled: 5" in n for n in sampler.notes)
    sampler.stop()


def gpu_lost_mid_run_keeps_the_other_gpu(v: Vendor) -> None:
    lib = v.library([v.gpu(), v.gpu_with_power(200)])
    sampler = v.started(lib, [0, 1])
    assert len(sampler.read()) == 2 * len(v.keys)
    lib.gpus[0].lost = True
    values = sampler.read()
    assert not any(k.startswith("gpu.0.") for k in values)
    assert values["gpu.1.power_w"] == v.watts(200.0)
    assert len(sampler.last_errors) == 1 and v.lost_text in sampler.last_errors[0]
    assert sampler.lost_gpus == [0]
    calls_before = lib.calls[v.power_function]
    values = sampler.read()  # the lost GPU is not called again
    assert set(values) == {f"gpu.1.{k}" for k in v.keys}
    assert lib.calls[v.power_function] == calls_before + 1
    assert sampler.last_errors == []
    sampler.stop()
    assert any("gpu 0 lost" in n for n in sampler.notes)


def power_read_error_drops_that_gpu_for_this_read_only(v: Vendor) -> None:
    lib = v.library([v.gpu(), v.gpu()])
    sampler = v.started(lib, [0, 1])
    lib.gpus[1].failing.add(v.power_function)
    values = sampler.read()
    assert not any(k.startswith("gpu.1.") for k in values)
    assert values["gpu.0.power_w"] == v.watts(v.default_watts)
    assert v.power_error in sampler.last_errors[0]
    lib.gpus[1].failing.clear()
    assert sampler.read()["gpu.1.power_w"] == v.watts(v.default_watts)  # back next read
    sampler.stop()
    assert any(v.power_function in n and "(1 read)" in n for n in sampler.notes)


def every_gpu_failing_raises_so_the_recorder_records_a_gap(v: Vendor) -> None:
    lib = v.library([v.gpu()])
    sampler = v.started(lib, [0])
    lib.gpus[0].lost = True
    with pytest.raises(v.read_error, match=v.lost_text):
        sampler.read()
    with pytest.raises(v.read_error, match="no GPU left"):
        sampler.read()
    sampler.stop()


def zero_devices_and_no_ids_are_unavailable(v: Vendor) -> None:
    lib = v.library([])
    with pytest.raises(SamplerUnavailable, match=v.zero_devices):
        v.make([0], lib).start()
    assert lib.initialised == 0  # shut down after the failed start
    with pytest.raises(SamplerUnavailable, match="no supported GPU"):
        v.make([], v.library([v.gpu()])).start()


def only_lost_gpus_requested_is_unavailable(v: Vendor) -> None:
    lib = v.library([v.gpu(lost=True)])
    with pytest.raises(SamplerUnavailable, match=v.lost_text):
        v.make([0], lib).start()
    assert lib.initialised == 0


def stop_never_raises_and_shuts_down_once(v: Vendor) -> None:
    module = v.library([v.gpu()]).as_module()

    def broken_shutdown() -> None:
        raise v.shutdown_error()

    sampler = v.sampler([0], **{v.lib_arg: module})
    sampler.start()
    setattr(module, v.shutdown, broken_shutdown)
    sampler.stop()
    sampler.stop()
