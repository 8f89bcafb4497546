"""Field names of the flat view: vLLM ``bench serve`` and InferenceX names, one level deep.

The flat view (:meth:`inferx_core.results.model.PointResultBase.flat`) is the
layout InferX wrote as schema 1, so ``migrate_v1(result.flat())`` gives the
result back (a tested round trip). Exports to the field's own pipelines and
lookups of a figure by name (Pareto axes, ``--metric``) use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FLAT_SCHEMA_VERSION = 1

#: Offered-load fields of the flat layout, in file order (counts come from the metrics).
OFFERED_KEYS: tuple[str, ...] = (
    "num_prompts",
    "num_prompts_planned",
    "arrival",
    "duration_limit_s",
    "stopped_by",
    "in_flight_finished_after_stop",
    "warmup_requests",
    "warmup_failed",
    "benchmark_start_time_unix",
    "benchmark_end_time_unix",
)
TARGET_KEYS: tuple[str, ...] = ("backend", "base_url", "model_id")
PROVENANCE_KEYS: tuple[str, ...] = (
    "config",
    "engine",
    "platform",
    "launch",
    "fixes_applied",
    "fix_decisions",
    "preflight",
    "readiness",
    "engine_log_tail",
    "imported_from",
)

_GAMMA_SHAPE = re.compile(r"gamma\(burstiness=([^)]+)\)")


def vllm_burstiness(
    mode: str | None, arrival: str | None, config: Mapping[str, Any] | None
) -> float | None:
    """``burstiness`` as ``vllm bench serve`` writes it: the gamma shape of the arrival gaps
    (1.0: Poisson, also vLLM's value where no gaps are drawn); None for evenly spaced
    arrivals, which have no shape. From the point's config, else its arrival label."""
    if mode == "open" and arrival is not None and arrival.rsplit(", ", 1)[-1] == "constant":
        return None
    configured = ((config or {}).get("load") or {}).get("burstiness")
    if isinstance(configured, (int, float)) and not isinstance(configured, bool):
        return float(configured)
    drawn = _GAMMA_SHAPE.search(arrival or "")
    try:
        return float(drawn.group(1)) if drawn else 1.0
    except ValueError:
        return 1.0
