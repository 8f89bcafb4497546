"""How busy the load generator itself is: event-loop lag, its CPU time, its cores.

A starved client stamps chunks late and reads several at once, and nothing
in the latencies says so. :class:`ClientLoadMeter` measures it beside the
load: a probe task on the same event loop sleeps ``interval_s`` and records
how late it wakes (the lag every timestamp of that moment carries), and CPU
times of the process and of the CPUs it may run on are read at both ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil

from inferx_core.config.cpus import client_cores


@dataclass(frozen=True)
class WorkerLoad:
    """One load worker process (``--workers N``): what it was asked, did, and cost."""

    worker: int
    host: str | None = None
    requests: int = 0  # measured requests it sent
    target_rate: float | None = None  # open loop: its share of the arrival rate (req/s)
    achieved_rate: float | None = None  # req/s it sent (first to last send)
    dispatch_lateness_p99_ms: float | None = None  # open loop: send minus scheduled, p99
    loop_lag_p95_ms: float | None = None
    loop_lag_max_ms: float | None = None
    cpu_fraction: float | None = None  # its CPU seconds / wall seconds in the window
    clock: str = "same_host"  # how its stamps map onto the run's clock
    clock_offset_ns: int = 0
    clock_uncertainty_ns: int | None = 0  # None: unknown (wall clocks)
    error: str | None = None  # why it ended early, when it did


@dataclass(frozen=True)
class ClientLoad:
    """How busy the client was during the window (see the module doc).

    With several worker processes the lag and CPU fraction are the busiest
    worker's (one saturated loop is enough to be late), ``total_cpu_cores`` is
    their sum and ``workers`` holds each.
    """

    loop_lag_p95_ms: float | None
    loop_lag_max_ms: float | None
    process_cpu_fraction: float | None  # CPU seconds of the client / wall seconds
    cores: tuple[int, ...]  # the CPUs the client may run on
    cores_busy_fraction: float | None  # busy share of those CPUs (every process)
    workers: tuple[WorkerLoad, ...] = ()
    total_cpu_cores: float | None = None  # CPU seconds of all workers / wall seconds

    def with_workers(self, workers: tuple[WorkerLoad, ...]) -> ClientLoad:
        """This host's core figures with the workers' own load (the busiest one leads)."""

        def busiest(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return max(known) if known else None

        cpus = [w.cpu_fraction for w in workers if w.cpu_fraction is not None]
        return ClientLoad(
            loop_lag_p95_ms=busiest([w.loop_lag_p95_ms for w in workers]),
            loop_lag_max_ms=busiest([w.loop_lag_max_ms for w in workers]),
            process_cpu_fraction=busiest([w.cpu_fraction for w in workers]),
            cores=self.cores,
            cores_busy_fraction=self.cores_busy_fraction,
            workers=workers,
            total_cpu_cores=sum(cpus) if cpus else None,
        )


def _busy(times: Any) -> tuple[float, float]:  # psutil's per-OS cpu_times namedtuple
    idle = times.idle + getattr(times, "iowait", 0.0)
    return sum(times) - idle, sum(times)


@dataclass
class ClientLoadMeter:
    """Ticks every ``interval_s`` on the load's loop: (when, how late, process CPU so far).

    The process CPU fraction is taken between the first and the last tick inside
    the measured window, so building prompts and starting the loop, which keep a
    core busy before any request, do not count against the load.
    """

    interval_s: float = 0.01
    ticks: list[tuple[int, float, float]] = field(default_factory=list)
    _cores0: list[tuple[float, float]] = field(default_factory=list)
    cores: tuple[int, ...] = ()

    def start(self) -> None:
        self.cores = client_cores()
        self._cores0 = self._core_times()

    def _core_times(self) -> list[tuple[float, float]]:
        per_cpu = psutil.cpu_times(percpu=True)
        return [_busy(per_cpu[c]) for c in self.cores if c < len(per_cpu)]

    async def probe(self) -> None:
        """Run beside the load on its loop until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.interval_s)
            lag = loop.time() - before - self.interval_s
            self.ticks.append((time.perf_counter_ns(), lag, time.process_time()))

    def stop(self, window_start_ns: int = 0, window_end_ns: int = 0) -> ClientLoad:
        """What was measured; only the ticks inside the window when one is given."""
        busy = total = 0.0
        for (b0, t0), (b1, t1) in zip(self._cores0, self._core_times(), strict=False):
            busy, total = busy + b1 - b0, total + t1 - t0
        end = window_end_ns or float("inf")
        inside = [t for t in self.ticks if window_start_ns <= t[0] <= end]
        lag_ms = np.maximum(np.asarray([t[1] for t in inside]), 0.0) * 1000 if inside else None
        cpu = None
        if len(inside) >= 2 and inside[-1][0] > inside[0][0]:
            wall_s = (inside[-1][0] - inside[0][0]) / 1e9
            cpu = (inside[-1][2] - inside[0][2]) / wall_s
        return ClientLoad(
            loop_lag_p95_ms=None if lag_ms is None else float(np.percentile(lag_ms, 95)),
            loop_lag_max_ms=None if lag_ms is None else float(lag_ms.max()),
            process_cpu_fraction=cpu,
            cores=self.cores,
            cores_busy_fraction=busy / total if total > 0 else None,
        )


@contextlib.contextmanager
def pinned(cpus: tuple[int, ...]) -> Iterator[None]:
    """Run the client (this process and its threads) on ``cpus``; restored after. No-op
    for an empty tuple or where affinity cannot be set."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
