"""Hand-made schema-1 result dicts shaped like the runner's and bench's (for analysis/report tests).

Only the fields the analysis reads are filled, with the runner's names and
nesting (``config``, ``engine``, ``platform``, ``workload``, ``launch``); the
numbers are the caller's, so tests can assert golden values. They are
schema-1 files (as InferX 0.1 wrote them): readers migrate them to the typed
model, so every analysis test also covers reading old files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inferx_core.results.model import PointResultBase, parse_result


def make_result(
    point_id: str,
    *,
    tput_per_gpu: float | None = 1000.0,
    median_intvty: float | None = 50.0,
    num_gpus: int | None = 1,
    gpu_name: str | None = "NVIDIA H200",
    engine: str | None = "vllm",
    model: str = "org/Model-8B",
    tp: int = 1,
    concurrency: int = 8,
    isl: int = 1024,
    osl: int = 1024,
    status: str = "ok",
    date: str = "2026-01-01T00:00:00+00:00",
    median_e2el_ms: float | None = 1000.0,
    median_ttft_ms: float = 100.0,
    std_ttft_ms: float = 10.0,
    completed: int = 100,
    output_share: float = 0.5,
    duration: float = 100.0,
    power: float | None = None,
    cost: dict[str, Any] | None = None,
    name: str | None = None,
    dtype: str | None = None,
    kv_cache_dtype: str | None = None,
    quantization: str | None = None,
    hostname: str = "node1",
    bench: bool = False,
) -> dict[str, Any]:
    """A result whose throughput per GPU and interactivity are exactly the given values.

    ``output_share``: output tokens / total tokens. ``bench=True`` shapes it like
    ``inferx bench`` (no platform, no engine block, config = BenchConfig dump).
    """
    gpus = num_gpus or 1
    total = None if tput_per_gpu is None else tput_per_gpu * gpus
    out = None if total is None else total * output_share
    tpot = None if not median_intvty else 1000.0 / median_intvty
    result: dict[str, Any] = {
        "schema_version": 1,
        "point_id": point_id,
        "status": status,
        "failure_reason": None if status == "ok" else "engine exited",
        "date": date,
        "finished_at": date,
        "mode": "closed",
        "request_rate": "inf",
        "max_concurrency": concurrency,
        "model_id": model.rsplit("/", 1)[-1],
        "duration": duration,
        "completed": completed if status == "ok" else 0,
        "failed": 0,
        "total_input_tokens": None if total is None else round((total - out) * duration),
        "total_output_tokens": None if out is None else round(out * duration),
        "output_throughput": out,
        "total_token_throughput": total,
        "num_gpus": num_gpus,
        "tput_per_gpu": tput_per_gpu if num_gpus else None,
        "output_tput_per_gpu": None if out is None or not num_gpus else out / num_gpus,
        "input_tput_per_gpu": None if total is None or not num_gpus else (total - out) / num_gpus,
        "median_intvty": median_intvty,
        "median_tpot_ms": tpot,
        "std_tpot_ms": None if tpot is None else tpot * 0.1,
        "intvty_requests": completed,
        "median_ttft_ms": median_ttft_ms,
        "std_ttft_ms": std_ttft_ms,
        "p99_ttft_ms": median_ttft_ms * 2,
        "median_e2el_ms": median_e2el_ms,
        "std_e2el_ms": None if median_e2el_ms is None else median_e2el_ms * 0.1,
        "workload": {
            "spec": {"kind": "random", "isl": isl, "osl": osl},
            "api": "completions",
        },
        "power_valid": power is not None,
        "power_invalid_reason": None if power is not None else "no supported GPU",
        "gpu_power_avg_w": power,
        "slo": {},
    }
    if total is not None:  # without throughput it is a point that measured nothing
        result.update(_counts_and_levels(result["completed"], duration, concurrency))
    workload = {"kind": "random", "isl": isl, "osl": osl, "api": "completions"}
    if bench:
        result["config"] = {
            "base_url": "http://server:8000",
            "workload": workload,
            "cost": cost or {"gpu_type": None, "tier": "owner"},
            "engine": engine,
            "num_gpus": num_gpus,
            "name": name,
        }
        return result
    result["config"] = {
        "engine": engine,
        "model": model,
        "name": name,
        "parallelism": {"tp": tp, "pp": 1, "dp": 1, "ep": None},
        "dtype": dtype,
        "kv_cache_dtype": kv_cache_dtype,
        "engine_args": {"quantization": quantization} if quantization else {},
        "workload": workload,
        "cost": cost or {"gpu_type": None, "tier": "owner"},
    }
    result["engine"] = {"name": engine, "plugin": engine, "version": "1.0"}
    accelerators = (
        [{"vendor": "nvidia", "index": i, "name": gpu_name} for i in range(8)] if gpu_name else []
    )
    result["platform"] = {"host": {"hostname": hostname}, "accelerators": accelerators}
    result["launch"] = {"spec": {"gpu_ids": list(range(gpus)) if gpu_name else []}}
    return result


def _counts_and_levels(completed: int, duration: float, concurrency: int) -> dict[str, Any]:
    """The rest a schema-1 file always carried, neutral, so it migrates to schema 2."""
    return {
        "num_prompts": completed,
        "stopped_by": "num_prompts",
        "total_requests": completed,
        "warmup_excluded": 0,
        "output_tokens_estimated": False,
        "output_tokens_estimated_requests": 0,
        "output_token_sources": {},
        "max_concurrent_requests": concurrency,
        "failed_by_kind": {},
        "error_samples": [],
        "no_successful_requests": completed == 0,
        "request_throughput": completed / duration if duration else None,
        "max_output_tokens_per_s": 0.0,
        "percentiles": [50.0, 90.0, 99.0],
        "itl_per_token_requests": completed,
    }


def make_model(point_id: str, **kwargs: Any) -> PointResultBase:
    """``make_result`` read the way a reader reads it: migrated to the typed model."""
    return parse_result(make_result(point_id, **kwargs))


def write_results(folder: Path, results: list[dict[str, Any]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for result in results:
        path = folder / f"{result['point_id']}.json"
        path.write_text(json.dumps(result, indent=2))
        paths.append(path)
    return paths


# -- a small report set: two groups, a dominated point, a failure, telemetry -----------------
POINTS = [
    make_result("h200-tp1-c4", tput_per_gpu=500.0, median_intvty=100.0, concurrency=4),
    make_result("h200-tp1-c16", tput_per_gpu=1200.0, median_intvty=60.0, concurrency=16),
    make_result("h200-tp1-c64", tput_per_gpu=2000.0, median_intvty=20.0, concurrency=64),
    make_result(
        "h200-tp2-c16", tput_per_gpu=1100.0, median_intvty=55.0, tp=2, num_gpus=2, concurrency=16
    ),
    make_result(
        "mi300x-tp1-c16",
        tput_per_gpu=1300.0,
        median_intvty=50.0,
        gpu_name="AMD Instinct MI300X",
        concurrency=16,
        power=650.0,
    ),
    make_result("h200-tp1-c256", status="failed", tput_per_gpu=None, median_intvty=None),
]


def telemetry_rows() -> list[dict]:
    rows = []
    for i in range(40):
        t = -1.0 + i * 0.25
        rows.append(
            {
                "sampler": "nvml",
                "t_s": t,
                "gpu.0.power_w": 300 + 10 * i,
                "gpu.1.power_w": 310 + 9 * i,
            }
        )
        rows.append(
            {
                "sampler": "engine_metrics",
                "t_s": t + 0.1,
                "engine.kv_cache_usage": min(1.0, i / 30),
                "engine.requests_running": 16.0 if 0 <= t <= 8 else 0.0,
                "engine.requests_waiting": 0.0,
            }
        )
    return rows


def make_set(folder: Path) -> Path:
    write_results(folder, POINTS)
    lines = "\n".join(json.dumps(r) for r in telemetry_rows())
    (folder / "h200-tp1-c16.telemetry.jsonl").write_text(lines + "\n")
    # a host-only telemetry sidecar: no power, no KV cache -> no timeline
    (folder / "h200-tp1-c4.telemetry.jsonl").write_text('{"t_s": 0, "host.cpu_percent": 5}\n')
    return folder


def pixel_variety(png: Path) -> tuple[int, float]:
    """(distinct colours, fraction of non-white pixels) of a PNG."""
    import matplotlib.image
    import numpy as np

    img = matplotlib.image.imread(png)[..., :3]
    flat = (img.reshape(-1, 3) * 255).round().astype(np.uint32)
    colours = len(np.unique((flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]))
    non_white = float((flat.min(axis=1) < 245).mean())
    return colours, non_white
