"""The same sweep through ``launcher: docker`` and the bare process launcher, side by side.

Usage::

    .venv/bin/python benchmarks/docker_overhead.py [--engines llamacpp vllm] [--pairs 6]
        [--concurrency 1 4] [--prompts 48] [--isl 128] [--osl 64]

Needs a Docker daemon (``.ci/docker-daemon start``) and the engine images
(``make images``): ``inferx/llama-server:0.3.36`` and ``inferx/vllm-cpu:0.32.0``.

Each pair runs the demo's sweep (the tiny Llama, the completions API, closed
loop at each ``--concurrency``) twice through :func:`run_configs`, the Python
API of ``inferx run``: once with the engine in a container (``launcher:
docker``, host networking as InferX always starts it) and once as a bare
process on the host, the same engine build in both (the image holds the binary
and wheels the host runs). The two runs of a pair are back to back and their
order alternates (docker first, then bare first), so a drift of the shared
machine's load hits both sides. A server is started once per run, as ``inferx
run`` does, and its start (container start included) is outside the points'
figures.

Per pair and concurrency it takes docker/bare of the median TTFT, the median
ITL and the output tokens per second, and prints each ratio's median over the
pairs with its range, and the 1-minute load average seen at each run's start.
No goal is asserted: the question is whether a container costs anything that
can be told from this machine's noise (ratio 1.0 within the pairs' spread).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from inferx_core.demo.run import demo_config
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import read_result

ROOT = Path(__file__).resolve().parents[1]
IMAGES = {"llamacpp": "inferx/llama-server:0.3.36", "vllm": "inferx/vllm-cpu:0.32.0"}
# in the image the engine is its own: llama-server on PATH, vLLM under the image's python3
IMAGE_EXECUTABLE = {
    "llamacpp": ["llama-server"],
    "vllm": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
}
METRICS = (
    ("median_ttft_ms", "TTFT p50"),
    ("median_itl_ms", "ITL p50"),
    ("output_throughput", "out tok/s"),
)


def config_for(args: argparse.Namespace, engine: str, side: str, out: Path) -> Any:
    base = demo_config(
        output_dir=out, engine=engine, concurrency=args.concurrency, isl=args.isl, osl=args.osl,
        num_prompts=args.prompts, model_dir=Path(args.work) / "model",
        engine_python=str(ROOT / ".venv-engine/bin/python") if engine == "vllm" else None,
    )  # fmt: skip
    # the same slots both sides (the demo's default); telemetry as the demo samples it
    update: dict[str, Any] = {"name": f"{engine}-{side}"}
    if side == "bare" and engine == "vllm" and args.bare_python:
        # another interpreter over the engine venv's packages (same ABI: both CPython 3.11)
        packages = next((ROOT / ".venv-engine/lib").glob("python3.*/site-packages"))
        update |= {
            "executable": [args.bare_python, "-m", IMAGE_EXECUTABLE["vllm"][-1]],
            "engine_env": {"PYTHONPATH": str(packages)},
        }
    if side == "docker":
        update |= {
            "launcher": "docker",
            "image": IMAGES[engine],
            "executable": IMAGE_EXECUTABLE[engine],
        }
    return base.model_copy(update=update)


def one_run(
    args: argparse.Namespace, engine: str, side: str, index: int
) -> dict[int, dict[str, float]]:
    """{concurrency: {metric: value}} of one sweep; exits on a failed point (no half pairs)."""
    out = Path(args.work) / f"{engine}-{side}-{index}"
    load = os.getloadavg()[0]
    start = time.monotonic()
    summary = run_configs([config_for(args, engine, side, out)], progress=False)
    if not summary.ok:
        reasons = [o.result.failure_reason for o in summary.outcomes]
        sys.exit(f"{engine} {side} run {index} failed: {reasons}")
    points: dict[int, dict[str, float]] = {}
    for outcome in summary.outcomes:
        flat = read_result(outcome.path).flat()
        if flat["completed"] != args.prompts or flat["failed"]:
            sys.exit(f"{outcome.path}: {flat['completed']} completed, {flat['failed']} failed")
        points[int(flat["max_concurrency"])] = {key: float(flat[key]) for key, _ in METRICS}
    points[0] = {"load": load, "wall": time.monotonic() - start}
    print(
        f"  {engine:8s} {side:6s} pair {index}: load {load:4.2f}, {points[0]['wall']:5.1f} s",
        flush=True,
    )
    return points


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.3f} ({min(values):.3f}-{max(values):.3f})"


def report(
    engine: str, runs: list[dict[str, dict[int, dict[str, float]]]], levels: list[int]
) -> None:
    print(f"\n{engine}: docker/bare, median over {len(runs)} pairs (range)")
    print(
        f"{'c':>3}  "
        + "  ".join(f"{label:>22s}" for _, label in METRICS)
        + "   bare abs (docker abs)"
    )
    for c in levels:
        cells, absolute = [], []
        for key, _ in METRICS:
            ratios = [pair["docker"][c][key] / pair["bare"][c][key] for pair in runs]
            cells.append(f"{spread(ratios):>22s}")
            bare = statistics.median(pair["bare"][c][key] for pair in runs)
            docker = statistics.median(pair["docker"][c][key] for pair in runs)
            absolute.append(f"{bare:.3g} ({docker:.3g})")
        print(f"{c:>3}  " + "  ".join(cells) + "   " + ", ".join(absolute))
    loads = [pair[side][0]["load"] for pair in runs for side in ("docker", "bare")]
    walls = {
        side: statistics.median(pair[side][0]["wall"] for pair in runs)
        for side in ("docker", "bare")
    }
    low, high, mid = min(loads), max(loads), statistics.median(loads)
    print(f"load average (1 min) at run starts: {low:.2f}-{high:.2f}, median {mid:.2f}")
    docker, bare = walls["docker"], walls["bare"]
    print(f"run wall (start + sweep + stop), median: docker {docker:.1f} s, bare {bare:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", nargs="+", default=["llamacpp"], choices=sorted(IMAGES))
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--isl", type=int, default=128)
    parser.add_argument("--osl", type=int, default=64)
    parser.add_argument(
        "--bare-python",
        help="vLLM's bare side under this Python (e.g. /usr/bin/python3, the interpreter "
        "the image has) with .venv-engine's packages, instead of .venv-engine's own",
    )
    parser.add_argument(
        "--work", default=None, help="folder for the runs (default: a temporary one)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docker-overhead-") as tmp:
        args.work = args.work or tmp
        print(
            f"cores {os.cpu_count()}, pairs {args.pairs}, c {args.concurrency}, "
            f"{args.prompts} prompts, isl {args.isl} osl {args.osl}"
        )
        for engine in args.engines:
            runs = []
            for index in range(args.pairs):
                # alternate which side goes first, so drift within a pair hits both
                order = ("docker", "bare") if index % 2 == 0 else ("bare", "docker")
                runs.append({side: one_run(args, engine, side, index) for side in order})
            report(engine, runs, args.concurrency)


if __name__ == "__main__":
    main()
