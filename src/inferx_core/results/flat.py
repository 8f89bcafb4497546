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


#: Flat names of the speculative-decoding window (``telemetry.engine_metrics.spec_decode``):
#: flat name -> its key in the window. InferX's units (the rate a fraction), not vLLM's.
SPECULATIVE_KEYS: dict[str, str] = {
    "spec_acceptance_rate": "acceptance_rate",
    "spec_mean_acceptance_length": "mean_acceptance_length",
    "spec_acceptance_per_position": "acceptance_per_position",
    "spec_drafts": "drafts",
    "spec_draft_tokens": "draft_tokens",
    "spec_accepted_tokens": "accepted_tokens",
}


def speculative_flat(engine_metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The speculative figures of a point at the top of the flat view (the report's columns,
    ``--metric`` lookups); {} when the engine reported no speculative decoding. Derived
    from the telemetry section, so the two can never disagree."""
    window = engine_metrics.get("spec_decode")
    if not isinstance(window, Mapping):
        return {}
    return {flat: window.get(key) for flat, key in SPECULATIVE_KEYS.items()}
