"""Benchmark load points against a running OpenAI-compatible server.

Used by ``inferx bench`` (a server someone else started) and by the runner
after it launched an engine. For each load level: build the workload (exact
prompt lengths, seeded), warm up, run the measured window, summarise the
records into metrics, and write one result file plus a per-request sidecar,
atomically. The Python API is :func:`run_bench`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferx_core.config.models import SLO, BenchConfig, LoadProfile, Workload
from inferx_core.config.points import LoadPoint, load_points, point_id_for, slug
from inferx_core.load.client import ConnectionPool, build_chat_payload, build_completions_payload
from inferx_core.load.lengths import LengthSpec
from inferx_core.load.progress import LoadProgress
from inferx_core.load.records import RequestRecord
from inferx_core.load.scheduler import LoadConfig, LoadScheduler, PreparedRequest, ScheduleResult
from inferx_core.load.token_counter import CounterResolution, resolve_token_counter
from inferx_core.load.workload import Workload as BuiltWorkload
from inferx_core.load.workload import WorkloadSpec, build_workload
from inferx_core.metrics.summarize import summarize
from inferx_core.results.files import (
    requests_path,
    result_header,
    result_path,
    telemetry_path,
    utc_now,
    write_json_atomic,
    write_jsonl_atomic,
)
from inferx_core.sdk.redact import redact
from inferx_core.telemetry.recorder import TelemetryRecorder, series_rows
from inferx_core.telemetry.session import TelemetryPlan, telemetry_fields

API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
ABORT_POLL_S = 0.25

#: Called while a point runs; returns a reason to abort (e.g. "engine exited"), else None.
AbortCheck = Callable[[], "str | None"]


@dataclass
class PointOutcome:
    """What one load point produced (the result dict is what was written)."""

    point_id: str
    result: dict[str, Any]
    records: list[RequestRecord] = field(default_factory=list)
    path: Path | None = None

    @property
    def status(self) -> str:
        return str(self.result.get("status"))


def prompts_for(point: LoadPoint, load: LoadProfile) -> int:
    """Measured prompts: the configured number, else InferenceX's 10 x concurrency.

    Open loop without a number: ``prompts_per_concurrency`` seconds of arrivals
    at the rate (at least 20).
    """
    if load.num_prompts is not None:
        return load.num_prompts
    if point.concurrency is not None:
        return load.prompts_per_concurrency * point.concurrency
    assert point.request_rate is not None
    return max(20, math.ceil(point.request_rate * load.prompts_per_concurrency))


def warmup_for(point: LoadPoint, load: LoadProfile) -> int:
    """Warmup requests: configured, else one per concurrent slot (capped at 16 open loop)."""
    if load.warmup is not None:
        return load.warmup
    if point.concurrency is not None:
        return point.concurrency
    return min(16, point.max_concurrency or math.ceil(point.request_rate or 1))


def workload_spec(workload: Workload) -> WorkloadSpec:
    mix = workload.lognormal
    return WorkloadSpec(
        kind=workload.kind,
        isl=workload.isl,
        osl=workload.osl,
        range_ratio=workload.range_ratio,
        semantics=workload.range_semantics,
        input_lognormal=LengthSpec(
            kind="lognormal",
            length=int(mix.input_median),
            sigma=mix.input_sigma,
            min_length=mix.input_min,
            max_length=mix.input_max,
        ),
        output_lognormal=LengthSpec(
            kind="lognormal",
            length=int(mix.output_median),
            sigma=mix.output_sigma,
            min_length=mix.output_min,
            max_length=mix.output_max,
        ),
        dataset_path=str(workload.dataset) if workload.dataset else None,
        api=workload.api,
    )


@dataclass
class BenchTarget:
    """The server under test, as the load generator sees it."""

    base_url: str
    model: str
    headers: dict[str, str] = field(default_factory=dict)


def discover_model(base_url: str, headers: dict[str, str] | None = None) -> str:
    """The first model the server lists at /v1/models (control plane: httpx)."""
    import httpx

    from inferx_core.errors import UserFacingError

    url = base_url.rstrip("/") + "/v1/models"
    try:
        reply = httpx.get(url, headers=headers, timeout=10.0)
        reply.raise_for_status()
        models = [m["id"] for m in reply.json().get("data", [])]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise UserFacingError(f"cannot list models at {url}: {exc}; pass --model NAME") from exc
    if not models:
        raise UserFacingError(f"{url} lists no model; pass --model NAME")
    return models[0]


def _prepare(
    prompts: BuiltWorkload,
    target: BenchTarget,
    workload: Workload,
    *,
    warmup: bool,
    first_id: int,
) -> list[PreparedRequest]:
    path = API_PATHS[workload.api]
    requests = []
    for i, prompt in enumerate(prompts):
        if workload.api == "chat":
            payload = build_chat_payload(
                target.model, prompt.prompt, prompt.max_tokens, ignore_eos=workload.ignore_eos
            )
        else:
            payload = build_completions_payload(
                target.model, prompt.prompt, prompt.max_tokens, ignore_eos=workload.ignore_eos
            )
        record = RequestRecord(
            request_id=first_id + i,
            prompt_tokens=prompt.prompt_tokens,
            max_tokens=prompt.max_tokens,
            warmup=warmup,
        )
        requests.append(PreparedRequest(path, payload, record))
    return requests


def _cycle(requests: list[PreparedRequest], first_id: int) -> Iterator[PreparedRequest]:
    """Endless requests for duration-bound runs: the prompt pool, reused with fresh records."""
    for n, prepared in enumerate(itertools.cycle(requests)):
        record = replace(prepared.record, request_id=first_id + n, chunk_ns=[])
        yield PreparedRequest(prepared.path, prepared.payload, record)


async def _run_scheduler(
    target: BenchTarget,
    measured: Any,
    warmup: list[PreparedRequest],
    config: LoadConfig,
    progress: LoadProgress,
    abort_check: AbortCheck | None,
    holder: list[LoadScheduler],
) -> tuple[ScheduleResult, str | None]:
    """Run one point; a watchdog stops it when ``abort_check`` reports a reason.

    The scheduler goes into ``holder`` so that, after Ctrl-C, the caller can
    still read every record it finished (``scheduler.result``).
    """
    abort_reason: str | None = None
    async with ConnectionPool(target.base_url, headers=target.headers) as pool:
        scheduler = LoadScheduler(
            pool, measured, config, warmup=warmup, on_complete=progress.on_complete
        )
        holder.append(scheduler)

        async def watchdog() -> None:
            nonlocal abort_reason
            while True:
                await asyncio.sleep(ABORT_POLL_S)
                progress.refresh()
                reason = abort_check() if abort_check else None
                if reason:
                    abort_reason = reason
                    scheduler.stop(cancel_in_flight=True)
                    return

        watch = asyncio.ensure_future(watchdog())
        try:
            result = await scheduler.run()
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
    return result, abort_reason


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
    extra: dict[str, Any] | None = None,
    abort_check: AbortCheck | None = None,
    progress: bool | None = None,
    num_gpus_reason: str | None = None,
    telemetry: TelemetryPlan | None = None,
) -> PointOutcome:
    """Run one load point and write its result (when ``output_dir`` is given).

    Ctrl-C writes what was measured with status ``interrupted`` and re-raises.
    """
    started_at = utc_now()
    n_measured = prompts_for(point, load)
    n_warmup = warmup_for(point, load)
    spec = workload_spec(workload)
    built = build_workload(spec, counter.counter, n_measured, workload.seed)
    warm_built = (
        build_workload(spec, counter.counter, n_warmup, workload.seed + 7919) if n_warmup else None
    )
    measured = _prepare(built, target, workload, warmup=False, first_id=0)
    warmup = (
        _prepare(warm_built, target, workload, warmup=True, first_id=-n_warmup)
        if warm_built
        else []
    )
    source: Any = _cycle(measured, 0) if load.duration_s and load.num_prompts is None else measured
    config = LoadConfig(
        max_concurrency=point.concurrency or point.max_concurrency,
        request_rate=point.request_rate or math.inf,
        arrival=load.arrival,
        seed=workload.seed,
        duration_s=load.duration_s,
        timeout_s=load.request_timeout_s,
    )
    label = f"{point_id} ({'closed' if point.concurrency else 'open'} loop)"
    interrupted = False
    abort_reason: str | None = None
    holder: list[LoadScheduler] = []
    # Samplers start before the warmup so the measured window is covered at
    # both edges; energy is integrated over exactly that window afterwards.
    recorder = TelemetryRecorder(telemetry.samplers() if telemetry else [])
    recorder.start()
    try:
        with LoadProgress(label, None if load.duration_s else n_measured, enabled=progress) as bar:
            try:
                result, abort_reason = asyncio.run(
                    _run_scheduler(target, source, warmup, config, bar, abort_check, holder)
                )
            except KeyboardInterrupt:
                # Everything finished before Ctrl-C is kept; in-flight requests
                # were marked cancelled by the scheduler.
                interrupted = True
                result = holder[0].result if holder else ScheduleResult(cancelled=True)
    finally:
        recorder.stop()
    records = result.records + result.warmup_records
    metrics = summarize(
        result.records,
        window_start_ns=result.window_start_ns,
        window_end_ns=max(result.window_end_ns, result.window_start_ns + 1),
        num_gpus=num_gpus,
        slos=slo.as_dict() or None,
        percentiles=percentiles or [50.0, 90.0, 99.0, 99.9],
    )
    if num_gpus is None and num_gpus_reason:
        for key, why in metrics.get("null_reasons", {}).items():
            if why == "num_gpus_unknown":
                metrics["null_reasons"][key] = num_gpus_reason
    power: dict[str, Any] = {}
    if telemetry is not None:
        completed_in = metrics.get("total_input_tokens") or 0
        completed_out = metrics.get("total_output_tokens") or 0
        power = telemetry_fields(
            recorder,
            telemetry,
            start_ns=result.window_start_ns,
            end_ns=result.window_end_ns,
            output_tokens=completed_out,
            total_tokens=completed_in + completed_out,
            requests=metrics.get("completed") or 0,
        )
    status, reason = "ok", None
    if interrupted:
        status, reason = "interrupted", "interrupted by the user (Ctrl-C)"
    elif abort_reason:
        status, reason = "failed", abort_reason
    elif metrics.get("completed", 0) == 0:
        status, reason = "failed", "no request completed successfully"
    stopped_by = "num_prompts"
    if result.stopped_by_duration:
        stopped_by = "duration"
    if interrupted or abort_reason:
        stopped_by = "aborted"
    out: dict[str, Any] = {
        **result_header(point_id, status, reason, started_at),
        "finished_at": utc_now(),
        "backend": f"openai-{workload.api}",
        "base_url": target.base_url,
        "model_id": target.model,
        "mode": "closed" if point.concurrency else "open",
        "num_prompts": len(result.records),
        "num_prompts_planned": None if load.duration_s else n_measured,
        "request_rate": "inf" if point.request_rate is None else point.request_rate,
        "arrival": None if point.request_rate is None else load.arrival,
        "max_concurrency": point.concurrency or point.max_concurrency,
        "duration_limit_s": load.duration_s,
        "stopped_by": stopped_by,
        "in_flight_finished_after_stop": result.stopped_by_duration,
        "warmup_requests": len(result.warmup_records),
        "warmup_failed": sum(1 for r in result.warmup_records if not r.ok),
        **metrics,
        "workload": {
            **built.summary(),
            "api": workload.api,
            "range_semantics": workload.range_semantics,
            "ignore_eos": workload.ignore_eos,
            "token_counting": counter.describe(),
        },
        "slo": slo.as_dict(),
        **power,
        **redact(extra or {}),
    }
    path = None
    if output_dir is not None:
        write_jsonl_atomic(requests_path(output_dir, point_id), (r.to_json() for r in records))
        if telemetry is not None:
            write_jsonl_atomic(
                telemetry_path(output_dir, point_id),
                # time 0 is the window start; with no window (Ctrl-C in the
                # warmup) it is when sampling began
                series_rows(recorder, result.window_start_ns or recorder.started_ns),
            )
        path = write_json_atomic(result_path(output_dir, point_id), out)
    if interrupted:
        raise KeyboardInterrupt
    return PointOutcome(point_id, out, records, path)


def run_bench(
    config: BenchConfig,
    *,
    on_point: Callable[[PointOutcome], None] | None = None,
    progress: bool | None = None,
) -> list[PointOutcome]:
    """The Python API: benchmark every load point of ``config``; returns their outcomes.

    Results are also written to ``config.output_dir`` (unless None), one JSON
    per point plus a ``.requests.jsonl`` sidecar.
    """
    model = config.model or discover_model(config.base_url, config.headers)
    target = BenchTarget(config.base_url, model, dict(config.headers))
    counter = resolve_token_counter(
        config.base_url,
        model,
        str(config.workload.tokenizer) if config.workload.tokenizer else None,
    )
    prefix = config.name or slug(model.rsplit("/", 1)[-1])
    telemetry = local_telemetry(config) if config.telemetry else None
    outcomes = []
    try:
        _run_points(config, target, counter, prefix, telemetry, outcomes, on_point, progress)
    finally:
        if hasattr(counter.counter, "close"):
            counter.counter.close()  # a server tokenizer's keep-alive client and threads
    return outcomes


def _run_points(
    config: BenchConfig,
    target: BenchTarget,
    counter: CounterResolution,
    prefix: str,
    telemetry: TelemetryPlan | None,
    outcomes: list[PointOutcome],
    on_point: Callable[[PointOutcome], None] | None,
    progress: bool | None,
) -> None:
    for point in load_points(config.load):
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
            output_dir=config.output_dir,
            extra={"config": config.model_dump(mode="json")},
            progress=progress,
            telemetry=telemetry,
        )
        outcomes.append(outcome)
        if on_point:
            on_point(outcome)


def local_telemetry(config: BenchConfig) -> TelemetryPlan:
    """Against an external server the client often runs on the serving node: sample the
    local GPUs (``gpus``, default all visible), the host, and the engine's /metrics when
    the engine is named."""
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.registries import detect_platform, engine_registry
    from inferx_core.telemetry.session import build_plan

    pm = get_plugin_manager()
    platform = detect_platform(pm)
    gpu_ids = config.gpus if config.gpus is not None else [a.index for a in platform.accelerators]
    metrics_map = None
    if config.engine:
        from inferx_core.config.models import ServerConfig

        engine_registry(pm).get(config.engine)  # a clear error for an unknown engine
        probe = ServerConfig(engine=config.engine, model=config.model or "?")
        metrics_map = pm.call_first("inferx_engine_metrics", server=probe)[1]
    return build_plan(
        pm,
        platform,
        gpu_ids,
        base_url=config.base_url,
        metrics_map=metrics_map,
        interval_overrides=config.telemetry_intervals,
    )
