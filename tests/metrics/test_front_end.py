"""The anatomy's rest split by the engine front end's TTFT histogram (window level).

The real-data test reads two /metrics scrapes of the real vLLM CPU 0.32
(tests/telemetry/data/vllm_metrics_before.txt, _after.txt: 16 streamed chat
requests at concurrency 1 between them, after 3 warm-up requests) and those
requests' own client TTFT and per-request metrics (vllm_front_end_requests.json),
taken with --enable-per-request-metrics on this machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.anatomy import anatomy
from inferx_core.metrics.front_end import (
    COUNT_KEY,
    FRONT_END_TOLERANCE_MS,
    FRONT_END_TOLERANCE_SHARE,
    NO_HISTOGRAM,
    SUM_KEY,
    front_end_split,
)
from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.telemetry.engine_metrics import map_metrics
from inferx_core.telemetry.window import summarize_prefix

MS = 1_000_000
S = 1_000 * MS
DATA = Path(__file__).parents[1] / "telemetry" / "data"
VLLM = EngineMetricsMap(front_end_ttft_histogram="vllm:time_to_first_token_seconds")


def _rec(i: int, first_ns: int, client_ms: float, queue: float, server: float) -> RequestRecord:
    rec = RequestRecord(i, 4, 8, send_ns=first_ns - int(client_ms * MS), usage_output_tokens=8)
    rec.chunk_ns = [first_ns, first_ns + 5 * MS]
    rec.finish_reason = "length"
    rec.server_figures = {"queue_ms": queue, "ttft_ms": server, "decode_ms": 35.0}
    return rec


def _window(sum_s: float, count: float, samples: int = 5) -> dict:
    return {
        SUM_KEY: {"increase": sum_s, "samples": samples},
        COUNT_KEY: {"increase": count, "samples": samples},
    }


def _spread(n: int, client_ms: float, queue: float, server: float) -> list[RequestRecord]:
    """n requests with first tokens evenly inside a 10 s window [0, 10 s]."""
    return [_rec(i, S // 2 + i * (9 * S // n), client_ms, queue, server) for i in range(n)]


def test_the_split_reads_the_window_mean_beside_the_requests_means() -> None:
    records = _spread(20, 40.0, 5.0, 20.0)
    # histogram mean 30 ms over 20 first tokens: front end 30 - 25 = 5, client + wire 10
    an = anatomy(records, "vllm", engine_window=_window(0.6, 20.0), window_ns=(0, 10 * S))
    assert an is not None and an.front_end is not None
    fe = an.front_end
    assert fe.window_ttft_mean_ms == pytest.approx(30.0)
    assert fe.server_front_end_ms == pytest.approx(5.0)
    assert fe.client_wire_ms == pytest.approx(10.0)
    assert fe.clocked_mean_ms == pytest.approx(25.0) and fe.client_ttft_mean_ms == pytest.approx(40)
    assert fe.first_tokens_in_window == 20 and fe.null_reasons == {}
    # 5 readings over 10 s: 2.5 s around the edges hold 5 and 4 first tokens (0.5 s + 0.45 s i), + 1
    assert fe.count_tolerance == 10


def test_an_engine_without_the_histogram_or_without_a_window_gets_null_with_why() -> None:
    records = _spread(4, 40.0, 5.0, 20.0)
    an = anatomy(records, "llama.cpp", engine_window={"requests_running": {}}, window_ns=(0, S))
    assert an is not None and an.front_end is not None
    assert an.front_end.window_ttft_mean_ms is None
    assert an.front_end.null_reasons == {"window_ttft_mean_ms": NO_HISTOGRAM}
    off = front_end_split([40.0], [25.0], records, None, (0, S))
    assert "scraping was off" in off.null_reasons["window_ttft_mean_ms"]


def test_a_count_far_from_the_points_first_tokens_is_not_used() -> None:
    records = _spread(20, 40.0, 5.0, 20.0)
    fe = front_end_split([40.0] * 20, [25.0] * 20, records, _window(3.0, 100.0), (0, 10 * S))
    assert fe.window_ttft_mean_ms is None and fe.server_front_end_ms is None
    assert fe.client_wire_ms is None and fe.histogram_count == 100.0
    assert "counted 100 first tokens" in fe.null_reasons["window_ttft_mean_ms"]
    assert "requests 20 (tolerance 10" in fe.null_reasons["client_wire_ms"]


def test_fewer_than_two_readings_inside_cannot_bound_the_edges() -> None:
    records = _spread(4, 40.0, 5.0, 20.0)
    fe = front_end_split([40.0] * 4, [25.0] * 4, records, _window(0.12, 4.0, 1), (0, 10 * S))
    assert fe.window_ttft_mean_ms is None
    assert "fewer than two" in fe.null_reasons["window_ttft_mean_ms"]


def test_a_part_below_zero_beyond_the_tolerance_is_null_with_the_figure() -> None:
    records = _spread(20, 40.0, 5.0, 20.0)
    # histogram mean 50 ms: above the client's 40 (client + wire -10 ms, tolerance 3 ms)
    fe = front_end_split([40.0] * 20, [25.0] * 20, records, _window(1.0, 20.0), (0, 10 * S))
    assert fe.window_ttft_mean_ms == pytest.approx(50.0)
    assert fe.server_front_end_ms == pytest.approx(25.0) and fe.client_wire_ms is None
    assert fe.tolerance_ms == pytest.approx(FRONT_END_TOLERANCE_MS + 0.05 * 40)
    assert "-10.00 ms: below zero beyond the tolerance" in fe.null_reasons["client_wire_ms"]
    # within the tolerance: kept as measured (a small negative reads as 0 +- tolerance)
    near = front_end_split([40.0] * 20, [25.0] * 20, records, _window(0.81, 20.0), (0, 10 * S))
    assert near.client_wire_ms == pytest.approx(-0.5) and near.null_reasons == {}


@settings(max_examples=60, deadline=None)
@given(
    client=st.floats(1.0, 5000.0),
    clocked_share=st.floats(0.0, 1.0),
    hist_share=st.floats(0.0, 1.0),
    n=st.integers(1, 40),
)
def test_parts_and_clocked_mean_sum_to_the_client_mean(
    client: float, clocked_share: float, hist_share: float, n: int
) -> None:
    clocked = client * clocked_share
    hist = clocked + (client - clocked) * hist_share  # between the clocked and client means
    records = _spread(n, client, 0.0, clocked)
    fe = front_end_split(
        [client] * n, [clocked] * n, records, _window(hist * n / 1000, float(n)), (0, 10 * S)
    )
    assert fe.server_front_end_ms is not None and fe.client_wire_ms is not None
    total = fe.server_front_end_ms + fe.client_wire_ms + clocked
    assert total == pytest.approx(client, rel=1e-9, abs=1e-6)
    tol = FRONT_END_TOLERANCE_MS + FRONT_END_TOLERANCE_SHARE * client
    assert fe.server_front_end_ms >= -tol and fe.client_wire_ms >= -tol


def _real_rows() -> list:
    before = map_metrics((DATA / "vllm_metrics_before.txt").read_text(), VLLM)
    after = map_metrics((DATA / "vllm_metrics_after.txt").read_text(), VLLM)
    return [(0, before), (20 * S, after)]


def test_the_real_vllm_scrapes_and_requests_split_the_rest(tmp_path: Path) -> None:
    rows = _real_rows()
    window = summarize_prefix(rows, "engine.", 0, 20 * S)
    meta = json.loads((DATA / "vllm_front_end_requests.json").read_text())
    n = len(meta["requests"])
    assert window["front_end_ttft_count_total"]["increase"] == n  # one observation a request
    records = []
    for i, req in enumerate(meta["requests"]):
        m = req["metrics"]
        first = 5 * S + i * (10 * S // n)
        records.append(
            _rec(i, first, req["client_ttft_ms"], m["queue_time_ms"], m["time_to_first_token_ms"])
        )
    # two readings, one at each edge, both inside: the interval is the window itself
    an = anatomy(records, "vllm", engine_window=window, window_ns=(0, 20 * S))
    assert an is not None and an.front_end is not None
    fe = an.front_end
    assert fe.null_reasons == {}, fe.null_reasons
    # the scrapes' own figures: (0.4945 - 0.2764) s over 16 first tokens = 13.6 ms, between
    # the engine core's 5.0 ms (queue + TTFT) and the client's 17.9 ms
    assert fe.window_ttft_mean_ms == pytest.approx(
        1000 * (0.4944949150085449 - 0.2763974666595459) / 16
    )
    assert fe.server_front_end_ms is not None and fe.client_wire_ms is not None
    # the front end's own TTFT lies between the engine core's clock and the client's
    assert fe.server_front_end_ms >= -fe.tolerance_ms and fe.client_wire_ms >= -fe.tolerance_ms
    parts = fe.server_front_end_ms + fe.client_wire_ms + fe.clocked_mean_ms
    assert parts == pytest.approx(fe.client_ttft_mean_ms)
    # written and read back as the result file holds it (model_dump_json)
    path = tmp_path / "anatomy.json"
    path.write_text(an.model_dump_json())
    written = json.loads(path.read_text())["front_end"]
    assert written["window_ttft_mean_ms"] == pytest.approx(fe.window_ttft_mean_ms)
    assert written["client_wire_ms"] == pytest.approx(fe.client_wire_ms)
