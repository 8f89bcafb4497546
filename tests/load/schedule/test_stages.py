"""Load stages: levels run in order within one point, records carry their stage."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from inferx_core.load.prompts.sessions import Session, Turn
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import (
    LoadConfig,
    LoadScheduler,
    PreparedRequest,
    ScheduleResult,
)
from inferx_core.load.schedule.stages import Stage
from inferx_core.load.transport.client import ConnectionPool
from inferx_core.metrics.dimensions import stage_stats
from inferx_core.testing import ServerProcess

MakeRequest = Callable[..., PreparedRequest]


def endless(make_request: MakeRequest, **x_test: Any) -> Iterator[PreparedRequest]:
    for i in itertools.count():
        yield make_request(i, 2, **x_test)


def run(base_url: str, requests: Any, config: LoadConfig) -> ScheduleResult:
    async def go() -> ScheduleResult:
        async with ConnectionPool(base_url) as pool:
            return await LoadScheduler(pool, requests, config).run()

    return asyncio.run(go())


def peak_in_flight(records: list[RequestRecord], lo: int, hi: int) -> int:
    """Most requests in flight at any instant of [lo, hi)."""
    edges = sorted(
        [(max(r.send_ns, lo), 1) for r in records if r.send_ns < hi and r.end_ns > lo]
        + [(min(r.end_ns, hi), -1) for r in records if r.send_ns < hi and r.end_ns > lo]
    )
    live = peak = 0
    for _, d in edges:
        live += d
        peak = max(peak, live)
    return peak


def test_rate_stages_achieve_their_targets(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    stages = (Stage(1.5, rate=20.0), Stage(1.5, rate=4.0))
    res = run(server.base_url, endless(make_request), LoadConfig(request_rate=1.0, stages=stages))
    assert [w.index for w in res.stage_windows] == [0, 1]
    assert {r.stage for r in res.records} == {0, 1}
    rows = stage_stats(res.records, res.stage_windows)
    assert rows is not None
    fast, slow = rows
    assert (fast.target_rate, slow.target_rate) == (20.0, 4.0)
    # generous slack: a busy machine; the point is the step down between the stages
    assert 12 <= fast.dispatched_rps <= 28 and 1.3 <= slow.dispatched_rps <= 7
    assert fast.completed_rps > slow.completed_rps
    assert 1.3 <= fast.window_s <= 2.5
    assert res.stopped_by_duration  # the endless supply was cut by the last stage


def test_closed_stages_hold_their_concurrency(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    stages = (Stage(1.0, concurrency=1), Stage(1.0, concurrency=4))
    config = LoadConfig(max_concurrency=1, stages=stages)
    res = run(server.base_url, endless(make_request, ttft_ms=40), config)
    first, second = res.stage_windows
    one = [r for r in res.records if r.stage == 0]
    four = [r for r in res.records if r.stage == 1]
    assert peak_in_flight(one, first.start_ns, first.end_ns) == 1
    # the step up: four in flight (the stage-0 one still running counts among them)
    assert peak_in_flight(res.records, second.start_ns, second.end_ns) == 4
    assert len(four) > 2 * len(one)


def test_a_step_down_waits_for_the_extra_units(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    stages = (Stage(0.6, concurrency=4), Stage(0.8, concurrency=1))
    res = run(server.base_url, endless(make_request, ttft_ms=150), LoadConfig(stages=stages))
    _, second = res.stage_windows
    # after the step down no more than one new request starts while the old ones drain
    assert peak_in_flight(res.records, second.start_ns + int(0.35e9), second.end_ns) == 1


def test_stages_stop_when_the_requests_run_out(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    requests = [make_request(i, 2) for i in range(5)]
    stages = (Stage(5.0, concurrency=2), Stage(5.0, rate=10.0))
    res = run(server.base_url, requests, LoadConfig(stages=stages))
    assert len(res.records) == 5 and not res.stopped_by_duration
    assert len(res.stage_windows) == 1  # nothing was left for the second stage
    assert res.stage_windows[0].end_ns - res.stage_windows[0].start_ns < 4e9


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"duration_s": 1.0}, "exactly one of rate and concurrency"),
        ({"duration_s": 1.0, "rate": 1.0, "concurrency": 2}, "exactly one of rate and concurrency"),
        ({"duration_s": 0.0, "rate": 1.0}, "duration_s must be > 0"),
        ({"duration_s": 1.0, "rate": float("inf")}, "finite number > 0"),
        ({"duration_s": 1.0, "concurrency": 0}, "concurrency must be >= 1"),
    ],
)
def test_stage_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Stage(**kwargs)


def test_stop_ends_a_staged_run_at_once(server: ServerProcess, make_request: MakeRequest) -> None:
    async def go() -> tuple[ScheduleResult, float]:
        async with ConnectionPool(server.base_url) as pool:
            config = LoadConfig(stages=(Stage(30.0, concurrency=2),))
            scheduler = LoadScheduler(pool, endless(make_request, ttft_ms=50), config)
            asyncio.get_running_loop().call_later(0.5, scheduler.stop)
            t0 = time.monotonic()
            res = await scheduler.run()
            return res, time.monotonic() - t0

    res, took = asyncio.run(go())
    assert took < 5 and res.records and all(r.end_ns for r in res.records)


def test_sessions_run_whole_within_stages(server: ServerProcess) -> None:
    units = [
        Session(s, [Turn(f"u{s} {k}", 2, 2) for k in range(3)], "completions", "test-model",
                first_request_id=3 * s)
        for s in range(3)
    ]  # fmt: skip
    res = run(server.base_url, units, LoadConfig(stages=(Stage(5.0, concurrency=2),)))
    # the pool ran out in the stage, yet every session sent all its turns
    assert len(res.records) == 9 and all(r.ok for r in res.records)
    assert {r.stage for r in res.records} == {0}
