"""One load point against a running OpenAI-compatible server: :func:`measure_point`.

Used by ``inferx bench`` (a server someone else started,
:mod:`~inferx_core.pipeline.bench.points`), by the
runner after it launched an engine, and by the capacity search's probes. What
the points of one server share is a :class:`~.server_plan.ServerPlan`; for each
load level: build the workload (exact prompt lengths, seeded), warm up, run the
measured window, summarise the records into metrics, and write one result file
plus a per-request sidecar, atomically.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.config.points import LoadPoint
from inferx_core.launch.interrupts import interrupted_by
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import LoadConfig, Ramp, ScheduleResult
from inferx_core.load.schedule.stages import Stage
from inferx_core.load.tokens.counter import CounterResolution
from inferx_core.load.transport.limits import ensure_concurrency_fits
from inferx_core.metrics.dimensions import stage_stats, turn_stats
from inferx_core.metrics.model import PointMetrics
from inferx_core.metrics.speculative import acceptance_check
from inferx_core.metrics.summarize import summarize
from inferx_core.metrics.validity import Validity, ValidityCheck, assess
from inferx_core.pipeline.point.anatomy import point_anatomy, with_anatomy
from inferx_core.pipeline.point.assemble import (
    Measured,
    PointSource,
    mask_records,
    measured_result,
    never_ran_result,
    point_status,
)
from inferx_core.pipeline.point.drive import Drive, DrivePlan
from inferx_core.pipeline.point.drive import drive as drive_point
from inferx_core.pipeline.point.requests import BenchTarget, Requests, build_requests
from inferx_core.pipeline.point.server_plan import FailureDetails, ServerPlan
from inferx_core.pipeline.point.session_requests import build_session_requests
from inferx_core.results.files import (
    requests_path,
    telemetry_path,
    utc_now,
    write_point_files,
    write_result,
)
from inferx_core.results.model import PointResultBase
from inferx_core.telemetry.model import TelemetrySection
from inferx_core.telemetry.recorder import TelemetryRecorder, series_rows
from inferx_core.telemetry.session import TelemetryPlan, telemetry_fields

__all__ = [
    "DEFAULT_PERCENTILES",
    "BenchTarget",
    "PointOutcome",
    "ServerPlan",
    "arrival_label",
    "measure_point",
]

#: The latency percentiles a point reports unless its server's plan names others.
DEFAULT_PERCENTILES = (50.0, 90.0, 99.0, 99.9)


@dataclass
class PointOutcome:
    """What one load point produced (``result`` is what was written)."""

    point_id: str
    result: PointResultBase
    records: list[RequestRecord] = field(default_factory=list)
    path: Path | None = None

    @property
    def status(self) -> str:
        return self.result.status


def _point_metrics(plan: ServerPlan, result: ScheduleResult) -> PointMetrics:
    """The point's metrics; a deployment's ``gpu_split`` (``num_prefill_gpus``/
    ``num_decode_gpus`` or ``num_gpus``) replaces ``num_gpus`` when given."""
    gpus = dict(plan.gpu_split) if plan.gpu_split else {"num_gpus": plan.num_gpus}
    flat = summarize(
        result.records,
        window_start_ns=result.window_start_ns,
        window_end_ns=max(result.window_end_ns, result.window_start_ns + 1),
        **gpus,
        slos=plan.slo.goodput_slos() if plan.slo else None,
        percentiles=list(plan.percentiles or DEFAULT_PERCENTILES),
        ignore_eos=plan.workload.ignore_eos,  # a reply short of max_tokens is failed
    )
    usage_note = plan.target.continuous_usage_note
    for key, why in flat["null_reasons"].items():
        if why == "num_gpus_unknown" and plan.num_gpus is None and plan.num_gpus_reason:
            flat["null_reasons"][key] = plan.num_gpus_reason
        elif why == "chunk_tokens_unknown" and usage_note:
            flat["null_reasons"][key] = f"chunk_tokens_unknown: {usage_note}"
    return PointMetrics.from_flat(flat)


def _point_telemetry(
    recorder: TelemetryRecorder,
    plan: TelemetryPlan | None,
    result: ScheduleResult,
    metrics: PointMetrics,
) -> TelemetrySection | None:
    if plan is None:
        return None
    counts = metrics.counts
    ins, outs = counts.total_input_tokens, counts.total_output_tokens
    fields = telemetry_fields(
        recorder,
        plan,
        start_ns=result.window_start_ns,
        end_ns=result.window_end_ns,
        output_tokens=outs,
        total_tokens=ins + outs if ins is not None and outs is not None else None,
        requests=counts.completed,
    )
    return TelemetrySection.from_flat(fields)


def _offered(
    drive: Drive, point: LoadPoint, load: LoadProfile, n_measured: int, ignore_eos: bool = False
) -> dict[str, Any]:
    result = drive.result
    stopped_by = "duration" if result.stopped_by_duration else "num_prompts"
    if drive.interrupted or drive.abort_reason:
        stopped_by = "aborted"
    return {
        "num_prompts": len(result.records),
        "num_prompts_planned": None if load.duration_s or load.stages else n_measured,
        "arrival": _arrival(point, load),
        "duration_limit_s": load.duration_s,
        "stopped_by": stopped_by,
        "in_flight_finished_after_stop": result.stopped_by_duration,
        "warmup_requests": len(result.warmup_records),
        "warmup_failed": sum(1 for r in result.warmup_records if not r.ok),
        "workers": max(len(drive.workers), 1),
        "per_worker": drive.per_worker(),
        "benchmark_start_time_unix": result.unix_s(result.window_start_ns),
        "benchmark_end_time_unix": result.unix_s(result.window_end_ns),
        "turns": turn_stats(result.records, ignore_eos),  # a short reply fails, as in load
        "stages": stage_stats(result.records, result.stage_windows, ignore_eos),
    }


def _arrival(point: LoadPoint, load: LoadProfile) -> str | None:
    if point.trace:
        return "trace"  # the workload section names the file, format, speedup and window
    return None if point.request_rate is None else arrival_label(load)


def _workload_fields(
    requests: Requests, workload: Workload, counter: CounterResolution
) -> dict[str, Any]:
    return {
        **requests.built.summary(),
        "api": workload.api,
        "range_semantics": workload.range_semantics,
        "ignore_eos": workload.ignore_eos,
        "token_counting": counter.describe(),
        "context": requests.context,
    }


def _write_point(
    output_dir: Path,
    result: PointResultBase,
    records: list[RequestRecord],
    recorder: TelemetryRecorder | None,
    origin_ns: int,
) -> Path:
    """All files or none (a full disk leaves no half point); the result renamed last."""
    point_id = result.point_id
    sidecars: list[tuple[Path, Any]] = [
        (requests_path(output_dir, point_id), (r.to_json() for r in records))
    ]
    if recorder is not None:
        # time 0 is the window start; with no window (Ctrl-C in the warmup)
        # it is when sampling began
        rows = series_rows(recorder, origin_ns or recorder.started_ns)
        sidecars.append((telemetry_path(output_dir, point_id), rows))
    return write_point_files(output_dir, result, sidecars)


def _load_config(plan: ServerPlan, point: LoadPoint, requests: Requests) -> LoadConfig:
    load, workload = plan.load, plan.workload
    # the ramp counts arrivals: a multi-turn session arrives once for its turns
    n_requests = requests.n_measured // (workload.turns if workload.kind == "multi-turn" else 1)
    rate = point.request_rate or math.inf
    if point.trace:  # arrivals are the requests' at_s; a finite rate keeps a capped loop open
        rate = requests.trace_rate or 1.0
    ramp = None
    if load.ramp is not None and load.ramp_start_rps is not None and point.request_rate:
        ramp = Ramp(load.ramp, load.ramp_start_rps, n_requests)
    return LoadConfig(
        max_concurrency=point.concurrency or point.max_concurrency,
        request_rate=rate,
        arrival=load.arrival,
        burstiness=load.burstiness,
        ramp=ramp,
        seed=workload.seed,
        duration_s=load.duration_s,
        timeout_s=load.request_timeout_s,
        first_token_timeout_s=load.first_token_timeout_s,
        token_idle_timeout_s=load.idle_timeout_s,
        max_sse_line_bytes=load.max_sse_line_bytes,
        stages=tuple(Stage(s.duration_s, s.rate, s.concurrency) for s in load.stages or ()),
    )


def _drive_plan(
    plan: ServerPlan,
    point: LoadPoint,
    point_id: str,
    requests: Requests,
    recorder: TelemetryRecorder,
    output_dir: Path | None,
) -> DrivePlan:
    """How the driver runs this point of the plan."""
    load = plan.load
    return DrivePlan(
        plan.target,
        requests,
        _load_config(plan, point, requests),
        recorder,
        label=f"{point_id} ({'closed' if point.concurrency else 'open'} loop)",
        total=None if load.duration_s or load.stages else requests.n_measured,
        abort_check=plan.abort_check,
        progress=plan.progress,
        workers=load.workers,
        output_dir=output_dir,
    )


def _with_target(
    plan: ServerPlan, source: PointSource, point_id: str, point: LoadPoint
) -> PointSource:
    return replace(
        source,
        point_id=point_id,
        point=point,
        backend=f"openai-{plan.workload.api}",
        base_url=plan.target.base_url,
        model_id=plan.target.model,
    )


def _decide(
    source: PointSource,
    measured: Measured,
    drive: Drive,
    failure_details: FailureDetails | None,
) -> PointResultBase:
    """The point's status and reason; a failure's real cause comes from ``failure_details``."""
    completed = measured.metrics.counts.completed or 0  # None: nothing was counted
    status, reason = point_status(drive.interrupted, drive.abort_reason, completed)
    if status == "interrupted" and interrupted_by():
        reason = f"interrupted by {interrupted_by()}"
    more: dict[str, Any] = {}
    if status == "failed" and failure_details is not None:
        reason, more = failure_details(reason or "")
    return measured_result(source, measured, status, reason, **more)


def _build_or_note_interrupt(
    plan: ServerPlan, point: LoadPoint, source: PointSource, output_dir: Path | None
) -> Requests:
    """The point's requests; a signal while they are built (prompts counted on the
    server can take seconds) still leaves a result saying so, with nothing measured."""
    workload = plan.workload
    try:
        build = build_session_requests if workload.kind == "multi-turn" else build_requests
        return build(plan.target, point, workload, plan.load, plan.counter)
    except KeyboardInterrupt:
        if output_dir is not None:
            why = f"interrupted by {interrupted_by() or 'the user (Ctrl-C)'} before any request"
            write_result(output_dir, never_ran_result(source, why))
        raise


def _validity(
    plan: ServerPlan,
    point: LoadPoint,
    requests: Requests,
    drive: Drive,
    metrics: PointMetrics,
    telemetry: TelemetrySection | None,
) -> Validity:
    """The point's validity checks; a speculative server's acceptance against its golden
    length is one of them (from the engine's /metrics over the window)."""
    extra: list[ValidityCheck | None] = []
    step_tokens = None
    if plan.speculative is not None:
        engine = telemetry.engine_metrics if telemetry is not None else None
        extra.append(acceptance_check(engine, plan.speculative))
        step_tokens = _mean_acceptance_length(engine)
    return assess(
        drive.result.records,
        metrics.flat(),
        open_loop_rate=requests.trace_rate if point.trace else point.request_rate,
        client_load=drive.client_load,
        limits=plan.validity_limits,
        extra_checks=extra,
        ignore_eos=plan.workload.ignore_eos,  # a reply short of max_tokens then fails
        step_tokens=step_tokens,  # a speculative step's tokens may arrive in one read
    )


def _mean_acceptance_length(engine: Mapping[str, Any] | None) -> float | None:
    """The window's mean acceptance length (already bounded: null when impossible)."""
    spec = (engine or {}).get("spec_decode")
    length = spec.get("mean_acceptance_length") if isinstance(spec, Mapping) else None
    return float(length) if isinstance(length, (int, float)) else None


def _measured(
    plan: ServerPlan,
    point: LoadPoint,
    requests: Requests,
    drive: Drive,
    recorder: TelemetryRecorder,
    started_at: str,
) -> Measured:
    """What the point measured: metrics, the load offered, the workload, telemetry, validity."""
    metrics = _point_metrics(plan, drive.result)
    telemetry = _point_telemetry(recorder, plan.telemetry, drive.result, metrics)
    return Measured(
        metrics=metrics,
        offered=_offered(drive, point, plan.load, requests.n_measured, plan.workload.ignore_eos),
        workload=_workload_fields(requests, plan.workload, plan.counter),
        slo=plan.slo.goodput_slos() if plan.slo else {},
        telemetry=telemetry,
        started_at=started_at,
        validity=_validity(plan, point, requests, drive, metrics, telemetry),
    )


def measure_point(
    plan: ServerPlan,
    point: LoadPoint,
    point_id: str,
    *,
    output_dir: Path | None = None,
    source: PointSource | None = None,
) -> PointOutcome:
    """Run one load point of ``plan`` and write its result (when ``output_dir``
    is given).

    ``source``: ids and provenance of the server. A failed point asks
    ``plan.failure_details`` for the real cause. Ctrl-C writes what was measured as
    ``interrupted`` and re-raises.
    """
    started_at = utc_now()
    ensure_concurrency_fits(point.concurrency or point.max_concurrency)
    source = _with_target(plan, source or PointSource(point_id, point), point_id, point)
    requests = _build_or_note_interrupt(plan, point, source, output_dir)
    recorder = TelemetryRecorder(plan.telemetry.samplers() if plan.telemetry else [])
    drive = drive_point(_drive_plan(plan, point, point_id, requests, recorder, output_dir))
    mask_records([*drive.result.records, *drive.result.warmup_records])
    measured = _measured(plan, point, requests, drive, recorder, started_at)
    # The TTFT taken apart with the engine's own clock (None: its replies carried none).
    # Warm-up records too (flagged, left out of the anatomy): their first tokens may sit
    # near the window's start, where the engine histogram's count is read between scrapes.
    run = drive.result
    window = (run.window_start_ns, run.window_end_ns)
    records = [*run.records, *run.warmup_records]
    eos = plan.workload.ignore_eos  # a short reply is failed in the anatomy too
    an, measured = point_anatomy(plan.target, records, measured, window, ignore_eos=eos)
    result = with_anatomy(_decide(source, measured, drive, plan.failure_details), an)
    return _finish(result, drive, output_dir, recorder if plan.telemetry is not None else None)


def _finish(
    result: PointResultBase, drive: Drive, output_dir: Path | None, rec: TelemetryRecorder | None
) -> PointOutcome:
    """Write the point (when asked); an interrupted one re-raises once it is on disk."""
    records = drive.result.records + drive.result.warmup_records
    path = None
    if output_dir is not None:
        path = _write_point(output_dir, result, records, rec, drive.result.window_start_ns)
    if drive.interrupted:
        raise KeyboardInterrupt
    return PointOutcome(result.point_id, result, records, path)


def arrival_label(load: LoadProfile) -> str:
    """The arrival process as the result says it (``poisson``, ``gamma(burstiness=0.5)``,
    ``linear ramp from 1 req/s``...)."""
    shape: str = load.arrival
    if load.arrival == "poisson" and load.burstiness != 1.0:
        shape = f"gamma(burstiness={load.burstiness:g})"
    if load.ramp is not None:
        return f"{load.ramp} ramp from {load.ramp_start_rps:g} req/s, {shape}"
    return shape
