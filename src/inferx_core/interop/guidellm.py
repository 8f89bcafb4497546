"""GuideLLM's ``benchmarks.json`` (``metadata.guidellm_version``; 0.8.1): one run per benchmark.

Each benchmark holds its strategy (``config.strategy``: ``concurrent`` with
``streams``, ``constant``/``poisson`` with ``rate``, ...) and its requests
(``requests.successful``, ``errored``, ``incomplete``), each with wall-clock
``request_start_time``/``request_end_time`` and ``info.timings``:
``first_token_iteration`` and ``last_token_iteration`` (seconds), the number of
``token_iterations`` (content chunks), and the server's token counts. A GuideLLM
file keeps no per-chunk times: a record gets its first and last chunk only, so
TTFT, E2E, TPOT and "whole reply in one read" are judged, while ITL and chunk
coalescing are not (their figures are null with that reason).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from inferx_core.interop.tool_run import ToolRun, slug
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.validity import ValidityCheck

__all__ = ["NO_CHUNK_TIMES", "guidellm_runs", "is_guidellm"]

NO_CHUNK_TIMES = "no per-request chunk times in a GuideLLM file (only its first and last token)"
_NS = 1e9


def is_guidellm(data: Any) -> bool:
    meta = data.get("metadata") if isinstance(data, dict) else None
    return (
        isinstance(meta, dict)
        and "guidellm_version" in meta
        and isinstance(data.get("benchmarks"), list)
    )


def _ns(seconds: Any) -> int | None:
    return round(float(seconds) * _NS) if isinstance(seconds, (int, float)) else None


def _chunks(timings: Mapping[str, Any]) -> list[int]:
    first = _ns(timings.get("first_token_iteration"))
    last = _ns(timings.get("last_token_iteration"))
    if first is None:
        return []
    if last is None or last <= first or (timings.get("token_iterations") or 0) <= 1:
        return [first] if last is None or last <= first else [first, last]
    return [first, last]


def _record(
    i: int, row: Mapping[str, Any], kind: str, max_tokens: int, open_loop: bool
) -> RequestRecord:
    info = row.get("info") or {}
    timings = info.get("timings") or {}
    start = _ns(row.get("request_start_time") or timings.get("request_start")) or 0
    end = _ns(row.get("request_end_time") or timings.get("request_end")) or start
    error = info.get("error") or (None if kind == "successful" else kind)
    chunks = [] if kind != "successful" else _chunks(timings)
    usage = row.get("output_tokens")
    return RequestRecord(
        request_id=i,
        prompt_tokens=int(row.get("prompt_tokens") or 0),
        max_tokens=max_tokens,
        send_ns=start,
        # open loop: when the schedule made it due (GuideLLM's targeted_start)
        scheduled_ns=_ns(timings.get("targeted_start")) if open_loop else None,
        chunk_ns=chunks,
        usage_output_tokens=usage if type(usage) is int and kind == "successful" else None,
        usage_prompt_tokens=row.get("prompt_tokens")
        if type(row.get("prompt_tokens")) is int
        else None,
        end_ns=max(end, chunks[-1] if chunks else end),
        error=str(error) if error else None,
        error_kind=None
        if kind == "successful"
        else "cancelled"
        if kind == "incomplete"
        else "stream_error",
    )


def guidellm_records(
    bench: Mapping[str, Any], max_tokens: int, open_loop: bool = False
) -> list[RequestRecord]:
    requests = bench.get("requests") or {}
    rows = [
        (row, kind)
        for kind in ("successful", "errored", "incomplete")
        for row in requests.get(kind) or []
        if isinstance(row, dict)
    ]
    rows.sort(key=lambda item: item[0].get("request_start_time") or 0)
    return [_record(i, row, kind, max_tokens, open_loop) for i, (row, kind) in enumerate(rows)]


def _requested_output(data: Mapping[str, Any]) -> float | None:
    spec = (data.get("config") or {}).get("spec") or {}
    for source in spec.get("data") or []:
        if isinstance(source, dict) and isinstance(source.get("output_tokens"), (int, float)):
            return float(source["output_tokens"])
    return None


def _reported(bench: Mapping[str, Any]) -> int | None:
    made = (bench.get("scheduler_metrics") or {}).get("requests_made") or {}
    total = made.get("total")
    return total if isinstance(total, int) else None


def _figures(bench: Mapping[str, Any]) -> dict[str, Any]:
    """GuideLLM's own figures under InferX's flat names (its inter_token_latency_ms is
    InferX's TPOT: (latency - TTFT) / (tokens - 1))."""
    metrics = bench.get("metrics") or {}

    def stat(name: str, key: str, scale: float = 1.0) -> Any:
        ok = (metrics.get(name) or {}).get("successful") or {}
        value = ok.get(key) if key in ok else (ok.get("percentiles") or {}).get(key)
        return value * scale if isinstance(value, (int, float)) else None

    totals = metrics.get("request_totals") or {}
    return {
        "duration": bench.get("duration"),
        "completed": totals.get("successful"),
        "failed": (totals.get("errored") or 0) + (totals.get("incomplete") or 0),
        "request_throughput": stat("requests_per_second", "mean"),
        "output_throughput": stat("output_tokens_per_second", "mean"),
        "median_ttft_ms": stat("time_to_first_token_ms", "median"),
        "p99_ttft_ms": stat("time_to_first_token_ms", "p99"),
        "median_tpot_ms": stat("inter_token_latency_ms", "median"),
        "median_e2el_ms": stat("request_latency", "median", 1000.0),
    }


def _shape(strategy: Mapping[str, Any]) -> dict[str, Any]:
    kind = strategy.get("type_")
    rate = strategy.get("rate")
    streams = strategy.get("streams") or strategy.get("max_concurrency")
    if kind in ("concurrent", "synchronous"):
        return {"mode": "closed", "concurrency": int(streams or 1)}
    if isinstance(rate, (int, float)) and rate > 0:
        arrival = "poisson" if kind == "poisson" else "constant"
        return {"mode": "open", "request_rate": float(rate), "arrival": arrival}
    return {"mode": None, "concurrency": int(streams) if streams else None}


def guidellm_runs(data: Mapping[str, Any], path: Path, date: str) -> Iterator[ToolRun]:
    """Every benchmark of the file as a run (a sweep has one per rate)."""
    version = (data.get("metadata") or {}).get("guidellm_version")
    asked = _requested_output(data)
    for i, bench in enumerate(data.get("benchmarks") or []):
        config = bench.get("config") or {}
        strategy = config.get("strategy") or {}
        shape = _shape(strategy)
        run = ToolRun(
            tool="GuideLLM",
            version=version,
            path=path,
            point_id=_point_id(path, i, strategy),
            date=date,
            records=guidellm_records(bench, int(asked or 0), shape["mode"] == "open"),
            requested_output_tokens=asked,
            reported_requests=_reported(bench),
            tool_figures=_figures(bench),
            model_id=((config.get("backend") or {}).get("model")),
            sources=[path],
            token_counts="the server's usage where it reported one (GuideLLM prefers it)",
            skip_checks={"chunk_coalescing": NO_CHUNK_TIMES},
            no_itl=NO_CHUNK_TIMES,
            **shape,
        )
        if config.get("sample_size"):
            run.reported_requests = None
            run.not_judged["records_complete"] = (
                f"GuideLLM kept a sample of {config['sample_size']} requests (sample_size)"
            )
        run.not_judged["chunk_coalescing"] = NO_CHUNK_TIMES
        run.checks = own_warnings(bench)
        yield run


def _point_id(path: Path, index: int, strategy: Mapping[str, Any]) -> str:
    """Folder, benchmark index and strategy: every run writes ``benchmarks.json``."""
    name = path.parent.name or "run"
    name = name if name.lower().startswith("guidellm") else f"guidellm-{name}"
    return slug(f"{name}-{index}-{strategy.get('type_', 'run')}")


def own_warnings(bench: Mapping[str, Any]) -> list[ValidityCheck]:
    """GuideLLM's own warnings about the benchmark (0.8: ``warnings``, e.g. requests
    dispatched late, data generation the bottleneck), kept in the verdict as marks: the
    tool said so itself, and a reader of its headline figures may never have seen it."""
    checks = []
    for w in bench.get("warnings") or []:
        if not isinstance(w, dict) or not w.get("code"):
            continue
        observed, threshold = w.get("observed"), w.get("threshold")
        checks.append(
            ValidityCheck(
                name=f"guidellm_warning.{w['code']}",
                value=float(observed) if isinstance(observed, (int, float)) else None,
                limit=float(threshold) if isinstance(threshold, (int, float)) else None,
                passed=False,
                severity="marks",
                why=f"GuideLLM warned: {w.get('message', '')} {w.get('note', '')}".strip(),
            )
        )
    return checks
