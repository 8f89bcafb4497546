"""Speculative-decoding acceptance from /metrics counters over exactly the measured window.

The counters come from the scripted server (vLLM's names and labels, moved by
the load: each chunk is one step whose tokens minus the bonus were accepted),
scraped by the engine-metrics sampler; the arithmetic is checked against
counters drawn by hypothesis.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.speculative import SpeculativeConfig
from inferx_core.load.prompts.payloads import build_chat_payload
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.metrics.speculative import acceptance_check
from inferx_core.metrics.validity import assess
from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.telemetry.engine_metrics import EngineMetricsSampler, map_metrics
from inferx_core.telemetry.window import summarize_prefix
from inferx_core.testing import SSETestServer

VLLM = EngineMetricsMap(
    spec_decode_drafts="vllm:spec_decode_num_drafts",
    spec_decode_draft_tokens="vllm:spec_decode_num_draft_tokens",
    spec_decode_accepted_tokens="vllm:spec_decode_num_accepted_tokens",
    spec_decode_accepted_per_position="vllm:spec_decode_num_accepted_tokens_per_pos",
)


def _stream(base_url: str, max_tokens: int) -> RequestRecord:
    async def go() -> RequestRecord:
        pool = ConnectionPool(base_url)
        payload = build_chat_payload("test-model", "hi", max_tokens)
        try:
            return await send_streaming_request(
                pool, "/v1/chat/completions", payload, RequestRecord(0, 2, max_tokens),
                timeout_s=10.0,
            )  # fmt: skip
        finally:
            await pool.close()

    return asyncio.run(go())


def test_live_counters_over_the_window_give_tokens_per_step() -> None:
    """Before the window: traffic that must not count; inside: 3 tokens per step of 3 drafts."""
    with SSETestServer(spec_tokens=3, tokens_per_chunk=2) as server:
        sampler = EngineMetricsSampler(server.base_url, VLLM)
        sampler.start()
        try:
            _stream(server.base_url, 8)  # 4 steps of 1 accepted, before the window
            server.knobs.tokens_per_chunk = 3
            rows = [(1_000, dict(sampler.read()))]
            rec = _stream(server.base_url, 12)  # 4 steps of 2 accepted
            rows.append((2_000, dict(sampler.read())))
        finally:
            sampler.stop()
    assert rec.ok and len(rec.chunk_ns) == 4
    spec = summarize_prefix(rows, "engine.", 1_000, 2_000)["spec_decode"]
    assert spec["source"] == "counters"
    assert (spec["drafts"], spec["draft_tokens"], spec["accepted_tokens"]) == (4, 12, 8)
    assert spec["mean_acceptance_length"] == pytest.approx(3.0)
    assert spec["acceptance_rate"] == pytest.approx(8 / 12)
    assert spec["acceptance_per_position"] == [1.0, 1.0, 0.0]


def _text(drafts: float, tokens: float, accepted: float, per_pos: list[float]) -> str:
    """vLLM's exposition (prometheus_client's: ``# TYPE x_total counter``, then its
    samples; two DP engines' drafts, summed by the reader)."""
    name = "vllm:spec_decode_num_{}".format
    lines = [f"# TYPE {name('drafts')}_total counter"]
    lines += [f'{name("drafts")}_total{{engine="{e}"}} {drafts / 2}' for e in (0, 1)]
    lines += [
        f"# TYPE {name('draft_tokens')}_total counter",
        f"{name('draft_tokens')}_total {tokens}",
    ]
    lines += [f"# TYPE {name('accepted_tokens')}_total counter"]
    lines += [f"{name('accepted_tokens')}_total {accepted}"]
    lines += [f"# TYPE {name('accepted_tokens_per_pos')}_total counter"]
    lines += [
        f'{name("accepted_tokens_per_pos")}_total{{engine="0",position="{i}"}} {v}'
        for i, v in enumerate(per_pos)
    ]
    return "\n".join(lines) + "\n"


steps = st.lists(st.integers(0, 4), min_size=1, max_size=30)  # accepted per step, k = 4


