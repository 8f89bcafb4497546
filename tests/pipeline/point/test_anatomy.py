"""The anatomy reaches the written files: `inferx bench --engine vllm` against a server that
answers as vLLM 0.32 does with --enable-per-request-metrics and --enable-request-id-headers.

The server here stamps its own clock: a request waits ``QUEUE_S`` (its "queue"), then
``PREFILL_S`` (its "TTFT") before the first token, and reports both in the final usage
chunk's ``metrics`` object, as vLLM does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from http_stub import serving

from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.files import read_result

QUEUE_S, PREFILL_S = 0.02, 0.03


class _VllmLike(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps({"data": [{"id": "m", "max_model_len": 4096}]}).encode()
        self._send(200, "application/json", body)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        if not self.path.endswith("/completions"):
            self._send(404, "application/json", b'{"error": "no such route"}')
            return
        rid = self.headers.get("X-Request-Id", "none")
        t0 = time.perf_counter()
        time.sleep(QUEUE_S)
        t1 = time.perf_counter()
        time.sleep(PREFILL_S)
        n = int(body.get("max_tokens") or 1)
        chunks = [{"id": f"cmpl-{rid}", "choices": [{"index": 0, "text": "a"}]} for _ in range(n)]
        chunks[-1]["choices"][0]["finish_reason"] = "length"
        metrics = {
            "queue_time_ms": (t1 - t0) * 1e3,
            "time_to_first_token_ms": (time.perf_counter() - t1) * 1e3,
            "generation_time_ms": 0.5,
        }
        usage = {"prompt_tokens": 16, "completion_tokens": n, "total_tokens": 16 + n}
        chunks.append({"id": f"cmpl-{rid}", "choices": [], "metrics": metrics, "usage": usage})
        events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("X-Request-Id", rid)
        self.end_headers()
        self.wfile.write(events + b"data: [DONE]\n\n")

    def _send(self, code: int, kind: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(_VllmLike) as url:
        yield url


def test_the_written_result_and_sidecar_carry_the_engines_clock(
    server: str, tmp_path: Path
) -> None:
    config = BenchConfig(
        base_url=server,
        engine="vllm",
        model="m",
        workload=Workload(isl=16, osl=2, api="completions"),
        load=LoadProfile(concurrency=[2], num_prompts=8),
        output_dir=tmp_path,
    )
    [outcome] = run_bench(config, progress=False)
    result = read_result(tmp_path / f"{outcome.point_id}.json")
    an = result.anatomy
    assert an is not None and an.engine == "vllm" and an.requests == 8
    assert an.server_queue_ms is not None and an.server_queue_ms.median is not None
    assert an.server_queue_ms.median >= QUEUE_S * 1e3
    assert an.server_ttft_ms.median is not None and an.server_ttft_ms.median >= PREFILL_S * 1e3
    # the parts sum to the client's TTFT, request by request (rest = the remainder)
    assert an.client_ttft_ms.median == pytest.approx(
        an.server_queue_ms.median + an.server_ttft_ms.median + an.rest_ms.median, rel=0.5
    )
    assert an.rest_ms.percentiles["p50"] is not None and an.rest_ms.percentiles["p50"] >= -1.0
    assert result.validity is not None
    assert any(c.name == "client_rest" and c.severity == "marks" for c in result.validity.checks)
    rows = [
        json.loads(x)
        for x in (tmp_path / f"{outcome.point_id}.requests.jsonl").read_text().splitlines()
    ]
    measured = [r for r in rows if not r["warmup"]]
    assert len(measured) == 8
    ids = {r["client_request_id"] for r in rows}
    assert len(ids) == len(rows)  # one id per request, warmup included
    for row in measured:
        assert row["server_request_id"] == row["client_request_id"]  # the server's echo
        assert row["response_id"] == f"cmpl-{row['client_request_id']}"
        assert row["server_fields"]["metrics"]["generation_time_ms"] == 0.5  # as given
        assert row["server_figures"]["queue_ms"] >= QUEUE_S * 1e3
        assert row["server_figures"]["decode_ms"] == 0.5
