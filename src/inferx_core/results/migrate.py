"""Schema 1 -> 2: a flat result file (InferX 0.1) into the sectioned model's layout.

Schema 1 wrote every figure at the top level under vLLM/InferenceX names. The
migration moves each known key into its section; a key no section knows goes
to ``provenance.extra`` so nothing in an old file is lost. A failed point of
schema 1 that never ran carried no load level: only for those legacy files is
it recovered from the point id's ``-c8`` / ``-r2.5-cap64`` suffix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from inferx_core.metrics.model import PointMetrics
from inferx_core.results.flat import OFFERED_KEYS, PROVENANCE_KEYS, SPECULATIVE_KEYS, TARGET_KEYS
from inferx_core.telemetry.model import TelemetrySection

_HEADER_KEYS = frozenset(
    {"schema_version", "inferx_version", "point_id", "status", "failure_reason", "date"}
)
_IDENTITY_KEYS = frozenset(
    {"finished_at", "server_id", "mode", "request_rate", "max_concurrency", "concurrency"}
)
# The flat view's summary of schema-2 validity (the checks themselves are not in it),
# vLLM's burstiness, derived from the config and the arrival label.
# The speculative figures are the telemetry section's, repeated at the top.
_DERIVED_KEYS = frozenset(
    {"valid", "validity_failing", "repeats", "repeat_stats", "burstiness", *SPECULATIVE_KEYS}
)
_LEGACY_LEVEL = re.compile(r"-(?:c(?P<c>\d+)|r(?P<r>[0-9.e+]+|inf)(?:-cap(?P<cap>\d+))?)$")


def _rate(value: Any) -> float | None:
    if value in (None, "inf") or (isinstance(value, float) and value == float("inf")):
        return None
    return float(value)


def _identity(data: Mapping[str, Any]) -> dict[str, Any]:
    mode = data.get("mode")
    rate = _rate(data.get("request_rate"))
    max_conc = data.get("max_concurrency")
    if mode is None:
        match = _LEGACY_LEVEL.search(str(data["point_id"]))
        if match and match["c"]:
            mode, max_conc = "closed", int(match["c"])
        elif match and match["r"]:
            mode, rate = "open", _rate(match["r"])
            max_conc = int(match["cap"]) if match["cap"] else None
    return {
        "point_id": str(data["point_id"]),
        "server_id": data.get("server_id"),
        "mode": mode,
        "concurrency": max_conc if mode == "closed" else None,
        "request_rate": rate if mode == "open" else None,
        "max_concurrency": max_conc,
        "date": data.get("date") or "1970-01-01T00:00:00+00:00",
        "finished_at": data.get("finished_at"),
    }


def _measured_sections(data: Mapping[str, Any], used: set[str]) -> dict[str, Any]:
    metrics = PointMetrics.from_flat(data)
    flat = metrics.flat()
    used.update(flat)
    load = {
        **metrics.counts.model_dump(),
        **{k: data[k] for k in OFFERED_KEYS if k in data},
        "slo": data.get("slo") or {},
    }
    used.update(OFFERED_KEYS)
    used.add("slo")
    out = {
        "load": load,
        "latency": metrics.latency.model_dump(),
        "throughput": metrics.throughput.model_dump(),
        "null_reasons": metrics.null_reasons,
    }
    if metrics.reasoning is not None:  # reasoning models: TTFO, answer TPOT, tokens
        out["reasoning"] = metrics.reasoning.model_dump()
    return out


def migrate_v1(data: Mapping[str, Any]) -> dict[str, Any]:
    """A schema-1 result as schema-2 JSON (validate it with ``parse_result``)."""
    used: set[str] = set(_HEADER_KEYS | _IDENTITY_KEYS | _DERIVED_KEYS)
    out: dict[str, Any] = {
        "schema_version": 2,
        "status": data.get("status"),
        "failure_reason": data.get("failure_reason"),
        "identity": _identity(data),
    }
    if "completed" in data and "percentiles" in data:
        out.update(_measured_sections(data, used))
    if isinstance(data.get("workload"), dict):
        out["workload"] = data["workload"]
        used.add("workload")
    if "power_source" in data and "cpu_energy_source" in data:
        out["telemetry"] = TelemetrySection.from_flat(data).model_dump()
        used.update(TelemetrySection.flat_keys())
    provenance: dict[str, Any] = {"inferx_version": str(data.get("inferx_version") or "unknown")}
    for key in (*TARGET_KEYS, *PROVENANCE_KEYS):
        if data.get(key) is not None:
            provenance[key] = data[key]
        used.add(key)
    provenance["extra"] = {k: v for k, v in data.items() if k not in used}
    out["provenance"] = provenance
    return out
