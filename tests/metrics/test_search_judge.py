"""One verdict for every point: short replies fail, a failed or invalid point is a fail for
the server's doing, a pass needs its level held, a growing backlog fails a rate."""

from __future__ import annotations

import math

from inferx_core.config.slo import SloTarget
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.search_judge import Level, judge_point

MS = 1_000_000
TARGET = SloTarget(limits={"ttft_ms": 100})


def _rec(i: int, send_ms: float, dur_ms: float = 50, **kw) -> RequestRecord:
    send = int((1000 + send_ms) * MS)
    rec = RequestRecord(request_id=i, prompt_tokens=8, max_tokens=16, send_ns=send, **kw)
    if "error" not in kw:
        rec.chunk_ns = [send + 10 * MS, send + int(dur_ms * MS)]
        rec.usage_output_tokens = kw.get("usage_output_tokens", 16)
        rec.finish_reason = rec.finish_reason or "length"
    rec.end_ns = send + int(dur_ms * MS)
    return rec


def _loop(n: int, slots: int, **kw) -> list[RequestRecord]:
    return [_rec(i, 50 * (i // slots), **kw) for i in range(n)]


def test_a_held_level_that_meets_the_slo_passes() -> None:
    v = judge_point("ok", None, {}, _loop(32, 8), TARGET, level=Level("concurrency", 8))
    assert v.score is not None and v.score <= 1


def test_a_level_never_reached_is_not_a_pass() -> None:
    # 6 prompts can never put 64 requests in flight: the server held 6, not 64
    v = judge_point("ok", None, {}, _loop(6, 6), TARGET, level=Level("concurrency", 64))
    assert v.score is None and v.reason is not None and "not held" in v.reason


def test_a_shedding_server_fails_where_it_sheds() -> None:
    shed = [_rec(i, 50 * (i // 8), usage_output_tokens=1, finish_reason="stop") for i in range(32)]
    flat = {"ignore_eos": True}
    v = judge_point("ok", None, flat, shed, TARGET, level=Level("concurrency", 8))
    assert v.score == math.inf  # a reply cut short is a failed request
    # without ignore_eos a natural stop is a reply as asked
    v = judge_point("ok", None, {"ignore_eos": False}, shed, TARGET, level=Level("concurrency", 8))
    assert v.score is not None and v.score <= 1


def test_an_invalid_or_failed_point_is_a_fail_when_the_server_is_answerable() -> None:
    flat = {"validity_failing": ["error_rate"]}
    recs = _loop(32, 4)
    v = judge_point("invalid", "error_rate: 27 of 32 failed", flat, recs, TARGET)
    assert v.score == math.inf and "error_rate" in (v.binding or "")
    v = judge_point("failed", "no request completed successfully", {}, None, TARGET)
    assert v.score == math.inf
    starved = {"validity_failing": ["client_loop_lag"]}
    v = judge_point("invalid", "client_loop_lag: 80 ms", starved, recs, TARGET)
    assert v.score is None  # the client, not the server: no verdict


def test_a_server_that_stopped_answering_is_not_judged() -> None:
    gone = [_rec(i, i, error="refused", error_kind="connection") for i in range(8)]
    v = judge_point("failed", "no request completed successfully", {}, gone, TARGET)
    assert v.score is None and "stopped answering" in (v.reason or "")


def test_a_rate_probe_with_a_growing_backlog_fails_and_a_short_one_is_uncertain() -> None:
    at = Level("rate", 20, min_seconds=10)
    keeps = [_rec(i, 50 * i, 50) for i in range(200)]
    v = judge_point("ok", None, {}, keeps, TARGET, level=at)
    assert v.score is not None and v.score <= 1 and v.note is None
    falls = [_rec(i, 50 * i, 50 * (i + 1) - 50 * i + 10 * i) for i in range(200)]
    v = judge_point("ok", None, {}, falls, SloTarget(limits={"tpot_ms": 1e6}), level=at)
    assert v.score == math.inf and "backlog" in (v.binding or "")
    short = [_rec(i, 50 * i, 50) for i in range(20)]  # 1 s of a 10 s probe
    v = judge_point("ok", None, {}, short, TARGET, level=at)
    assert v.note is not None and "shorter than the 10.0 s asked" in v.note


def test_a_server_that_died_during_the_run_is_not_judged() -> None:
    """Answered, then every request from the first refused connection on failed: the run
    says nothing about the load (an invalid point from resets now and then still fails)."""
    ok = _loop(10, 2)
    dead = [_rec(10 + i, 300 + i, error="reset", error_kind="connection") for i in range(20)]
    flat = {"validity_failing": ["error_rate"]}
    v = judge_point("invalid", "error_rate: 20 of 30", flat, ok + dead, TARGET)
    assert v.score is None and "request 10 and every one after it" in (v.reason or "")
    flaky = ok + dead[:5] + [_rec(40, 400)]  # a reset, then answers again
    v = judge_point("invalid", "error_rate: 5 of 16", flat, flaky, TARGET)
    assert v.score == math.inf


def test_a_server_gone_before_the_probe_is_not_judged_though_nothing_was_sent() -> None:
    """A connect refused is recorded unsent (send_ns 0, its end_ns the refusal): a server
    that died between probes made the next level a fail ("nothing completed"); it is not
    judged, as a server that stopped answering (verifier finding F9)."""
    refused = []
    for i in range(16):
        rec = RequestRecord(request_id=i, prompt_tokens=8, max_tokens=16)
        rec.error, rec.error_kind = "[Errno 111] Connection refused", "connection"
        rec.end_ns = (2000 + i) * MS
        refused.append(rec)
    v = judge_point("failed", "no request completed successfully", {}, refused, TARGET)
    assert v.score is None and "stopped answering" in (v.reason or "")
    assert "Connection refused" in (v.reason or "")


def test_a_rate_point_no_search_sized_is_uncertain_when_too_short_to_tell() -> None:
    """A sweep or imported rate point has no run time asked of it: the judge asks what the
    search would (for a 100 ms TTFT limit, 5 s), so 20 requests in 0.56 s at 34 req/s are
    uncertain, not a clean pass (verifier finding F8: report --slo claimed r34 "found")."""
    short = [_rec(i, i * 1000 / 34, dur_ms=20) for i in range(20)]
    v = judge_point("ok", None, {}, short, TARGET, level=Level("rate", 34.0))
    assert v.score is not None and v.score <= 1
    assert v.note is not None and "shorter than the 5.0 s asked" in v.note
    long = [_rec(i, i * 1000 / 34, dur_ms=20) for i in range(34 * 6)]
    assert judge_point("ok", None, {}, long, TARGET, level=Level("rate", 34.0)).note is None
