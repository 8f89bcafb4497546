"""One worker process: ``python -m inferx_core.load.workers PLAN``.

It maps its clock onto the parent's, connects and runs its warmup share,
writes ``ready-W.json``, waits for ``go.json`` (the common start), sleeps
until that instant and runs its share of the measured load with
:class:`~inferx_core.load.schedule.scheduler.LoadScheduler` from that origin. Every
finished record is appended to ``records-W.jsonl`` and flushed at once, so a
worker that dies loses only what was in flight. SIGTERM and SIGINT cancel
the load the way Ctrl-C cancels one process: in-flight records are marked
``cancelled`` and written too. ``done-W.json`` says how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.client_load import ClientLoadMeter
from inferx_core.load.schedule.scheduler import LoadScheduler, ScheduleResult
from inferx_core.load.transport.client import ConnectionPool
from inferx_core.load.transport.event_loop import run as run_event_loop
from inferx_core.load.workers.clock import ClockMap, clock_map, unix_offset_ns
from inferx_core.load.workers.files import (
    GO_NAME,
    WorkerPlan,
    done_path,
    read_json,
    read_plan,
    ready_path,
    record_line,
    records_path,
    write_json_atomic,
)

GO_POLL_S = 0.002
PARENT_POLL_S = 0.5
#: A worker that never hears "go" gives up (the parent died before starting it).
GO_TIMEOUT_S = 600.0


class RecordWriter:
    """Appends each record once, as a flushed JSON line (the parent tails the file)."""

    def __init__(self, path: Path, worker: int) -> None:
        self._file: IO[str] = path.open("a", encoding="utf-8")
        self._worker = worker
        self._written: set[int] = set()

    def write(self, record: RequestRecord) -> None:
        if id(record) in self._written:
            return
        self._written.add(id(record))
        record.worker = self._worker
        self._file.write(record_line(record))
        self._file.flush()

    def write_all(self, records: list[RequestRecord]) -> None:
        for record in records:
            self.write(record)

    def close(self) -> None:
        self._file.close()


async def _wait_for_go(run_dir: Path) -> dict[str, Any]:
    deadline = time.monotonic() + GO_TIMEOUT_S
    path = run_dir / GO_NAME
    while time.monotonic() < deadline:
        go = read_json(path)
        if isinstance(go, dict):
            return go
        await asyncio.sleep(GO_POLL_S)
    raise TimeoutError(f"no {GO_NAME} from the parent within {GO_TIMEOUT_S:.0f} s")


def _origin_ns(go: dict[str, Any], clock: ClockMap) -> int:
    """The common start on this worker's perf_counter clock."""
    if clock.method == "wall_clock":
        return int(go["start_unix_ns"]) - unix_offset_ns()
    return int(go["start_perf_ns"]) - clock.offset_ns


class _Run:
    """The state a worker reports in ``done-W.json`` whatever ends it."""

    def __init__(self, plan: WorkerPlan) -> None:
        self.plan = plan
        self.run_dir = Path(plan.run_dir)
        self.index = plan.share.index
        self.writer = RecordWriter(records_path(self.run_dir, self.index), self.index)
        self.meter = ClientLoadMeter(interval_s=plan.meter_interval_s)
        self.clock = ClockMap("same_host")
        self.clock_note: str | None = None
        self.warm: LoadScheduler | None = None
        self.load: LoadScheduler | None = None
        self.origin_ns = 0

    async def run(self) -> None:
        plan, share = self.plan, self.plan.share
        self.clock, self.clock_note = clock_map(
            plan.parent_boot, plan.parent_unix_offset, plan.clock_address
        )
        self.meter.start()
        timing = plan.server_timing
        async with ConnectionPool(
            plan.base_url, headers=plan.headers, server_timing=timing
        ) as pool:
            self.warm = LoadScheduler(
                pool, iter(()), share.config, warmup=share.warmup, on_complete=self.writer.write
            )
            await self.warm.run()
            write_json_atomic(ready_path(self.run_dir, self.index), {"worker": self.index})
            self.origin_ns = _origin_ns(await _wait_for_go(self.run_dir), self.clock)
            if share.config.freeze_gc and gc.get_freeze_count() == 0:
                gc.collect()  # before the start, not after it (the scheduler then skips it)
                gc.freeze()
            await asyncio.sleep(max(self.origin_ns - time.perf_counter_ns(), 0) / 1e9)
            self.load = LoadScheduler(
                pool, share.requests(), share.config, on_complete=self.writer.write
            )
            probe = asyncio.ensure_future(self.meter.probe())
            try:
                await self.load.run(origin_ns=self.origin_ns)
            finally:
                probe.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await probe

    def summary(self, error: str | None) -> dict[str, Any]:
        """Written to ``done-W.json``: in-flight records are flushed first."""
        result = self.load.result if self.load is not None else ScheduleResult()
        if self.warm is not None:
            self.writer.write_all(self.warm.result.warmup_records)
        self.writer.write_all(result.records)
        load = self.meter.stop(result.window_start_ns, result.window_end_ns)
        return {
            "worker": self.index,
            "host": socket.gethostname(),
            "error": error,
            "cancelled": result.cancelled,
            "stopped_by_duration": result.stopped_by_duration,
            "window_start_ns": result.window_start_ns,
            "window_end_ns": result.window_end_ns,
            "origin_ns": self.origin_ns,
            "unix_offset_ns": unix_offset_ns(),
            "clock": {
                "method": self.clock.method,
                "offset_ns": self.clock.offset_ns,
                "uncertainty_ns": self.clock.uncertainty_ns,
                "note": self.clock_note,
            },
            "loop_lag_p95_ms": load.loop_lag_p95_ms,
            "loop_lag_max_ms": load.loop_lag_max_ms,
            "cpu_fraction": load.process_cpu_fraction,
            "cpu_s": time.process_time(),
        }


async def _orphan_watch(task: asyncio.Task[Any], parent_pid: int) -> None:
    """A local parent that died without stopping us: stop (its run is over)."""
    while True:
        await asyncio.sleep(PARENT_POLL_S)
        if os.getppid() != parent_pid:
            task.cancel()
            return


async def _main(run: _Run) -> None:
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, task.cancel)
    parent_pid = run.plan.extra.get("parent_pid")
    watch = asyncio.ensure_future(_orphan_watch(task, parent_pid)) if parent_pid else None
    try:
        await run.run()
    except asyncio.CancelledError:
        pass  # a stop from the parent (or the user): what finished is kept
    finally:
        if watch is not None:
            watch.cancel()


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the plan at ``argv[0]``; 0 when it ran (stopped or not), 1 on error."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m inferx_core.load.workers PLAN", file=sys.stderr)
        return 2
    run = _Run(read_plan(Path(args[0])))
    error = None
    try:
        run_event_loop(_main(run))
    except Exception:
        error = traceback.format_exc(limit=8)
        print(error, file=sys.stderr)
    try:
        summary = run.summary(error)
    finally:
        run.writer.close()
    write_json_atomic(done_path(run.run_dir, run.index), summary)
    return 0 if error is None else 1
