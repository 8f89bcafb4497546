"""A :class:`~inferx_core.interop.tool_run.ToolRun` as an InferX result, judged by the
same verdict as InferX's own points.

With per-request data, InferX's own statistics (:func:`summarize`) and verdict
(:func:`assess`, plus :func:`.tool_checks.record_checks`) run on the records;
the tool's own figures are kept beside them in ``provenance.extra.tool_figures``.
Without it, the tool's figures are the result's and the verdict holds what
the counts allow. Every check that did not run is named in
``provenance.imported_from.not_judged`` with why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inferx_core._version import __version__
from inferx_core.interop.tool_checks import record_checks, summary_checks
from inferx_core.interop.tool_run import ToolRun, sha256_of
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.model import PointMetrics
from inferx_core.metrics.summarize import summarize
from inferx_core.metrics.validity import Validity, ValidityCheck, assess
from inferx_core.results.model import PointResultBase, parse_result

__all__ = ["VERDICT_CHECKS", "judge", "not_judged", "summary_validity"]

#: Every check of the verdict an imported run can get, and why it did not run when
#: the reader gave no reason of its own.
VERDICT_CHECKS: dict[str, str] = {
    "error_rate": "the file holds no request counts",
    "usage_cross_check": "the file holds no per-request token counts beside the stream",
    "chunk_coalescing": "the file holds no per-request chunk times",
    "whole_reply_at_once": "the file holds no per-request first and last chunk times",
    "achieved_rate": "not an open loop with a target rate and per-request send times",
    "dispatch_lateness": "the file holds no scheduled send times (only when requests went out)",
    "receive_lag": "no server write stamps: only a server that stamps its chunks gives them",
    "client_cpu": "the tool recorded nothing of its own CPU or event loop",
    "client_dispatch_delay": "only AIPerf's records hold when a request was handed to a "
    "worker (credit_issued_ns) beside when it was sent",
    "records_complete": "the file holds no per-request data to count",
    "concurrency_reached": "not a closed loop above 1, or no per-request start and end times",
    "output_length": "the file does not say what output length was asked for",
    "rate_reached": "not an open loop of 20 or more requests without scheduled send times",
    "first_chunk_without_token": "only a vllm bench serve file with --save-detailed shows "
    "how its TTFT was stamped",
    "tool_token_count": "the file holds no per-request token counts of the tool beside the "
    "server's usage",
}


def not_judged(run: ToolRun, validity: Validity) -> dict[str, str]:
    """The checks that did not run -> why (the reader's reason first)."""
    ran = {c.name for c in validity.checks}
    skipped = {k: v for k, v in run.skip_checks.items() if k not in ran}
    return skipped | {
        name: run.not_judged.get(name, why)
        for name, why in VERDICT_CHECKS.items()
        if name not in ran
    }


def _window(records: Sequence[RequestRecord]) -> tuple[int, int]:
    sends = [r.send_ns for r in records if r.send_ns]
    ends = [max(r.end_ns, r.chunk_ns[-1] if r.chunk_ns else 0) for r in records]
    start = min(sends) if sends else 0
    return start, max(max(ends, default=0), start + 1)


def _without_itl(flat: dict[str, Any], why: str) -> None:
    """Null every ITL figure (records with first and last chunk only have no gaps)."""
    for key in [k for k in flat if "_itl_" in k or k.endswith("_itl_ms")]:
        if not isinstance(flat[key], (dict, list)):
            flat[key] = None
            flat["null_reasons"][key] = why
    flat["itl_zero_gap_fraction"] = None


def _kept(validity: Validity, run: ToolRun) -> Validity:
    """The verdict without the checks whose input the records do not really hold."""
    if not run.skip_checks and run.no_itl is None:
        return validity
    checks = [
        c
        for c in validity.checks
        if c.name not in run.skip_checks
        and not (run.no_itl and c.name.startswith("sample_size.") and c.name.endswith("_itl_ms"))
    ]
    valid = all(c.passed or c.severity != "invalidates" for c in checks)
    return Validity(valid=valid, checks=checks)


def _measured(run: ToolRun, records: list[RequestRecord]) -> tuple[dict[str, Any], Validity]:
    start, end = _window(records)
    flat = summarize(records, window_start_ns=start, window_end_ns=end)
    if run.no_itl is not None:
        _without_itl(flat, run.no_itl)
    rate = run.request_rate if run.mode == "open" else None
    validity = assess(
        records,
        flat,
        open_loop_rate=rate,
        client_load=None,
        extra_checks=record_checks(run, records) + run.checks,
    )
    return flat, _kept(validity, run)


def _sections(flat: Mapping[str, Any]) -> dict[str, Any]:
    metrics = PointMetrics.from_flat(flat)
    return {
        "load": metrics.counts.model_dump(),
        "throughput": metrics.throughput.model_dump(),
        "latency": metrics.latency.model_dump(),
        "null_reasons": dict(metrics.null_reasons),
    }


def _status(completed: int | None, validity: Validity) -> tuple[str, str | None]:
    if completed == 0:
        return "failed", "no successful requests"
    if not validity.valid:
        return "invalid", f"invalid: {validity.summary()}"
    return "ok", None


def summary_validity(flat: Mapping[str, Any], more: Sequence[ValidityCheck] = ()) -> Validity:
    """The verdict of a file without per-request data: what its counts allow, and
    ``more`` checks its reader made from the file's own figures."""
    checks: list[ValidityCheck] = summary_checks(flat) + list(more)
    valid = all(c.passed or c.severity != "invalidates" for c in checks)
    return Validity(valid=valid, checks=checks)


def judge(run: ToolRun, summary_flat: Mapping[str, Any] | None = None) -> PointResultBase:
    """The run as a typed InferX result with its verdict.

    ``summary_flat``: for a file without per-request data, its figures as
    :func:`summarize` would name them (a full flat dict, None where unknown).
    """
    if run.records is not None:
        flat, validity = _measured(run, run.records)
    else:
        flat = dict(summary_flat or {})
        validity = summary_validity(flat, run.checks)
    sections = _sections(flat)
    unknown = sorted(
        k
        for name in ("load", "throughput")
        for k, v in sections[name].items()
        if v is None and k not in sections["null_reasons"]
    )
    why = f"not in the imported {run.tool} file"
    status, reason = _status(sections["load"].get("completed"), validity)
    result = {
        "schema_version": 2,
        "status": status,
        "failure_reason": reason,
        "identity": _identity(run),
        "workload": _workload(run),
        "load": sections["load"] | _offered(run),
        "throughput": sections["throughput"],
        "latency": sections["latency"],
        "provenance": _provenance(run, unknown, validity),
        "null_reasons": dict.fromkeys(unknown, why) | sections["null_reasons"],
        "validity": validity.model_dump(),
    }
    return parse_result(result)


def _identity(run: ToolRun) -> dict[str, Any]:
    closed = run.mode == "closed"
    return {
        "point_id": run.point_id,
        "mode": run.mode,
        "concurrency": run.concurrency if closed else None,
        "request_rate": run.request_rate if run.mode == "open" else None,
        "max_concurrency": run.concurrency,
        "date": run.date,
    }


def _workload(run: ToolRun) -> dict[str, Any]:
    spec = {
        k: v
        for k, v in (
            ("requested_output_tokens", run.requested_output_tokens),
            ("requested_input_tokens", run.requested_input_tokens),
        )
        if v is not None
    }
    return {
        "spec": spec,
        "mean_max_tokens": run.requested_output_tokens,
        "token_counting": run.token_counts,
        "notes": [f"imported from {run.tool}: {run.path.name}"],
    }


def _offered(run: ToolRun) -> dict[str, Any]:
    n = len(run.records) if run.records is not None else (run.reported_requests or 0)
    return {"num_prompts": n, "arrival": run.arrival, "stopped_by": "num_prompts"}


def _provenance(run: ToolRun, unknown: list[str], validity: Validity) -> dict[str, Any]:
    return {
        "inferx_version": __version__,
        "model_id": run.model_id,
        "extra": {"tool_figures": run.tool_figures, **run.extra}
        | {"sources": [str(p) for p in run.sources]},
        "imported_from": {
            "tool": run.tool,
            "path": str(run.path),
            "sha256": sha256_of(run.path),
            "unknown": unknown,
            "version": run.version,
            "not_judged": not_judged(run, validity),
        },
    }
