"""Speculative acceptance per request, from the replies, beside the /metrics window."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.anatomy import anatomy
from inferx_core.metrics.spec_requests import AGREEMENT_TOLERANCE, spec_per_request

MS = 1_000_000


def _rec(
    i: int, draft: int | None, accepted: int | None, steps: int | None = None
) -> RequestRecord:
    rec = RequestRecord(i, 4, 8, send_ns=MS, usage_output_tokens=8, finish_reason="length")
    rec.chunk_ns = [30 * MS]
    rec.response_id = f"chatcmpl-{i}"
    rec.server_figures = {
        "queue_ms": 1.0, "ttft_ms": 20.0, "spec_draft_tokens": draft,
        "spec_accepted_tokens": accepted, "spec_drafts": steps,
    }  # fmt: skip
    return rec


def test_per_request_rates_the_worst_and_the_window() -> None:
    records = [_rec(0, 30, 3, 10), _rec(1, 30, 27, 10), _rec(2, 30, 15, 10), _rec(3, 6, 9, 2)]
    spec = spec_per_request(records, {"acceptance_rate": 0.52})
    assert spec is not None
    assert (spec.requests, spec.out_of_bounds) == (3, 1)  # 9 accepted of 6 drafted: left out
    assert spec.acceptance_rate == pytest.approx(45 / 90)
    assert spec.mean_acceptance_length == pytest.approx(1 + 45 / 30)
    assert spec.worst[0] == {"request_id": 0, "response_id": "chatcmpl-0", "acceptance_rate": 0.1}
    assert spec.request_acceptance_rate.median == pytest.approx(0.5)
    assert spec.agrees_with_window is True and "within" in (spec.why or "")
    off = spec_per_request(records, {"acceptance_rate": 0.75})
    assert off is not None and off.agrees_with_window is False
    # In the anatomy section, as written into the result.
    an = anatomy(records, "vllm", {"acceptance_rate": 0.52})
    assert an is not None and an.speculative == spec
    assert an.model_dump(mode="json")["speculative"]["worst"][0]["request_id"] == 0


def test_no_draft_counts_no_section() -> None:
    assert spec_per_request([_rec(0, None, None)], None) is None
    spec = spec_per_request([_rec(0, 10, 5)], None)
    assert spec is not None and spec.drafts is None and spec.agrees_with_window is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 600)), min_size=1, max_size=40))
def test_rates_are_bounded(rows: list[tuple[int, int]]) -> None:
    spec = spec_per_request([_rec(i, d, a) for i, (d, a) in enumerate(rows)], None)
    if spec is None:
        return
    assert spec.acceptance_rate is None or 0.0 <= spec.acceptance_rate <= 1.0
    for key in ("mean", "median", "p10", "p90"):
        value = spec.request_acceptance_rate.stats().get(key)
        assert value is None or 0.0 <= value <= 1.0
    assert AGREEMENT_TOLERANCE > 0


@pytest.mark.parametrize("ignore_eos", [True, False])
def test_a_reply_cut_short_is_not_pooled(ignore_eos: bool) -> None:
    """A shed reply (stopped, or a ``length`` stop short of max_tokens) is failed as the
    point judges it (metrics.requests.judged_request): its drafts count nowhere."""
    shed = _rec(9, 4, 0)
    shed.usage_output_tokens, shed.finish_reason = 1, "stop" if ignore_eos else "length"
    out = spec_per_request([_rec(0, 4, 4), _rec(1, 4, 2), shed], None, ignore_eos=ignore_eos)
    assert out is not None and out.requests == 2 and out.draft_tokens == 8
    assert out.acceptance_rate == pytest.approx(6 / 8)
    assert spec_per_request([shed], None, ignore_eos=ignore_eos) is None
