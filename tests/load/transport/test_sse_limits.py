"""SSE lines have a size limit and parse in linear time (issue 27 section 5).

A line (or one event's data) over ``load.max_sse_line_bytes`` fails its request
naming the setting, with memory bounded by the limit; a long line is joined
once (the parser counts the bytes it copies: no timing here); and splitting a
stream anywhere gives the same events, or the same refusal.
"""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import LoadConfig
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.load.transport.sse import (
    DEFAULT_MAX_SSE_LINE_BYTES,
    FAILED,
    SSEEvent,
    SSELineTooLong,
    SSEParser,
    StreamDecoder,
    use_json_backend,
)
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.testing import ServerProcess

KIB = 1024
MIB = 1024 * KIB


def test_the_default_limit_is_the_configs() -> None:
    assert LoadProfile().max_sse_line_bytes == DEFAULT_MAX_SSE_LINE_BYTES == 16 * MIB
    assert LoadConfig().max_sse_line_bytes == DEFAULT_MAX_SSE_LINE_BYTES


@pytest.mark.parametrize(
    "stream",
    [
        b"data: " + b"x" * 5000 + b"\n\n",  # one read: the decoder's whole-event fast path
        b"data: " + b"x" * 5000,  # unterminated
        b"event: " + b"e" * 5000 + b"\n",  # any field, not only data
        b"data: " + b"x" * 3000 + b"\ndata: " + b"y" * 3000 + b"\n\n",  # one event, two lines
        b": " + b"c" * 5000 + b"\r",  # a comment, CR ended
    ],
)
@pytest.mark.parametrize("read", [None, 512])
def test_a_line_over_the_limit_fails_the_request_naming_the_setting(
    stream: bytes, read: int | None
) -> None:
    rec = RequestRecord(0, 1, 8)
    dec = StreamDecoder(rec, max_line_bytes=4096)
    step = read or len(stream)
    statuses = [dec.feed(stream[i : i + step], 1) for i in range(0, len(stream), step)]
    dec.finish()
    assert FAILED in statuses
    assert rec.error_kind == "malformed", rec.error
    assert "longer than 4096 bytes" in rec.error and "raise load.max_sse_line_bytes" in rec.error


def test_a_line_just_under_the_limit_passes() -> None:
    rec = RequestRecord(0, 1, 8)
    dec = StreamDecoder(rec, max_line_bytes=4096)

    def line_of(text: str) -> bytes:
        return (
            b"data: " + json.dumps({"choices": [{"text": text, "finish_reason": "stop"}]}).encode()
        )

    line = line_of("x" * (4096 - len(line_of(""))))
    assert len(line) == 4096  # exactly the limit: allowed
    for i in range(0, len(line), 100):
        dec.feed(line[i : i + 100], 1)
    dec.feed(b"\n\ndata: [DONE]\n\n", 2)
    dec.finish()
    assert rec.ok, rec.error


def test_memory_stays_bounded_by_the_limit() -> None:
    # A 64 MiB line in 64 KiB reads against a 1 MiB limit: refused near 1 MiB,
    # never held whole (the parser used to keep and re-copy all of it).
    piece = b"x" * (64 * KIB)
    parser = SSEParser(max_line_bytes=MIB)
    tracemalloc.start()
    try:
        with pytest.raises(SSELineTooLong):
            parser.feed(b"data: ")
            for _ in range(1024):
                parser.feed(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MIB


@pytest.mark.parametrize("read", [1 * KIB, 4 * KIB, 64 * KIB])
def test_a_long_line_is_copied_once_not_once_per_read(read: int) -> None:
    size = 8 * MIB
    line = b"data: " + b"x" * size
    parser = SSEParser()
    events: list[SSEEvent] = []
    for i in range(0, len(line), read):
        events += parser.feed(line[i : i + read])
    events += parser.feed(b"\n\n")
    assert [len(e.data) for e in events] == [size]
    # joined once at its end; re-copying the carried part on every read would
    # be about size * reads / 2 bytes (here 4 TiB / read)
    assert parser.copied_bytes <= len(line)


def test_a_deeply_nested_chunk_is_malformed_not_a_crash() -> None:
    for backend in ("json", "msgspec"):
        try:
            previous = use_json_backend(backend)
        except ValueError:
            continue  # msgspec not installed here
        try:
            rec = RequestRecord(0, 1, 8)
            dec = StreamDecoder(rec)
            assert dec.feed(b"data: " + b"[" * 200_000 + b"\n\n", 1) == FAILED
            assert rec.error_kind == "malformed"
        finally:
            use_json_backend(previous)


# -- property: where the reads split a stream does not matter ---------------------

_line_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
    max_size=300,
)


