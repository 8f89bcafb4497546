"""Benchmark load points against a running OpenAI-compatible server.

Used by ``inferx bench`` (a server someone else started) and by the runner
after it launched an engine. For each load level: build the workload (exact
prompt lengths, seeded), warm up, run the measured window, summarise the
records into metrics, and write one result file plus a per-request sidecar,
atomically. The Python API is :func:`run_bench`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferx_core.config.models import SLO, BenchConfig, LoadProfile, Workload
from inferx_core.config.points import LoadPoint, load_points, point_id_for
from inferx_core.config.validity import ValidityLimits
from inferx_core.launch.interrupts import (
    interrupted_by,
)
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import LoadConfig, Ramp, ScheduleResult
from inferx_core.load.schedule.stages import Stage
from inferx_core.load.tokens.counter import CounterResolution
from inferx_core.load.transport.limits import ensure_concurrency_fits
from inferx_core.metrics.dimensions import stage_stats, turn_stats
from inferx_core.metrics.model import PointMetrics
from inferx_core.metrics.summarize import summarize
from inferx_core.metrics.validity import assess
from inferx_core.pipeline.assemble import (
    Measured,
    PointSource,
    mask_records,
    measured_result,
    never_ran_result,
    point_status,
)
from inferx_core.pipeline.bench_setup import bench_target, bench_tools
from inferx_core.pipeline.drive import AbortCheck, Drive
from inferx_core.pipeline.drive import drive as drive_point
from inferx_core.pipeline.output_lock import holding_output
from inferx_core.pipeline.repeats import run_repeated
from inferx_core.pipeline.requests import (
    BenchTarget,
    Requests,
    build_requests,
)
from inferx_core.pipeline.session_requests import build_session_requests
from inferx_core.results.files import (
    is_complete,
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

#: Called when a point failed: (its reason) -> (the real reason, provenance fields to add).
FailureDetails = Callable[[str], "tuple[str, dict[str, Any]]"]


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


def _point_metrics(
    result: ScheduleResult,
    *,
    num_gpus: int | None,
    num_gpus_reason: str | None,
    slo: SLO,
    percentiles: list[float] | None,
    usage_note: str | None = None,
    gpu_split: Mapping[str, int] | None = None,
) -> PointMetrics:
    """``gpu_split`` (a deployment's ``num_prefill_gpus``/``num_decode_gpus`` or ``num_gpus``)
    replaces ``num_gpus`` when given."""
    gpus = dict(gpu_split) if gpu_split else {"num_gpus": num_gpus}
    flat = summarize(
        result.records,
        window_start_ns=result.window_start_ns,
        window_end_ns=max(result.window_end_ns, result.window_start_ns + 1),
        **gpus,
        slos=slo.as_dict() or None,
        percentiles=percentiles or [50.0, 90.0, 99.0, 99.9],
    )
    for key, why in flat["null_reasons"].items():
        if why == "num_gpus_unknown" and num_gpus is None and num_gpus_reason:
            flat["null_reasons"][key] = num_gpus_reason
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
    fields = telemetry_fields(
        recorder,
        plan,
        start_ns=result.window_start_ns,
        end_ns=result.window_end_ns,
        output_tokens=counts.total_output_tokens,
        total_tokens=counts.total_input_tokens + counts.total_output_tokens,
        requests=counts.completed,
    )
    return TelemetrySection.from_flat(fields)


def _offered(drive: Drive, point: LoadPoint, load: LoadProfile, n_measured: int) -> dict[str, Any]:
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
        "turns": turn_stats(result.records),
        "stages": stage_stats(result.records, result.stage_windows),
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


def _load_config(
    point: LoadPoint, load: LoadProfile, workload: Workload, requests: Requests
) -> LoadConfig:
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


def _with_target(
    source: PointSource, point_id: str, point: LoadPoint, target: BenchTarget, workload: Workload
) -> PointSource:
    return replace(
        source,
        point_id=point_id,
        point=point,
        backend=f"openai-{workload.api}",
        base_url=target.base_url,
        model_id=target.model,
    )


def _decide(
    source: PointSource,
    measured: Measured,
    drive: Drive,
    failure_details: FailureDetails | None,
) -> PointResultBase:
    """The point's status and reason; a failure's real cause comes from ``failure_details``."""
    completed = measured.metrics.counts.completed
    status, reason = point_status(drive.interrupted, drive.abort_reason, completed)
    if status == "interrupted" and interrupted_by():
        reason = f"interrupted by {interrupted_by()}"
    more: dict[str, Any] = {}
    if status == "failed" and failure_details is not None:
        reason, more = failure_details(reason or "")
    return measured_result(source, measured, status, reason, **more)


def _build_or_note_interrupt(
    target: BenchTarget,
    point: LoadPoint,
    workload: Workload,
    load: LoadProfile,
    counter: CounterResolution,
    source: PointSource,
    output_dir: Path | None,
) -> Requests:
    """The point's requests; a signal while they are built (prompts counted on the
    server can take seconds) still leaves a result saying so, with nothing measured."""
    try:
        build = build_session_requests if workload.kind == "multi-turn" else build_requests
        return build(target, point, workload, load, counter)
    except KeyboardInterrupt:
        if output_dir is not None:
            why = f"interrupted by {interrupted_by() or 'the user (Ctrl-C)'} before any request"
            write_result(output_dir, never_ran_result(source, why))
        raise


def run_point(
    target: BenchTarget,
    point: LoadPoint,
    *,
    workload: Workload,
    load: LoadProfile,
    slo: SLO,
    counter: CounterResolution,
    point_id: str,
    num_gpus: int | None = None,
    percentiles: list[float] | None = None,
    output_dir: Path | None = None,
    source: PointSource | None = None,
    abort_check: AbortCheck | None = None,
    failure_details: FailureDetails | None = None,
    progress: bool | None = None,
    num_gpus_reason: str | None = None,
    telemetry: TelemetryPlan | None = None,
    validity_limits: ValidityLimits | None = None,
    gpu_split: Mapping[str, int] | None = None,
) -> PointOutcome:
    """Run one load point and write its result (when ``output_dir`` is given).

    ``source``: ids and provenance of the server; ``failure_details``: asked when
    the point failed, names the real cause (e.g. the engine died). Ctrl-C writes
    what was measured as ``interrupted`` and re-raises.
    """
    started_at = utc_now()
    ensure_concurrency_fits(point.concurrency or point.max_concurrency)
    source = _with_target(source or PointSource(point_id, point), point_id, point, target, workload)
    requests = _build_or_note_interrupt(target, point, workload, load, counter, source, output_dir)
    config = _load_config(point, load, workload, requests)
    recorder = TelemetryRecorder(telemetry.samplers() if telemetry else [])
    label = f"{point_id} ({'closed' if point.concurrency else 'open'} loop)"
    total = None if load.duration_s or load.stages else requests.n_measured
    drive = drive_point(
        target, requests, config, label=label, total=total, recorder=recorder,
        abort_check=abort_check, progress=progress, workers=load.workers, output_dir=output_dir,
    )  # fmt: skip
    mask_records([*drive.result.records, *drive.result.warmup_records])
    metrics = _point_metrics(
        drive.result, num_gpus=num_gpus, num_gpus_reason=num_gpus_reason, slo=slo,
        percentiles=percentiles, usage_note=target.continuous_usage_note, gpu_split=gpu_split,
    )  # fmt: skip
    measured = Measured(
        metrics=metrics,
        offered=_offered(drive, point, load, requests.n_measured),
        workload=_workload_fields(requests, workload, counter),
        slo=slo.as_dict(),
        telemetry=_point_telemetry(recorder, telemetry, drive.result, metrics),
        started_at=started_at,
        validity=assess(
            drive.result.records, metrics.flat(),
            open_loop_rate=requests.trace_rate if point.trace else point.request_rate,
            client_load=drive.client_load, limits=validity_limits,
        ),
    )  # fmt: skip
    result = _decide(source, measured, drive, failure_details)
    return _finish(result, drive, output_dir, recorder if telemetry is not None else None)


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


@holding_output(lambda config, **_: config.output_dir)  # OutputFolderBusy: another run there
def run_bench(
    config: BenchConfig,
    *,
    on_point: Callable[[PointOutcome], None] | None = None,
    progress: bool | None = None,
    resume: bool = False,
    on_skip: Callable[[str], None] | None = None,
) -> list[PointOutcome]:
    """The Python API: benchmark every load point of ``config``; returns their outcomes.

    Results are also written to ``config.output_dir`` (unless None), one JSON per point and
    a ``.requests.jsonl``; ``resume`` skips points complete there (``on_skip`` gets their ids).
    """
    target, prefix = bench_target(config)
    points = _points_to_run(config, prefix, resume, on_skip)
    if not points:
        return []
    outcomes: list[PointOutcome] = []
    with bench_tools(config, target) as (counter, telemetry):
        run = (config, target, counter, prefix, telemetry, points, outcomes, on_point, progress)
        _run_points(*run)
    return outcomes


def _points_to_run(
    config: BenchConfig, prefix: str, resume: bool, on_skip: Callable[[str], None] | None
) -> list[LoadPoint]:
    """The config's load points, less those ``resume`` finds complete in the output folder."""
    points = load_points(config.load, config.workload)
    if not resume or config.output_dir is None:
        return points
    todo = []
    for point in points:
        pid = point_id_for(prefix, config.workload, point)
        if is_complete(config.output_dir, pid):
            if on_skip is not None:
                on_skip(pid)
        else:
            todo.append(point)
    return todo


