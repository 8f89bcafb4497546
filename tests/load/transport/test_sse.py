"""SSE parser and stream decoder: framing edge cases and chunk classification."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.sse import (
    CONTINUE,
    DONE,
    FAILED,
    SSEEvent,
    SSEParser,
    StreamDecoder,
    classify_chunk,
)


def feed_all(parser: SSEParser, pieces: list[bytes]) -> list[SSEEvent]:
    out: list[SSEEvent] = []
    for p in pieces:
        out.extend(parser.feed(p))
    return out


def ev(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def completion(text: str, finish: str | None = None, usage: dict | None = None) -> bytes:
    obj: dict[str, Any] = {
        "object": "text_completion",
        "choices": [{"index": 0, "text": text, "finish_reason": finish}],
    }
    if usage is not None:
        obj["usage"] = usage
    return ev(obj)


def chat(delta: dict, finish: str | None = None) -> bytes:
    return ev({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


USAGE_ONLY = ev({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
DONE_EV = b"data: [DONE]\n\n"


# -- parser -------------------------------------------------------------------


def test_events_split_across_reads_byte_by_byte() -> None:
    stream = b"data: one\n\ndata: two\n\n: ping\n\ndata: [DONE]\n\n"
    whole = SSEParser().feed(stream)
    bytewise = feed_all(SSEParser(), [stream[i : i + 1] for i in range(len(stream))])
    assert [e.data for e in whole] == ["one", "two", "[DONE]"]
    assert bytewise == whole


def test_crlf_and_cr_line_endings() -> None:
    assert [e.data for e in SSEParser().feed(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n")] == [
        "a",
        "b",
        "c",
    ]


def test_cr_at_end_of_read_dispatches_at_once_and_skips_following_lf() -> None:
    p = SSEParser()
    assert p.feed(b"data: a\r\n\r") == [SSEEvent("a")]  # not held back to the next read
    assert p.feed(b"\ndata: b\r") == []  # that LF belonged to the CR
    assert p.feed(b"\n\r\n") == [SSEEvent("b")]


def test_comments_are_ignored() -> None:
    assert SSEParser().feed(b": keep-alive\n\n:x\ndata: a\n\n") == [SSEEvent("a")]


def test_multiline_data_and_field_variants() -> None:
    stream = b"event: update\ndata: l1\ndata:l2\ndata\nid: 7\nretry: 10\n\n"
    assert SSEParser().feed(stream) == [SSEEvent("l1\nl2\n", "update")]


def test_blank_lines_without_data_dispatch_nothing() -> None:
    assert SSEParser().feed(b"\n\n\nevent: x\n\ndata: a\n\n") == [SSEEvent("a")]


def test_close_dispatches_event_missing_its_blank_line_but_drops_partial_line() -> None:
    p = SSEParser()
    assert p.feed(b"data: a\n") == []
    assert p.close() == [SSEEvent("a")]
    p = SSEParser()
    assert p.feed(b'data: {"trunc') == []
    assert p.close() == []


def test_utf8_split_inside_a_character() -> None:
    data = "data: héllo ✓\n\n".encode()
    assert feed_all(SSEParser(), [data[:8], data[8:13], data[13:]]) == [SSEEvent("héllo ✓")]


# -- classification -------------------------------------------------------------


def test_classify_chunks() -> None:
    assert classify_chunk("[DONE]").done
    assert classify_chunk('{"choices":[{"text":"a"}]}').content
    assert not classify_chunk('{"choices":[{"text":""}]}').content
    assert not classify_chunk('{"choices":[{"delta":{"role":"assistant","content":""}}]}').content
    assert classify_chunk('{"choices":[{"delta":{"reasoning_content":"hm"}}]}').content
    assert classify_chunk('{"choices":[{"delta":{"tool_calls":[{"id":"x"}]}}]}').content
    usage = classify_chunk('{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":9}}')
    assert not usage.content
    assert (usage.prompt_tokens, usage.completion_tokens) == (4, 9)
    assert classify_chunk('{"error":{"message":"boom","code":500}}').error == "boom (500)"
    assert classify_chunk('{"object":"error","message":"bad"}').error == "bad"
    assert classify_chunk("{nope").malformed
    assert classify_chunk("[1, 2]").malformed
    assert classify_chunk('{"choices":[{"text":"a","finish_reason":"stop"}]}').finish_reason == (
        "stop"
    )


# -- decoder --------------------------------------------------------------------


def decode(pieces: list[bytes], *, t0: int = 100) -> tuple[RequestRecord, list[int]]:
    rec = RequestRecord(0, 5, 3)
    dec = StreamDecoder(rec)
    statuses = [dec.feed(p, t0 + i) for i, p in enumerate(pieces)]
    statuses.append(dec.close(t0 + len(pieces)))
    dec.finish()
    return rec, statuses


def test_chat_role_only_usage_only_and_done_are_not_tokens() -> None:
    rec, statuses = decode(
        [
            chat({"role": "assistant", "content": ""}),
            b": ping\n\n",
            chat({"content": "a"}),
            chat({"content": "b"}),
            chat({"content": "c"}, finish="length"),
            USAGE_ONLY,
            DONE_EV,
        ]
    )
    assert rec.ok
    assert rec.chunk_ns == [102, 103, 104]  # arrival time of each content read
    assert rec.finish_reason == "length"
    assert (rec.usage_prompt_tokens, rec.usage_output_tokens) == (5, 3)
    assert rec.chunk_tokens is None  # no per-chunk usage
    assert statuses[-2] == DONE


def test_usage_on_the_finish_reason_chunk() -> None:
    rec, _ = decode(
        [
            completion("a"),
            completion("b", "stop", {"prompt_tokens": 5, "completion_tokens": 2}),
            DONE_EV,
        ]
    )
    assert rec.output_tokens == 2 and rec.output_token_source == "usage"
    assert rec.finish_reason == "stop"


def test_no_usage_falls_back_to_counting_chunks() -> None:
    rec, _ = decode([completion("a"), completion("b"), DONE_EV])
    assert rec.usage_output_tokens is None
    assert rec.output_tokens == 2 and rec.output_token_source == "chunks"


def test_continuous_usage_gives_tokens_per_chunk() -> None:
    rec, _ = decode(
        [
            completion("a b", usage={"prompt_tokens": 5, "completion_tokens": 2}),
            completion("c d e", usage={"prompt_tokens": 5, "completion_tokens": 5}),
            completion("f", "length", usage={"prompt_tokens": 5, "completion_tokens": 6}),
            USAGE_ONLY,
            DONE_EV,
        ]
    )
    assert rec.chunk_tokens == [2, 3, 1]
    assert rec.usage_output_tokens == 3  # the last usage seen wins


def test_several_events_in_one_read_share_its_arrival_time() -> None:
    rec, _ = decode([completion("a") + completion("b"), completion("c") + DONE_EV])
    assert rec.chunk_ns == [100, 100, 101]


def test_event_split_across_reads_is_stamped_when_complete() -> None:
    data = completion("a")
    rec, _ = decode([data[:10], data[10:], DONE_EV])
    assert rec.chunk_ns == [101]


def test_error_payload_inside_a_200_stream_fails_the_request() -> None:
    err = ev({"error": {"message": "out of memory", "type": "InternalServerError", "code": 500}})
    rec, statuses = decode([completion("a"), err, completion("b"), DONE_EV])
    assert not rec.ok
    assert rec.error_kind == "stream_error" and "out of memory" in (rec.error or "")
    assert statuses[1] == FAILED
    assert rec.chunk_ns == [100]  # nothing after the error counts


def test_object_error_payload() -> None:
    rec, _ = decode([ev({"object": "error", "message": "bad request", "code": 400})])
    assert rec.error_kind == "stream_error" and "bad request" in (rec.error or "")


def test_malformed_json_fails_the_request() -> None:
    rec, statuses = decode([completion("a"), b'data: {"choices": [\n\n'])
    assert rec.error_kind == "malformed"
    assert statuses[1] == FAILED


def test_stream_without_done_ends_normally_when_content_came() -> None:
    rec, statuses = decode([completion("a"), completion("b", "length")])
    assert rec.ok and statuses == [CONTINUE, CONTINUE, CONTINUE]


def test_stream_without_content_is_no_content() -> None:
    rec, _ = decode([chat({"role": "assistant"}), USAGE_ONLY, DONE_EV])
    assert not rec.ok and rec.error_kind == "no_content"


def test_last_event_without_blank_line_is_kept() -> None:
    rec, _ = decode([completion("a"), completion("b")[:-1]])
    assert len(rec.chunk_ns) == 2


# -- property: splitting never changes the events -------------------------------

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
    max_size=12,
)
_event = st.tuples(st.lists(_text, min_size=1, max_size=3), st.sampled_from(["", "update"]))
_comment = st.builds(lambda t: ("comment", t), _text)


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[SSEEvent], list[int]]:
    items = draw(st.lists(st.one_of(_event, _comment), max_size=8))
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    out: list[str] = []
    expected: list[SSEEvent] = []
    for item in items:
        if item[0] == "comment":
            out.append(":" + item[1] + eol)
            continue
        lines, name = item
        if name:
            out.append("event: " + name + eol)
        # "data:" without the space: a leading space of the value is then
        # the optional one and gets stripped.
        spaced = draw(st.booleans())
        out.extend(("data: " if spaced else "data:") + line + eol for line in lines)
        out.append(eol)
        values = lines if spaced else [x[1:] if x.startswith(" ") else x for x in lines]
        expected.append(SSEEvent("\n".join(values), name or "message"))
    data = "".join(out).encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=10)))
    return data, expected, cuts


@settings(max_examples=300, deadline=None)
@given(streams())
def test_any_split_of_a_stream_yields_the_same_events(
    case: tuple[bytes, list[SSEEvent], list[int]],
) -> None:
    data, expected, cuts = case
    bounds = [0, *cuts, len(data)]
    pieces = [data[a:b] for a, b in pairwise(bounds)]
    assert SSEParser().feed(data) == expected
    assert feed_all(SSEParser(), pieces) == expected
