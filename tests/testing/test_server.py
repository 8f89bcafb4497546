"""The scripted server's known capacity and its misbehaviour past it (issue 38's servers)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from inferx_core.testing import SSETestServer

BODY = {"model": "m", "prompt": "a b c", "max_tokens": 8, "stream": True, "ignore_eos": True}


def _post(url: str, out: list[tuple[int, str, float]]) -> None:
    t0 = time.perf_counter()
    reply = httpx.post(url + "/v1/completions", json=BODY, timeout=10)
    out.append((reply.status_code, reply.text, time.perf_counter() - t0))


def _burst(server: SSETestServer, n: int) -> list[tuple[int, str, float]]:
    out: list[tuple[int, str, float]] = []
    threads = [threading.Thread(target=_post, args=(server.base_url, out)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _usage(text: str) -> dict:
    lines = [ln[6:] for ln in text.splitlines() if ln.startswith("data: {")]
    return next(json.loads(x)["usage"] for x in reversed(lines) if '"usage"' in x)


@pytest.mark.parametrize(("overload", "status"), [("http_503", 503), ("http_429", 429)])
def test_past_its_capacity_the_server_refuses(overload: str, status: int) -> None:
    with SSETestServer(ttft_ms=200, max_concurrent=2, overload=overload) as server:
        codes = sorted(code for code, _, _ in _burst(server, 4))
    assert codes == [200, 200, status, status]


def test_a_shedding_server_answers_one_token_and_stop_at_once() -> None:
    with SSETestServer(ttft_ms=200, itl_ms=5, max_concurrent=2, overload="shed") as server:
        replies = _burst(server, 4)
    shed = [t for _, t, _ in replies if '"finish_reason":"stop"' in t]
    assert len(shed) == 2 and all(_usage(t)["completion_tokens"] == 1 for t in shed)
    full = [t for _, t, _ in replies if '"finish_reason":"length"' in t]
    assert len(full) == 2 and all(_usage(t)["completion_tokens"] == 8 for t in full)


def test_a_dying_server_stops_answering_after_its_requests() -> None:
    with SSETestServer(die_after=2) as server:
        assert [code for code, _, _ in _burst(server, 1) + _burst(server, 1)] == [200, 200]
        with pytest.raises(httpx.HTTPError):
            httpx.post(server.base_url + "/v1/completions", json=BODY, timeout=5)
        with pytest.raises(httpx.HTTPError):  # and no new connection is accepted
            httpx.get(server.base_url + "/health", timeout=5)


def test_a_drifting_server_gets_slower_with_every_generation() -> None:
    with SSETestServer(ttft_ms=1, drift_ms=40) as server:
        times = [_burst(server, 1)[0][2] for _ in range(4)]
    assert times[3] >= 0.12  # 3 x 40 ms of drift: a lower bound, whatever the machine's load
