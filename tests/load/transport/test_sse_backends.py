"""Every chunk JSON decoder gives the records of the standard-library reference path.

The reference feeds every event through ``StreamDecoder._on_event`` (the SSE
parser's general path, ``json``'s scanner): the decoder as it was before the
fast paths. The fast paths (whole-event reads, msgspec structs, a generic dict decoder)
must give identical records, statuses and reply text on any stream, any split
into reads, and any chunked framing.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport import chunks, connection, http_chunks, sse
from inferx_core.load.transport.connection import Connection
from inferx_core.load.transport.sse import StreamDecoder, json_backend, use_json_backend

BACKENDS = list(chunks.BACKENDS)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    previous = use_json_backend(request.param)
    try:
        yield request.param
    finally:
        use_json_backend(previous)


class ReferenceDecoder(StreamDecoder):
    """The decoder without its fast paths: the parser's general path, json's scanner."""

    __slots__ = ()

    def feed(self, data: bytes, t_ns: int) -> int:
        if self.done or self.failed:
            return sse.FAILED if self.failed else sse.DONE
        for ev in self.parser.feed(data):
            status = self._on_event(ev.data, t_ns)
            if status:
                return status
        return sse.CONTINUE


# -- generated streams -----------------------------------------------------------

_odd = st.sampled_from([None, "", 0, 1, 2.5, True, False, [], [1], {}, {"a": 1}, "x", 2**70])
_text = st.one_of(st.text(max_size=6), _odd)
_delta = st.one_of(
    st.dictionaries(
        st.sampled_from(["content", "reasoning_content", "reasoning", "tool_calls", "role"]),
        _text,
        max_size=3,
    ),
    _odd,
)
_choice = st.fixed_dictionaries(
    {},
    optional={
        "index": st.just(0),
        "text": _text,
        "delta": _delta,
        "finish_reason": st.one_of(st.sampled_from([None, "length", "stop", ""]), _odd),
    },
)
_usage = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "prompt_tokens": st.one_of(st.integers(0, 99), _odd),
            "completion_tokens": st.one_of(st.integers(0, 99), _odd),
        },
    ),
    _odd,
)
_chunk = st.fixed_dictionaries(
    {},
    optional={
        "object": st.sampled_from(["text_completion", "chat.completion.chunk", "error", None]),
        "choices": st.one_of(st.lists(_choice, max_size=2), _odd, st.just([5])),
        "usage": _usage,
        "x_sent_ns": st.one_of(st.integers(0, 2**63), _odd),
        "error": st.one_of(st.just(None), st.just({"message": "boom", "code": 500}), _odd),
    },
)
# Payloads the JSON decoders may judge differently from the standard library.
_raw = st.sampled_from(
    [
        b"[DONE]",
        b"not json",
        b"",
        b"5",
        b'"text"',
        b"[1, 2]",
        b'{"choices":[{"text":"\xff\xfe"}]}',  # invalid UTF-8 (replaced, then parsed)
        b'{"choices":[{"text":"\\ud800"}]}',  # a lone surrogate escape
        b'{"choices":[{"text":"a"}],"x_sent_ns":NaN}',
        b'{"choices":[{"text":"a"}],"x_sent_ns":1e400}',
        b' {"choices":[{"text":"a"}]} ',
        b'{"choices":[{"text":"a"}]}\x0b',
        b'{"choices":[{"text":""}],"choices":[{"text":"dup"}]}',
        b'{"choices":[{"text":"a"},7]}',
        b'{"choices":[{"delta":"a"}]}',
        b"\xef\xbb\xbf{}",
    ]
)
# What servers send: completions text or a chat delta, a finish reason, usage, stamps.
_piece = st.sampled_from(["", "tok ", "é"])
_typical = st.builds(
    lambda choice, usage, sent: {"choices": [choice], **usage, **sent},
    st.one_of(
        st.fixed_dictionaries({"text": _piece}, optional={"finish_reason": _text}),
        st.fixed_dictionaries(
            {
                "delta": st.dictionaries(
                    st.sampled_from(["content", "reasoning_content", "reasoning", "tool_calls"]),
                    st.one_of(_piece, st.just([{"id": "t"}]), st.none()),
                    max_size=2,
                )
            },
            optional={"finish_reason": _text},
        ),
    ),
    st.one_of(st.just({}), st.builds(lambda u: {"usage": u}, _usage)),
    st.one_of(st.just({}), st.builds(lambda n: {"x_sent_ns": n}, st.integers(0, 2**63))),
)
_payload = st.one_of(
    _typical.map(lambda o: json.dumps(o).encode()),
    _typical.map(lambda o: json.dumps(o).encode()),
    _chunk.map(lambda o: json.dumps(o).encode()),
    _raw,
)
_event = st.one_of(
    _payload.map(lambda p: b"data: " + p + b"\n\n"),
    st.just(b": ping\n\n"),
    _payload.map(lambda p: b"data:" + p + b"\r\n\r\n"),  # the parser's general path
    _payload.map(lambda p: b"data:" + p + b"\n\n"),
    st.just(b"\n"),  # an extra blank line
    st.just(b"data: a\ndata: b\n\n"),  # two data lines
)


@st.composite
def split_streams(draw: st.DrawFn) -> tuple[list[bytes], bool]:
    events = draw(st.lists(_event, max_size=8))
    multi_turn = draw(st.booleans())
    data = b"".join(events)
    # Mostly at event boundaries (reads of whole events take the fast path), some anywhere.
    ends = [len(b"".join(events[: i + 1])) for i in range(len(events))]
    anywhere = st.integers(0, len(data))
    cut = st.one_of(st.sampled_from(ends), anywhere) if ends else anywhere
    cuts = sorted(draw(st.lists(cut, max_size=6)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in pairwise(bounds)], multi_turn


def _decode(cls: type[StreamDecoder], pieces: list[bytes], multi_turn: bool) -> tuple:
    rec = RequestRecord(0, 1, 1)
    if multi_turn:
        rec.reply_parts = []
    dec = cls(rec)
    statuses = [dec.feed(p, 100 + i) for i, p in enumerate(pieces)]
    statuses.append(dec.close(999))
    dec.finish()
    return rec.to_json(), rec.reply_parts, statuses


@settings(max_examples=400, deadline=None)
@given(split_streams())
def test_every_decoder_gives_the_reference_records(case: tuple[list[bytes], bool]) -> None:
    pieces, multi_turn = case
    previous = json_backend()
    try:
        use_json_backend("json")
        expected = _decode(ReferenceDecoder, pieces, multi_turn)
        for name in BACKENDS:
            use_json_backend(name)
            assert _decode(StreamDecoder, pieces, multi_turn) == expected, name
    finally:
        use_json_backend(previous)


# -- chunked framing: whole-chunk reads vs any split --------------------------------


class _Transport:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def _content(i: int, last: bool, eol: bytes) -> bytes:
    obj: dict[str, Any] = {"choices": [{"index": 0, "text": f"t{i} ", "finish_reason": None}]}
    if last:
        obj["choices"][0]["finish_reason"] = "length"
        obj["usage"] = {"prompt_tokens": 3, "completion_tokens": i + 1}
    return b"data: " + json.dumps(obj).encode() + eol + eol


@st.composite
def chunked_replies(draw: st.DrawFn) -> tuple[bytes, list[int], list[int]]:
    """Wire bytes, the wire offset of the byte that completes each content event, read cuts."""
    n = draw(st.integers(1, 6))
    # LF or CRLF line ends (CRLF puts CRLFs inside chunk data, which the framing must not trust).
    eols = draw(st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=n, max_size=n))
    events = [_content(i, i == n - 1, eols[i]) for i in range(n)]
    body = b"".join(events) + b"data: [DONE]\n\n"
    done_at, pos = [], 0
    for event, eol in zip(events, eols, strict=True):
        pos += len(event)
        done_at.append(pos - len(eol))  # the blank line's first byte (a CR ends a line at once)
    cuts = sorted(set(draw(st.lists(st.integers(1, len(body) - 1), max_size=6))))
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    head += b"transfer-encoding: chunked\r\n\r\n"
    wire, body_at = bytearray(head), []
    for a, b in pairwise([0, *cuts, len(body)]):  # one HTTP chunk per piece of the body
        wire += b"%x\r\n" % (b - a)
        body_at.append((a, len(wire)))
        wire += body[a:b] + b"\r\n"
    wire += b"0\r\n\r\n"
    # An event is complete in the read that holds its completing body byte.
    event_wire_end = [next(w + (e - a) for a, w in reversed(body_at) if a <= e) for e in done_at]
    read_cuts = sorted(set(draw(st.lists(st.integers(1, len(wire) - 1), max_size=8))))
    return bytes(wire), event_wire_end, read_cuts


@settings(max_examples=200, deadline=None)
@given(chunked_replies(), st.sampled_from(BACKENDS))
def test_any_framing_and_split_stamps_each_event_in_the_read_that_completes_it(
    case: tuple[bytes, list[int], list[int]], name: str
) -> None:
    wire, event_ends, cuts = case
    reads = [wire[a:b] for a, b in pairwise([0, *cuts, len(wire)])]
    starts = [0, *cuts]
    expected = [max(i for i, s in enumerate(starts) if s <= end) for end in event_ends]
    tick = [0]
    clock, previous = connection.perf_counter_ns, use_json_backend(name)
    connection.perf_counter_ns = lambda: tick[0]  # type: ignore[assignment]
    try:
        rec = asyncio.run(_feed_connection(reads, tick))
    finally:
        connection.perf_counter_ns = clock
        use_json_backend(previous)
    assert rec.error is None
    assert rec.chunk_ns == expected
    assert rec.finish_reason == "length" and rec.usage_output_tokens == len(event_ends)


def test_chunk_data_holding_crlfs_is_framed_by_its_size_not_by_the_crlfs() -> None:
    # Split at CRLF, "7 | a | b | c" would pair size 7 with "a" and "b" with "c".
    assert http_chunks.whole_chunks(b"7\r\na\r\nb\r\nc\r\n") == ([b"a\r\nb\r\nc"], 12)
    assert http_chunks.whole_chunks(b"1\r\na\r\n2\r\nbc\r\n") == ([b"a", b"bc"], 13)
    assert http_chunks.whole_chunks(b"1\r\na\r\n0\r\n\r\n") == ([b"a"], 6)  # stops at the end
    assert http_chunks.whole_chunks(b"1\r\na\r\n5\r\nab") == ([b"a"], 6)  # partial chunk


async def _feed_connection(reads: list[bytes], tick: list[int]) -> RequestRecord:
    """Feed the reads to a Connection, the clock reading ``i`` during read ``i``."""
    conn = Connection(memoryview(bytearray(1024)), lambda c: None)
    conn.connection_made(_Transport())  # type: ignore[arg-type]
    rec = RequestRecord(0, 3, 6)
    loop = asyncio.get_running_loop()
    fut = conn.start(rec, b"POST", loop.time() + 60, 60, None)
    for i, data in enumerate(reads):
        tick[0] = i
        conn.data_received(data)
    assert fut.done() and conn.reusable
    return rec


# -- backend selection ---------------------------------------------------------------


def test_the_default_decoder_is_the_fastest_installed() -> None:
    assert BACKENDS[0] == chunks.DEFAULT_BACKEND
    assert BACKENDS[-1] == "json"
    if "msgspec" in BACKENDS:
        assert chunks.DEFAULT_BACKEND == "msgspec"


def test_without_msgspec_only_the_standard_library_is_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "msgspec", None)  # import fails as if not installed
    assert list(chunks._backends()) == ["json"]


def test_an_unknown_decoder_is_refused() -> None:
    with pytest.raises(ValueError, match="not installed"):
        use_json_backend("simdjson")


def test_use_json_backend_returns_the_previous_and_none_means_the_default(backend: str) -> None:
    assert json_backend() == backend
    assert use_json_backend(None) == backend
    assert json_backend() == chunks.DEFAULT_BACKEND
    use_json_backend(backend)
