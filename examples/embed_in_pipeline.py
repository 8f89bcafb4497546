"""Embed InferX in your own pipeline: benchmark a running server from Python.

Starts InferX's scripted test server (so this example runs anywhere), drives
it through the same code path as `inferx bench`, and reads the results as
plain dicts. Point `base_url` at your own deployment instead.

    .venv/bin/python examples/embed_in_pipeline.py
"""

from __future__ import annotations

from inferx_core.config.models import SLO, BenchConfig, LoadProfile, Workload
from inferx_core.pipeline.point import run_bench
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
            print(
                f"{outcome.point_id}: {r['completed']} ok, "
                f"{r['output_throughput']:.0f} out tok/s, TTFT p50 {r['median_ttft_ms']:.1f} ms, "
                f"TPOT p50 {r['median_tpot_ms']:.2f} ms, goodput {r['request_goodput']:.2f} req/s"
            )


if __name__ == "__main__":
    main()
