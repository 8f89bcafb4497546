"""TTFT with vLLM's prefix caching on vs off, on a shared-prefix workload (real vLLM CPU).

    .venv/bin/python benchmarks/prefix_cache.py [--shared 256 --isl 320 --prompts 16]

Runs the embedded tiny model twice through inferx_vllm, same prompts, caching
on then off, and prints each run's median/p99 TTFT, the prefix-cache hit rate
InferX read from vLLM's counters over the window, and the TTFT ratio.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.demo.run import demo_config
from inferx_core.pipeline.server.run import run_configs


def run(root: Path, caching: bool, args: argparse.Namespace) -> dict[str, float | None]:
    base = demo_config(output_dir=root / f"r-{caching}", concurrency=[1], model_dir=root / "m")
    config = base.model_copy(
        update={
            "name": f"cache-{'on' if caching else 'off'}",
            "prefix_caching": caching,
            "workload": Workload(
                isl=args.isl,
                osl=8,
                range_semantics="fixed",
                shared_prefix=args.shared,
                tokenizer=base.workload.tokenizer,
            ),
            "load": LoadProfile(concurrency=[1], num_prompts=args.prompts),
            "telemetry_intervals": {"host": 0.5, "engine_metrics": 0.05},
        }
    )
    [outcome] = run_configs([config], progress=False).outcomes
    flat = outcome.result.flat()
    rate = flat["engine_metrics"].get("prefix_cache_hit_rate") or {}
    return {
        "median_ttft_ms": flat["median_ttft_ms"],
        "p99_ttft_ms": flat["p99_ttft_ms"],
        "hit_rate": rate.get("value"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=int, default=256)
    ap.add_argument("--isl", type=int, default=320)
    ap.add_argument("--prompts", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        on, off = run(Path(tmp), True, args), run(Path(tmp), False, args)
    print(f"\nshared prefix {args.shared} of {args.isl} tokens, {args.prompts} prompts, c=1")
    for name, r in (("on", on), ("off", off)):
        print(
            f"  caching {name:3s}: TTFT median {r['median_ttft_ms']:.1f} ms, "
            f"p99 {r['p99_ttft_ms']:.1f} ms, hit rate {r['hit_rate']}"
        )
    print(f"  TTFT median off/on: {off['median_ttft_ms'] / on['median_ttft_ms']:.2f}x")


if __name__ == "__main__":
    main()
