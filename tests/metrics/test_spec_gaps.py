"""A speculative server's own zero chunk gaps are allowed; a client that reads late is not.

``chunk_coalescing`` allows the share of zero gaps a speculating server makes
itself (``metrics.spec_gaps``): a step's tokens written as separate chunks at
once (llama-server) make up to ``1 - 1/L`` of the gaps 0; a step written as one
chunk (vLLM) makes none, so its allowance is none, whatever its L. A length
that is missing or out of bounds gives no allowance, nor does a point that does
not speculate. The last test plants a client that reads two chunks at once
(one write of two chunks) on a scripted vLLM-shaped speculative server: an
allowance of ``1 - 1/L`` (L = 3) would have passed it; it fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.spec_gaps import server_zero_gaps, zero_gap_limit
from inferx_core.metrics.summarize import summarize
from inferx_core.metrics.validity import assess
from inferx_core.testing import SSETestServer

MS = 1_000_000


def _reply(i: int, tokens_per_chunk: int, chunks_per_read: int, n_chunks: int = 12):
    """One reply: ``n_chunks`` chunks of ``tokens_per_chunk`` tokens; the first (the
    prefill's) alone, the rest read ``chunks_per_read`` at a time (the same stamp), reads
    5 ms apart."""
    send = i * 200 * MS
    reads = [0] + [1 + (k - 1) // chunks_per_read for k in range(1, n_chunks)]
    stamps = [send + (10 + 5 * r) * MS for r in reads]
    return RequestRecord(
        request_id=i, prompt_tokens=8, max_tokens=n_chunks * tokens_per_chunk, send_ns=send,
        chunk_ns=stamps, usage_output_tokens=n_chunks * tokens_per_chunk,
        end_ns=stamps[-1] + MS,
    )  # fmt: skip


def _coalescing(records: list[RequestRecord], step_tokens: float | None):
    flat = summarize(
        records, window_start_ns=0, window_end_ns=max(r.end_ns for r in records),
        percentiles=[50.0, 99.0],
    )  # fmt: skip
    v = assess(records, flat, open_loop_rate=None, client_load=None, step_tokens=step_tokens)
    [check] = [c for c in v.checks if c.name == "chunk_coalescing"]
    return check


def test_one_chunk_per_token_written_a_step_at_once_is_the_servers_doing() -> None:
    # llama-server at L = 3: one token per chunk, a step's 3 chunks in one read
    records = [_reply(i, tokens_per_chunk=1, chunks_per_read=3) for i in range(12)]
    allowed = server_zero_gaps(records, 3.0)
    assert allowed == pytest.approx((11 - 11 / 3) / 11)  # 1 - 1/L over each reply's gaps
    check = _coalescing(records, 3.0)
    assert check.passed and check.limit == pytest.approx(allowed)
    assert "3.00 tokens per speculative step" in check.why


def test_a_client_reading_two_steps_at_once_is_caught_on_a_speculative_point() -> None:
    # the same server, read by a client that wakes once per two steps: 1 - 1/(2L) of gaps 0
    records = [_reply(i, tokens_per_chunk=1, chunks_per_read=6) for i in range(12)]
    check = _coalescing(records, 3.0)
    assert not check.passed and check.value is not None and check.value > check.limit


def test_a_step_written_as_one_chunk_gives_no_allowance() -> None:
    # vLLM at L = 3: one chunk per step (3 tokens); a client reading two at once
    records = [_reply(i, tokens_per_chunk=3, chunks_per_read=2) for i in range(12)]
    assert server_zero_gaps(records, 3.0) == 0.0
    check = _coalescing(records, 3.0)
    assert not check.passed and check.limit == 0.25  # 1 - 1/L (67%) would have passed 50%


@pytest.mark.parametrize("length", [None, float("nan"), float("inf"), 0.5, 1.0, 66.0, -3.0])
def test_a_missing_or_impossible_length_gives_no_allowance(length: float | None) -> None:
    records = [_reply(i, tokens_per_chunk=1, chunks_per_read=3) for i in range(12)]
    assert server_zero_gaps(records, length) is None
    assert zero_gap_limit(0.25, records, length) == (0.25, "")
    assert not _coalescing(records, length).passed  # the plain limit: 67% of gaps 0 fail


def test_a_point_that_does_not_speculate_gets_no_allowance() -> None:
    records = [_reply(i, tokens_per_chunk=1, chunks_per_read=3) for i in range(12)]
    check = _coalescing(records, None)
    assert not check.passed and check.limit == 0.25 and "speculative" not in check.why


@given(
    shapes=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 8)), min_size=1, max_size=8),
    length=st.floats(1.0, 65.0),
)
def test_the_allowance_is_a_share_and_never_above_what_the_chunks_allow(shapes, length) -> None:
    """In [0, 1]; 0 when every chunk holds a whole step or more; 1 - 1/L at one token a chunk."""
    records = [_reply(i, tokens_per_chunk=t, chunks_per_read=1, n_chunks=n)
               for i, (n, t) in enumerate(shapes)]  # fmt: skip
    allowed = server_zero_gaps(records, length)
    if length <= 1 or all(n == 1 for n, _ in shapes):
        assert allowed is None
        return
    assert allowed is not None and 0.0 <= allowed <= 1.0
    if all(t >= length for _, t in shapes):
        assert allowed == 0.0
    if all(t == 1 for _, t in shapes):
        assert allowed == pytest.approx(1 - 1 / length)


# -- planted: a scripted vLLM-shaped speculative server, two chunks in one write -----------


def _pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted server writes its chunks two at a time (0+1, 2+3, ...) in one write,
    on its own clock otherwise: the client reads each pair at once, as a starved one would."""
    from inferx_core.testing.stream import ScriptedStream

    send_next = ScriptedStream._send_next

    def send_pair(self: Any) -> None:
        if self.i + 1 >= self.n_chunks:
            send_next(self)
            return
        proto, held = self.proto, []
        proto.write = held.append  # chunk i is held back ...
        try:
            send_next(self)
        finally:
            del proto.write
        self.cancel()  # ... and goes out with chunk i + 1, in one write
        pending = [b"".join(held)]
        real = proto.write
        proto.write = lambda data: real(pending.pop() + data if pending else data)
        try:
            send_next(self)
        finally:
            del proto.write

    monkeypatch.setattr(ScriptedStream, "_send_next", send_pair)


def test_a_planted_coalescing_client_on_a_speculative_vllm_point_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _pairs(monkeypatch)
    # one chunk per verify step of 3 drafts, 2 accepted: the counters' mean length is 3
    with SSETestServer(itl_ms=5, tokens_per_chunk=3, spec_tokens=3) as server:
        config = tmp_path / "bench.json"
        config.write_text(json.dumps({
            "base_url": server.base_url,
            "speculative": {"method": "ngram", "num_speculative_tokens": 3},
            "workload": {"api": "completions", "isl": 16, "osl": 18},
            "load": {"concurrency": [2], "num_prompts": 8, "warmup": 0},
            "telemetry_intervals": {"engine_metrics": 0.05},
        }))  # fmt: skip
        main(["bench", str(config), "--engine", "vllm", "--no-progress", "--output",
              str(tmp_path / "out")])  # fmt: skip
    capsys.readouterr()
    (path,) = (tmp_path / "out").glob("*-c2.json")
    result = json.loads(path.read_text())  # the written result file
    length = result["telemetry"]["engine_metrics"]["spec_decode"]["mean_acceptance_length"]
    # 3 from the counters, the window's edges interpolated between scrapes: 1 - 1/L >= 60%
    assert 2.5 <= length <= 3.0 + 1e-9
    [check] = [c for c in result["validity"]["checks"] if c["name"] == "chunk_coalescing"]
    # 6 chunks a reply written in 3 pairs: up to 3 of its 5 gaps are 0 (58% measured, which
    # an allowance of 1 - 1/L >= 60% would have let pass); the server made none of them
    assert check["value"] > 0.25 and check["limit"] == 0.25
    assert check["passed"] is False and "speculative" not in check["why"]