@st.composite
def long_line_streams(draw: st.DrawFn) -> tuple[bytes, list[int], int]:
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    events = draw(st.lists(st.lists(_line_text, min_size=1, max_size=3), max_size=5))
    text = "".join(
        "".join(f"data: {line}{eol}" for line in lines) + (f": c{eol}" if len(lines) == 2 else "")
        + eol
        for lines in events
    )  # fmt: skip
    data = text.encode() + draw(st.sampled_from([b"", b"data: tail"]))
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=40)))
    limit = draw(st.sampled_from([64, 256, 1024, DEFAULT_MAX_SSE_LINE_BYTES]))
    return data, cuts, limit


def _outcome(data: bytes, cuts: list[int], limit: int) -> tuple[list[SSEEvent], bool]:
    parser = SSEParser(max_line_bytes=limit)
    out: list[SSEEvent] = []
    bounds = [0, *cuts, len(data)]
    try:
        for a, b in pairwise(bounds):
            out += parser.feed(data[a:b])
    except SSELineTooLong:
        return out, True
    return out + parser.close(), False


@settings(max_examples=200, deadline=None)
@given(long_line_streams())
def test_any_split_gives_the_same_events_or_the_same_refusal(
    case: tuple[bytes, list[int], int],
) -> None:
    data, cuts, limit = case
    events, refused = _outcome(data, [], limit)
    split_events, split_refused = _outcome(data, cuts, limit)
    assert split_refused == refused
    if not refused:
        assert split_events == events
    else:  # refused at the same line: whatever came before it is the same
        assert split_events[: len(events)] == events[: len(split_events)]


# -- through the client and the bench path ------------------------------------------


def test_the_limit_reaches_the_client_from_the_load_config(tmp_path: Path) -> None:
    with ServerProcess(long_line_bytes=256 * KIB) as server:
        config = BenchConfig(
            base_url=server.base_url, model="test-model", workload=Workload(isl=8, osl=4),
            load=LoadProfile(concurrency=[1], num_prompts=2, warmup=0,
                             max_sse_line_bytes=64 * KIB),
            telemetry=False, output_dir=tmp_path,
        )  # fmt: skip
        [outcome] = run_bench(config, progress=False)
        loose = config.model_copy(
            update={"load": config.load.model_copy(update={"max_sse_line_bytes": MIB})}
        )
        [fine] = run_bench(loose, progress=False)
    result = outcome.result.flat()
    assert result["failed_by_kind"] == {"malformed": 2}
    [sample, *_] = result["error_samples"]
    assert "longer than 65536 bytes" in sample["error"]
    assert "raise load.max_sse_line_bytes" in sample["error"]
    assert fine.result.flat()["failed"] == 0


def test_a_long_line_from_a_server_arrives_whole() -> None:
    async def run(base_url: str) -> RequestRecord:
        rec = RequestRecord(0, 1, 4)
        payload = json.dumps({"model": "test-model", "prompt": "a", "max_tokens": 4,
                              "stream": True}).encode()  # fmt: skip
        async with ConnectionPool(base_url) as pool:
            return await send_streaming_request(pool, "/v1/completions", payload, rec, timeout_s=60)

    with ServerProcess(long_line_bytes=4 * MIB) as server:
        rec = asyncio.run(run(server.base_url))
    assert rec.ok and len(rec.chunk_ns) == 4, rec.error
