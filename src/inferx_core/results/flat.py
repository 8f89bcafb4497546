"""Field names of the flat view: vLLM ``bench serve`` and InferenceX names, one level deep.

The flat view (:meth:`inferx_core.results.model.PointResultBase.flat`) is the
layout InferX wrote as schema 1, so ``migrate_v1(result.flat())`` gives the
result back (a tested round trip). Exports to the field's own pipelines and
lookups of a figure by name (Pareto axes, ``--metric``) use it.
"""

from __future__ import annotations

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
