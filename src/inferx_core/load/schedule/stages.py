"""Load stages: a point that runs several load levels in order, each for a duration.

A :class:`Stage` is a closed loop at ``concurrency`` or an open loop at
``rate`` for ``duration_s``. The scheduler runs them back to back: when a
stage's time is up it stops dispatching and the next one starts at once;
requests (and sessions) in flight go on and keep the stage they were
dispatched in. A closed-loop stage keeps ``concurrency`` units in flight,
counting those still running from the stage before (:class:`Slots`), so a
step from 8 to 2 lets the extra ones finish instead of stacking on them.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any

from inferx_core.load.schedule.arrivals import arrival_intervals
from inferx_core.load.schedule.units import gather_or_cancel

__all__ = ["Slots", "Stage", "StageWindow", "StagedDispatch"]


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage: exactly one of ``rate`` (requests/s) and ``concurrency``."""

    duration_s: float
    rate: float | None = None
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if (self.rate is None) == (self.concurrency is None):
            raise ValueError("a stage needs exactly one of rate and concurrency")
        if not self.duration_s > 0:
            raise ValueError("a stage's duration_s must be > 0")
        if self.rate is not None and not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError("a stage's rate must be a finite number > 0")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError("a stage's concurrency must be >= 1")


@dataclass(frozen=True, slots=True)
class StageWindow:
    """When a stage ran, on the load clock (``perf_counter_ns``)."""

    index: int
    start_ns: int
    end_ns: int
    stage: Stage


class Slots:
    """A concurrency limit whose capacity changes between stages (one waiter at a time)."""

    def __init__(self, capacity: float = math.inf) -> None:
        self.capacity = capacity
        self.in_use = 0
        self.closed = False  # the load stopped: no slot is given any more
        self._waiter: asyncio.Future[None] | None = None

    async def acquire(self, deadline_ns: int) -> bool:
        """Take a slot; False when none came free before ``deadline_ns`` (or it closed)."""
        loop = asyncio.get_running_loop()
        while self.in_use >= self.capacity and not self.closed:
            left = (deadline_ns - perf_counter_ns()) / 1e9
            if left <= 0:
                return False
            fut: asyncio.Future[None] = loop.create_future()
            self._waiter = fut
            handle = loop.call_later(left, _wake, fut)
            try:
                await fut
            finally:
                handle.cancel()
                self._waiter = None
        if self.closed:
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        self.in_use -= 1
        self.wake()

    def resize(self, capacity: float) -> None:
        self.capacity = capacity
        self.wake()

    def close(self) -> None:
        self.closed = True
        self.wake()

    def wake(self) -> None:
        if self._waiter is not None:
            _wake(self._waiter)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class StagedDispatch:
    """How LoadScheduler runs ``config.stages`` (a mixin: it uses the scheduler's
    ``_dispatch``, ``_sleep``, stop flag and records)."""

    config: Any
    result: Any
    _requests: Iterator[Any]
    _stopping: bool
    _deadline_ns: int | None
    _stage: int | None
    _slots: Slots | None
    _exhausted: bool
    _dispatch: Any
    _sleep: Any

    async def _staged(self, out: list[Any]) -> None:
        """Every stage in order; in-flight units finish after the last one."""
        stages = self.config.stages
        slots = self._slots = Slots()
        tasks: set[asyncio.Task[None]] = set()
        pending: Any = None
        self._exhausted = False
        for i, stage in enumerate(stages):
            if self._stopping or self._exhausted:
                break
            start = perf_counter_ns()
            end = start + int(stage.duration_s * 1e9)
            self._stage = i
            if i == len(stages) - 1:
                self._deadline_ns = end  # sessions send no turn after the last stage
            slots.resize(stage.concurrency or self.config.max_concurrency or math.inf)
            pending = await self._stage_dispatch(i, stage, end, pending, slots, tasks, out)
            self.result.stage_windows.append(StageWindow(i, start, perf_counter_ns(), stage))
        if not (self._stopping or self._exhausted) and (
            pending is not None or next(self._requests, None) is not None
        ):
            self.result.stopped_by_duration = True
        await gather_or_cancel(tasks)

    async def _stage_dispatch(
        self,
        index: int,
        stage: Stage,
        end_ns: int,
        pending: Any,
        slots: Slots,
        tasks: set[asyncio.Task[None]],
        out: list[Any],
    ) -> Any:
        """Dispatch until the stage's end; returns the unit drawn but not sent (or None).

        A rate stage's arrivals are its own Poisson/gamma or constant process
        (seeded by the load's seed and the stage index), the first at its start.
        """
        cfg = self.config
        loop = asyncio.get_running_loop()
        gaps = None
        if stage.rate is not None:
            gaps = arrival_intervals(
                stage.rate, cfg.arrival, cfg.seed + index, burstiness=cfg.burstiness
            )
        t_next = loop.time()
        first = True
        while not self._stopping:
            pending = next(self._requests, None) if pending is None else pending
            if pending is None:
                # nothing left to send: the later stages have no load (sessions in
                # flight still send their turns)
                self._exhausted = True
                break
            due_ns = None
            if gaps is not None:
                t_next += 0.0 if first else next(gaps)
                first = False
                delay = t_next - loop.time()
                if delay * 1e9 >= end_ns - perf_counter_ns():  # due in the next stage
                    await self._sleep((end_ns - perf_counter_ns()) / 1e9)
                    break
                due_ns = perf_counter_ns() + int(delay * 1e9)
                await self._sleep(delay)
            if self._stopping or not await slots.acquire(end_ns) or self._stopping:
                break
            unit, pending = pending, None
            task = asyncio.create_task(self._slot_send(unit, out, slots, due_ns))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        return pending

    async def _slot_send(self, unit: Any, out: list[Any], slots: Slots, due_ns: int | None) -> None:
        try:
            await self._dispatch(unit, out, True, due_ns)
        except asyncio.CancelledError:
            if not self.result.cancelled:
                raise
        finally:
            slots.release()
