"""AIPerf's ``profile_export_aiperf.json`` and the ``profile_export.jsonl`` beside it.

The summary (AIPerf 0.13: ``schema_version`` "1.4", ``aiperf_version``) holds
each metric as ``{"unit", "avg", "p50", ...}`` and the run's ``input_config``
(the phase's concurrency or rate, the requested ``osl``). The JSONL holds one
record per request: ``metadata`` (``request_start_ns``, ``request_end_ns``,
``credit_issued_ns`` on the wall clock, ``benchmark_phase``) and ``metrics``
(``time_to_first_token`` and ``inter_chunk_latency`` in ms, from which every
content chunk's arrival is rebuilt; ``usage_completion_tokens`` when the server
reported usage; ``output_token_count``, AIPerf's own tokenizer's count unless
``--use-server-token-count``), and ``error`` for a failed request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from inferx_core.config.validity import ValidityLimits
from inferx_core.errors import UserFacingError
from inferx_core.interop.tool_checks import tool_token_check
from inferx_core.interop.tool_run import ToolRun, slug
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.validity import ValidityCheck

__all__ = ["JSONL_NAME", "aiperf_records", "aiperf_run", "is_aiperf"]

JSONL_NAME = "profile_export.jsonl"
_NS_PER_MS = 1e6


def is_aiperf(data: Any) -> bool:
    """The profile summary; not AIPerf's server_metrics_export.json beside it (no requests)."""
    return (
        isinstance(data, dict)
        and "aiperf_version" in data
        and "input_config" in data
        and ("request_count" in data or "error_request_count" in data)
    )


def _value(metrics: Mapping[str, Any], name: str) -> Any:
    entry = metrics.get(name)
    return entry.get("value") if isinstance(entry, dict) else None


def _chunks(start: int, metrics: Mapping[str, Any]) -> list[int]:
    ttft = _value(metrics, "time_to_first_token")
    if ttft is None:
        return []
    t = start + round(float(ttft) * _NS_PER_MS)
    chunks = [t]
    for gap in _value(metrics, "inter_chunk_latency") or []:
        t += round(float(gap) * _NS_PER_MS)
        chunks.append(t)
    return chunks


def _error(row: Mapping[str, Any]) -> tuple[str | None, Any, int | None]:
    error = row.get("error")
    if not error:
        return None, None, None
    code = error.get("code") if isinstance(error, dict) else None
    text = error.get("message") if isinstance(error, dict) else str(error)
    kind = "http_status" if isinstance(code, int) and code != 200 else "stream_error"
    return (
        f"{error.get('type') or 'error'}: {text}" if isinstance(error, dict) else text,
        kind,
        code,
    )


def _record(i: int, row: Mapping[str, Any], max_tokens: int) -> RequestRecord:
    meta, metrics = row.get("metadata") or {}, row.get("metrics") or {}
    start = int(meta["request_start_ns"])
    error, kind, code = _error(row)
    chunks = [] if error else _chunks(start, metrics)
    usage = _value(metrics, "usage_completion_tokens")
    prompt = _value(metrics, "usage_prompt_tokens")
    return RequestRecord(
        request_id=int(meta.get("session_num", i)),
        prompt_tokens=int(_value(metrics, "input_sequence_length") or 0),
        max_tokens=max_tokens,
        send_ns=start,
        chunk_ns=chunks,
        usage_output_tokens=usage if type(usage) is int else None,
        usage_prompt_tokens=prompt if type(prompt) is int else None,
        end_ns=max(int(meta.get("request_end_ns") or start), chunks[-1] if chunks else 0),
        error=error,
        error_kind=kind,
        status_code=code,
        warmup=meta.get("benchmark_phase") == "warmup",
    )


