"""The open-loop verdict judges the client against the schedule it was given, not the nominal rate.

Schedules are drawn with the real arrivals code (``arrival_intervals``, as the
scheduler draws them) and judged by the real verdict (``assess``): a client
that sends on schedule, with a little non-negative jitter, is valid whatever
the draw; a client that falls behind is still caught.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.validity import ValidityLimits
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.arrivals import arrival_intervals
from inferx_core.load.schedule.client_load import ClientLoad, WorkerLoad
from inferx_core.metrics.schedule import schedule_keeping
from inferx_core.metrics.validity import Validity, assess

MS = 1_000_000
ORIGIN_NS = 10**12  # an arbitrary perf_counter_ns() origin


def drawn_schedule(n: int, rate: float, burstiness: float, seed: int) -> list[int]:
    """Arrival times in ns as the scheduler lays them: the first at the origin, then gaps."""
    gaps = arrival_intervals(rate, "poisson", seed, burstiness=burstiness)
    t = 0.0
    times = [0.0]
    for gap in itertools.islice(gaps, n - 1):
        t += gap
        times.append(t)
    return [ORIGIN_NS + int(s * 1e9) for s in times]


def records_sent_at(scheduled: list[int], sent: list[int], worker=None) -> list[RequestRecord]:
    return [
        RequestRecord(
            request_id=i,
            prompt_tokens=8,
            max_tokens=4,
            send_ns=s,
            scheduled_ns=due,
            chunk_ns=[s + 5 * MS, s + 7 * MS],
            usage_output_tokens=2,
            end_ns=s + 8 * MS,
            worker=worker,
        )
        for i, (due, s) in enumerate(zip(scheduled, sent, strict=True))
    ]


def on_time(scheduled: list[int], jitter_ms: float, rng: random.Random) -> list[int]:
    """Sends exactly on schedule, each a little late (never early): a healthy client."""
    return [t + int(rng.uniform(0, jitter_ms) * MS) for t in scheduled]


def slowed(scheduled: list[int], rate_share: float) -> list[int]:
    """Sends at ``rate_share`` of the schedule's rate: lateness grows with every arrival."""
    first = scheduled[0]
    return [first + int((t - first) / rate_share) for t in scheduled]


def judge(records: list[RequestRecord], rate: float, load: ClientLoad | None = None) -> Validity:
    return assess(records, {}, open_loop_rate=rate, client_load=load)