@settings(max_examples=150, deadline=None)
@given(before=steps, inside=steps, after=steps)
def test_window_arithmetic(before: list[int], inside: list[int], after: list[int]) -> None:
    """Scrapes at the window's edges: only the steps between them count, whatever came
    before or after; definitions are vLLM's (1 + accepted / drafts, accepted / draft tokens,
    accepted at position i / drafts)."""
    k, rows, total = 4, [], [0, 0, 0, [0] * 4]

    def scrape(t: int) -> None:
        text = _text(total[0], total[1], total[2], total[3])
        rows.append((t, map_metrics(text, VLLM)))

    def run(accepted_steps: list[int]) -> None:
        for a in accepted_steps:
            total[0] += 1
            total[1] += k
            total[2] += a
            total[3] = [v + (1 if i < a else 0) for i, v in enumerate(total[3])]

    run(before)
    scrape(10)
    run(inside)
    scrape(20)
    run(after)
    scrape(30)
    spec = summarize_prefix(rows, "engine.", 10, 20)["spec_decode"]
    n = len(inside)
    assert spec["drafts"] == n and spec["accepted_tokens"] == sum(inside)
    assert spec["mean_acceptance_length"] == pytest.approx(1 + sum(inside) / n)
    assert spec["acceptance_rate"] == pytest.approx(sum(inside) / (k * n))
    expected = [sum(1 for a in inside if a > i) / n for i in range(k)]
    assert spec["acceptance_per_position"] == pytest.approx(expected)


def test_sglang_gauge_is_its_mean_in_the_window() -> None:
    names = EngineMetricsMap(spec_decode_accept_length="sglang:spec_accept_length")
    rows = [
        (t, map_metrics(f"# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length {v}\n",
                        names))
        for t, v in ((5, 9.0), (10, 2.0), (15, 3.0), (20, 4.0), (25, 9.0))
    ]  # fmt: skip
    spec = summarize_prefix(rows, "engine.", 10, 20)["spec_decode"]
    assert spec["source"] == "accept_length_gauge"
    assert spec["mean_acceptance_length"] == pytest.approx(3.0)
    assert spec["acceptance_rate"] is None and "3 readings" in spec["why"]


def test_no_named_counters_no_spec_entry() -> None:
    rows = [(t, map_metrics(_text(1, 4, 2, [1, 1]), EngineMetricsMap())) for t in (1, 2)]
    assert "spec_decode" not in summarize_prefix(rows, "engine.", 1, 2)


def _window(length: float | None, drafts: float = 10) -> dict:
    return {"spec_decode": {"source": "counters", "mean_acceptance_length": length,
                            "acceptance_rate": 0.5, "drafts": drafts}}  # fmt: skip


def test_golden_check() -> None:
    spec = SpeculativeConfig(method="mtp", num_speculative_tokens=3,
                             golden_acceptance_length=2.5, acceptance_tolerance=0.1)  # fmt: skip
    ok = acceptance_check(_window(2.4), spec)
    assert ok is not None and ok.passed and ok.severity == "invalidates"
    assert ok.value == pytest.approx(-0.04) and ok.limit == 0.1 and "-0.100" in ok.why
    bad = acceptance_check(_window(1.9), spec)
    assert bad is not None and not bad.passed and "-24.0%" in bad.why
    assert acceptance_check(_window(None, drafts=0), spec).passed is False
    unmeasured = acceptance_check({}, spec)
    assert unmeasured is not None and unmeasured.severity == "marks" and not unmeasured.passed
    assert acceptance_check(_window(2.0), None) is None
    no_golden = acceptance_check(
        _window(2.0), spec.model_copy(update={"golden_acceptance_length": None})
    )
    assert no_golden is not None and no_golden.passed and no_golden.severity == "marks"
    verdict = assess([], {"percentiles": []}, open_loop_rate=None, client_load=None,
                     extra_checks=[bad, None])  # fmt: skip
    assert not verdict.valid and [c.name for c in verdict.failing] == ["spec_acceptance"]
