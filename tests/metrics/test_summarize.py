"""Tests for inferx_core.metrics.summarize: golden hand-computed values and properties."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.analysis.cost import cost_per_million_tokens, tokens_per_mw
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.summarize import (
    LATENCY_METRICS,
    normalize_slos,
    request_metrics,
    summarize,
)

MS = 1_000_000
S = 1_000_000_000


def golden_records() -> list[RequestRecord]:
    """Three successes, one failure, one warmup (times in ms).

    r1: send 0,   chunks 100,120,140,160,180; 5 tokens (usage)  TTFT 100 E2E 180 TPOT 20
    r2: send 100, chunks 300,330,400;         3 tokens (usage)  TTFT 200 E2E 300 TPOT 50
    r3: send 200, chunks 250,290;             5 tokens (usage)  TTFT 50  E2E 90  TPOT 10
    """
    return [
        RequestRecord(
            1,
            10,
            5,
            send_ns=0,
            chunk_ns=[100 * MS, 120 * MS, 140 * MS, 160 * MS, 180 * MS],
            usage_output_tokens=5,
            usage_prompt_tokens=12,
        ),
        RequestRecord(
            2,
            20,
            3,
            send_ns=100 * MS,
            chunk_ns=[300 * MS, 330 * MS, 400 * MS],
            usage_output_tokens=3,
            usage_prompt_tokens=22,
        ),
        RequestRecord(
            3,
            30,
            5,
            send_ns=200 * MS,
            chunk_ns=[250 * MS, 290 * MS],
            usage_output_tokens=5,
            usage_prompt_tokens=32,
        ),
        RequestRecord(4, 40, 5, send_ns=300 * MS, error="read timeout", error_kind="timeout"),
        # Warmup: would wreck every number if it were counted.
        RequestRecord(
            5,
            1000,
            5,
            send_ns=0,
            chunk_ns=[1 * S, 9 * S],
            usage_output_tokens=500,
            warmup=True,
        ),
    ]


def golden(**kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"window_start_ns": 0, "window_end_ns": 2 * S, "num_gpus": 2}
    args.update(kw)
    return summarize(golden_records(), **args)


def test_golden_counts_and_throughput() -> None:
    r = golden()
    assert r["duration"] == 2.0
    assert r["completed"] == 3
    assert r["failed"] == 1
    assert r["total_requests"] == 4
    assert r["warmup_excluded"] == 1
    assert r["total_input_tokens"] == 60
    assert r["total_input_tokens_server"] == 66
    assert r["total_output_tokens"] == 13
    assert r["output_tokens_estimated"] is False
    assert r["output_tokens_estimated_requests"] == 0
    assert r["request_throughput"] == 1.5
    assert r["output_throughput"] == 6.5
    assert r["total_token_throughput"] == 36.5
    assert r["tput_per_gpu"] == 18.25
    assert r["output_tput_per_gpu"] == 3.25
    assert r["input_tput_per_gpu"] == 15.0
    assert r["max_concurrent_requests"] == 2
    assert r["max_output_tokens_per_s"] == 10.0  # every chunk lands in the first second
    assert r["no_successful_requests"] is False


def test_golden_latencies() -> None:
    r = golden()
    # TTFT [100, 200, 50]
    assert r["mean_ttft_ms"] == pytest.approx(350 / 3)
    assert r["median_ttft_ms"] == 100.0
    assert r["std_ttft_ms"] == pytest.approx(
        math.sqrt(((100 - 350 / 3) ** 2 + (200 - 350 / 3) ** 2 + (50 - 350 / 3) ** 2) / 3)
    )
    assert r["p50_ttft_ms"] == 100.0
    assert r["p90_ttft_ms"] == pytest.approx(180.0)
    assert r["p99_ttft_ms"] == pytest.approx(198.0)
    assert r["p99.9_ttft_ms"] == pytest.approx(199.8)
    # TPOT [20, 50, 10]
    assert r["mean_tpot_ms"] == pytest.approx(80 / 3)
    assert r["median_tpot_ms"] == 20.0
    assert r["p90_tpot_ms"] == pytest.approx(44.0)
    # ITL pooled chunk gaps [20, 20, 20, 20, 30, 70, 40]
    assert r["mean_itl_ms"] == pytest.approx(220 / 7)
    assert r["median_itl_ms"] == 20.0
    assert r["p90_itl_ms"] == pytest.approx(52.0)
    # E2EL [180, 300, 90]
    assert r["mean_e2el_ms"] == pytest.approx(190.0)
    assert r["median_e2el_ms"] == 180.0
    assert r["p90_e2el_ms"] == pytest.approx(276.0)
    # InferenceX seconds and interactivity.
    assert r["median_ttft"] == pytest.approx(0.1)
    assert r["median_e2el"] == pytest.approx(0.18)
    assert r["median_tpot"] == pytest.approx(0.02)
    assert r["median_intvty"] == pytest.approx(50.0)  # 1000 / median TPOT
    assert r["p90_intvty"] == pytest.approx(1000 / 44)  # 1000 / p90 TPOT (slow tail)
    assert r["mean_intvty"] == pytest.approx(1000 / (80 / 3))
    # Per-request interactivity [50, 20, 100], low percentiles.
    assert r["intvty_requests"] == 3
    assert r["mean_request_intvty"] == pytest.approx(170 / 3)
    assert r["median_request_intvty"] == pytest.approx(50.0)
    assert r["p10_request_intvty"] == pytest.approx(26.0)
    assert r["p1_request_intvty"] == pytest.approx(20.6)
    assert r["p0.1_request_intvty"] == pytest.approx(20.06)
    # No chunk token counts given -> no per-token ITL.
    assert r["itl_per_token_requests"] == 0
    assert r["mean_itl_per_token_ms"] is None
    assert r["null_reasons"]["mean_itl_per_token_ms"] == "chunk_tokens_unknown"


def test_golden_error_adjusted_and_failures() -> None:
    r = golden()
    # TTFT [50, 100, 200, inf]
    assert r["p50_ttft_ms_error_adjusted"] == 150.0
    assert r["p90_ttft_ms_error_adjusted"] is None
    assert r["null_reasons"]["p90_ttft_ms_error_adjusted"] == "infinite"
    # E2EL [90, 180, 300, inf]
    assert r["p50_e2el_ms_error_adjusted"] == 240.0
    assert r["p99_e2el_ms_error_adjusted"] is None
    assert r["failed_by_kind"] == {"timeout": 1}
    assert r["error_samples"] == [
        {"request_id": 4, "error_kind": "timeout", "error": "read timeout"}
    ]


def test_golden_goodput() -> None:
    r = golden()
    assert r["request_goodput"] is None
    assert r["null_reasons"]["request_goodput"] == "no_slo_given"
    assert r["goodput_slos"] is None

    r = golden(slos={"ttft_ms": 150, "tpot_ms": 30})  # r1 and r3 pass, r2 has TTFT 200
    assert r["goodput_slos"] == {"ttft_ms": 150.0, "tpot_ms": 30.0}
    assert r["good_completed"] == 2
    assert r["request_goodput"] == 1.0
    assert r["output_goodput"] == 5.0
    assert r["total_token_goodput"] == 25.0

    # itl_ms uses the largest chunk gap: r1 20, r2 70, r3 40.
    r = golden(slos={"itl_ms": 35})
    assert r["good_completed"] == 1
    r = golden(slos={"e2el_ms": 180})  # r1 (180, inclusive) and r3 (90)
    assert r["good_completed"] == 2
    # vLLM spelling is accepted.
    assert golden(slos={"ttft": 150, "tpot": 30})["good_completed"] == 2
    # An empty SLO mapping means no SLO, as in vLLM.
    assert golden(slos={})["request_goodput"] is None


def test_slo_validation() -> None:
    assert normalize_slos(None) is None
    assert normalize_slos({"e2el_ms": 1, "ttft": 2}) == {"ttft_ms": 2.0, "e2el_ms": 1.0}
    for bad in ({"foo_ms": 1}, {"ttft_ms": -1}, {"ttft_ms": math.inf}, {"ttft": 1, "ttft_ms": 2}):
        with pytest.raises(ValueError):
            normalize_slos(bad)


def test_warmup_only_changes_warmup_count() -> None:
    recs = golden_records()
    with_w = summarize(recs, window_start_ns=0, window_end_ns=2 * S)
    without = summarize([r for r in recs if not r.warmup], window_start_ns=0, window_end_ns=2 * S)
    assert with_w["warmup_excluded"] == 1
    assert without["warmup_excluded"] == 0
    with_w.pop("warmup_excluded")
    without.pop("warmup_excluded")
    assert with_w == without


def test_no_gpus_gives_null_per_gpu() -> None:
    r = golden(num_gpus=None)
    for k in ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "num_gpus"):
        assert r[k] is None
        assert r["null_reasons"][k] == "num_gpus_unknown"


def test_disaggregated_per_gpu() -> None:
    r = golden(num_gpus=None, num_prefill_gpus=1, num_decode_gpus=3)
    assert r["num_gpus"] == 4
    assert r["tput_per_gpu"] == pytest.approx(36.5 / 4)
    assert r["output_tput_per_gpu"] == pytest.approx(6.5 / 3)
    assert r["input_tput_per_gpu"] == pytest.approx(30.0 / 1)
    with pytest.raises(ValueError):
        golden(num_gpus=None, num_prefill_gpus=1)
    with pytest.raises(ValueError):
        golden(num_gpus=5, num_prefill_gpus=1, num_decode_gpus=3)
    with pytest.raises(ValueError):
        golden(num_gpus=0)


def test_bad_window_and_percentiles() -> None:
    with pytest.raises(ValueError):
        summarize([], window_start_ns=5, window_end_ns=5)
    with pytest.raises(ValueError):
        summarize([], window_start_ns=0, window_end_ns=1, percentiles=(101,))


def test_custom_percentiles_use_vllm_names() -> None:
    r = golden(percentiles=(25, 99.99))
    assert "p25_ttft_ms" in r
    assert "p99.99_itl_ms" in r
    assert "p75_request_intvty" in r
    assert "p0.01_request_intvty" in r
    assert "p90_ttft_ms" not in r


def test_estimated_output_tokens() -> None:
    recs = [
        RequestRecord(
            1, 10, 8, send_ns=0, chunk_ns=[10 * MS, 20 * MS, 30 * MS], usage_output_tokens=6
        ),
        RequestRecord(2, 10, 8, send_ns=0, chunk_ns=[10 * MS, 20 * MS, 30 * MS]),  # counted: 3
        RequestRecord(
            3, 10, 8, send_ns=0, chunk_ns=[10 * MS, 20 * MS], chunk_tokens=[1, 4]
        ),  # 5, server says
    ]
    r = summarize(recs, window_start_ns=0, window_end_ns=S)
    assert r["output_tokens_estimated"] is True
    assert r["output_tokens_estimated_requests"] == 1
    assert r["output_token_sources"] == {"usage": 1, "chunk_tokens": 1, "chunk_count": 1}
    assert r["total_output_tokens"] == 14
    assert r["total_input_tokens_server"] is None
    assert r["null_reasons"]["total_input_tokens_server"] == "usage_prompt_tokens_missing"


def test_per_token_itl() -> None:
    rec = RequestRecord(
        1, 10, 6, send_ns=0, chunk_ns=[10 * MS, 20 * MS, 50 * MS], chunk_tokens=[1, 2, 3]
    )
    m = request_metrics(rec)
    assert m.output_tokens == 6
    assert m.itl_ms == (10.0, 30.0)
    assert m.itl_per_token_ms == (5.0, 5.0, 10.0, 10.0, 10.0)
    assert m.tpot_ms == pytest.approx(8.0)  # (50 - 10) / 5
    assert sum(m.itl_per_token_ms) == pytest.approx(m.e2el_ms - m.ttft_ms)
    r = summarize([rec], window_start_ns=0, window_end_ns=S)
    assert r["itl_per_token_requests"] == 1
    assert r["mean_itl_per_token_ms"] == pytest.approx(8.0)
    assert r["median_itl_per_token_ms"] == 10.0
    assert r["mean_itl_ms"] == 20.0  # chunk gaps, vLLM's ITL
    assert r["max_output_tokens_per_s"] == 6.0
    # Malformed chunk_tokens (wrong length) is treated as unknown.
    bad = dataclasses.replace(rec, chunk_tokens=[1, 2])
    assert request_metrics(bad).itl_per_token_ms is None
    assert request_metrics(bad).output_token_source == "chunk_count"


def test_single_token_requests_have_no_tpot() -> None:
    recs = [RequestRecord(1, 10, 1, send_ns=0, chunk_ns=[10 * MS], usage_output_tokens=1)]
    r = summarize(recs, window_start_ns=0, window_end_ns=S, slos={"tpot_ms": 1, "itl_ms": 1})
    assert r["mean_tpot_ms"] is None
    assert r["null_reasons"]["mean_tpot_ms"] == "no_request_with_more_than_one_output_token"
    assert r["mean_itl_ms"] is None
    assert r["median_intvty"] is None
    assert r["mean_ttft_ms"] == 10.0
    assert r["good_completed"] == 1  # vLLM: TPOT counts as 0 for goodput
    json.dumps(r, allow_nan=False)


def test_zero_tpot_gives_null_intvty() -> None:
    # Whole output in one chunk, usage says 4 tokens: TPOT = 0, interactivity infinite.
    recs = [RequestRecord(1, 10, 4, send_ns=0, chunk_ns=[10 * MS], usage_output_tokens=4)]
    r = summarize(recs, window_start_ns=0, window_end_ns=S)
    assert r["median_tpot_ms"] == 0.0
    assert r["median_intvty"] is None
    assert r["null_reasons"]["median_intvty"] == "infinite"
    assert r["median_request_intvty"] is None
    json.dumps(r, allow_nan=False)


def test_failures_breakdown_and_samples() -> None:
    recs = [
        RequestRecord(
            i, 10, 4, send_ns=0, error="HTTP 500: boom", error_kind="http_status", status_code=500
        )
        for i in range(5)
    ]
    recs += [
        RequestRecord(10 + i, 10, 4, send_ns=0, error=f"reset {i}", error_kind="connection")
        for i in range(10)
    ]
    recs.append(RequestRecord(30, 10, 4, send_ns=0))  # no error, no content
    recs.append(RequestRecord(31, 10, 4, send_ns=0, error="x" * 2000))  # no kind
    recs.append(
        RequestRecord(
            32, 10, 4, send_ns=0, chunk_ns=[5 * MS], error="cut", error_kind="stream_error"
        )
    )
    recs.append(
        RequestRecord(40, 10, 4, send_ns=0, chunk_ns=[5 * MS, 7 * MS], usage_output_tokens=2)
    )
    r = summarize(recs, window_start_ns=0, window_end_ns=S)
    assert r["failed"] == 18
    assert r["completed"] == 1
    assert r["failed_by_kind"] == {
        "connection": 10,
        "http_status": 5,
        "no_content": 1,
        "stream_error": 1,
        "unknown": 1,
    }
    samples = r["error_samples"]
    assert len(samples) == 5
    # Repeated identical messages are sampled once.
    assert [s["error_kind"] for s in samples] == ["http_status"] + ["connection"] * 4
    many = summarize(recs, window_start_ns=0, window_end_ns=S, max_error_samples=100)[
        "error_samples"
    ]
    assert {"request_id": 30, "error_kind": "no_content", "error": None} in many
    assert all(s["error"] is None or len(s["error"]) <= 500 for s in many)
    # 18 failures out of 19: only a p0 could be finite.
    assert r["p50_ttft_ms_error_adjusted"] is None
    assert r["mean_ttft_ms"] == 5.0


def test_no_successful_requests() -> None:
    recs = [
        RequestRecord(i, 10, 4, send_ns=0, error="refused", error_kind="connection")
        for i in range(3)
    ]
    r = summarize(recs, window_start_ns=0, window_end_ns=S, num_gpus=8, slos={"ttft_ms": 100})
    json.dumps(r, allow_nan=False)
    assert r["no_successful_requests"] is True
    assert r["completed"] == 0
    assert r["failed"] == 3
    for metric in LATENCY_METRICS:
        for stat in ("mean", "median", "std", "p50", "p90", "p99", "p99.9"):
            key = f"{stat}_{metric}_ms"
            assert r[key] is None, key
            assert r["null_reasons"][key] == "no_successful_requests"
            assert r[f"{stat}_{metric}"] is None
    assert r["median_intvty"] is None
    assert r["median_request_intvty"] is None
    assert r["null_reasons"]["median_request_intvty"] == "no_successful_requests"
    assert r["p50_ttft_ms_error_adjusted"] is None
    assert r["null_reasons"]["p50_ttft_ms_error_adjusted"] == "infinite"
    # Rates are measured zeros, not unknowns.
    assert r["request_throughput"] == 0.0
    assert r["request_goodput"] == 0.0
    assert r["output_throughput"] == 0.0
    assert r["tput_per_gpu"] == 0.0


def test_empty_input() -> None:
    r = summarize([], window_start_ns=0, window_end_ns=S)
    json.dumps(r, allow_nan=False)
    assert r["completed"] == 0 and r["failed"] == 0
    assert r["no_successful_requests"] is True
    assert r["p99_e2el_ms_error_adjusted"] is None
    assert r["null_reasons"]["p99_e2el_ms_error_adjusted"] == "no_requests"


def test_vllm_field_names_present() -> None:
    r = golden(slos={"ttft_ms": 100})
    vllm = [
        "duration",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "request_goodput",
        "output_throughput",
        "total_token_throughput",
        "max_output_tokens_per_s",
        "max_concurrent_requests",
    ]
    for m in LATENCY_METRICS:
        vllm += [f"mean_{m}_ms", f"median_{m}_ms", f"std_{m}_ms", f"p99_{m}_ms", f"p99.9_{m}_ms"]
    inferencex = ["tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"]
    for m in (*LATENCY_METRICS, "intvty"):
        inferencex += [f"mean_{m}", f"median_{m}", f"std_{m}", f"p90_{m}", f"p99_{m}", f"p99.9_{m}"]
    missing = [k for k in vllm + inferencex if k not in r]
    assert not missing


def test_cost_helpers() -> None:
    # $1.41/GPU/h at 1000 tok/s/GPU: 3.6M tokens per GPU-hour -> $0.391666/M.
    assert cost_per_million_tokens(1.41, 1000.0) == pytest.approx(1.41 / 3.6)
    assert cost_per_million_tokens(1.0, 0.0) is None
    assert tokens_per_mw(1000.0, 1.73) == pytest.approx(1000 * 1000 / 1.73)
    with pytest.raises(ValueError):
        tokens_per_mw(1.0, 0.0)
    with pytest.raises(ValueError):
        cost_per_million_tokens(-1.0, 1.0)


# --------------------------------------------------------------------------
# Properties


@st.composite
def records_st(draw: st.DrawFn) -> list[RequestRecord]:
    n = draw(st.integers(min_value=0, max_value=10))
    out = []
    for i in range(n):
        send = draw(st.integers(min_value=0, max_value=10 * S))
        fail = draw(st.integers(min_value=0, max_value=5)) == 0
        n_chunks = draw(st.integers(min_value=0 if fail else 1, max_value=8))
        t = send + draw(st.integers(min_value=0, max_value=5 * S))
        chunks = []
        for _ in range(n_chunks):
            chunks.append(t)
            t += draw(st.integers(min_value=0, max_value=S))
        chunk_tokens = None
        if chunks and draw(st.booleans()):
            chunk_tokens = draw(
                st.lists(st.integers(0, 4), min_size=len(chunks), max_size=len(chunks))
            )
        usage = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=64)))
        out.append(
            RequestRecord(
                request_id=i,
                prompt_tokens=draw(st.integers(min_value=0, max_value=4096)),
                max_tokens=64,
                send_ns=send,
                chunk_ns=chunks,
                chunk_tokens=chunk_tokens,
                usage_output_tokens=usage,
                usage_prompt_tokens=draw(st.one_of(st.none(), st.integers(0, 4096))),
                error="boom" if fail else None,
                error_kind=draw(st.sampled_from(["timeout", "connection", None])) if fail else None,
                warmup=draw(st.integers(min_value=0, max_value=7)) == 0,
            )
        )
    return out


def window(recs: list[RequestRecord]) -> tuple[int, int]:
    start = min((r.send_ns for r in recs), default=0)
    end = max((t for r in recs for t in r.chunk_ns), default=start) + 1
    return start, max(end, start + 1)


slos_st = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            # Whole milliseconds: a float SLO equal to a latency to the last
            # bit could flip under the time-scaling property by rounding alone.
            "ttft_ms": st.integers(0, 6000).map(float),
            "tpot_ms": st.integers(0, 2000).map(float),
            "itl_ms": st.integers(0, 2000).map(float),
            "e2el_ms": st.integers(0, 20000).map(float),
        },
    ),
)


def _summ(
    recs: list[RequestRecord], slos: dict[str, float] | None = None, **kw: Any
) -> dict[str, Any]:
    start, end = window(recs)
    return summarize(recs, window_start_ns=start, window_end_ns=end, num_gpus=4, slos=slos, **kw)


@settings(max_examples=200, deadline=None)
@given(records_st(), slos_st)
def test_json_strict_and_null_reasons_complete(
    recs: list[RequestRecord], slos: dict[str, float] | None
) -> None:
    r = _summ(recs, slos)
    json.loads(json.dumps(r, allow_nan=False))
    nulls = {k for k, v in r.items() if v is None}
    assert nulls == set(r["null_reasons"])


@settings(max_examples=200, deadline=None)
@given(records_st())
def test_percentiles_monotone_and_mean_bounded(recs: list[RequestRecord]) -> None:
    r = _summ(recs)
    per = [request_metrics(x) for x in recs if not x.warmup]
    ok = [m for m in per if m.ok]
    raw = {
        "ttft": [m.ttft_ms for m in ok],
        "tpot": [m.tpot_ms for m in ok if m.tpot_ms is not None],
        "itl": [g for m in ok for g in m.itl_ms],
        "e2el": [m.e2el_ms for m in ok],
    }
    for metric in LATENCY_METRICS:
        vals = [float(v) for v in raw[metric] if v is not None]
        seq = [r[f"p{p}_{metric}_ms"] for p in ("50", "90", "99", "99.9")]
        if not vals:
            assert all(v is None for v in seq) and r[f"mean_{metric}_ms"] is None
            continue
        seq.append(max(vals))
        assert all(a <= b for a, b in itertools.pairwise(seq)), (metric, seq)
        tol = 1e-9 * max(1.0, max(vals))
        assert min(vals) - tol <= r[f"mean_{metric}_ms"] <= max(vals) + tol
        # np.median and np.percentile(.., 50) may differ in the last bit, as in vLLM.
        assert r[f"median_{metric}_ms"] == pytest.approx(r[f"p50_{metric}_ms"], rel=1e-12)
    # Error-adjusted percentiles are never below the plain ones.
    for metric in ("ttft", "e2el"):
        for p in ("50", "90", "99", "99.9"):
            plain, adj = r[f"p{p}_{metric}_ms"], r[f"p{p}_{metric}_ms_error_adjusted"]
            if plain is not None and adj is not None:
                assert adj >= plain - 1e-9 * max(1.0, plain)


@settings(max_examples=200, deadline=None)
@given(records_st())
def test_tpot_identity_per_request(recs: list[RequestRecord]) -> None:
    for rec in recs:
        m = request_metrics(rec)
        if not m.ok:
            assert m.ttft_ms is None and m.tpot_ms is None
            continue
        assert m.ttft_ms is not None and m.e2el_ms is not None
        assert m.ttft_ms <= m.e2el_ms
        assert sum(m.itl_ms) == pytest.approx(m.e2el_ms - m.ttft_ms, abs=1e-6)
        if m.output_tokens > 1:
            assert m.tpot_ms is not None
            assert m.tpot_ms * (m.output_tokens - 1) + m.ttft_ms == pytest.approx(
                m.e2el_ms, rel=1e-12, abs=1e-9
            )
        else:
            assert m.tpot_ms is None


def _shift(rec: RequestRecord, d: int) -> RequestRecord:
    return dataclasses.replace(rec, send_ns=rec.send_ns + d, chunk_ns=[t + d for t in rec.chunk_ns])


@settings(max_examples=150, deadline=None)
@given(records_st(), slos_st, st.integers(min_value=-(10**15), max_value=10**15))
def test_shift_invariance(recs: list[RequestRecord], slos: dict[str, float] | None, d: int) -> None:
    start, end = window(recs)
    a = summarize(recs, window_start_ns=start, window_end_ns=end, num_gpus=2, slos=slos)
    b = summarize(
        [_shift(r, d) for r in recs],
        window_start_ns=start + d,
        window_end_ns=end + d,
        num_gpus=2,
        slos=slos,
    )
    assert a == b


_SCALE_UP = {"duration"}
_SCALE_DOWN = {
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "output_goodput",
    "total_token_goodput",
    "tput_per_gpu",
    "output_tput_per_gpu",
    "input_tput_per_gpu",
}
_SKIP = {"max_output_tokens_per_s", "goodput_slos"}  # 1 s buckets are not scale-free


def _kind(key: str) -> str:
    if key in _SKIP:
        return "skip"
    if key in _SCALE_UP or key.endswith(("_ms", "_ms_error_adjusted")):
        return "up"
    if any(key.endswith(f"_{m}") for m in LATENCY_METRICS):
        return "up"  # InferenceX seconds fields
    if key in _SCALE_DOWN or key.endswith("_intvty"):
        return "down"
    return "same"


@settings(max_examples=150, deadline=None)
@given(records_st(), slos_st, st.integers(min_value=2, max_value=1000))
def test_time_scaling(recs: list[RequestRecord], slos: dict[str, float] | None, k: int) -> None:
    start, end = window(recs)
    a = summarize(recs, window_start_ns=start, window_end_ns=end, num_gpus=2, slos=slos)
    scaled = [
        dataclasses.replace(r, send_ns=r.send_ns * k, chunk_ns=[t * k for t in r.chunk_ns])
        for r in recs
    ]
    kslos = None if slos is None else {name: v * k for name, v in slos.items()}
    b = summarize(scaled, window_start_ns=start * k, window_end_ns=end * k, num_gpus=2, slos=kslos)
    assert a.keys() == b.keys()
    for key, va in a.items():
        vb = b[key]
        kind = _kind(key)
        if kind == "skip":
            continue
        if va is None or vb is None:
            assert va is None and vb is None, key
            continue
        if kind == "up":
            assert vb == pytest.approx(va * k, rel=1e-9, abs=1e-9), key
        elif kind == "down":
            assert vb == pytest.approx(va / k, rel=1e-9, abs=1e-12), key
        else:
            assert vb == va, key


def test_zero_gap_fraction_flags_chunks_read_together() -> None:
    from inferx_core.load.records.request import RequestRecord
    from inferx_core.metrics.summarize import summarize

    ms = 1_000_000
    # 5 chunks: two arrive in one read (same stamp), the others 10 ms apart
    rec = RequestRecord(
        request_id=0,
        prompt_tokens=8,
        max_tokens=5,
        send_ns=0,
        chunk_ns=[20 * ms, 30 * ms, 30 * ms, 40 * ms, 50 * ms],
        usage_output_tokens=5,
        end_ns=50 * ms,
    )
    result = summarize([rec], window_start_ns=0, window_end_ns=50 * ms)
    assert result["itl_zero_gap_fraction"] == 0.25
    empty = summarize([], window_start_ns=0, window_end_ns=1)
    assert empty["itl_zero_gap_fraction"] is None
    assert empty["null_reasons"]["itl_zero_gap_fraction"]