def _run_points(
    config: BenchConfig,
    target: BenchTarget,
    counter: CounterResolution,
    prefix: str,
    telemetry: TelemetryPlan | None,
    points: list[LoadPoint],
    outcomes: list[PointOutcome],
    on_point: Callable[[PointOutcome], None] | None,
    progress: bool | None,
) -> None:
    def run_one(point: LoadPoint, output_dir: Path | None) -> PointOutcome:
        outcome = run_point(
            target,
            point,
            workload=config.workload,
            load=config.load,
            slo=config.slo,
            counter=counter,
            point_id=point_id_for(prefix, config.workload, point),
            num_gpus=config.num_gpus,
            percentiles=config.percentiles,
            output_dir=output_dir,
            source=PointSource("", point, context={"config": config.model_dump(mode="json")}),
            progress=progress,
            telemetry=telemetry,
            validity_limits=config.validity,
        )
        if config.load.repeats == 1:
            outcomes.append(outcome)  # kept as it finishes: Ctrl-C keeps the earlier points
        return outcome

    combined = run_repeated(points, config.load.repeats, run_one, config.output_dir, on_point)
    if config.load.repeats > 1:
        outcomes.extend(combined)


def arrival_label(load: LoadProfile) -> str:
    """The arrival process as the result says it (``poisson``, ``gamma(burstiness=0.5)``,
    ``linear ramp from 1 req/s``...)."""
    shape = load.arrival
    if load.arrival == "poisson" and load.burstiness != 1.0:
        shape = f"gamma(burstiness={load.burstiness:g})"
    if load.ramp is not None:
        return f"{load.ramp} ramp from {load.ramp_start_rps:g} req/s, {shape}"
    return shape
