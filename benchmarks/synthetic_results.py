"""Synthetic result folders for the database and dashboard benchmarks.

Points shaped like a nightly sweep's: 4 GPU types x 2 engines x 2 precisions x
3 ISL/OSL scenarios x 8 concurrencies per night, over as many nights (labels
``nightly-YYYY-MM-DD``, each with the engine version of its week) as it takes
to reach the count asked for; about 2% of points failed. Figures follow a
plausible throughput/interactivity trade-off with noise. Written as result
files (schema 1, read through InferX's migration like any old result).
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from result_factory import make_result, write_results

GPUS = {"NVIDIA H100": 1.0, "NVIDIA H200": 1.3, "NVIDIA B200": 2.1, "AMD Instinct MI300X": 1.2}
ENGINES = {"vllm": 1.0, "sglang": 1.05}
PRECISIONS = {"bf16": (None, 1.0), "fp8": ("fp8", 1.6)}
SCENARIOS = ((1024, 1024), (1024, 8192), (8192, 1024))
CONCURRENCIES = (1, 4, 8, 16, 32, 64, 128, 256)
POINTS_PER_NIGHT = len(GPUS) * len(ENGINES) * len(PRECISIONS) * len(SCENARIOS) * len(CONCURRENCIES)


def _point(night: int, day: dt.date, combo: tuple, rng: random.Random) -> dict:
    gpu, engine, precision, (isl, osl), conc = combo
    quant, speed = PRECISIONS[precision]
    base = 40.0 * GPUS[gpu] * ENGINES[engine] * speed * (1 + night * 0.002)
    tput = base * conc**0.8 * rng.uniform(0.95, 1.05) * (2048 / (isl + osl)) ** 0.3
    intvty = 120.0 / conc**0.35 * rng.uniform(0.95, 1.05)
    short = gpu.split()[-1].lower()
    pid = f"{precision}-{short}-{engine}-isl{isl}-osl{osl}-c{conc}"
    date = dt.datetime.combine(day, dt.time(2, 0), dt.timezone.utc).isoformat()
    failed = rng.random() < 0.02
    result = make_result(
        pid, tput_per_gpu=None if failed else tput, median_intvty=None if failed else intvty,
        gpu_name=gpu, engine=engine, concurrency=conc, isl=isl, osl=osl, date=date,
        status="failed" if failed else "ok", quantization=quant,
        median_e2el_ms=None if failed else osl * 1000.0 / intvty,
    )  # fmt: skip
    result["engine"]["version"] = f"0.{30 + night // 7}.0"
    return result


def write_nights(root: Path, count: int, seed: int = 0) -> list[tuple[str, Path]]:
    """At least ``count`` points in one folder per night; [(label, folder)]."""
    rng = random.Random(seed)
    combos = list(itertools.product(GPUS, ENGINES, PRECISIONS, SCENARIOS, CONCURRENCIES))
    nights = -(-count // len(combos))
    start = dt.date(2026, 10, 1)
    out = []
    written = 0
    for night in range(nights):
        day = start + dt.timedelta(days=night)
        take = combos[: min(len(combos), count - written)]
        folder = root / f"nightly-{day.isoformat()}"
        write_results(folder, [_point(night, day, c, rng) for c in take])
        written += len(take)
        out.append((folder.name, folder))
    return out
