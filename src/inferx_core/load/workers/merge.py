"""The workers' records as one load run: one timeline on the parent's clock.

Each worker's stamps are moved onto the parent's ``perf_counter_ns`` by its
:class:`~inferx_core.load.workers.clock.ClockMap` (no change on the same
host); measured records are ordered by send time (dispatch order, as one
process appends them), warmup records apart. The window opens at the first
measured dispatch of any worker and closes at the last measured completion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.client_load import WorkerLoad
from inferx_core.load.schedule.scheduler import ScheduleResult
from inferx_core.load.workers.clock import ClockMap
from inferx_core.load.workers.plan import LoadSplit, WorkerShare


def clock_of(summary: Mapping[str, Any] | None) -> ClockMap:
    clock = (summary or {}).get("clock") or {}
    return ClockMap(
        clock.get("method", "same_host"),
        int(clock.get("offset_ns", 0)),
        clock.get("uncertainty_ns", 0),
    )


def _to_parent(record: RequestRecord, clock: ClockMap) -> RequestRecord:
    if clock.offset_ns == 0:
        return record
    move = clock.to_parent
    record.send_ns = move(record.send_ns)
    record.end_ns = move(record.end_ns)
    record.chunk_ns = [move(t) for t in record.chunk_ns]
    if record.scheduled_ns is not None:
        record.scheduled_ns = move(record.scheduled_ns)
    return record


def _worker_load(
    share: WorkerShare,
    records: Sequence[RequestRecord],
    summary: Mapping[str, Any] | None,
    exit_note: str | None,
) -> WorkerLoad:
    """What one worker was asked, did and cost."""
    measured = [r for r in records if not r.warmup and r.send_ns]
    # arrivals: a multi-turn session arrives once (its turn 0), as the open-loop check counts
    sends = sorted(r.send_ns for r in measured if not r.turn)
    achieved = None
    if len(sends) >= 2 and sends[-1] > sends[0]:
        achieved = (len(sends) - 1) / ((sends[-1] - sends[0]) / 1e9)
    late = [(r.send_ns - r.scheduled_ns) / 1e6 for r in measured if r.scheduled_ns is not None]
    summary = summary or {}
    clock = clock_of(summary)
    error = summary.get("error") or exit_note
    return WorkerLoad(
        worker=share.index,
        host=summary.get("host"),
        requests=len(measured),
        target_rate=share.target_rate,
        achieved_rate=achieved,
        dispatch_lateness_p99_ms=float(np.percentile(late, 99)) if late else None,
        loop_lag_p95_ms=summary.get("loop_lag_p95_ms"),
        loop_lag_max_ms=summary.get("loop_lag_max_ms"),
        cpu_fraction=summary.get("cpu_fraction"),
        clock=clock.method,
        clock_offset_ns=clock.offset_ns,
        clock_uncertainty_ns=clock.uncertainty_ns,
        error=error.strip().splitlines()[-1] if error else None,
    )


def merge(
    split: LoadSplit,
    records: Sequence[Sequence[RequestRecord]],
    summaries: Sequence[Mapping[str, Any] | None],
    exit_notes: Sequence[str | None],
    *,
    unix_offset_ns: int,
) -> tuple[ScheduleResult, tuple[WorkerLoad, ...]]:
    """One :class:`ScheduleResult` from every worker's records and summary (one per share)."""
    result = ScheduleResult(unix_offset_ns=unix_offset_ns)
    loads = []
    starts = []
    for share, mine, summary, note in zip(
        split.shares, records, summaries, exit_notes, strict=True
    ):
        clock = clock_of(summary)
        moved = [_to_parent(r, clock) for r in mine]
        for r in moved:
            r.worker = share.index
            (result.warmup_records if r.warmup else result.records).append(r)
        if summary:
            result.cancelled |= bool(summary.get("cancelled"))
            result.stopped_by_duration |= bool(summary.get("stopped_by_duration"))
            if summary.get("window_start_ns"):
                starts.append(clock.to_parent(int(summary["window_start_ns"])))
        loads.append(_worker_load(share, moved, summary, note))
    result.records.sort(key=lambda r: (r.send_ns or math.inf, r.request_id))
    result.warmup_records.sort(key=lambda r: (r.send_ns or math.inf, r.request_id))
    sent = [r.send_ns for r in result.records if r.send_ns]
    result.window_start_ns = min(starts or sent or [0])
    ends = [r.end_ns for r in result.records if r.end_ns]
    result.window_end_ns = max(ends) if ends else result.window_start_ns
    # the plan left out the arrivals after the duration: where every worker ran
    # its list out, the load was cut by the duration as one process cuts it
    result.stopped_by_duration |= split.cut_by_duration and not result.cancelled
    return result, tuple(loads)
