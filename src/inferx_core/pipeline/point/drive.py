"""Driving one load point: the scheduler under telemetry, a watchdog, and signals.

:func:`drive` runs the scheduler in its own event loop with the telemetry
recorder around it; a watchdog task stops it when ``abort_check`` reports a
reason (the engine died), and SIGINT/SIGTERM/SIGHUP cancel it the way
``asyncio.run`` cancels its main task, so every finished record is kept.

With ``workers`` > 1 the same point runs in that many worker processes
(:mod:`inferx_core.load.workers`): the schedule is split once, the workers
start together, and their records come back merged on this process's clock;
the watchdog, Ctrl-C and the progress display work on their records files.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferx_core.launch.interrupts import cancel_on_interrupt, was_interrupted
from inferx_core.load.schedule.client_load import ClientLoad, ClientLoadMeter, WorkerLoad
from inferx_core.load.schedule.progress import LoadProgress
from inferx_core.load.schedule.scheduler import (
    LoadConfig,
    LoadScheduler,
    ScheduleResult,
)
from inferx_core.load.transport.client import ConnectionPool
from inferx_core.load.transport.event_loop import run as run_event_loop
from inferx_core.load.workers.clock import ClockServer
from inferx_core.load.workers.group import WorkerGroup, Wrap
from inferx_core.load.workers.placement import SrunPlacement, slurm_placement
from inferx_core.load.workers.plan import (
    auto_workers,
    effective_workers,
    endless_pool,
    split_load,
)
from inferx_core.pipeline.point.output_lock import SCRATCH_NAME, scratch_dir
from inferx_core.pipeline.point.requests import BenchTarget, Requests
from inferx_core.pipeline.point.server_plan import AbortCheck
from inferx_core.telemetry.recorder import TelemetryRecorder

ABORT_POLL_S = 0.25

__all__ = ["AbortCheck", "Drive", "DrivePlan", "drive", "unanswered"]


@dataclass(frozen=True)
class DrivePlan:
    """One point as the driver runs it: its requests under ``config`` against ``target``.

    ``label`` and ``total`` are the progress bar's (``progress``: None shows it on a
    terminal only); ``abort_check`` is the engine watchdog. ``workers`` > 1 (None:
    ``auto_workers``) runs the point in that many processes (``wrap``: e.g. srun steps),
    their files in ``workers_dir``, else ``output_dir/.inferx-tmp``, else ``/tmp``.
    """

    target: BenchTarget
    requests: Requests
    config: LoadConfig
    recorder: TelemetryRecorder
    label: str = "load"
    total: int | None = None
    abort_check: AbortCheck | None = None
    progress: bool | None = None
    workers: int | None = 1
    workers_dir: Path | None = None
    wrap: Wrap | None = None
    output_dir: Path | None = None


async def _run_scheduler(
    plan: DrivePlan,
    progress: LoadProgress,
    holder: list[LoadScheduler],
    meter: ClientLoadMeter | None = None,
) -> tuple[ScheduleResult, str | None]:
    """Run one point; a watchdog stops it when ``abort_check`` reports a reason.

    The scheduler goes into ``holder`` so that, after Ctrl-C, the caller can
    still read every record it finished (``scheduler.result``).
    """
    abort_check = plan.abort_check
    abort_reason: str | None = None

    def on_complete(record: Any) -> None:
        nonlocal abort_reason
        progress.on_complete(record)
        # A refused connection may mean the engine just died: ask at once rather
        # than at the next poll, so no burst of refused requests joins the point.
        if record.error_kind == "connection" and abort_check and abort_reason is None:
            reason = abort_check()
            if reason:
                abort_reason = reason
                holder[0].stop(cancel_in_flight=True)

    target = plan.target
    async with ConnectionPool(
        target.base_url, headers=target.headers, server_timing=target.server_timing
    ) as pool:
        scheduler = LoadScheduler(
            pool,
            plan.requests.measured,
            plan.config,
            warmup=plan.requests.warmup,
            on_complete=on_complete,
        )
        holder.append(scheduler)

        async def watchdog() -> None:
            nonlocal abort_reason
            while True:
                await asyncio.sleep(ABORT_POLL_S)
                progress.refresh()
                reason = (abort_check() if abort_check else None) or unanswered(scheduler.result)
                if abort_reason is not None:
                    return  # a refused request already found the cause
                if reason:
                    abort_reason = reason
                    scheduler.stop(cancel_in_flight=True)
                    return

        watch = asyncio.ensure_future(watchdog())
        # the client's own lag, measured on the loop that stamps every chunk
        probe = asyncio.ensure_future(meter.probe()) if meter is not None else None
        result = await _run_beside(scheduler, watch, probe)
    return result, abort_reason


async def _run_beside(
    scheduler: LoadScheduler, *helpers: asyncio.Future[Any] | None
) -> ScheduleResult:
    """``scheduler.run()``, its helper tasks ended with it.

    The point's own end (a signal's cancellation, its error) is what propagates: a
    helper's failure raised then would replace it, and an interrupted point would crash
    with the helper's traceback instead of being written.
    """
    try:
        with cancel_on_interrupt():  # SIGTERM/SIGHUP/Ctrl-C cancel this task, as asyncio.run
            result = await scheduler.run()
    except BaseException:
        await _cancel(*helpers, raise_failure=False)
        raise
    await _cancel(*helpers)
    return result


async def _cancel(*tasks: asyncio.Future[Any] | None, raise_failure: bool = True) -> None:
    """Cancel the helper tasks of a point and wait until they are gone.

    A signal that lands as ``scheduler.run()`` returns cancels the point's own task,
    and that cancellation arrives at this wait: ``asyncio.wait`` lets it propagate
    (an ``await task`` under ``suppress(CancelledError)`` swallowed it, and the run
    went on as if no signal had come), while the helpers' own cancellations stay here.
    A helper's own failure is raised when ``raise_failure`` (the first of them; each is
    retrieved, so asyncio logs none as never retrieved).
    """
    helpers = [task for task in tasks if task is not None]
    for task in helpers:
        task.cancel()
    if helpers:
        await asyncio.wait(helpers)
    failures = [t.exception() for t in helpers if not t.cancelled()]
    first = next((failure for failure in failures if failure is not None), None)
    if first is not None and raise_failure:
        raise first


@dataclass
class Drive:
    result: ScheduleResult
    abort_reason: str | None
    interrupted: bool
    client_load: ClientLoad | None = None
    workers: tuple[WorkerLoad, ...] = field(default_factory=tuple)  # empty: one process

    def per_worker(self) -> list[dict[str, Any]]:
        """Each worker's figures as the result's ``load.per_worker`` rows."""
        return [
            {k: v for k, v in dataclasses.asdict(w).items() if k != "loop_lag_max_ms"}
            for w in self.workers
        ]


def drive(plan: DrivePlan) -> Drive:
    """Run the scheduler under telemetry; Ctrl-C keeps every finished record.

    In worker processes when ``plan.workers`` (or a SLURM job's client nodes) asks for
    them, else on this process's own event loop.
    """
    placement = slurm_placement()  # a SLURM job with client nodes: workers as srun steps
    asked = plan.workers or (placement.client_nodes if placement else auto_workers())
    n = effective_workers(asked, plan.config, plan.requests.n_measured)
    if n > 1 or plan.wrap is not None or placement is not None:
        return _drive_workers(plan, n, placement)
    return _drive_here(plan)


def _drive_here(plan: DrivePlan) -> Drive:
    """:func:`drive` on this process's event loop."""
    holder: list[LoadScheduler] = []
    meter = ClientLoadMeter()
    meter.start()
    # Samplers start before the warmup so the measured window is covered at
    # both edges; energy is integrated over exactly that window afterwards.
    plan.recorder.start()
    try:
        with LoadProgress(plan.label, plan.total, enabled=plan.progress) as bar:
            try:
                result, abort_reason = run_event_loop(_run_scheduler(plan, bar, holder, meter))
            except (KeyboardInterrupt, asyncio.CancelledError):
                if not was_interrupted() and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
                    raise
                # In-flight requests were marked cancelled by the scheduler.
                result = holder[0].result if holder else ScheduleResult(cancelled=True)
                return Drive(result, None, interrupted=True)
    finally:
        plan.recorder.stop()
    load = meter.stop(result.window_start_ns, result.window_end_ns)
    return Drive(result, abort_reason, interrupted=False, client_load=load)


def _split(plan: DrivePlan, n: int) -> Any:
    """The point's one schedule split over ``n`` workers."""
    config, requests = plan.config, plan.requests
    measured = requests.measured
    pool = None
    endless = config.duration_s is not None and not isinstance(measured, (list, tuple))
    if endless:  # duration-bound: an endless cycle over the prompts
        pool = endless_pool(measured, requests.n_measured)
        measured = itertools.chain(pool, measured)
    return split_load(config, measured, requests.warmup, n, endless_pool=pool)


def _drive_workers(plan: DrivePlan, n: int, placement: SrunPlacement | None) -> Drive:
    """:func:`drive` over ``n`` worker processes (one schedule, merged records)."""
    split = _split(plan, n)
    url, wrap = plan.target.base_url, plan.wrap
    if placement is not None:
        url, wrap = placement.reachable_url(url), wrap or placement.wrap
    meter = ClientLoadMeter()  # this host's cores; each worker measures its own loop
    meter.start()
    plan.recorder.start()
    try:
        with LoadProgress(plan.label, plan.total, enabled=plan.progress) as bar:
            seen = ScheduleResult()

            def on_record(record: Any) -> None:
                # kept until the first token came: all `unanswered` needs to know
                if not any(r.chunk_ns for r in seen.records[-1:] + seen.warmup_records[-1:]):
                    (seen.warmup_records if record.warmup else seen.records).append(record)
                bar.on_complete(record)

            def abort() -> str | None:
                bar.refresh()
                return (plan.abort_check() if plan.abort_check else None) or unanswered(seen)

            at = _workers_at(placement, plan.workers_dir, plan.output_dir)
            with at as (run_dir, clock, lead_s):
                headers = plan.target.headers
                group = WorkerGroup(
                    split,
                    url,
                    headers,
                    run_dir,
                    wrap=wrap,
                    clock_address=clock,
                    start_lead_s=lead_s,
                    server_timing=plan.target.server_timing,
                )
                out = group.run(on_record, abort)
    finally:
        plan.recorder.stop()
    result = out.result
    if out.interrupted:
        return Drive(result, None, interrupted=True, workers=out.workers)
    load = meter.stop().with_workers(out.workers)
    return Drive(result, out.abort_reason, False, client_load=load, workers=out.workers)


@contextlib.contextmanager
def _workers_at(placement: SrunPlacement | None, given: Path | None, output_dir: Path | None):
    """(the workers' folder, the clock server's address, the start lead) for one point.

    srun steps need a folder every node sees (the job's), a clock server where they
    run on other nodes, and a longer lead (a shared filesystem shows ``go`` late).
    """
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given, None, 0.25
        return
    if placement is None or placement.load_dir is None:
        if output_dir is not None:  # a SIGKILL'd run's folder is cleared by the next one
            with scratch_dir(output_dir / SCRATCH_NAME) as mine:
                yield mine, None, 0.25
            return
        with tempfile.TemporaryDirectory(prefix="inferx-workers-") as tmp:
            yield Path(tmp), None, 0.25
        return
    placement.load_dir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="point-", dir=placement.load_dir))
    if not placement.remote:
        yield run_dir, None, 1.0
        return
    with ClockServer() as server:
        yield run_dir, (socket.gethostname(), server.port), 3.0


def unanswered(result: ScheduleResult) -> str | None:
    """A reason to stop when every request so far timed out without a token (at least 2):
    the server accepts connections but does not answer, and waiting on would only repeat."""
    sent = (*result.warmup_records, *result.records)  # in flight included
    if any(r.chunk_ns for r in sent):
        return None  # some token came: the server answers, maybe slowly
    done = [r for r in sent if r.end_ns]
    if len(done) < 2 or any(r.error_kind != "timeout" for r in done):
        return None
    return (
        f"the server accepts requests but answers none: all {len(done)} finished requests timed "
        f"out without a token ({done[-1].error}); is it overloaded, stuck or the wrong port?"
    )
