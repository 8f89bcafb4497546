"""inference-perf's lifecycle report (``summary_lifecycle_metrics.json``,
``stage_N_lifecycle_metrics.json``) as a run.

The report holds statistics only (seconds; ``mean``, ``min``, ``p10``,
``median``, ``p90``, ``max``), the load stage's requested and achieved rate and
its schedule delay, success and failure counts. So the verdict gets the error
rate, the achieved rate, sample sizes and the summary form of chunk coalescing
(a median ITL far below the median TPOT); everything per request cannot run.
inference-perf needs Python 3.12: the committed fixture is from its own repository.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inferx_core.interop.summary_flat import distribution_keys, summary_flat
from inferx_core.interop.tool_checks import summary_itl_check, summary_rate_check
from inferx_core.interop.tool_run import ToolRun, slug

__all__ = ["inference_perf_run", "is_inference_perf"]

_METRICS = {
    "ttft": "time_to_first_token",
    "tpot": "time_per_output_token",
    "itl": "inter_token_latency",
    "e2el": "request_latency",
}
_STATS = {"mean": "mean", "median": "median", "p10": "p10", "p90": "p90"}
_PERCENTILES = (10.0, 90.0)
_WHY = "an inference-perf lifecycle report holds statistics only, no requests"


def is_inference_perf(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("successes"), dict)
        and "failures" in data
        and ("load_summary" in data or "latency" in data["successes"])
    )


def _figures(data: Mapping[str, Any]) -> dict[str, Any]:
    ok, failed = data["successes"], data.get("failures") or {}
    latency = ok.get("latency") or {}
    tput = ok.get("throughput") or {}
    load = data.get("load_summary") or {}
    figures: dict[str, Any] = {
        "completed": ok.get("count"),
        "failed": failed.get("count"),
        "duration": load.get("send_duration"),
        "request_throughput": tput.get("requests_per_sec"),
        "output_throughput": tput.get("output_tokens_per_sec"),
        "total_token_throughput": tput.get("total_tokens_per_sec"),
    }
    if isinstance(figures["completed"], int) and isinstance(figures["failed"], int):
        figures["total_requests"] = figures["completed"] + figures["failed"]
        figures["no_successful_requests"] = figures["completed"] == 0
    for mine, theirs in _METRICS.items():
        figures |= distribution_keys(mine, latency.get(theirs), scale=1000.0, names=_STATS)
    return figures


def inference_perf_run(
    data: Mapping[str, Any], path: Path, date: str
) -> tuple[ToolRun, dict[str, Any]]:
    """The report as one run (one stage, or the whole run's summary) and its flat figures."""
    figures = _figures(data)
    load = data.get("load_summary") or {}
    target = load.get("requested_rate")
    flat = summary_flat(figures, _PERCENTILES)
    checks = [
        summary_rate_check(load.get("achieved_rate"), target),
        summary_itl_check(flat.get("median_itl_ms"), flat.get("median_tpot_ms")),
    ]
    run = ToolRun(
        tool="inference-perf",
        version=None,
        path=path,
        point_id=_point_id(path),
        date=date,
        mode="open" if target else None,
        request_rate=float(target) if target else None,
        requested_output_tokens=None,
        reported_requests=figures.get("total_requests"),
        tool_figures=dict(data),
        sources=[path],
        checks=[c for c in checks if c is not None],
        token_counts="inference-perf's tokenizer (or the server's usage with "
        "use_server_output_tokens)",
    )
    run.not_judged = {
        "usage_cross_check": f"{_WHY}: no token counts beside the stream",
        "whole_reply_at_once": f"{_WHY}: no first and last chunk time per request",
        "dispatch_lateness": f"{_WHY}: its schedule_delay stops at p90, not the p99 judged",
        "output_length": f"{_WHY}: the report does not say what output length was asked",
        "records_complete": f"{_WHY}: nothing to count",
        "concurrency_reached": f"{_WHY}: no request start and end times",
    }
    return run, flat


def _point_id(path: Path) -> str:
    """Its folder and stage name it (every run writes the same file names)."""
    name = f"{path.parent.name}-{path.stem}".strip("-")
    return slug(name if name.startswith("inference-perf") else f"inference-perf-{name}")
