"""The validity verdict: each check against records made to break it, and where it shows."""

from __future__ import annotations

import argparse
import asyncio
import time
from types import SimpleNamespace

import pytest
from result_factory import make_model

from inferx_core.analysis.points import build_rows
from inferx_core.cli.validity import failed_points
from inferx_core.config.validity import ValidityLimits
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.client_load import ClientLoad, ClientLoadMeter
from inferx_core.metrics.summarize import summarize
from inferx_core.metrics.validity import assess

MS = 1_000_000


def rec(i: int, send: int, chunks: list[int], usage: int | None = None, **kw) -> RequestRecord:
    return RequestRecord(
        request_id=i, prompt_tokens=8, max_tokens=7, send_ns=send, chunk_ns=chunks,
        usage_output_tokens=usage if usage is not None else len(chunks),
        end_ns=(chunks[-1] if chunks else send) + MS, **kw,
    )  # fmt: skip


def healthy(n: int, start: int = 0, spacing: int = 20 * MS) -> list[RequestRecord]:
    return [
        rec(i, start + i * spacing, [start + i * spacing + (10 + 3 * k) * MS for k in range(5)])
        for i in range(n)
    ]


def verdict(records, *, rate=None, load=None, limits=None):
    flat = summarize(
        records,
        window_start_ns=min(r.send_ns for r in records),
        window_end_ns=max(r.end_ns for r in records),
        percentiles=[50.0, 99.0],
    )
    return assess(records, flat, open_loop_rate=rate, client_load=load, limits=limits)


def failing(v) -> set[str]:
    return {c.name for c in v.failing}


def test_healthy_point_is_valid_but_small_samples_are_marked() -> None:
    v = verdict(healthy(12))
    assert v.valid and not v.failing
    marks = {c.name: c for c in v.checks if c.severity == "marks" and not c.passed}
    assert "sample_size.p99_ttft_ms" in marks  # 12 samples: the p99 is their maximum
    assert marks["sample_size.p99_ttft_ms"].limit == 100
    assert marks["sample_size.p99_itl_ms"].value == 48  # 12 replies x 4 gaps
    v = verdict(healthy(30))  # 120 gaps: enough for an ITL p99, not a TTFT one
    names = {c.name for c in v.checks if not c.passed}
    assert "sample_size.p99_ttft_ms" in names and "sample_size.p99_itl_ms" not in names


def test_a_usage_claim_beyond_max_tokens_invalidates() -> None:
    records = healthy(6)
    records[2] = rec(2, 40 * MS, [50 * MS, 52 * MS, 54 * MS, 56 * MS], usage=1_000_000)
    v = verdict(records)
    assert failing(v) == {"usage_cross_check"}
    [check] = [c for c in v.checks if c.name == "usage_cross_check"]
    assert "request 2" in check.why and "max_tokens was 7" in check.why


def test_usage_below_the_chunks_streamed_invalidates_too() -> None:
    """Both ways: 4 content chunks cannot be 1 token, as a recorded reply or as one the
    decoder already failed (kind ``usage``), even when the error rate alone would pass."""
    records = healthy(40)
    records[2] = rec(2, 40 * MS, [50 * MS, 52 * MS, 54 * MS, 56 * MS], usage=1)
    refused = "usage says 1 completion tokens, but 4 content chunks were streamed"
    records[3] = rec(3, 60 * MS, [], error=refused, error_kind="usage")
    v = verdict(records)
    assert "usage_cross_check" in failing(v) and "error_rate" not in failing(v)
    [check] = [c for c in v.checks if c.name == "usage_cross_check"]
    assert check.value == 2 and "request 2" in check.why and "request 3" in check.why


def test_error_rate_above_five_percent_names_the_kinds() -> None:
    records = [*healthy(9), rec(9, 300 * MS, [], error="HTTP 429", error_kind="http_status")]
    v = verdict(records)
    assert failing(v) == {"error_rate"}
    [check] = [c for c in v.checks if c.name == "error_rate"]
    assert check.value == pytest.approx(0.1) and "http_status 1" in check.why
    loose = verdict(records, limits=ValidityLimits(max_error_rate=0.2))
    assert loose.valid


