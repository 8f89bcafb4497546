"""CPU time the telemetry samplers cost per second of benchmark, at 10 Hz.

For each sampler alone (and all together), runs the real sampler thread for
a few seconds at the given rate and prints the process CPU time it used per
wall second, beside an idle baseline measured the same way in the same run.
NVML runs against the tests' fake of nvidia-ml-py when no NVIDIA GPU is
present (then it measures InferX's own per-read work, not the driver's);
the engine /metrics scraper reads a local server that serves a vLLM
/metrics page captured from the real vLLM CPU build.

    .venv/bin/python benchmarks/telemetry_overhead.py [--hz 10] [--seconds 5]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the NVML fake lives with the tests

from inferx_core.builtin.nvidia.sampler import NvmlSampler  # noqa: E402
from inferx_core.sdk.probes import EngineMetricsMap  # noqa: E402
from inferx_core.telemetry.engine_metrics import EngineMetricsSampler  # noqa: E402
from inferx_core.telemetry.host import HostSampler  # noqa: E402
from inferx_core.telemetry.recorder import TelemetryRecorder  # noqa: E402

METRICS_PAGE = (
    "\n".join(
        [
            "# TYPE vllm:num_requests_running gauge",
            'vllm:num_requests_running{engine="0",model_name="tiny"} 8.0',
            "# TYPE vllm:num_requests_waiting gauge",
            'vllm:num_requests_waiting{engine="0",model_name="tiny"} 0.0',
            "# TYPE vllm:kv_cache_usage_perc gauge",
            'vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.0039',
            "# TYPE vllm:num_preemptions_total counter",
            'vllm:num_preemptions_total{engine="0",model_name="tiny"} 0.0',
        ]
        # vLLM pages carry ~100 more families (histograms); pad to a realistic size.
        + [f'# TYPE vllm:filler_{i} gauge\nvllm:filler_{i}{{engine="0"}} {i}.0' for i in range(150)]
    )
    + "\n"
)


def serve_metrics_page(folder: Path) -> tuple[subprocess.Popen, str]:
    """The page served by a separate process, so its CPU is not counted as ours."""
    (folder / "metrics").write_text(METRICS_PAGE)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}"


def nvml_sampler(interval: float) -> NvmlSampler:
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        return NvmlSampler(list(range(count)), interval_s=interval)
    except Exception:  # no NVIDIA GPU here: the fake keeps InferX's own work measurable
        import fake_pynvml

        fake = fake_pynvml.FakeNvml([fake_pynvml.FakeGpu() for _ in range(8)])
        return NvmlSampler(list(range(8)), interval_s=interval, nvml=fake.as_module())


def cpu_per_second(make, seconds: float) -> float:
    """Process CPU ms per wall second while the samplers run (idle main thread)."""
    recorder = TelemetryRecorder(make())
    recorder.start()
    time.sleep(0.3)  # let start-up (imports, priming) pass
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    recorder.stop()
    return (cpu1 - cpu0) * 1000 / (wall1 - wall0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hz", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    interval = 1.0 / args.hz

    folder = Path(tempfile.mkdtemp(prefix="inferx-metrics-"))
    server, url = serve_metrics_page(folder)
    names = EngineMetricsMap(
        kv_cache_usage="vllm:kv_cache_usage_perc",
        requests_running="vllm:num_requests_running",
        requests_waiting="vllm:num_requests_waiting",
        preemptions="vllm:num_preemptions",
    )
    cases = {
        "idle (no sampler)": lambda: [],
        "nvml (8 GPUs)": lambda: [nvml_sampler(interval)],
        "host (+engine tree)": lambda: [HostSampler(engine_pid=None, interval_s=interval)],
        "engine /metrics": lambda: [EngineMetricsSampler(url, names, interval_s=interval)],
        "all together": lambda: [
            nvml_sampler(interval),
            HostSampler(interval_s=interval),
            EngineMetricsSampler(url, names, interval_s=interval),
        ],
    }
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeats):  # interleaved, so machine noise hits every case alike
        for name, make in cases.items():
            results[name].append(cpu_per_second(make, args.seconds))
    server.terminate()
    server.wait()
    base = statistics.median(results["idle (no sampler)"])
    print(f"telemetry CPU cost at {args.hz:g} Hz ({args.seconds:g} s x {args.repeats}, median)")
    print(f"{'sampler':<22}{'CPU ms/s':>10}{'above idle':>12}{'% of a core':>13}")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"{name:<22}{med:>10.2f}{med - base:>+12.2f}{(med - base) / 10:>12.2f}%")
    print("(the /metrics page is served by another process; defaults are nvml 2 Hz, host and")
    print(" engine /metrics 1 Hz, so the default cost is a fraction of the figures above)")


if __name__ == "__main__":
    main()
