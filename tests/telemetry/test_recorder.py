"""The sampler framework: schedule, failing reads, unavailable samplers, clean stop."""

from __future__ import annotations

import threading
import time

from inferx_core.sdk.sampler import SamplerUnavailable
from inferx_core.telemetry.recorder import TelemetryRecorder, series_rows
from inferx_core.telemetry.window import summarize_prefix


class CountingSampler:
    def __init__(self, name: str = "count", interval_s: float = 0.02, fail_every: int = 0):
        self.name = name
        self.interval_s = interval_s
        self.fail_every = fail_every
        self.reads = 0
        self.started = self.stopped = False
        self.threads: set[str] = set()

    def start(self) -> None:
        self.started = True

    def read(self):
        self.reads += 1
        self.threads.add(threading.current_thread().name)
        if self.fail_every and self.reads % self.fail_every == 0:
            raise OSError("sensor busy")
        return {"x.value": float(self.reads), "x.none": None}

    def stop(self) -> None:
        self.stopped = True


class Unavailable(CountingSampler):
    def start(self) -> None:
        raise SamplerUnavailable("no supported GPU: NVML not found")


class Broken(CountingSampler):
    def start(self) -> None:
        raise RuntimeError("bug")


def test_samples_are_stamped_on_the_load_clock_at_the_interval() -> None:
    sampler = CountingSampler(interval_s=0.02)
    before = time.perf_counter_ns()
    with TelemetryRecorder([sampler]) as recorder:
        time.sleep(0.3)
    after = time.perf_counter_ns()
    [series] = recorder.series
    times = [t for t, _ in series.samples]
    assert sampler.started and sampler.stopped
    assert all(before <= t <= after for t in times)
    assert times == sorted(times)
    assert 8 <= len(times) <= 17  # ~15 at 50 Hz; a loaded 2-core VM may drop a few
    assert sampler.threads == {"inferx-sampler-count"}  # off the load generator's thread
    assert series.samples[0][1] == {"x.value": 1.0, "x.none": None}


def test_failing_reads_are_recorded_and_sampling_continues() -> None:
    sampler = CountingSampler(interval_s=0.01, fail_every=3)
    with TelemetryRecorder([sampler]) as recorder:
        time.sleep(0.25)
    [series] = recorder.series
    assert series.errors and all("OSError: sensor busy" in e for _, e in series.errors)
    assert len(series.samples) >= 2 * len(series.errors) - 1
    describe = recorder.describe()[0]
    assert describe["errors"] == len(series.errors) and describe["unavailable"] is None


def test_unavailable_and_broken_samplers_are_reported_not_fatal() -> None:
    good = CountingSampler()
    with TelemetryRecorder([Unavailable("nvml"), Broken("bad"), good]) as recorder:
        time.sleep(0.1)
    by_name = {d["name"]: d for d in recorder.describe()}
    assert by_name["nvml"]["unavailable"] == "no supported GPU: NVML not found"
    assert by_name["bad"]["unavailable"].startswith("start failed: RuntimeError")
    assert by_name["count"]["samples"] > 0


def test_stop_ends_threads() -> None:
    recorder = TelemetryRecorder([CountingSampler(interval_s=0.5)])
    recorder.start()
    started = time.monotonic()
    recorder.stop()
    assert time.monotonic() - started < 1.0  # the wait is interruptible
    assert not [t for t in threading.enumerate() if t.name.startswith("inferx-sampler")]


def test_rows_and_window_summary() -> None:
    rows = [
        (i * 10, {"engine.kv_cache_usage": i / 10, "engine.preemptions_total": float(i)})
        for i in range(10)
    ]
    summary = summarize_prefix(rows, "engine.", 20, 70)
    assert summary["kv_cache_usage"]["max"] == 0.7 and summary["kv_cache_usage"]["min"] == 0.2
    assert summary["preemptions_total"] == {"increase": 5.0, "samples": 6}
    recorder = TelemetryRecorder([])
    assert list(series_rows(recorder, 0)) == []


def test_nan_and_inf_readings_become_none() -> None:
    class NanSampler(CountingSampler):
        def read(self):
            return {
                "engine.kv_cache_usage": float("nan"),
                "gpu.0.power_w": float("inf"),
                "host.cpu_percent": 12.5,
            }

    with TelemetryRecorder([NanSampler(interval_s=0.05)]) as recorder:
        time.sleep(0.05)
    values = recorder.series[0].samples[0][1]
    assert values == {
        "engine.kv_cache_usage": None,
        "gpu.0.power_w": None,
        "host.cpu_percent": 12.5,
    }


def test_a_hanging_read_is_dropped_not_closed_under() -> None:
    release = threading.Event()

    class Hanging(CountingSampler):
        def read(self):
            self.reads += 1
            if self.reads >= 2:
                release.wait(10)  # a /metrics request that does not answer
            return {"x.value": float(self.reads)}

    sampler = Hanging(interval_s=0.01)
    recorder = TelemetryRecorder([sampler])
    recorder.start()
    time.sleep(0.05)
    started = time.monotonic()
    recorder.stop()
    assert 4.5 < time.monotonic() - started < 8  # bounded wait, then give up
    assert sampler.stopped is False  # not closed under the running read
    release.set()
    time.sleep(0.1)
    series = recorder.series[0]
    assert [v["x.value"] for _, v in series.samples] == [1.0]  # the late reading is dropped
    assert "still running at stop" in series.notes[-1]