def test_replies_read_at_once_invalidate() -> None:
    records = healthy(40)  # 160 gaps, 40 replies: enough to judge
    for i in range(0, 40, 3):  # every chunk stamped at the same instant: TTFT == E2E
        t = records[i].chunk_ns[-1]
        records[i] = rec(i, records[i].send_ns, [t] * 5)
    v = verdict(records)
    assert {"whole_reply_at_once", "chunk_coalescing"} <= failing(v)


def test_a_tiny_run_is_marked_not_condemned_for_coalescing() -> None:
    records = healthy(4)
    records[1] = rec(1, records[1].send_ns, [records[1].chunk_ns[-1]] * 5)
    v = verdict(records)
    assert v.valid  # 16 gaps and 4 replies are too few to judge
    marks = {c.name: c for c in v.checks if not c.passed and c.severity == "marks"}
    assert (
        "whole_reply_at_once" in marks
        and "20 needed to invalidate" in marks["whole_reply_at_once"].why
    )


def test_open_loop_that_falls_behind_its_schedule_is_invalid() -> None:
    records = healthy(20, spacing=100 * MS)  # 10 req/s sent
    for i, r in enumerate(records):
        r.scheduled_ns = i * 5 * MS  # of a schedule at 200 req/s
    v = verdict(records, rate=200.0)
    assert {"achieved_rate", "dispatch_lateness"} <= failing(v)
    [rate] = [c for c in v.checks if c.name == "achieved_rate"]
    assert rate.value == pytest.approx(10.0 / 200.0)
    # sent on a schedule of 10 req/s, each 40 ms late: the rate kept, only lateness fails
    for r in records:
        r.scheduled_ns = r.send_ns - 40 * MS
    assert failing(verdict(records, rate=200.0)) == {"dispatch_lateness"}
    assert verdict(records, rate=10.0, limits=ValidityLimits(max_dispatch_lateness_p99_ms=50)).valid


def test_without_scheduled_times_the_nominal_rate_only_marks() -> None:
    v = verdict(healthy(20, spacing=100 * MS), rate=200.0)  # records of an older file
    [rate] = [c for c in v.checks if c.name == "achieved_rate"]
    assert not rate.passed and rate.severity == "marks" and v.valid
    assert "no scheduled times" in rate.why


def test_a_starved_client_is_invalid() -> None:
    starved = ClientLoad(
        loop_lag_p95_ms=45.0, loop_lag_max_ms=80.0, process_cpu_fraction=0.97,
        cores=(0,), cores_busy_fraction=1.0,
    )  # fmt: skip
    v = verdict(healthy(10), load=starved)
    assert failing(v) == {"client_loop_lag", "client_cpu"}
    # a busy core alone is a mark: the lag and coalescing checks tell its cost
    busy = ClientLoad(1.0, 2.0, 0.2, (0,), 1.0)
    assert verdict(healthy(10), load=busy).valid


def test_meter_sees_a_blocked_event_loop() -> None:
    meter = ClientLoadMeter(interval_s=0.005)

    async def run() -> None:
        probe = asyncio.ensure_future(meter.probe())
        await asyncio.sleep(0.05)
        time.sleep(0.12)  # the load's loop blocked, as by a CPU-bound callback
        await asyncio.sleep(0.05)
        probe.cancel()

    meter.start()
    asyncio.run(run())
    load = meter.stop()
    assert load.loop_lag_max_ms is not None and load.loop_lag_max_ms >= 100
    assert load.process_cpu_fraction is not None and load.cores


def _invalid(result):
    from inferx_core.metrics.validity import Validity, ValidityCheck
    from inferx_core.results.model import InvalidResult

    check = ValidityCheck(name="client_loop_lag", value=50.0, limit=20.0, passed=False, why="late")
    data = result.model_dump() | {"status": "invalid", "failure_reason": "invalid: late"}
    return InvalidResult.model_validate(data | {"validity": Validity(valid=False, checks=[check])})


