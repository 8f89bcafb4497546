"""The embedded default run: a tiny model InferX builds locally, served on this CPU.

One sweep, two engines: vLLM's CPU build (the default) and llama.cpp's
llama-server (``engine: llamacpp``, from the inferx-llamacpp plugin, which
writes the same model as GGUF). The configs differ only in ``engine`` and in
what launches vLLM (its venv's python, eager mode, its CPU KV-cache size),
which the other engine has no use for.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from inferx_core.config.models import LoadProfile, RunConfig, Workload
from inferx_core.demo.engine import API_SERVER_MODULE, find_engine_python, missing_engine_message
from inferx_core.demo.tiny_model import build_tiny_model
from inferx_core.errors import UserFacingError

SERVED_NAME = "tiny-llama"


def model_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inferx" / "tiny-llama"


#: The engines `inferx demo` runs the same sweep on, in this order.
DEMO_ENGINES = ("vllm", "llamacpp")


def _vllm_launch(engine_python: str | None) -> dict[str, Any]:
    python = find_engine_python(engine_python)
    if python is None:
        raise UserFacingError(missing_engine_message())
    return {
        "executable": [str(python), "-m", API_SERVER_MODULE],
        "dtype": "float32",
        # Eager mode cuts vLLM CPU start-up from ~2 min to under 1 min.
        "engine_args": {"enforce-eager": True},
        "engine_env": {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"},
    }


def demo_config(
    *,
    output_dir: Path,
    engine_python: str | None = None,
    concurrency: list[int] | None = None,
    isl: int = 128,
    osl: int = 64,
    num_prompts: int | None = None,
    model_dir: Path | None = None,
    engine: str = "vllm",
) -> RunConfig:
    """The demo sweep on ``engine`` (the engine's plugin finds its own server otherwise)."""
    launch = _vllm_launch(engine_python) if engine == "vllm" else {}
    model = build_tiny_model(model_dir or model_cache_dir())
    return RunConfig(
        name="demo" if engine == "vllm" else f"demo-{engine}",
        engine=engine,
        model=str(model),
        served_model_name=SERVED_NAME,
        **launch,
        max_model_len=2048,
        max_num_seqs=16,
        readiness_timeout_s=600,
        # Short CPU-demo windows: sample host and /metrics twice a second.
        telemetry_intervals={"host": 0.5, "engine_metrics": 0.5},
        stop_grace_s=15,
        workload=Workload(isl=isl, osl=osl, tokenizer=model / "tokenizer.json"),
        load=LoadProfile(concurrency=concurrency or [1, 4, 8], num_prompts=num_prompts),
        output_dir=output_dir,
    )
