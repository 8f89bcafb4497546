"""Chunks per second the load generator sustains with 1, 2, ... worker processes.

Usage::

    PYTHONPATH=src python benchmarks/scale_out.py [--workers 1,2,4] [--servers 2]
        [--concurrency 256] [--osl 256] [--seconds 4] [--itl-ms 0] [--repeats 3]

A pool of scripted servers (``inferx_core.testing.server_pool.ServerPool``:
``--servers`` processes on one port with SO_REUSEPORT, stamping each chunk
with its ``perf_counter_ns``) streams ``--osl`` one-token chunks per request;
the load is a closed loop at ``--concurrency`` for ``--seconds``, run through
``pipeline.point.drive.drive`` exactly as ``inferx bench --workers N`` runs it
(``in-process``: today's one-loop path; ``N``: N worker processes). For each:

* chunks/s: content chunks received in the measured window / its length;
* client CPU per 1000 chunks: the workers' CPU in the window (each worker's
  CPU fraction x the window) plus the parent's (tailing the records files);
  in-process, the one process's;
* TTFT error: the first chunk's arrival stamp minus the server's stamp right
  before it wrote that chunk (same host, same CLOCK_MONOTONIC), mean and p99:
  what a starved client adds to every TTFT.

The figure that matters is the ratio between rows on one machine: with a
zero-delay server the client and the servers share the host's cores, so the
sum is bounded by them (the README says how many this run had).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np

from inferx_core.load.prompts.payloads import COMPLETIONS_PATH, build_completions_payload
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import LoadConfig, PreparedRequest
from inferx_core.pipeline.point.drive import drive
from inferx_core.pipeline.point.requests import BenchTarget, Requests
from inferx_core.telemetry.recorder import TelemetryRecorder
from inferx_core.testing.server_pool import ServerPool


def _requests(n: int, osl: int, warmup: int) -> Requests:
    payload = build_completions_payload("test-model", "hello world", osl, ignore_eos=True)

    def one(i: int, warm: bool) -> PreparedRequest:
        return PreparedRequest(COMPLETIONS_PATH, payload, RequestRecord(i, 2, osl, warmup=warm))

    measured = [one(i, False) for i in range(n)]
    return Requests(None, measured, [one(-1 - i, True) for i in range(warmup)], n)  # type: ignore[arg-type]


def _row(label: str, out, client_cpu_s: float) -> dict[str, float | str]:
    res = out.result
    window = res.window_s or 1e-9
    chunks = sum(len(r.chunk_ns) for r in res.records)
    lags = [
        (r.chunk_ns[0] - r.server_sent_ns[0]) / 1e6
        for r in res.records
        if r.ok and r.server_sent_ns and len(r.server_sent_ns) == len(r.chunk_ns)
    ]
    return {
        "workers": label,
        "chunks_per_s": chunks / window,
        "cpu_ms_per_1k": client_cpu_s * 1e3 / max(chunks, 1) * 1000,
        "ttft_err_mean_ms": statistics.fmean(lags) if lags else float("nan"),
        "ttft_err_p99_ms": float(np.percentile(lags, 99)) if lags else float("nan"),
        "requests": len(res.records),
        "failed": sum(1 for r in res.records if not r.ok),
    }


def run_one(base_url: str, workers: int | None, args: argparse.Namespace) -> dict:
    """One point: ``workers`` None is the in-process path."""
    n = args.concurrency * 40  # more than the duration can use: the duration stops it
    requests = _requests(n, args.osl, warmup=args.concurrency)
    config = LoadConfig(max_concurrency=args.concurrency, duration_s=args.seconds)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = drive(
        BenchTarget(base_url, "test-model"), requests, config, label="scale-out", total=None,
        recorder=TelemetryRecorder([]), abort_check=None, progress=False,
        workers=workers or 1,
    )  # fmt: skip
    window = out.result.window_s
    if out.workers:
        # the workers' CPU in the window, plus the parent's (tailing their records
        # files) at its average rate over the whole call, start-up included
        parent_rate = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
        cpu = sum((w.cpu_fraction or 0.0) for w in out.workers) * window + parent_rate * window
    else:
        cpu = (out.client_load.process_cpu_fraction or 0.0) * window
    return _row("in-process" if workers is None else str(workers), out, cpu)


def _median(runs: list[dict]) -> dict:
    """The run with the median chunks/s (its other figures with it)."""
    return sorted(runs, key=lambda r: r["chunks_per_s"])[len(runs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", default="1,2", help="worker counts to try (comma separated)")
    ap.add_argument("--servers", type=int, default=2, help="scripted server processes")
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--osl", type=int, default=256, help="chunks per request")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--itl-ms", type=float, default=0.0, help="server gap between chunks")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs; the median")
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",") if w]
    print(f"host: {os.cpu_count()} CPUs; {args.servers} server processes; c={args.concurrency}")
    configs: list[int | None] = [None, *(n for n in counts if n > 1)]
    runs: dict[int | None, list[dict]] = {c: [] for c in configs}
    with ServerPool(args.servers, itl_ms=args.itl_ms, stamp=True) as pool:
        for _ in range(args.repeats):  # interleaved: a noisy neighbour hits every config
            for c in configs:
                runs[c].append(run_one(pool.base_url, c, args))
    rows = [_median(runs[c]) for c in configs]
    print("| workers | chunks/s | client CPU ms / 1k chunks | TTFT error mean ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['workers']} | {r['chunks_per_s']:,.0f} | {r['cpu_ms_per_1k']:.1f} | "
            f"{r['ttft_err_mean_ms']:.1f} | {r['ttft_err_p99_ms']:.1f} |"
            + (f" ({r['failed']} failed)" if r["failed"] else "")
        )


if __name__ == "__main__":
    main()