def test_invalid_points_leave_the_frontier_unless_asked() -> None:
    from inferx_core.analysis.cost import CostOptions

    good = make_model("m-c1", tput_per_gpu=100.0, median_intvty=50.0, concurrency=1)
    fast = make_model("m-c8", tput_per_gpu=900.0, median_intvty=60.0, concurrency=8)
    rows = {r["point_id"]: r for r in build_rows([good, _invalid(fast)])}
    assert rows["m-c1"]["on_pareto"] and not rows["m-c8"]["on_pareto"]
    assert rows["m-c8"]["valid"] is False and rows["m-c8"]["validity_failing"] == "client_loop_lag"
    rows = {
        r["point_id"]: r
        for r in build_rows([good, _invalid(fast)], CostOptions(include_invalid=True))
    }
    assert rows["m-c8"]["on_pareto"] and not rows["m-c1"]["on_pareto"]


STATUSES = ("ok", "invalid", "failed")


def test_invalid_fails_the_command_only_when_required() -> None:
    outcomes = [SimpleNamespace(point_id=p, status=s) for p, s in zip("abc", STATUSES, strict=True)]
    assert failed_points(outcomes, argparse.Namespace(require_valid=False)) == ["c"]
    assert failed_points(outcomes, argparse.Namespace(require_valid=True)) == ["b", "c"]


def test_every_bench_point_carries_its_verdict(tmp_path) -> None:
    from inferx_core.config.models import BenchConfig, LoadProfile, Workload
    from inferx_core.pipeline.bench.api import run_bench
    from inferx_core.results.files import read_result
    from inferx_core.testing import ServerProcess

    with ServerProcess(ttft_ms=10, itl_ms=3) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload=Workload(isl=16, osl=6),
            load=LoadProfile(concurrency=[2], num_prompts=6),
            output_dir=tmp_path,
        )
        [outcome] = run_bench(config, progress=False)
    result = read_result(outcome.path)
    names = {c.name for c in result.validity.checks}
    assert {"error_rate", "usage_cross_check", "chunk_coalescing", "client_loop_lag"} <= names
    assert {"client_cpu", "client_cores_busy", "whole_reply_at_once"} <= names
    # the status follows the verdict: ok only when valid
    assert (result.status == "ok") == result.validity.valid
    assert result.status in ("ok", "invalid") and result.flat()["valid"] == result.validity.valid


def test_receive_lag_against_the_servers_own_stamps(tmp_path) -> None:
    from inferx_core.config.models import BenchConfig, LoadProfile, Workload
    from inferx_core.pipeline.bench.api import run_bench
    from inferx_core.testing import ServerProcess

    with ServerProcess(ttft_ms=5, itl_ms=2, stamp=True) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload=Workload(isl=16, osl=6),
            load=LoadProfile(concurrency=[2], num_prompts=6),
            output_dir=None,
        )
        [outcome] = run_bench(config, progress=False)
    measured = [r for r in outcome.records if not r.warmup]
    assert all(len(r.server_sent_ns) == len(r.chunk_ns) for r in measured)
    assert all(t >= s for r in measured for t, s in zip(r.chunk_ns, r.server_sent_ns, strict=True))
    [lag] = [c for c in outcome.result.validity.checks if c.name == "receive_lag"]
    assert 0 <= lag.value < 1000 and "stamped chunks" in lag.why
    # records crafted with a 30 ms lag fail it
    late = healthy(5)
    for r in late:
        r.server_sent_ns = [t - 30 * MS for t in r.chunk_ns]
    assert "receive_lag" in failing(verdict(late))


