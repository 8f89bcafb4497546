"""A deployment router's own metrics: sglang-router's exporter mapped and summarized over
the window (tests/telemetry/data/sglang_router_metrics.txt is a real scrape), and the
engine sampler over several engine processes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.sdk.sampler import SamplerUnavailable
from inferx_core.telemetry.engine_metrics import EngineMetricsSampler, combine_engines
from inferx_core.telemetry.router_metrics import (
    RouterMetricsSampler,
    map_router_metrics,
    summarize_router,
)

FIXTURE = (Path(__file__).parent / "data" / "sglang_router_metrics.txt").read_text()
W1, W2, W3 = (f"http://127.0.0.1:{p}" for p in (18711, 18712, 18715))
S = 1_000_000_000


def test_the_real_scrape_is_mapped_to_router_keys() -> None:
    assert map_router_metrics(FIXTURE) == {
        "router.up": 1.0,
        "router.requests_total": 9.0,
        "router.upstream_responses_total": 14.0,
        "router.upstream_errors_total": 5.0,  # the third worker's HTTP 500s
        "router.worker_errors_total": 5.0,
        "router.retries_total": 5.0,
        "router.connections_active": 0.0,
        f"router.worker|{W1}|success": 5.0,
        f"router.worker|{W2}|success": 4.0,
        f"router.worker|{W3}|failure": 5.0,
        "router.request_duration_seconds_sum": pytest.approx(0.28264502),
        "router.request_duration_seconds_count": 9.0,
    }


def test_an_exporter_without_sglang_router_families_gives_no_section() -> None:
    rows = [
        (t * S, map_router_metrics("# TYPE other_total counter\nother_total 3\n")) for t in (0, 2)
    ]
    assert summarize_router(rows, 0, 2 * S) == {}


def _reading(ok: dict[str, float], failed: float, seconds: float) -> dict[str, float]:
    text = "".join(
        f'smg_worker_cb_outcomes_total{{worker="{w}",outcome="success"}} {n}\n'
        for w, n in ok.items()
    )
    requests = sum(ok.values())
    text += f'smg_worker_cb_outcomes_total{{worker="{W3}",outcome="failure"}} {failed}\n'
    text += f'smg_router_requests_total 3\nsmg_router_requests_total{{x="1"}} {requests - 3}\n'
    text += f"smg_http_connections_active {requests % 4}\n"
    text += f"smg_router_request_duration_seconds_sum {seconds}\n"
    text += f"smg_router_request_duration_seconds_count {requests}\n"
    return map_router_metrics(text)


def test_counters_moving_over_the_window_give_increases_per_worker() -> None:
    """One warm-up request before the window; W2 is first served mid-window (its series
    appears then: counted from 0, not from its first reading)."""
    rows = [
        (0 * S, _reading({W1: 1}, 0, 0.5)),
        (1 * S, _reading({W1: 1}, 0, 0.5)),
        (2 * S, _reading({W1: 3, W2: 2}, 1, 1.5)),
        (3 * S, _reading({W1: 5, W2: 4}, 2, 2.5)),
        (4 * S, _reading({W1: 5, W2: 4}, 2, 2.5)),
    ]
    out = summarize_router(rows, 1 * S, 3 * S)
    assert out["workers"] == {
        W1: {"successes_total": 4.0},
        W2: {"successes_total": 4.0},
        W3: {"failures_total": 2.0},
    }
    assert out["requests_total"] == {"increase": 8.0, "samples": 3}
    assert out["request_duration_s"] == {"mean": pytest.approx(2.0 / 8), "requests": 8.0}
    assert out["connections_active"]["samples"] == 3
    assert "up" not in out


def test_engine_readings_combine_like_data_parallel_ranks() -> None:
    one = {"engine.kv_cache_usage": 0.25, "engine.requests_running": 2.0, "engine.x": 1.0}
    two = {"engine.kv_cache_usage": 0.5, "engine.requests_running": 3.0, "engine.x": None}
    both = combine_engines(
        [
            one | {"engine.spec_decode_accept_length": 2.0},
            two | {"engine.spec_decode_accept_length": 3.0},
        ]
    )
    assert both == {
        "engine.kv_cache_usage": 0.5,  # the fullest cache
        "engine.requests_running": 5.0,
        "engine.x": None,  # one engine lacks it: no partial sum
        "engine.spec_decode_accept_length": 2.5,
    }


@pytest.fixture
def exporters() -> Iterator[list[str]]:
    """Two HTTP servers answering /metrics with their own scripted text."""
    texts = [
        'vllm:num_requests_running{engine="0"} 2\nvllm:kv_cache_usage_perc 0.25\n',
        'vllm:num_requests_running{engine="0"} 5\nvllm:kv_cache_usage_perc 0.75\n',
    ]
    servers = []
    for text in texts:

        class Handler(BaseHTTPRequestHandler):
            body = text.encode()

            def do_GET(self) -> None:
                self.send_response(200 if self.path == "/metrics" else 404)
                self.end_headers()
                self.wfile.write(self.body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_engine_sampler_scrapes_every_engine_process(exporters: list[str]) -> None:
    names = EngineMetricsMap(
        kv_cache_usage="vllm:kv_cache_usage_perc", requests_running="vllm:num_requests_running"
    )
    sampler = EngineMetricsSampler(exporters, names)
    sampler.start()
    try:
        reading = dict(sampler.read())
    finally:
        sampler.stop()
    assert reading == {"engine.kv_cache_usage": 0.75, "engine.requests_running": 7.0}
    assert EngineMetricsSampler(exporters[0], names).urls == [exporters[0] + "/metrics"]


def test_the_router_sampler_reads_the_exporter_or_says_why_not(exporters: list[str]) -> None:
    sampler = RouterMetricsSampler(exporters[0] + "/metrics")
    sampler.start()
    try:
        assert sampler.read() == {"router.up": 1.0}  # no smg_* family there
    finally:
        sampler.stop()
    with pytest.raises(SamplerUnavailable, match="answered HTTP 404"):
        RouterMetricsSampler(exporters[0] + "/nothing").start()
