"""inference-perf's lifecycle reports (``summary_lifecycle_metrics.json``,
``stage_N_lifecycle_metrics.json``, ``per_request_lifecycle_metrics.json``) as runs.

A summary or stage report holds statistics only (seconds; ``mean``, ``min``,
``p10``, ``median``, ``p90``, ``max``), the load stage's requested and achieved
rate and its schedule delay, success and failure counts. Alone, its verdict gets
the error rate, the achieved rate, sample sizes and the summary form of chunk
coalescing (a median ITL far below the median TPOT). The run's summary with its
per-request report beside it (``per_request: true``) is one run whose requests
are records (:mod:`.inference_perf_requests`): InferX's own statistics and
checks run on them, and the summary's count tells whether requests were removed.
A per-request report alone is a run of its records.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.interop.inference_perf_requests import (
    PER_REQUEST_NAME,
    SUMMARY_NAME,
    inference_perf_records,
    requested_output,
    server_counted,
    tool_counts,
)
from inferx_core.interop.summary_flat import distribution_keys, summary_flat
from inferx_core.interop.tool_checks import summary_itl_check, summary_rate_check, tool_token_check
from inferx_core.interop.tool_run import ToolRun, slug
from inferx_core.results.read import read_json

__all__ = ["inference_perf_requests_run", "inference_perf_run", "is_inference_perf"]

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
    """The report as one run (one stage, or the whole run's summary) and its flat figures;
    a summary with the per-request report beside it gets its records."""
    figures = _figures(data)
    load = data.get("load_summary") or {}
    target = load.get("requested_rate") or (_stage_rate(path) if _is_summary(path) else None)
    flat = summary_flat(figures, _PERCENTILES)
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
        token_counts=_TOKENS,
    )
    beside = path.parent / PER_REQUEST_NAME
    if _is_summary(path) and beside.is_file():
        _with_records(run, _read_beside(beside), beside)
        return run, flat
    checks = [
        summary_rate_check(load.get("achieved_rate"), target),
        summary_itl_check(flat.get("median_itl_ms"), flat.get("median_tpot_ms")),
    ]
    run.checks = [c for c in checks if c is not None]
    run.not_judged = {
        "usage_cross_check": f"{_WHY}: no token counts beside the stream",
        "whole_reply_at_once": f"{_WHY}: no first and last chunk time per request",
        "dispatch_lateness": f"{_WHY}: its schedule_delay stops at p90, not the p99 judged",
        "output_length": f"{_WHY}: the report does not say what output length was asked",
        "records_complete": f"{_WHY}: nothing to count (per_request: true writes "
        f"{PER_REQUEST_NAME})",
        "concurrency_reached": f"{_WHY}: no request start and end times",
    }
    return run, flat


def inference_perf_requests_run(data: list[Any], path: Path, date: str) -> ToolRun:
    """A per-request report without its summary: a run of its records (the load it was
    asked for is in the summary and stage reports, not here)."""
    run = ToolRun(
        tool="inference-perf",
        version=None,
        path=path,
        point_id=_point_id(path),
        date=date,
        sources=[],
        token_counts=_TOKENS,
    )
    _with_records(run, data, path)
    why = f"no {SUMMARY_NAME} beside {path.name}"
    run.not_judged["records_complete"] = f"{why}: no count of the requests sent to hold it to"
    return run


_TOKENS = (
    "the server's usage (server_usage.completion_tokens) where it reported one; "
    "inference-perf's own output_tokens is its tokenizer's"
)
#: What the per-request report never holds.
_NO_SCHEDULE = (
    "inference-perf's per-request report leaves out each request's scheduled_time "
    "(its summary's schedule_delay stops at p90)"
)


def _with_records(run: ToolRun, data: Any, source: Path) -> None:
    """The per-request report's entries as the run's records, with the checks they allow."""
    if not isinstance(data, list):
        raise ValueError(f"{source}: not inference-perf's per-request report (a list)")
    run.records = inference_perf_records(data, source)
    if source not in run.sources:
        run.sources.append(source)
    run.requested_output_tokens = requested_output(data)
    run.checks = []
    if server_counted(source.parent):
        run.token_counts = "the server's usage (use_server_output_tokens: true)"
        run.not_judged["tool_token_count"] = (
            "inference-perf's figures count the server's usage (use_server_output_tokens: "
            "true in its config.yaml), not its own tokenizer's output_tokens"
        )
    elif check := tool_token_check("inference-perf", "output_tokens", tool_counts(data)):
        run.checks.append(check)
    run.not_judged["dispatch_lateness"] = _NO_SCHEDULE
    if run.requested_output_tokens is None:
        run.not_judged["output_length"] = (
            "the per-request report kept no request bodies (per_request_fields.request: "
            "false), so the max_tokens asked for is unknown"
        )


def _read_beside(path: Path) -> Any:
    """The per-request report beside a summary; unreadable: a user error naming it."""
    try:
        return read_json(path)
    except (OSError, ValueError) as exc:
        why = f"cannot read inference-perf's per-request report: {exc}"
        raise UserFacingError(f"{path}: {why}") from None


def _is_summary(path: Path) -> bool:
    return path.name == SUMMARY_NAME


def _stage_rate(path: Path) -> float | None:
    """The one rate every stage report beside the summary asked for (None: several, none)."""
    rates = set()
    for stage in path.parent.glob("stage_*_lifecycle_metrics.json"):
        try:
            load = read_json(stage).get("load_summary") or {}
        except (OSError, ValueError, AttributeError):
            return None
        rates.add(load.get("requested_rate"))
    (rate,) = rates if len(rates) == 1 else (None,)
    return float(rate) if isinstance(rate, (int, float)) and rate > 0 else None


def _point_id(path: Path) -> str:
    """Its folder and stage name it (every run writes the same file names)."""
    name = f"{path.parent.name}-{path.stem}".strip("-")
    return slug(name if name.startswith("inference-perf") else f"inference-perf-{name}")