def test_a_reply_cut_short_of_ignore_eos_is_a_failed_request() -> None:
    """A shedding server answers at once with one token and finish_reason stop although
    ignore_eos asked for 7: each such reply fails as short_reply, in the error rate."""
    records = healthy(40)
    for r in records:
        r.max_tokens = 5  # each healthy reply is the 5 tokens asked
    for r in records[:10]:
        r.chunk_ns, r.usage_output_tokens, r.finish_reason = r.chunk_ns[:1], 1, "stop"
    flat = summarize(records, window_start_ns=0, window_end_ns=10**12, percentiles=[50.0])
    shed = assess(records, flat, open_loop_rate=None, client_load=None, ignore_eos=True)
    check = next(c for c in shed.checks if c.name == "error_rate")
    assert not check.passed and "short_reply 10" in check.why and check.value == 0.25
    plain = assess(records, flat, open_loop_rate=None, client_load=None, ignore_eos=False)
    assert "error_rate" not in {c.name for c in plain.failing}  # a natural stop is a reply


def test_client_token_counts_are_checked_against_the_servers_usage() -> None:
    records = healthy(20)
    for r in records:
        r.usage_prompt_tokens = 10  # the template's couple of tokens: fine
    assert "prompt_token_cross_check" not in failing(verdict(records))
    for r in records:  # an inflating /tokenize: 8 M client tokens for the server's 40
        r.prompt_tokens, r.usage_prompt_tokens = 8_000_000, 40
    v = verdict(records)
    check = next(c for c in v.failing if c.name == "prompt_token_cross_check")
    assert "8000000 prompt tokens, the server's usage 40" in check.why and not v.valid


def test_reasoning_tokens_larger_than_the_whole_reply_fail_the_usage_check() -> None:
    records = healthy(20)
    records[3].usage_reasoning_tokens = 500  # of a 5-token reply
    v = verdict(records)
    check = next(c for c in v.failing if c.name == "usage_cross_check")
    assert "500 reasoning tokens of a reply of 5" in check.why


def test_a_staged_point_that_fell_behind_its_schedule_is_invalid() -> None:
    """A stage at 200 req/s under a cap of 2 sent far fewer, late: the same open-loop checks
    as a plain --request-rate point, from the schedule the records carry."""
    records = healthy(60, spacing=13 * MS)  # sent every 13 ms ...
    for i, r in enumerate(records):
        r.scheduled_ns, r.stage = i * 5 * MS, 0  # ... of a schedule every 5 ms
    v = verdict(records)  # no nominal rate: a staged point
    assert {"achieved_rate", "dispatch_lateness"} <= failing(v), failing(v)
    plain = verdict(records, rate=200.0)
    assert failing(plain) == failing(v)


def _bursty(n: int, per_step: int) -> list[RequestRecord]:
    """Replies whose tokens arrive ``per_step`` at the same instant, as llama-server writes
    a speculative step's accepted tokens: (per_step - 1) of every per_step gaps are 0."""
    out = []
    for i in range(n):
        send = i * 20 * MS
        chunks = [send + (10 + 3 * (k // per_step)) * MS for k in range(6)]
        out.append(rec(i, send, chunks))
    return out


def test_a_speculative_steps_tokens_read_at_once_are_the_servers_doing() -> None:
    records = _bursty(40, per_step=2)  # 200 gaps, 60% of them 0
    flat = summarize(
        records, window_start_ns=0, window_end_ns=max(r.end_ns for r in records),
        percentiles=[50.0, 99.0],
    )  # fmt: skip
    plain = assess(records, flat, open_loop_rate=None, client_load=None)
    assert "chunk_coalescing" in failing(plain)  # no speculation: the client's reads
    spec = assess(records, flat, open_loop_rate=None, client_load=None, step_tokens=2.58)
    [check] = [c for c in spec.checks if c.name == "chunk_coalescing"]
    assert check.passed and check.limit == pytest.approx(1 - 1 / 2.58)
    assert "2.58 tokens per speculative step" in check.why
    # a length that allows less than the plain limit changes nothing; nor does a bad one
    for length in (1.0, 1.05, float("nan"), None):
        same = assess(records, flat, open_loop_rate=None, client_load=None, step_tokens=length)
        assert "chunk_coalescing" in failing(same)
