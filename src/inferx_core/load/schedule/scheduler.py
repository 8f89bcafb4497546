"""Drives prepared requests against a server: closed or open loop.

* Closed loop (``request_rate`` infinite, ``max_concurrency`` N): N workers,
  each sends its next request as soon as its previous one ends.
* Open loop (finite ``request_rate``): arrivals at fixed absolute times,
  Poisson (seeded exponential gaps) or constant; an optional concurrency
  cap makes arrivals wait for a free slot. Arrival times are cumulative, so
  a late wake-up does not shift the schedule after it.
* With neither (rate infinite, no cap) every request is sent at once.

Warmup requests run first (closed loop at the same concurrency), are marked
``warmup=True`` and kept apart; the measured window opens at the first
measured dispatch after all warmup requests ended and closes at the last
measured completion. ``duration_s`` stops dispatching; requests in flight
then finish and count.

The units dispatched are requests (:class:`PreparedRequest`) or multi-turn
sessions (:class:`~inferx_core.load.prompts.sessions.Session`): a session holds its
slot (closed loop) or arrives (open loop) as one unit and sends its turns
one after the other, each when the previous reply ended plus its think time
(or at its trace timestamp). ``stages`` (:mod:`inferx_core.load.schedule.stages`)
run several load levels in order within one point.

Cancellation: :meth:`LoadScheduler.stop` stops gracefully (optionally
cancelling in-flight requests); if the task running :meth:`LoadScheduler.run`
is cancelled (Ctrl-C under ``asyncio.run``), in-flight records are marked
``cancelled``, :attr:`LoadScheduler.result` holds everything, and the
cancellation propagates.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from time import perf_counter_ns, time_ns
from typing import Literal

from inferx_core.load.prompts.sessions import Session
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.arrivals import Ramp, arrival_intervals
from inferx_core.load.schedule.session_dispatch import SessionDispatch
from inferx_core.load.schedule.stages import Slots, Stage, StagedDispatch, StageWindow
from inferx_core.load.schedule.units import PreparedRequest, Unit, gather_or_cancel
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.load.transport.sse import DEFAULT_MAX_SSE_LINE_BYTES

__all__ = [
    "LoadConfig",
    "LoadScheduler",
    "PreparedRequest",
    "Ramp",
    "ScheduleResult",
    "Unit",
    "arrival_intervals",
    "run_load",
]

log = logging.getLogger(__name__)

OnComplete = Callable[[RequestRecord], None]


@dataclass(frozen=True, slots=True)
class LoadConfig:
    """How to send the requests."""

    max_concurrency: int | None = None  # None: no cap
    request_rate: float = math.inf  # requests/s; inf: closed loop
    arrival: Literal["poisson", "constant"] = "poisson"
    seed: int = 0  # for Poisson gaps
    burstiness: float = 1.0  # gamma shape of the gaps (1: Poisson)
    ramp: Ramp | None = None  # open loop: ramp the rate up to request_rate
    duration_s: float | None = None  # stop dispatching after this long
    timeout_s: float = 600.0  # per request, whole request
    idle_timeout_s: float | None = None  # per request, silence between reads
    first_token_timeout_s: float | None = None  # per request, send -> first generated token
    token_idle_timeout_s: float | None = None  # per request, gap between generated tokens
    max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES  # per reply, longest SSE line
    # Freeze the objects that exist before the run out of the cyclic GC, so
    # a full collection during the run does not walk them (a pause that
    # would delay chunk timestamps).
    freeze_gc: bool = True
    # Load levels run in order within the point (each one closed or open loop);
    # they replace request_rate/max_concurrency as the load and duration_s.
    stages: tuple[Stage, ...] = ()

    def __post_init__(self) -> None:
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        if not self.request_rate > 0:
            raise ValueError("request_rate must be > 0 (inf for closed loop)")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError("duration_s must be > 0")


@dataclass(slots=True)
class ScheduleResult:
    """Records and the measured window of one load run."""

    records: list[RequestRecord] = field(default_factory=list)  # measured, in dispatch order
    warmup_records: list[RequestRecord] = field(default_factory=list)
    window_start_ns: int = 0  # first measured dispatch
    window_end_ns: int = 0  # last measured completion
    # time.time_ns() - perf_counter_ns() read at the window start: maps the load
    # clock onto the wall clock (InferenceX's power window is in unix seconds).
    unix_offset_ns: int = 0
    stopped_by_duration: bool = False  # the duration cut dispatch while requests were left
    cancelled: bool = False
    stage_windows: list[StageWindow] = field(default_factory=list)  # with stages: when each ran

    @property
    def window_s(self) -> float:
        return max(self.window_end_ns - self.window_start_ns, 0) / 1e9

    def unix_s(self, perf_ns: int) -> float | None:
        """A load-clock instant in unix seconds; None before the window opened."""
        if not self.window_start_ns:
            return None
        return (perf_ns + self.unix_offset_ns) / 1e9


class LoadScheduler(StagedDispatch, SessionDispatch):
    """One load run: ``await LoadScheduler(...).run()``."""

    def __init__(
        self,
        pool: ConnectionPool,
        requests: Iterable[Unit],
        config: LoadConfig,
        *,
        warmup: Sequence[Unit] = (),
        on_complete: OnComplete | None = None,
    ) -> None:
        self.pool = pool
        self.config = config
        self._requests = iter(requests)
        self._warmup = list(warmup)
        self._on_complete = on_complete
        self._callback_failed = False
        self.result = ScheduleResult()
        self._in_flight: dict[asyncio.Task[RequestRecord], RequestRecord] = {}
        self._stopping = False
        self._deadline_ns: int | None = None
        self._sleepers: set[asyncio.Future[None]] = set()  # sessions think in parallel
        self._origin_ns: int | None = None
        self._origin_loop = 0.0  # the origin on the loop's clock (sessions' trace times)
        self._stage: int | None = None
        self._slots: Slots | None = None

    def stop(self, *, cancel_in_flight: bool = False) -> None:
        """Stop dispatching; optionally cancel the requests in flight."""
        self._stopping = True
        for sleeper in self._sleepers:
            _wake_up(sleeper)
        if self._slots is not None:
            self._slots.close()
        if cancel_in_flight:
            self.result.cancelled = True
            for task in self._in_flight:
                task.cancel()

    async def run(self, *, origin_ns: int | None = None) -> ScheduleResult:
        """Send everything; return the records and the measured window.

        ``origin_ns``: the ``perf_counter_ns()`` instant open-loop arrival times
        count from (worker processes share one; CLOCK_MONOTONIC is host-wide);
        None: when the measured load starts.
        """
        self._origin_ns = origin_ns
        cfg = self.config
        res = self.result
        frozen = False
        if cfg.freeze_gc and gc.get_freeze_count() == 0:  # never undo a caller's freeze
            gc.collect()
            gc.freeze()
            frozen = True
        try:
            if self._warmup:
                for unit in self._warmup:
                    _mark_warmup(unit)
                conc = min(cfg.max_concurrency or len(self._warmup), len(self._warmup))
                await self._closed_loop(
                    iter(self._warmup), conc, res.warmup_records, measured=False
                )
            if not self._stopping:
                self._set_origin()
                if cfg.duration_s is not None and not cfg.stages:
                    self._deadline_ns = perf_counter_ns() + int(cfg.duration_s * 1e9)
                if cfg.stages:
                    await self._staged(res.records)
                elif math.isinf(cfg.request_rate) and cfg.max_concurrency is not None:
                    await self._closed_loop(
                        self._requests, cfg.max_concurrency, res.records, measured=True
                    )
                else:
                    await self._open_loop(res.records)
        except asyncio.CancelledError:
            res.cancelled = True
            self._abandon_in_flight()
            self._finalize()
            raise
        finally:
            if frozen:
                gc.unfreeze()
        self._finalize()
        return res

    # -- internals ---------------------------------------------------------------

    def _set_origin(self) -> None:
        # loop.time() and perf_counter_ns() are both CLOCK_MONOTONIC here
        self._origin_loop = asyncio.get_running_loop().time()
        if self._origin_ns is not None:
            self._origin_loop += (self._origin_ns - perf_counter_ns()) / 1e9

    def _finalize(self) -> None:
        res = self.result
        ends = [r.end_ns for r in res.records if r.end_ns]
        res.window_end_ns = max(ends) if ends else res.window_start_ns

    def _abandon_in_flight(self) -> None:
        """Mark in-flight records cancelled now (their tasks may never run again)."""
        now = perf_counter_ns()
        for task, rec in list(self._in_flight.items()):
            if not rec.end_ns:
                rec.end_ns = now
            if rec.error is None:
                rec.error = "cancelled before the request finished"
                rec.error_kind = "cancelled"
            task.cancel()

    def _deadline_passed(self) -> bool:
        return self._deadline_ns is not None and perf_counter_ns() >= self._deadline_ns

    def _next(self, it: Iterator[Unit], measured: bool) -> Unit | None:
        """The next request to dispatch, or None when dispatch is over."""
        if self._stopping:
            return None
        if measured and self._deadline_passed():
            if next(it, None) is not None:
                self.result.stopped_by_duration = True
            self._stopping = True
            return None
        return next(it, None)

    async def _send(
        self, req: PreparedRequest, out: list[RequestRecord], measured: bool
    ) -> RequestRecord:
        rec = req.record
        if measured and not self.result.window_start_ns:
            self.result.window_start_ns = perf_counter_ns()
            self.result.unix_offset_ns = time_ns() - self.result.window_start_ns
        out.append(rec)
        if self._stage is not None:
            rec.stage = self._stage
        cfg = self.config
        task = asyncio.current_task()
        assert task is not None
        self._in_flight[task] = rec
        try:
            await send_streaming_request(
                self.pool,
                req.path,
                req.payload,
                rec,
                timeout_s=cfg.timeout_s,
                idle_timeout_s=cfg.idle_timeout_s,
                first_token_timeout_s=cfg.first_token_timeout_s,
                token_idle_timeout_s=cfg.token_idle_timeout_s,
                max_sse_line_bytes=cfg.max_sse_line_bytes,
            )
        finally:
            del self._in_flight[task]
        if self._on_complete is not None:
            try:
                self._on_complete(rec)
            except Exception:  # a progress bar must not lose records
                if not self._callback_failed:
                    self._callback_failed = True
                    log.exception("on_complete callback failed; further errors are not logged")
        return rec

    async def _dispatch(
        self, unit: Unit, out: list[RequestRecord], measured: bool, due_ns: int | None = None
    ) -> None:
        """Send a request, or run a session's turns one after the other."""
        if isinstance(unit, Session):
            await self._run_session(unit, out, measured, due_ns)
            return
        if due_ns is not None:
            unit.record.scheduled_ns = due_ns
        await self._send(unit, out, measured)

    async def _worker(self, it: Iterator[Unit], out: list[RequestRecord], measured: bool) -> None:
        while (unit := self._next(it, measured)) is not None:
            await self._dispatch(unit, out, measured)

    async def _closed_loop(
        self,
        it: Iterator[Unit],
        concurrency: int,
        out: list[RequestRecord],
        measured: bool,
    ) -> None:
        # Each worker is its own task so a cancelled request shows up as that
        # task's CancelledError, which marks its record; run() cancels them.
        workers = [
            asyncio.create_task(self._run_worker(it, out, measured)) for _ in range(concurrency)
        ]
        try:
            await asyncio.gather(*workers)
        except asyncio.CancelledError:
            for w in workers:
                w.cancel()
            raise

    async def _run_worker(
        self, it: Iterator[Unit], out: list[RequestRecord], measured: bool
    ) -> None:
        try:
            await self._worker(it, out, measured)
        except asyncio.CancelledError:
            # stop(cancel_in_flight=True) cancels the request; the record is
            # already marked, the worker just ends.
            if not self.result.cancelled:
                raise
            self._stopping = True

    async def _open_loop(self, out: list[RequestRecord]) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        gaps = arrival_intervals(
            cfg.request_rate, cfg.arrival, cfg.seed, burstiness=cfg.burstiness, ramp=cfg.ramp
        )
        sem = asyncio.Semaphore(cfg.max_concurrency) if cfg.max_concurrency else None
        tasks: set[asyncio.Task[None]] = set()
        origin = self._origin_loop
        t_next = origin
        first = True
        it = self._requests
        pending: Unit | None = None
        while not self._stopping:
            pending = self._next(it, measured=True) if pending is None else pending
            if pending is None:
                break
            if pending.at_s is not None:
                t_next = origin + pending.at_s
            elif not first:
                t_next += next(gaps)
            first = False
            delay = t_next - loop.time()
            due_ns = perf_counter_ns() + int(delay * 1e9)  # the arrival on the load clock
            if await self._ended_before_arrival(delay, pending):
                break
            if delay > 0:
                await self._sleep(delay)
            if self._stopping:
                break
            if sem is not None:
                await sem.acquire()
            unit, pending = pending, None
            task = asyncio.create_task(self._open_send(unit, out, sem, due_ns))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await gather_or_cancel(tasks)

    async def _ended_before_arrival(self, delay: float, pending: Unit) -> bool:
        """True, after waiting for the end, when the next arrival falls after the deadline.

        A later arrival would not be sent, so the load stops at the end itself.
        """
        if self._deadline_ns is None:
            return False
        left = (self._deadline_ns - perf_counter_ns()) / 1e9
        if delay < left:
            return False
        await self._sleep(left)
        if not self._stopping:
            self.result.stopped_by_duration = True
        self._stopping = True
        return True

    async def _open_send(
        self, unit: Unit, out: list[RequestRecord], sem: asyncio.Semaphore | None, due_ns: int
    ) -> None:
        try:
            await self._dispatch(unit, out, True, due_ns)
        except asyncio.CancelledError:
            if not self.result.cancelled:
                raise
        finally:
            if sem is not None:
                sem.release()

    async def _sleep(self, seconds: float) -> None:
        """Sleep that stop() can cut short (cheaper than wait_for on an Event)."""
        if seconds <= 0 or self._stopping:
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._sleepers.add(fut)
        handle = loop.call_later(seconds, _wake_up, fut)
        try:
            await fut
        finally:
            handle.cancel()
            self._sleepers.discard(fut)


def _wake_up(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _mark_warmup(unit: Unit) -> None:
    if isinstance(unit, Session):
        unit.warmup = True
    else:
        unit.record.warmup = True


async def run_load(
    pool: ConnectionPool,
    requests: Iterable[Unit],
    config: LoadConfig,
    *,
    warmup: Sequence[Unit] = (),
    on_complete: OnComplete | None = None,
) -> ScheduleResult:
    """Convenience wrapper: ``await LoadScheduler(...).run()``."""
    return await LoadScheduler(pool, requests, config, warmup=warmup, on_complete=on_complete).run()
