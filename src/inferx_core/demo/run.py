"""The embedded default run: vLLM's CPU build serving a tiny model InferX builds locally."""

from __future__ import annotations

import os
from pathlib import Path

from inferx_core.config.models import LoadProfile, RunConfig, Workload
from inferx_core.demo.engine import API_SERVER_MODULE, find_engine_python, missing_engine_message
from inferx_core.demo.tiny_model import build_tiny_model
from inferx_core.errors import UserFacingError

SERVED_NAME = "tiny-llama"


def model_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inferx" / "tiny-llama"


def demo_config(
    *,
    output_dir: Path,
    engine_python: str | None = None,
    concurrency: list[int] | None = None,
    isl: int = 128,
    osl: int = 64,
    num_prompts: int | None = None,
    model_dir: Path | None = None,
) -> RunConfig:
    python = find_engine_python(engine_python)
    if python is None:
        raise UserFacingError(missing_engine_message())
    model = build_tiny_model(model_dir or model_cache_dir())
    return RunConfig(
        name="demo",
        engine="vllm",
        model=str(model),
        served_model_name=SERVED_NAME,
        executable=[str(python), "-m", API_SERVER_MODULE],
        dtype="float32",
        max_model_len=2048,
        max_num_seqs=16,
        # Eager mode cuts vLLM CPU start-up from ~2 min to under 1 min.
        engine_args={"enforce-eager": True},
        engine_env={"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"},
        readiness_timeout_s=600,
        # Short CPU-demo windows: sample host and /metrics twice a second.
        telemetry_intervals={"host": 0.5, "engine_metrics": 0.5},
        stop_grace_s=15,
        workload=Workload(isl=isl, osl=osl, tokenizer=model / "tokenizer.json"),
        load=LoadProfile(concurrency=concurrency or [1, 4, 8], num_prompts=num_prompts),
        output_dir=output_dir,
    )
