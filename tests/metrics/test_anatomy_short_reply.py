"""A shed reply is judged as the point judges it in the anatomy, the speculative figures
and validity's sample counts (FIXER-3 item 1; issue 38's one judge).

The server here answers as vLLM 0.32 does with per-request metrics, but every other
request is shed: one token and ``finish_reason: stop`` although ``ignore_eos`` was sent,
still carrying the engine's figures (an instant TTFT, and four draft tokens none of which
were accepted). ``metrics.requests.judged_request`` fails such a reply everywhere: before,
the anatomy and the per-request acceptance took the transport's ``ok`` and counted it,
so the written acceptance read 0.5 where every completed reply accepted all its drafts.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from http_stub import serving

from inferx_core.config.models import BenchConfig, LoadProfile, ValidityLimits, Workload
from inferx_core.metrics.requests import judged_request
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.read import read_request_records

DRAFT = 4


class _SheddingVllm(BaseHTTPRequestHandler):
    count = itertools.count()
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._send(json.dumps({"data": [{"id": "m", "max_model_len": 4096}]}).encode())

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        with self.lock:
            shed = next(self.count) % 2 == 1
        asked = int(body.get("max_tokens") or 1)
        n = 1 if shed else asked
        chunks = [{"id": "cmpl-x", "choices": [{"index": 0, "text": "a"}]} for _ in range(n)]
        chunks[-1]["choices"][0]["finish_reason"] = "stop" if shed else "length"
        spec = {"num_spec_steps": 1, "num_draft_tokens": DRAFT}
        spec["num_accepted_draft_tokens"] = 0 if shed else DRAFT
        metrics = {
            "queue_time_ms": 0.0,
            "time_to_first_token_ms": 0.01 if shed else 0.2,
            "generation_time_ms": 0.1,
            "speculative_decoding": spec,
        }
        usage = {"prompt_tokens": 16, "completion_tokens": n, "total_tokens": 16 + n}
        chunks.append({"id": "cmpl-x", "choices": [], "metrics": metrics, "usage": usage})
        events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(events + b"data: [DONE]\n\n")

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[str]:
    with serving(_SheddingVllm) as url:
        yield url


def test_shed_replies_leave_the_anatomy_and_the_acceptance(server: str, tmp_path: Path) -> None:
    config = BenchConfig(
        base_url=server,
        engine="vllm",
        model="m",
        workload=Workload(isl=16, osl=4, api="completions"),  # ignore_eos by default
        load=LoadProfile(concurrency=[2], num_prompts=16),
        # the client-side checks opened: this test is about which replies count
        validity=ValidityLimits(max_loop_lag_p95_ms=1000, max_client_cpu_fraction=1.0),
        output_dir=tmp_path,
    )
    [outcome] = run_bench(config, progress=False)
    path = tmp_path / f"{outcome.point_id}.json"
    flat = json.loads(path.read_text())
    measured = [r for r in read_request_records(path) or [] if not r.warmup]
    judged = [r for r in measured if judged_request(r, ignore_eos=True).ok]
    completed = flat["load"]["completed"]
    # the scripted server sheds every other request: both kinds are in the window
    assert completed == len(judged) and 0 < completed < len(measured)
    assert flat["load"]["failed_by_kind"] == {"short_reply": len(measured) - completed}
    an = flat["anatomy"]
    assert an["requests"] == completed  # the shed replies' instant TTFT is not read
    assert an["server_ttft_ms"]["mean"] == pytest.approx(0.2)  # never the 0.01 shed
    spec = an["speculative"]
    assert spec["requests"] == completed and spec["draft_tokens"] == DRAFT * completed
    assert spec["acceptance_rate"] == 1.0  # the shed replies' 0 accepted is not pooled
    # validity's sample counts are the latency populations written: the completed replies
    sizes = [c for c in flat["validity"]["checks"] if c["name"].startswith("sample_size.")]
    ttft = [c for c in sizes if c["name"].endswith("_ttft_ms")]
    assert ttft and all(c["value"] == completed for c in ttft)
    assert any(c["name"] == "sample_size.p90_ttft_ms" for c in ttft)  # 8 < 10 asked
