"""Reasoning models: thinking then answer on the stream, TTFO, reasoning tokens, the answer's TPOT.

The scripted server streams the first ``reasoning_tokens`` tokens as
``delta.reasoning_content`` (or ``delta.reasoning``) and the rest as
``delta.content``, and reports ``completion_tokens_details.reasoning_tokens``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import PreparedRequest
from inferx_core.load.transport import chunks
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.load.transport.sse import StreamDecoder, use_json_backend
from inferx_core.metrics.model import PointMetrics
from inferx_core.metrics.reasoning import reasoning_metrics
from inferx_core.metrics.requests import request_metrics
from inferx_core.metrics.summarize import summarize
from inferx_core.testing import ServerProcess


def run_one(base_url: str, req: PreparedRequest) -> RequestRecord:
    async def go() -> RequestRecord:
        pool = ConnectionPool(base_url)
        try:
            return await send_streaming_request(
                pool, req.path, req.payload, req.record, timeout_s=10.0
            )
        finally:
            await pool.close()

    return asyncio.run(go())


@pytest.fixture(params=list(chunks.BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    previous = use_json_backend(request.param)
    try:
        yield request.param
    finally:
        use_json_backend(previous)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_then_answer_on_a_live_stream(
    server: ServerProcess, make_request: Any, field: str
) -> None:
    req = make_request(max_tokens=12, chat=True, reasoning_tokens=5, reasoning_field=field,
                       tokens_per_chunk=1, ttft_ms=5, itl_ms=2)  # fmt: skip
    rec = run_one(server.base_url, req)
    assert rec.ok, rec.error
    assert len(rec.chunk_ns) == 12  # reasoning chunks count for TTFT and ITL as before
    assert rec.reasoning_chunks == 5 and rec.first_answer_chunk == 5
    assert rec.usage_reasoning_tokens == 5 and rec.usage_output_tokens == 12
    r = reasoning_metrics(rec, request_metrics(rec))
    assert r is not None and r.source == "usage" and r.reasoning_tokens == 5
    assert r.ttfo_ms == pytest.approx((rec.chunk_ns[5] - rec.send_ns) / 1e6)
    expected_tpot = (rec.chunk_ns[-1] - rec.chunk_ns[5]) / 6 / 1e6  # 7 answer tokens
    assert r.tpot_answer_ms == pytest.approx(expected_tpot)
    assert r.ttfo_ms > request_metrics(rec).ttft_ms  # ~4 ITLs of thinking later


def test_multi_token_chunks_with_exact_continuous_usage(
    server: ServerProcess, make_request: Any
) -> None:
    """No reasoning_tokens in usage: the reasoning chunks' per-chunk usage deltas count."""
    req = make_request(max_tokens=11, chat=True, reasoning_tokens=6, tokens_per_chunk=3,
                       usage="continuous", reasoning_usage=False)  # fmt: skip
    rec = run_one(server.base_url, req)
    assert rec.ok, rec.error
    assert rec.chunk_tokens == [3, 3, 3, 2] and rec.usage_reasoning_tokens is None
    assert rec.reasoning_chunks == 2 and rec.chunk_reasoning_tokens == 6
    r = reasoning_metrics(rec, request_metrics(rec))
    assert r is not None and (r.source, r.reasoning_tokens) == ("chunk_tokens", 6)
    assert r.tpot_answer_ms == pytest.approx((rec.chunk_ns[3] - rec.chunk_ns[2]) / 4 / 1e6)


def test_without_usage_reasoning_is_counted_from_chunks(
    server: ServerProcess, make_request: Any
) -> None:
    req = make_request(max_tokens=8, chat=True, reasoning_tokens=3, usage="none")
    rec = run_one(server.base_url, req)
    r = reasoning_metrics(rec, request_metrics(rec))
    assert r is not None and (r.source, r.reasoning_tokens) == ("chunk_count", 3)


def test_a_plain_model_has_no_reasoning_keys(server: ServerProcess, make_request: Any) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=6, chat=True))
    assert rec.reasoning_chunks == 0 and rec.first_answer_chunk == 0
    flat = summarize([rec], window_start_ns=rec.send_ns, window_end_ns=rec.end_ns)
    assert "reasoning_requests" not in flat and "mean_ttfo_ms" not in flat
    assert PointMetrics.from_flat(flat).reasoning is None


def _frame(obj: str) -> bytes:
    return b"data: " + obj.encode() + b"\n\n"


