"""What a run held, from its records: in flight (peak, time-weighted), arrivals, backlog."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.search_held import not_held, reached

MS = 1_000_000


def _rec(i: int, send_ms: float, end_ms: float) -> RequestRecord:
    send, end = int((1000 + send_ms) * MS), int((1000 + end_ms) * MS)  # perf_counter > 0
    return RequestRecord(
        request_id=i, prompt_tokens=8, max_tokens=4, send_ns=send, chunk_ns=[end], end_ns=end
    )


def _closed_loop(slots: int, prompts: int, service_ms: float = 100.0) -> list[RequestRecord]:
    """A closed loop of ``slots`` over ``prompts`` requests of ``service_ms`` each."""
    free = [0.0] * slots
    out = []
    for i in range(prompts):
        k = min(range(slots), key=free.__getitem__)
        out.append(_rec(i, free[k], free[k] + service_ms))
        free[k] += service_ms
    return out


@settings(max_examples=60, deadline=None)
@given(level=st.integers(1, 64), prompts=st.integers(1, 300))
def test_a_closed_loop_holds_its_level_only_with_enough_prompts(level: int, prompts: int) -> None:
    got = reached(_closed_loop(min(level, prompts), prompts))
    why = not_held(got, "concurrency", level)
    assert got is not None and got.peak_in_flight == min(level, prompts)
    if prompts < level:  # never that many in flight: a pass there is not a pass at the level
        assert why is not None and f"at most {prompts} requests" in why
    else:
        assert why is None, why


def test_a_client_that_cannot_refill_its_slots_does_not_hold_the_level() -> None:
    # 8 asked; the client sends the 8 at once, then one at a time (a slow client)
    recs = [_rec(i, 0, 100) for i in range(8)]
    recs += [_rec(8 + i, 100 + 100 * i, 200 + 100 * i) for i in range(40)]
    why = not_held(reached(recs), "concurrency", 8)
    assert why is not None and "on average" in why


def test_a_rate_probe_is_held_at_its_arrival_rate_and_a_growing_backlog_is_seen() -> None:
    # 20 req/s for 10 s; a server that keeps up (50 ms each) vs one that serves 10 req/s
    keeps = [_rec(i, 50 * i, 50 * i + 50) for i in range(200)]
    falls = [_rec(i, 50 * i, 100 * (i + 1)) for i in range(200)]  # ends drift later
    ok, behind = reached(keeps), reached(falls)
    assert ok is not None and behind is not None
    assert not_held(ok, "rate", 20) is None and not ok.backlog_grows
    assert behind.backlog_grows and behind.backlog_last > behind.backlog_middle
    assert not_held(ok, "rate", 40) is not None  # 20 req/s is not 40


def test_a_warmup_still_running_is_load_but_not_a_measured_request() -> None:
    """The server had it in flight (a closed loop's first measured requests go out as its
    warmups end: 8 prompts at c8 after 8 warmups hold 8); it is no measured request."""
    recs = _closed_loop(4, 20)
    warm = _rec(99, 0, 5000)
    warm.warmup = True
    never = RequestRecord(request_id=100, prompt_tokens=8, max_tokens=4)
    got = reached([*recs, warm, never])
    assert got is not None and got.requests == 20 and got.peak_in_flight == 5
    staggered = [_rec(i, 0, 100 + 10 * i) for i in range(8)]  # 8 warmups ending in turn
    for w in staggered:
        w.warmup = True
    measured = [_rec(8 + i, 100 + 10 * i, 5000) for i in range(8)]  # sent as each ends
    assert not_held(reached(staggered + measured), "concurrency", 8) is None
    assert reached([never]) is None and not_held(None, "concurrency", 1) == "no request was sent"
