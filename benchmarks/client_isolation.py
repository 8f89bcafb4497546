"""The client's timing error against the server's own stamps while a CPU hog stands in for
the engine: the client pinned to its own CPU (InferX's default on small hosts) vs sharing.

    .venv/bin/python benchmarks/client_isolation.py [--repeats 3] [--concurrency 8]

The scripted server stamps every chunk with its perf_counter_ns() right
before the write (``--stamp``; one host, one CLOCK_MONOTONIC), so the
client's error is when it stamped a chunk minus when the server sent it:
for the first chunk (TTFT) and every chunk gap (ITL). A starved server
being slow is not the client's error and does not count. One busy-looping process per
CPU plays the engine that takes every core (the vLLM CPU build does on a
2-core box). Pinned: the hogs on all CPUs but the last, the client (and the
scripted server, the reference clock) on the last. Shared: nobody pinned.
Runs interleave so drift hits both alike.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics

import numpy as np

from inferx_core.api import BenchConfig, run_bench
from inferx_core.config.cpus import split_cpus
from inferx_core.config.models import LoadProfile, Workload
from inferx_core.load.schedule.client_load import pinned
from inferx_core.load.transport.sse import StreamDecoder
from inferx_core.testing import ServerProcess

TTFT_MS, ITL_MS = 20.0, 5.0


def _hog() -> None:
    while True:
        pass


LAGS: list[tuple[bool, float]] = []  # (first chunk?, client stamp - server stamp in ms)
GAPS: list[float] = []  # client gap - server gap (ms)


LAST: dict[int, tuple[int, int]] = {}  # per live request (cleared each run: ids get reused)


def _recording(original):
    last = LAST

    def on_event(self, data: str, t_ns: int) -> int:
        if '"x_sent_ns"' in data:
            sent = json.loads(data)["x_sent_ns"]
            key = id(self.record)
            first = key not in last
            LAGS.append((first, (t_ns - sent) / 1e6))
            if not first:
                t0, s0 = last[key]
                GAPS.append(((t_ns - t0) - (sent - s0)) / 1e6)
            last[key] = (t_ns, sent)
        return original(self, data, t_ns)

    return on_event


def run_once(base_url: str, conc: int, n: int) -> dict[str, float]:
    LAGS.clear()
    GAPS.clear()
    LAST.clear()
    config = BenchConfig(
        base_url=base_url,
        output_dir=None,
        telemetry=False,
        workload=Workload(isl=32, osl=32, range_semantics="fixed"),
        load=LoadProfile(concurrency=[conc], num_prompts=n),
    )
    [outcome] = run_bench(config, progress=False)
    flat = outcome.result.flat()
    first = [lag for is_first, lag in LAGS if is_first]
    return {
        "ttft_err_mean": statistics.fmean(first),
        "ttft_err_p99": float(np.percentile(first, 99)),
        "itl_err_mean": statistics.fmean(abs(g) for g in GAPS),
        "itl_err_p99": float(np.percentile([abs(g) for g in GAPS], 99)),
        "zero_gaps": flat["itl_zero_gap_fraction"] or 0.0,
        "valid": float(outcome.result.validity is not None and outcome.result.validity.valid),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--requests", type=int, default=80)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    split = split_cpus(cpus)
    if not split.client:
        raise SystemExit(f"needs a host of 2-16 CPUs to split; this one has {len(cpus)}")
    StreamDecoder._on_event = _recording(StreamDecoder._on_event)  # type: ignore[method-assign]
    hogs = [mp.Process(target=_hog, daemon=True) for _ in cpus]
    for h in hogs:
        h.start()
    results: dict[str, list[dict[str, float]]] = {"pinned": [], "shared": []}
    try:
        with ServerProcess(ttft_ms=TTFT_MS, itl_ms=ITL_MS, stamp=True) as srv:
            for _ in range(args.repeats):
                for mode in ("pinned", "shared"):
                    engine_side = split.engine if mode == "pinned" else tuple(cpus)
                    for pid in [h.pid for h in hogs]:
                        os.sched_setaffinity(pid, engine_side)
                    # the scripted server is the reference clock, not the engine's compute:
                    # pinned, it stays off the hog's CPUs (stamped chunks leave on time)
                    server_side = split.client if mode == "pinned" else tuple(cpus)
                    os.sched_setaffinity(srv.proc.pid, server_side)
                    with pinned(split.client if mode == "pinned" else ()):
                        r = run_once(srv.base_url, args.concurrency, args.requests)
                    results[mode].append(r)
                    print(f"  {mode:6s} " + "  ".join(f"{k} {v:+.2f}" for k, v in r.items()))
    finally:
        for h in hogs:
            h.terminate()
    print(
        f"\n{len(cpus)} CPUs, {len(hogs)} hog processes, c={args.concurrency}, server TTFT "
        f"{TTFT_MS:g} ms / ITL {ITL_MS:g} ms; medians over {args.repeats} runs:"
    )
    for key in results["pinned"][0]:
        p = statistics.median(r[key] for r in results["pinned"])
        s = statistics.median(r[key] for r in results["shared"])
        ratio = f"{s / p:.2f}x" if p else "-"
        print(f"  {key:14s} pinned {p:8.3f}   shared {s:8.3f}   shared/pinned {ratio}")


if __name__ == "__main__":
    main()
