"""The anatomy of a point's TTFT: client TTFT = server queue + server TTFT + rest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.anatomy import (
    MIN_FLAGGED_REST_MS,
    REST_TOLERANCE_MS,
    anatomy,
    anatomy_check,
)

MS = 1_000_000


def _rec(
    i: int, client_ms: float, queue: float | None, server: float | None, **kw
) -> RequestRecord:
    n = kw.pop("n", 8)  # the reply is as long as asked: a shorter one is failed
    rec = RequestRecord(i, 4, n, send_ns=10 * MS, usage_output_tokens=n, **kw)
    rec.chunk_ns = [10 * MS + int(client_ms * MS), 10 * MS + int(client_ms * MS) + 5 * MS]
    rec.finish_reason = "length"
    rec.server_figures = {"queue_ms": queue, "ttft_ms": server, "decode_ms": 35.0}
    return rec


def test_parts_and_their_distributions() -> None:
    records = [_rec(i, 30.0 + i, 10.0, 15.0) for i in range(11)]
    an = anatomy(records, "vllm")
    assert an is not None and an.requests == 11 and an.engine == "vllm"
    assert an.client_ttft_ms.median == pytest.approx(35.0)
    assert an.server_queue_ms is not None and an.server_queue_ms.median == pytest.approx(10.0)
    assert an.rest_ms.median == pytest.approx(10.0)
    assert an.server_tpot_ms is not None and an.server_tpot_ms.median == pytest.approx(5.0)
    assert an.queue_share == pytest.approx(10 / 35)
    check = anatomy_check(an)
    assert check is not None and not check.passed and check.severity == "marks"
    assert "p50 rest 10.00 ms is 0.67x" in check.why


def test_a_small_rest_passes_and_no_figures_is_no_anatomy() -> None:
    an = anatomy([_rec(i, 26.0, 5.0, 20.0) for i in range(5)], "vllm")
    check = anatomy_check(an)
    assert check is not None and check.passed
    plain = _rec(0, 20.0, None, None)
    plain.server_figures = None
    assert anatomy([plain], None) is None


def test_inconsistent_and_missing_requests_are_counted_with_reasons() -> None:
    records = [_rec(0, 20.0, 10.0, 15.0), _rec(1, 40.0, 10.0, 15.0), _rec(2, 40.0, 1.0, None)]
    records[2].server_problems = {"ttft_ms": "the reply carried no metrics.time_to_first_token_ms"}
    an = anatomy(records, "vllm")
    assert an is not None
    assert (an.requests, an.inconsistent, an.without_server_figures) == (1, 1, 1)
    assert "metrics.time_to_first_token_ms" in an.null_reasons["without_server_figures"]
    assert "exceeded the client's TTFT" in an.null_reasons["inconsistent"]


def test_a_reply_cut_short_is_no_part_of_the_anatomy() -> None:
    """A shed reply (one token, stopped although ignore_eos was sent) is failed as the
    point judges it (metrics.requests.judged_request): its instant TTFT is not read."""
    records = [_rec(i, 30.0, 10.0, 15.0) for i in range(4)]
    shed = _rec(4, 1.0, 0.0, 0.5, n=1)
    shed.max_tokens, shed.finish_reason = 8, "stop"
    an = anatomy([*records, shed], "vllm", ignore_eos=True)
    assert an is not None and an.requests == 4 and an.client_ttft_ms.median == pytest.approx(30.0)
    # only shed replies carried figures: no anatomy at all
    assert anatomy([shed], "vllm", ignore_eos=True) is None


def test_an_engine_without_queue_time_keeps_the_queue_in_the_rest() -> None:
    an = anatomy([_rec(i, 50.0, None, 10.0) for i in range(3)], "llama.cpp")
    assert an is not None and an.rest_includes_queue and an.server_queue_ms is None
    assert an.queue_share is None and anatomy_check(an) is None  # not judged


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.01, 5000), st.floats(0, 2000), st.floats(0, 2000), st.integers(0, 64)
        ),
        min_size=1,
        max_size=30,
    )
)
def test_parts_sum_to_the_client_ttft_and_shares_are_bounded(rows: list) -> None:
    records = [_rec(i, c, q, s, n=n) for i, (c, q, s, n) in enumerate(rows)]
    an = anatomy(records, "x")
    assert an is not None
    assert an.requests + an.inconsistent == len(rows)
    for share in (an.queue_share, an.rest_share):
        assert share is None or 0.0 <= share <= 1.0 + 1e-9
    if an.requests:
        assert an.rest_ms.percentiles["p50"] is not None
        assert an.rest_ms.percentiles["p50"] >= -REST_TOLERANCE_MS
        check = anatomy_check(an)
        assert check is not None
        if an.rest_ms.percentiles["p99"] <= MIN_FLAGGED_REST_MS:
            assert check.passed


def test_the_rest_says_what_it_holds_as_the_engine_plugin_names_it() -> None:
    """The engine's un-clocked front end (``ServerTiming.unclocked``) is named beside the
    rest, in the section and in the client_rest check's reason; unnamed, it is said so."""
    from inferx_core.metrics.anatomy import REST_CLIENT, UNNAMED_FRONT_END

    records = [_rec(i, 30.0 + i, 10.0, 15.0) for i in range(11)]
    named = anatomy(records, "vllm", unclocked="vLLM's API server: tokenizing, ZMQ")
    assert named is not None
    assert named.rest_holds == f"{REST_CLIENT}; vLLM's API server: tokenizing, ZMQ"
    check = anatomy_check(named)
    assert check is not None and not check.passed
    assert check.why.endswith(f"the rest holds {named.rest_holds}")
    unnamed = anatomy(records, "vllm")
    assert unnamed is not None and unnamed.rest_holds == f"{REST_CLIENT}; {UNNAMED_FRONT_END}"
    no_queue = anatomy([_rec(i, 30.0, None, 15.0) for i in range(3)], "llama.cpp", unclocked="x")
    assert no_queue is not None and no_queue.rest_holds.endswith("(no queue time reported)")