def _stream(thinking: list[int], answer: list[int], usage_reasoning: int | None) -> bytes:
    """Reasoning chunks then answer chunks, each with cumulative usage."""
    out, total = [], 0
    for kind, sizes in (("reasoning_content", thinking), ("content", answer)):
        for k in sizes:
            total += k
            out.append(_frame(
                f'{{"choices":[{{"index":0,"delta":{{"{kind}":"{"t " * k}"}},'
                f'"finish_reason":null}}],"usage":{{"prompt_tokens":2,"completion_tokens":{total}}}}}'
            ))  # fmt: skip
    details = (
        "" if usage_reasoning is None
        else f',"completion_tokens_details":{{"reasoning_tokens":{usage_reasoning}}}'
    )  # fmt: skip
    out.append(_frame(
        f'{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"length"}}],'
        f'"usage":{{"prompt_tokens":2,"completion_tokens":{total}{details}}}}}'
    ))  # fmt: skip
    return b"".join(out) + b"data: [DONE]\n\n"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    thinking=st.lists(st.integers(1, 4), min_size=1, max_size=6),
    answer=st.lists(st.integers(1, 4), min_size=1, max_size=6),
    with_usage=st.booleans(),
    gaps=st.lists(st.integers(1, 10_000_000), min_size=12, max_size=12),
)
def test_reasoning_arithmetic(
    backend: str, thinking: list[int], answer: list[int], with_usage: bool, gaps: list[int]
) -> None:
    """Whatever the chunk sizes and times: reasoning tokens, TTFO and the answer's TPOT are
    the definitions, with usage or with per-chunk usage, by either JSON decoder."""
    n_think = sum(thinking)
    data = _stream(thinking, answer, n_think if with_usage else None)
    frames = data.split(b"\n\n")[:-1]
    rec = RequestRecord(0, 2, 100, send_ns=1_000)
    dec = StreamDecoder(rec)
    t = 1_000
    for i, frame in enumerate(frames):
        t += gaps[i % len(gaps)]
        dec.feed(frame + b"\n\n", t)
    dec.finish()
    assert rec.ok, rec.error
    r = reasoning_metrics(rec, request_metrics(rec))
    assert r is not None
    assert r.reasoning_tokens == n_think
    assert r.source == ("usage" if with_usage else "chunk_tokens")
    first = len(thinking)
    assert rec.first_answer_chunk == first
    assert r.ttfo_ms == pytest.approx((rec.chunk_ns[first] - rec.send_ns) / 1e6)
    n_answer = sum(answer)
    if n_answer > 1:
        tpot = (rec.chunk_ns[-1] - rec.chunk_ns[first]) / (n_answer - 1) / 1e6
        assert r.tpot_answer_ms == pytest.approx(tpot)
    else:
        assert r.tpot_answer_ms is None


def test_summary_and_round_trip(server: ServerProcess, make_request: Any) -> None:
    recs = [
        run_one(
            server.base_url, make_request(i, max_tokens=10, chat=True, reasoning_tokens=4, itl_ms=2)
        )
        for i in range(3)
    ]
    start, end = min(r.send_ns for r in recs), max(r.end_ns for r in recs)
    flat = summarize(recs, window_start_ns=start, window_end_ns=end)
    assert flat["reasoning_requests"] == 3 and flat["total_reasoning_tokens"] == 12
    assert flat["reasoning_token_sources"] == {"usage": 3, "chunk_tokens": 0, "chunk_count": 0}
    assert flat["reasoning_no_answer_requests"] == 0
    ttfo = sorted((r.chunk_ns[4] - r.send_ns) / 1e6 for r in recs)
    assert flat["median_ttfo_ms"] == pytest.approx(ttfo[1])
    assert flat["mean_ttft_ms"] < flat["mean_ttfo_ms"]
    model = PointMetrics.from_flat(flat)
    assert model.reasoning is not None and model.reasoning.requests == 3
    again = model.flat()
    for key in ("reasoning_requests", "median_ttfo_ms", "p99_tpot_answer_ms", "mean_tpot_ms"):
        assert again[key] == flat[key], key
    assert PointMetrics.from_flat(again) == model
    # the whole stream's TPOT is unchanged by the split
    assert model.latency.tpot_ms.mean == flat["mean_tpot_ms"]


def test_thinking_only_reply_has_no_ttfo(server: ServerProcess, make_request: Any) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=5, chat=True, reasoning_tokens=9))
    assert rec.ok and rec.first_answer_chunk is None and rec.reasoning_chunks == 5
    flat = summarize([rec], window_start_ns=rec.send_ns, window_end_ns=rec.end_ns)
    assert flat["reasoning_no_answer_requests"] == 1 and flat["mean_ttfo_ms"] is None
    assert flat["null_reasons"]["mean_ttfo_ms"] == "no_request_streamed_an_answer"
