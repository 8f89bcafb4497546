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

import numpy as np
import psutil

from inferx_core.config.cpus import client_cores


@dataclass(frozen=True)
class ClientLoad:
    """How busy the client was during the window (see the module doc)."""

    loop_lag_p95_ms: float | None
    loop_lag_max_ms: float | None
    process_cpu_fraction: float | None  # CPU seconds of the client / wall seconds
    cores: tuple[int, ...]  # the CPUs the client may run on
    cores_busy_fraction: float | None  # busy share of those CPUs (every process)


def _busy(times: psutil._common.scputimes) -> tuple[float, float]:  # type: ignore[name-defined]
    idle = times.idle + getattr(times, "iowait", 0.0)
    return sum(times) - idle, sum(times)


@dataclass
class ClientLoadMeter:
    interval_s: float = 0.01
    lags: list[tuple[int, float]] = field(default_factory=list)  # (perf ns, lag s)
    _cpu0: float = 0.0
    _wall0: float = 0.0
    _cores0: list[tuple[float, float]] = field(default_factory=list)
    cores: tuple[int, ...] = ()

    def start(self) -> None:
        self.cores = client_cores()
        t = os.times()
        self._cpu0, self._wall0 = t.user + t.system, time.perf_counter()
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
            self.lags.append((time.perf_counter_ns(), loop.time() - before - self.interval_s))

    def stop(self, window_start_ns: int = 0, window_end_ns: int = 0) -> ClientLoad:
        """What was measured; lags only inside the window when one is given."""
        t = os.times()
        wall = time.perf_counter() - self._wall0
        cpu = (t.user + t.system - self._cpu0) / wall if wall > 0 else None
        busy = total = 0.0
        for (b0, t0), (b1, t1) in zip(self._cores0, self._core_times(), strict=False):
            busy, total = busy + b1 - b0, total + t1 - t0
        end = window_end_ns or float("inf")
        lags = [lag for when, lag in self.lags if window_start_ns <= when <= end]
        lag_ms = np.maximum(np.asarray(lags, dtype=float), 0.0) * 1000 if lags else None
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
