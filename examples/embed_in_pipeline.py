"""Embed InferX in your own pipeline: benchmark a running server from Python.

Starts InferX's scripted test server (so this example runs anywhere), drives
it through the same code path as `inferx bench`, and reads the typed results
(sections: identity, load, latency, throughput, telemetry, provenance).
Point `base_url` at your own deployment instead.

    .venv/bin/python examples/embed_in_pipeline.py
"""

from __future__ import annotations

from inferx_core.api import SLO, BenchConfig, LoadProfile, Workload, run_bench
from inferx_core.testing import ServerProcess


def main() -> None:
    with ServerProcess(ttft_ms=30, itl_ms=8) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload=Workload(isl=256, osl=64),
            load=LoadProfile(concurrency=[1, 8], num_prompts=16),
            slo=SLO(ttft_ms=200, tpot_ms=20),
            num_gpus=1,
            output_dir=None,  # keep results in memory only
        )
        for outcome in run_bench(config, progress=False):
            r = outcome.result
            if r.load is None or r.latency is None or r.throughput is None:
                print(f"{outcome.point_id}: {r.status}: {r.failure_reason}")
                continue
            print(
                f"{outcome.point_id}: {r.load.completed} ok, "
                f"{r.throughput.output_throughput:.0f} out tok/s, "
                f"TTFT p50 {r.latency.ttft_ms.median:.1f} ms, "
                f"TPOT p50 {r.latency.tpot_ms.median:.2f} ms, "
                f"goodput {r.throughput.request_goodput:.2f} req/s"
            )


if __name__ == "__main__":
    main()
