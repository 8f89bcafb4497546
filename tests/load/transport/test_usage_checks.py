"""Usage checked both ways (issue 27 section 2): a server's token count is a
non-negative integer that agrees with what it streamed, or the request fails
with the reason; no throughput is ever negative, nothing raises.

The hostile shapes come from a real server (the scripted one, knobs
``usage_completion``/``usage_prompt``) through the whole bench path, and from
the stream decoder directly with each JSON decoder.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.chunks import BACKENDS
from inferx_core.load.transport.sse import StreamDecoder, use_json_backend
from inferx_core.load.transport.usage import usage_disagreement
from inferx_core.metrics.summarize import summarize
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.files import read_result
from inferx_core.testing import ServerProcess

# (knobs of a lying server, words the request's error must hold); max_tokens 8,
# one token per chunk, so the server streams 8 content chunks.
HOSTILE = {
    "undercount": ({"usage_completion": 1}, "8 content chunks"),
    "negative": ({"usage_completion": -20}, "usage.completion_tokens is -20"),
    "float": ({"usage_completion": 3.7}, "usage.completion_tokens is 3.7"),
    "string": ({"usage_completion": "7"}, "usage.completion_tokens is '7' (str)"),
    "bool": ({"usage_completion": True}, "usage.completion_tokens is True (bool)"),
    "overcount": ({"usage_completion": 1000}, "max_tokens was 8"),
    "prompt_negative": ({"usage_prompt": -4}, "usage.prompt_tokens is -4"),
    "prompt_string": ({"usage_prompt": "x"}, "usage.prompt_tokens is 'x'"),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    previous = use_json_backend(request.param)
    yield request.param
    use_json_backend(previous)


def _chunk(text: str, finish: str | None = None, usage: dict[str, Any] | None = None) -> bytes:
    obj: dict[str, Any] = {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _decode(chunks: int, usage: dict[str, Any], max_tokens: int = 8) -> RequestRecord:
    rec = RequestRecord(0, 4, max_tokens)
    dec = StreamDecoder(rec)
    for i in range(chunks):
        dec.feed(_chunk("tok ", "length" if i == chunks - 1 else None), 1000 + i)
    dec.feed(b'data: {"choices":[],"usage":' + json.dumps(usage).encode() + b"}\n\n", 2000)
    dec.feed(b"data: [DONE]\n\n", 2001)
    dec.close(2002)
    dec.finish()
    return rec


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_every_hostile_usage_fails_its_request_with_the_reason(shape: str, backend: str) -> None:
    knobs, says = HOSTILE[shape]
    usage = {
        "prompt_tokens": knobs.get("usage_prompt", 4),
        "completion_tokens": knobs.get("usage_completion", 8),
    }
    rec = _decode(8, usage)
    assert not rec.ok and rec.error_kind == "usage", (backend, rec.error)
    assert says in rec.error
    assert rec.output_tokens >= 0


@pytest.mark.parametrize("per_chunk", [1, 2, 4])
def test_chunks_carrying_several_tokens_are_not_flagged(per_chunk: int, backend: str) -> None:
    # MTP / speculative decoding / a stream interval: fewer chunks than tokens is fine
    rec = _decode(8 // per_chunk, {"prompt_tokens": 4, "completion_tokens": 8})
    assert rec.ok, rec.error
    assert rec.usage_output_tokens == rec.output_tokens == 8


def test_per_chunk_usage_is_checked_too(backend: str) -> None:
    # continuous_usage_stats: usage on every chunk; a bad value anywhere fails the request
    rec = RequestRecord(0, 4, 8)
    dec = StreamDecoder(rec)
    dec.feed(_chunk("a", usage={"prompt_tokens": 4, "completion_tokens": 1}), 1)
    dec.feed(_chunk("b", usage={"prompt_tokens": 4, "completion_tokens": -2}), 2)
    dec.finish()
    assert rec.error_kind == "usage" and "is -2" in rec.error


def test_the_one_check_covers_both_directions() -> None:
    rec = RequestRecord(7, 4, 100, chunk_ns=[1, 2, 3, 4], usage_output_tokens=4)
    assert usage_disagreement(rec) is None
    rec.usage_output_tokens = 3
    assert "4 content chunks" in (usage_disagreement(rec) or "")
    rec.usage_output_tokens = 101
    assert "max_tokens was 100" in (usage_disagreement(rec) or "")
    rec.usage_output_tokens = 90  # within max_tokens, beyond a per-chunk ceiling
    assert usage_disagreement(rec) is None
    assert "more than 16 per chunk" in (usage_disagreement(rec, 16) or "")


# -- through the bench path: a real (scripted) server that lies ---------------------


def _bench(base_url: str, out: Path) -> dict[str, Any]:
    config = BenchConfig(
        base_url=base_url,
        model="test-model",
        workload=Workload(isl=16, osl=8),
        load=LoadProfile(concurrency=[2], num_prompts=4, warmup=0),
        telemetry=False,
        output_dir=out,
    )
    [outcome] = run_bench(config, progress=False)
    path = out / f"{outcome.point_id}.json"
    assert path.exists()  # a result file for the point, whatever the server said
    assert read_result(path) == outcome.result
    return outcome.result.flat()


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_a_lying_server_gives_a_result_that_says_so(shape: str, tmp_path: Path) -> None:
    knobs, says = HOSTILE[shape]
    with ServerProcess(**knobs) as server:
        result = _bench(server.base_url, tmp_path)
    assert result["failed"] == 4 and result["failed_by_kind"] == {"usage": 4}
    assert result["status"] == "failed"
    assert any(says in s["error"] for s in result["error_samples"]), result["error_samples"]
    for key in ("output_throughput", "total_token_throughput", "request_throughput"):
        assert result[key] is None or result[key] >= 0


def test_an_honest_multi_token_server_passes(tmp_path: Path) -> None:
    with ServerProcess(tokens_per_chunk=4) as server:
        result = _bench(server.base_url, tmp_path)
    assert result["status"] == "ok" and result["failed"] == 0
    assert result["output_token_sources"]["usage"] == 4  # the server's counts were used


def test_the_cli_names_the_bad_usage_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ServerProcess(usage_completion="seven") as server:
        code = main(
            ["bench", "--base-url", server.base_url, "--model", "test-model", "--isl", "16",
             "--osl", "8", "--concurrency", "1", "--num-prompts", "2", "--output",
             str(tmp_path), "--no-progress", "--json"]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert code == 1  # a failed point
    [result] = json.loads(captured.out)
    assert result["load"]["failed_by_kind"] == {"usage": 2}
    assert list(tmp_path.glob("*.json"))


# -- property: no record makes a throughput negative or the summary raise ---------

_junk = st.one_of(
    st.none(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.booleans(),
)


@st.composite
def records(draw: st.DrawFn) -> RequestRecord:
    send = draw(st.integers(0, 10**9))
    gaps = draw(st.lists(st.integers(0, 10**8), max_size=6))
    chunk_ns = [send + sum(gaps[: i + 1]) for i in range(len(gaps))]
    n = len(chunk_ns)
    return RequestRecord(
        request_id=draw(st.integers(0, 100)),
        prompt_tokens=draw(st.integers(-50, 5000)),
        max_tokens=draw(st.integers(0, 64)),
        send_ns=send,
        chunk_ns=chunk_ns,
        chunk_tokens=draw(st.none() | st.lists(st.integers(-5, 9), min_size=n, max_size=n)),
        usage_output_tokens=draw(_junk),
        usage_prompt_tokens=draw(_junk),
        end_ns=(chunk_ns[-1] if chunk_ns else send) + 1,
        error=draw(st.none() | st.just("boom")),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(records(), min_size=1, max_size=6))
def test_no_records_make_a_throughput_negative(recs: list[RequestRecord]) -> None:
    start = min(r.send_ns for r in recs)
    flat = summarize(recs, window_start_ns=start, window_end_ns=max(r.end_ns for r in recs) + 1)
    for key, value in flat.items():
        if ("throughput" in key or "goodput" in key or key.startswith("total_")) and isinstance(
            value, (int, float)
        ):
            assert math.isfinite(value) and value >= 0, (key, value)
    assert all(r.output_tokens >= 0 for r in recs)


def test_the_undercount_message_survives_secret_masking() -> None:
    # Every text InferX writes goes through the masking; its own words must come out whole
    # (a "token: the ..." phrase read as a token's value and printed "token: *** ...").
    from inferx_core.load.transport.usage import usage_disagreement
    from inferx_core.sdk.redact import redact_text

    rec = RequestRecord(0, 4, 8)
    rec.chunk_ns = [1, 2, 3, 4, 5, 6, 7, 8]
    rec.usage_output_tokens = 1
    message = usage_disagreement(rec, None)
    assert message is not None and "undercounts" in message
    assert redact_text(message) == message