def _rows(path: Path) -> Iterator[Mapping[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError as exc:
                raise UserFacingError(f"{path}:{n}: not a JSON line: {exc}") from None


def aiperf_records(path: Path, max_tokens: int = 0) -> list[RequestRecord]:
    """Every request of an AIPerf ``profile_export.jsonl`` as a record."""
    records = []
    for i, row in enumerate(_rows(path)):
        try:
            records.append(_record(i, row, max_tokens))
        except (KeyError, TypeError, ValueError) as exc:
            what = f"the field {exc} is missing" if isinstance(exc, KeyError) else str(exc)
            raise UserFacingError(
                f"{path}: request {i + 1}: {what} (edited or truncated?)"
            ) from None
    return records


def _phase(data: Mapping[str, Any]) -> Mapping[str, Any]:
    phases = (data.get("input_config") or {}).get("phases") or []
    profiling = [p for p in phases if isinstance(p, dict) and p.get("kind") == "profiling"]
    return profiling[0] if profiling else {}


def _requested_osl(data: Mapping[str, Any]) -> float | None:
    for dataset in (data.get("input_config") or {}).get("datasets") or []:
        osl = ((dataset or {}).get("prompts") or {}).get("osl") or {}
        if isinstance(osl.get("mean"), (int, float)):
            return float(osl["mean"])
    return None


def _avg(data: Mapping[str, Any], name: str) -> Any:
    entry = data.get(name)
    return entry.get("avg") if isinstance(entry, dict) else None


def _figures(data: Mapping[str, Any]) -> dict[str, Any]:
    """AIPerf's own figures under InferX's flat names (its ITL is InferX's TPOT; its
    inter-chunk latency is InferX's ITL)."""
    names = {
        "ttft": "time_to_first_token",
        "tpot": "inter_token_latency",
        "itl": "inter_chunk_latency",
        "e2el": "request_latency",
    }
    out: dict[str, Any] = {
        "duration": _avg(data, "benchmark_duration"),
        "completed": _avg(data, "request_count"),
        "failed": _avg(data, "error_request_count") or 0,
        "total_output_tokens": _avg(data, "total_output_tokens"),
        "request_throughput": _avg(data, "request_throughput"),
        "output_throughput": _avg(data, "output_token_throughput"),
        "total_token_throughput": _avg(data, "total_token_throughput"),
    }
    for mine, theirs in names.items():
        stats = data.get(theirs) or {}
        for stat, key in (("mean", "avg"), ("median", "p50"), ("p99", "p99")):
            if isinstance(stats, dict) and stats.get(key) is not None:
                out[f"{stat}_{mine}_ms"] = stats[key]
    return out


def _tool_counts(path: Path) -> list[tuple[int, int]]:
    """(AIPerf's output_token_count, the server's usage) of every request with both."""
    pairs = []
    for row in _rows(path):
        metrics = row.get("metrics") or {}
        mine = _value(metrics, "output_token_count")
        usage = _value(metrics, "usage_completion_tokens")
        if type(mine) is int and type(usage) is int:
            pairs.append((mine, usage))
    return pairs


def aiperf_run(data: Mapping[str, Any], path: Path, date: str) -> ToolRun:
    """One AIPerf run (one profiling phase): its summary and, beside it, its records."""
    phase = _phase(data)
    rate, conc = phase.get("rate"), phase.get("concurrency")
    asked = _requested_osl(data)
    figures = _figures(data)
    jsonl = path.parent / JSONL_NAME
    completed, failed = figures["completed"], figures["failed"]
    run = ToolRun(
        tool="AIPerf",
        version=data.get("aiperf_version"),
        path=path,
        point_id=_point_id(path),
        date=str(data.get("start_time") or date),
        mode="open" if rate else "closed" if conc else None,
        concurrency=int(conc) if conc else None,
        request_rate=float(rate) if rate else None,
        arrival=phase.get("type") if rate else None,
        requested_output_tokens=asked,
        reported_requests=int(completed + failed) if completed is not None else None,
        tool_figures=figures,
        model_id=_model(data),
        sources=[path],
        token_counts="the server's usage (usage_completion_tokens); AIPerf's own "
        "output_token_count is its tokenizer's unless --use-server-token-count",
    )
    if not jsonl.is_file():
        run.not_judged = dict.fromkeys(_PER_REQUEST, f"no {JSONL_NAME} beside {path.name}")
        return run
    run.records = aiperf_records(jsonl, int(asked or 0))
    run.sources.append(jsonl)
    checks = (
        tool_token_check("AIPerf", "output_token_count", _tool_counts(jsonl)),
        credit_delay_check(jsonl),
    )
    run.checks = [c for c in checks if c is not None]
    run.not_judged["dispatch_lateness"] = (
        "AIPerf records when a credit was issued (credit_issued_ns), not when the schedule "
        "made the request due"
    )
    return run


_PER_REQUEST = (
    "usage_cross_check",
    "chunk_coalescing",
    "whole_reply_at_once",
    "records_complete",
    "concurrency_reached",
    "output_length",
)


def _model(data: Mapping[str, Any]) -> str | None:
    items = ((data.get("input_config") or {}).get("models") or {}).get("items") or []
    return items[0].get("name") if items and isinstance(items[0], dict) else None


def _point_id(path: Path) -> str:
    """The run's folder (AIPerf's --artifact-dir) names it; every run's file has one name."""
    name = path.parent.name or "run"
    return slug(name if name.lower().startswith("aiperf") else f"aiperf-{name}")


def credit_delay_check(path: Path) -> ValidityCheck | None:
    """AIPerf's own delay from handing a request to a worker (``credit_issued_ns``) to
    sending it (``request_start_ns``): the client's dispatch lateness. In a closed loop
    every such millisecond is one the server ran below the named concurrency; under a
    busy CPU it is AIPerf's workers falling behind (the starved client)."""
    delays = [
        (meta["request_start_ns"] - meta["credit_issued_ns"]) / 1e6
        for row in _rows(path)
        if isinstance(meta := row.get("metadata") or {}, dict)
        and isinstance(meta.get("credit_issued_ns"), int)
        and isinstance(meta.get("request_start_ns"), int)
        and meta.get("benchmark_phase") != "warmup"
    ]
    if not delays:
        return None
    p50, p99 = (float(v) for v in np.percentile(delays, [50, 99]))  # as InferX's lateness
    limit = ValidityLimits().max_dispatch_lateness_p99_ms
    why = (
        f"AIPerf sent its requests {p50:.1f} ms (p99 {p99:.1f} ms) after handing them to a "
        f"worker (credit_issued_ns to request_start_ns, {len(delays)} requests)"
    )
    if p99 > limit:
        why += ": its workers fell behind, so the server ran below the load the run names"
    return ValidityCheck(
        name="client_dispatch_delay", value=p99, limit=limit, passed=p99 <= limit, why=why
    )
