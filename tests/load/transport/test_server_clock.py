"""The engine's own per-request clock on the records: kept fields, figures, request ids.

A live socket server here echoes ``X-Request-Id`` and ends its stream the way
vLLM 0.32 does with ``--enable-per-request-metrics`` (a ``metrics`` object on
the final usage chunk); the records must keep the fields as given, read the
figures, and never fail a request over a malformed figure.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core import ServerTiming
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport import chunks
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.load.transport.server_clock import MAX_SERVER_MS, ServerClock
from inferx_core.load.transport.sse import use_json_backend

VLLM_LIKE = ServerTiming(
    name="vllm-like",
    reply_fields=("metrics",),
    request_body={"return_clock": True},
    queue_ms="metrics.queue_time_ms",
    ttft_ms="metrics.time_to_first_token_ms",
    decode_ms="metrics.generation_time_ms",
    spec_drafts="metrics.speculative_decoding.num_spec_steps",
)


@pytest.fixture(params=list(chunks.BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    previous = use_json_backend(request.param)
    try:
        yield request.param
    finally:
        use_json_backend(previous)


def _events(metrics: Any) -> bytes:
    chunks_ = [
        {"id": "chatcmpl-abc", "choices": [{"delta": {"role": "assistant"}}]},
        {"id": "chatcmpl-abc", "choices": [{"delta": {"content": "hi"}}]},
        {"id": "chatcmpl-abc", "choices": [{"delta": {"content": "!"}, "finish_reason": "stop"}]},
        {"id": "chatcmpl-abc", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2},
         "metrics": metrics},
    ]  # fmt: skip
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks_)
    return body + b"data: [DONE]\n\n"


async def _serve_once(metrics: Any, seen: dict[str, Any]) -> tuple[asyncio.Server, int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
        seen["headers"] = headers
        seen["body"] = json.loads(await reader.readexactly(int(headers["content-length"])))
        body = _events(metrics)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            + f"X-Request-Id: {headers['x-request-id']}\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _one_request(metrics: Any, timing: ServerTiming | None) -> tuple[RequestRecord, dict]:
    seen: dict[str, Any] = {}

    async def go() -> RequestRecord:
        server, port = await _serve_once(metrics, seen)
        async with server, ConnectionPool(f"http://127.0.0.1:{port}", server_timing=timing) as pool:
            payload = json.dumps({"model": "m", "stream": True, "return_clock": False}).encode()
            return await send_streaming_request(
                pool, "/v1/chat/completions", payload, RequestRecord(7, 3, 2), timeout_s=10
            )

    return asyncio.run(go()), seen


GOOD = {"queue_time_ms": 1.5, "time_to_first_token_ms": 20.25, "generation_time_ms": 3.0}


def test_a_reply_with_the_engines_clock_fills_the_record(backend: str) -> None:
    rec, seen = _one_request(GOOD, VLLM_LIKE)
    assert rec.ok, rec.error
    # Ids to join with the server's logs: ours (sent), its echo, the reply's own.
    assert rec.client_request_id == seen["headers"]["x-request-id"]
    assert rec.client_request_id.startswith("inferx-") and rec.client_request_id.endswith("-7")
    assert rec.server_request_id == rec.client_request_id
    assert rec.response_id == "chatcmpl-abc"
    # The request's own field wins over the engine's request_body.
    assert seen["body"]["return_clock"] is False
    assert rec.server_fields == {"metrics": GOOD}
    assert rec.server_figures == {
        "queue_ms": 1.5, "ttft_ms": 20.25, "decode_ms": 3.0, "spec_drafts": None,
        "spec_draft_tokens": None, "spec_accepted_tokens": None, "cached_tokens": None,
    }  # fmt: skip
    assert rec.server_problems is not None
    assert "no metrics.speculative_decoding.num_spec_steps" in rec.server_problems["spec_drafts"]
    assert rec.server_problems["cached_tokens"] == "vllm-like does not report it"
    row = rec.to_json()  # what the requests sidecar writes
    assert row["server_figures"]["ttft_ms"] == 20.25 and row["response_id"] == "chatcmpl-abc"


def test_malformed_figures_are_nulls_with_reasons_not_failed_requests(backend: str) -> None:
    bad = {"queue_time_ms": "soon", "time_to_first_token_ms": -4.0, "generation_time_ms": True}
    rec, _ = _one_request(bad, VLLM_LIKE)
    assert rec.ok, rec.error
    assert rec.server_fields == {"metrics": bad}  # kept as the server gave them
    assert rec.server_figures is not None and rec.server_problems is not None
    for figure in ("queue_ms", "ttft_ms", "decode_ms"):
        assert rec.server_figures[figure] is None
    assert "'soon'" not in rec.server_problems["queue_ms"]  # shown as JSON
    assert '"soon" (str)' in rec.server_problems["queue_ms"]
    assert "-4.0 (float)" in rec.server_problems["ttft_ms"]


def test_without_a_description_only_the_ids_are_kept(backend: str) -> None:
    rec, seen = _one_request(GOOD, None)
    assert rec.ok and rec.response_id == "chatcmpl-abc"
    assert rec.server_fields is None and rec.server_figures is None
    assert "return_clock" in seen["body"] and seen["body"]["return_clock"] is False


def test_body_fields_go_in_front_so_the_request_wins() -> None:
    clock = ServerClock(VLLM_LIKE)
    assert json.loads(clock.add_to_body(b"{}")) == {"return_clock": True}
    assert json.loads(clock.add_to_body(b'{"a": 1}')) == {"return_clock": True, "a": 1}
    assert json.loads(clock.add_to_body(b'{"return_clock": 0}')) == {"return_clock": 0}


def test_a_path_must_start_at_a_kept_field() -> None:
    with pytest.raises(ValueError, match="starts at one of reply_fields"):
        ServerTiming(name="x", reply_fields=("metrics",), queue_ms="timings.queue")
    with pytest.raises(ValueError, match="top-level key"):
        ServerTiming(name="x", reply_fields=("a.b",))


@settings(max_examples=200, deadline=None)
@given(
    value=st.one_of(
        st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.text(max_size=5),
        st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=3),
    )
)  # fmt: skip
def test_every_figure_is_a_bounded_number_or_null_with_a_reason(value: Any) -> None:
    rec = RequestRecord(0, 1, 1)
    ServerClock(VLLM_LIKE).read(rec, {"metrics": {"queue_time_ms": value, "speculative_decoding": {
        "num_spec_steps": value}}})  # fmt: skip
    assert rec.server_figures is not None
    for figure, got in rec.server_figures.items():
        if got is None:
            assert rec.server_problems and rec.server_problems[figure]
        else:
            assert type(got) in (int, float) and math.isfinite(got) and got >= 0
            # Durations are bounded by a day; counts are integers.
            assert got <= MAX_SERVER_MS if figure.endswith("_ms") else type(got) is int


def test_a_configured_request_id_header_is_sent_once_as_configured() -> None:
    pool = ConnectionPool("http://127.0.0.1:1", headers={"x-request-id": "mine"})
    rec = RequestRecord(3, 1, 1)
    request = pool.request_for("/v1/completions", b"{}", rec)
    assert request.lower().count(b"x-request-id") == 1 and b"mine" in request
    assert rec.client_request_id is None
    plain = ConnectionPool("http://127.0.0.1:1").request_for("/v1/completions", b"{}", rec)
    assert f"X-Request-Id: {rec.client_request_id}\r\n".encode() in plain
