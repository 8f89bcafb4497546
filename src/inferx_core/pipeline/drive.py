"""Driving one load point: the scheduler under telemetry, a watchdog, and signals.

:func:`drive` runs the scheduler in its own event loop with the telemetry
recorder around it; a watchdog task stops it when ``abort_check`` reports a
reason (the engine died), and SIGINT/SIGTERM/SIGHUP cancel it the way
``asyncio.run`` cancels its main task, so every finished record is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferx_core.launch.interrupts import cancel_on_interrupt, was_interrupted
from inferx_core.load.client import ConnectionPool
from inferx_core.load.client_load import ClientLoad, ClientLoadMeter
from inferx_core.load.event_loop import run as run_event_loop
from inferx_core.load.progress import LoadProgress
from inferx_core.load.scheduler import LoadConfig, LoadScheduler, PreparedRequest, ScheduleResult
from inferx_core.pipeline.requests import BenchTarget, Requests
from inferx_core.telemetry.recorder import TelemetryRecorder

ABORT_POLL_S = 0.25

#: Called while a point runs; returns a reason to abort (e.g. "engine exited"), else None.
AbortCheck = Callable[[], "str | None"]


async def _run_scheduler(
    target: BenchTarget,
    measured: Any,
    warmup: list[PreparedRequest],
    config: LoadConfig,
    progress: LoadProgress,
    abort_check: AbortCheck | None,
    holder: list[LoadScheduler],
    meter: ClientLoadMeter | None = None,
) -> tuple[ScheduleResult, str | None]:
    """Run one point; a watchdog stops it when ``abort_check`` reports a reason.

    The scheduler goes into ``holder`` so that, after Ctrl-C, the caller can
    still read every record it finished (``scheduler.result``).
    """
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

    async with ConnectionPool(target.base_url, headers=target.headers) as pool:
        scheduler = LoadScheduler(pool, measured, config, warmup=warmup, on_complete=on_complete)
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
        try:
            with cancel_on_interrupt():  # SIGTERM/SIGHUP/Ctrl-C cancel this task, as asyncio.run
                result = await scheduler.run()
        finally:
            for task in (watch, probe):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
    return result, abort_reason


@dataclass
class Drive:
    result: ScheduleResult
    abort_reason: str | None
    interrupted: bool
    client_load: ClientLoad | None = None


def drive(
    target: BenchTarget,
    requests: Requests,
    config: LoadConfig,
    *,
    label: str,
    total: int | None,
    recorder: TelemetryRecorder,
    abort_check: AbortCheck | None,
    progress: bool | None,
) -> Drive:
    """Run the scheduler under telemetry; Ctrl-C keeps every finished record."""
    holder: list[LoadScheduler] = []
    meter = ClientLoadMeter()
    meter.start()
    # Samplers start before the warmup so the measured window is covered at
    # both edges; energy is integrated over exactly that window afterwards.
    recorder.start()
    try:
        with LoadProgress(label, total, enabled=progress) as bar:
            try:
                result, abort_reason = run_event_loop(
                    _run_scheduler(
                        target,
                        requests.measured,
                        requests.warmup,
                        config,
                        bar,
                        abort_check,
                        holder,
                        meter,
                    )
                )
            except (KeyboardInterrupt, asyncio.CancelledError):
                if not was_interrupted() and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
                    raise
                # In-flight requests were marked cancelled by the scheduler.
                result = holder[0].result if holder else ScheduleResult(cancelled=True)
                return Drive(result, None, interrupted=True)
    finally:
        recorder.stop()
    load = meter.stop(result.window_start_ns, result.window_end_ns)
    return Drive(result, abort_reason, interrupted=False, client_load=load)


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