def nominal_ratio_fails(scheduled: list[int], rate: float) -> bool:
    """What the verdict did before: the drawn schedule's own rate against the nominal one."""
    return (len(scheduled) - 1) / ((scheduled[-1] - scheduled[0]) / 1e9) / rate < 0.9


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
@pytest.mark.parametrize(
    ("n", "rate"),
    [
        (20, 40.0),
        (40, 40.0),
        (200, 40.0),
        # 5 million records judged per burstiness: 60-90 s each, so `make test` runs them
        # and a contributor's `make test-fast` (not slow) leaves them out
        pytest.param(5000, 1000.0, marks=pytest.mark.slow),
    ],
)
def test_a_client_on_schedule_is_valid_in_every_one_of_1000_draws(
    n: int, rate: float, burstiness: float
) -> None:
    rng = random.Random(n * 10 + burstiness)
    invalid = []
    false_alarms_before = 0
    for seed in range(1000):
        scheduled = drawn_schedule(n, rate, burstiness, seed)
        verdict = judge(records_sent_at(scheduled, on_time(scheduled, 5.0, rng)), rate)
        if not verdict.valid:
            invalid.append((seed, verdict.summary()))
        false_alarms_before += nominal_ratio_fails(scheduled, rate)
    assert len(invalid) <= 1, invalid[:3]  # the issue asks 999 of 1000; none fail
    if (n, burstiness) == (40, 1.0):
        # the case: judged against the nominal rate about a quarter were invalid
        assert 150 <= false_alarms_before <= 350


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(20, 5000),
    burstiness=st.floats(0.25, 4.0),
    rate=st.sampled_from([1.0, 10.0, 40.0, 200.0, 1000.0]),
    jitter_ms=st.floats(0.0, 10.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_drawn_schedule_kept_on_time_is_valid(
    n: int, burstiness: float, rate: float, jitter_ms: float, seed: int
) -> None:
    scheduled = drawn_schedule(n, rate, burstiness, seed)
    sent = on_time(scheduled, jitter_ms, random.Random(seed))
    verdict = judge(records_sent_at(scheduled, sent), rate)
    assert verdict.valid, verdict.summary()


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
@pytest.mark.parametrize(("n", "draws"), [(40, 1000), (1000, 50), (5000, 10)])
def test_a_client_sending_at_70_percent_of_its_schedule_is_caught(
    n: int, draws: int, burstiness: float
) -> None:
    missed = []
    for seed in range(draws):
        scheduled = drawn_schedule(n, 40.0, burstiness, seed)
        verdict = judge(records_sent_at(scheduled, slowed(scheduled, 0.7)), 40.0)
        failing = {c.name for c in verdict.failing}
        if "achieved_rate" not in failing:
            missed.append(seed)
        else:
            [rate] = [c for c in verdict.checks if c.name == "achieved_rate"]
            assert rate.value == pytest.approx(0.7, rel=1e-3)
            assert "fell behind" in rate.why and "--workers" in rate.why
    assert len(missed) <= draws // 1000, missed[:5]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(20, 2000),
    burstiness=st.floats(0.25, 4.0),
    share=st.floats(0.3, 0.85),
    seed=st.integers(0, 2**32 - 1),
)
def test_falling_behind_by_more_than_the_lateness_allowance_is_invalid(
    n: int, burstiness: float, share: float, seed: int
) -> None:
    scheduled = drawn_schedule(n, 40.0, burstiness, seed)
    sent = slowed(scheduled, share)
    verdict = judge(records_sent_at(scheduled, sent), 40.0)
    keeping = schedule_keeping(records_sent_at(scheduled, sent))
    assert keeping is not None
    if keeping.stretch_ms > ValidityLimits().max_dispatch_lateness_p99_ms:
        assert not verdict.valid
        assert {"achieved_rate", "dispatch_lateness"} & {c.name for c in verdict.failing}


def test_a_drawn_schedule_below_the_nominal_rate_is_not_the_clients_fault() -> None:
    # a slow draw: 40 arrivals "at 40 req/s" spanning far more than one second
    seed = next(s for s in range(1000) if nominal_ratio_fails(drawn_schedule(40, 40.0, 1.0, s), 40))
    scheduled = drawn_schedule(40, 40.0, 1.0, seed)
    verdict = judge(records_sent_at(scheduled, scheduled), 40.0)
    [rate] = [c for c in verdict.checks if c.name == "achieved_rate"]
    assert rate.passed and rate.value == pytest.approx(1.0)
    assert "drawn schedule of 40 arrivals" in rate.why and "nominal 40" in rate.why


def two_workers(late_worker: bool) -> tuple[list[RequestRecord], ClientLoad]:
    """Arrivals dealt alternately to two workers; worker 1 at 60% of its share if late."""
    scheduled = drawn_schedule(200, 40.0, 1.0, seed=7)
    mine = [scheduled[0::2], scheduled[1::2]]
    records = records_sent_at(mine[0], mine[0], worker=0)
    sent1 = slowed(mine[1], 0.6) if late_worker else mine[1]
    records += records_sent_at(mine[1], sent1, worker=1)
    # the workers' nominal shares (20 req/s each) against what their draws held
    loads = tuple(
        WorkerLoad(w, requests=100, target_rate=20.0, achieved_rate=16.0, loop_lag_p95_ms=1.0)
        for w in (0, 1)
    )
    return records, ClientLoad(None, None, None, (0, 1), None).with_workers(loads)


def test_each_worker_is_judged_against_its_share_of_the_drawn_schedule() -> None:
    records, load = two_workers(late_worker=False)
    check = {c.name: c for c in judge(records, 40.0, load).checks}["client_bottleneck"]
    assert check.passed, check.why  # 16 of a nominal 20 req/s is the draw, not the worker
    records, load = two_workers(late_worker=True)
    verdict = judge(records, 40.0, load)
    check = {c.name: c for c in verdict.checks}["client_bottleneck"]
    assert not check.passed and not verdict.valid
    assert "worker 1" in check.why and "worker 0" not in check.why and "(60%)" in check.why
