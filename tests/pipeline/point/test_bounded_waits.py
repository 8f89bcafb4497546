"""Every wait is bounded and says what it waits for (issue 15 item 6), against hostile servers.

- a server that accepts and never answers, one that sends only keep-alive
  comments, one that stalls after two tokens: first-token and idle timeouts
  end each request, and a point whose every request went unanswered stops;
- readiness stops at once on 401/403 naming the fix; the API key is sent
  and never written;
- the port-in-use preflight wait says what it waits for.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.launch.readiness import ReadinessAuthError, wait_until_ready
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.sdk.probes import ReadinessProbe
from inferx_core.testing import ServerProcess

KEY = "sk-inferx-test-key-123"


class Hostile(BaseHTTPRequestHandler):
    """``/v1/completions`` misbehaves as ``server.mode`` says; the rest is a tiny model list."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.server.mode == "auth" and self.headers.get("Authorization") != f"Bearer {KEY}":  # type: ignore[attr-defined]
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        mode = self.server.mode  # type: ignore[attr-defined]
        if self.path != "/v1/completions":  # no /tokenize: the client counts locally
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "silent":
            time.sleep(30)  # accepted, never answered
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(text: str) -> None:
            data = text.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        try:
            if mode == "stall":
                for _ in range(2):
                    chunk('data: {"choices": [{"index": 0, "text": "hi"}]}\n\n')
            for _ in range(300):  # keep-alive comments only, for 30 s
                chunk(": ping\n\n")
                time.sleep(0.1)
        except OSError:
            pass  # the client gave up: good


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    server.mode = request.param  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def one_request(base_url: str, **limits: float) -> RequestRecord:
    record = RequestRecord(request_id=0, prompt_tokens=4, max_tokens=8)
    payload = json.dumps({"model": "m", "prompt": "x", "stream": True}).encode()
    async with ConnectionPool(base_url) as pool:
        return await send_streaming_request(
            pool, "/v1/completions", payload, record, timeout_s=30, **limits
        )


@pytest.mark.parametrize(
    ("hostile", "says", "tokens"),
    [("silent", "no first token within 0.5 s", 0), ("pings", "no first token within 0.5 s", 0),
     ("stall", "no token for 0.5 s", 2)],
    indirect=["hostile"],
)  # fmt: skip
def test_first_token_and_idle_timeouts_end_a_hung_request(
    hostile: str, says: str, tokens: int
) -> None:
    started = time.monotonic()
    rec = asyncio.run(one_request(hostile, first_token_timeout_s=0.5, token_idle_timeout_s=0.5))
    assert time.monotonic() - started < 5  # not the 30 s the server would hold it
    assert rec.error_kind == "timeout" and rec.error.startswith(says), rec.error
    assert len(rec.chunk_ns) == tokens


def test_defaults_bound_the_wait_for_a_first_token() -> None:
    load = LoadProfile()
    assert load.first_token_timeout_s == 300 and load.idle_timeout_s == 60
    assert load.request_timeout_s == 600


@pytest.mark.parametrize("hostile", ["silent"], indirect=True)
def test_a_point_whose_requests_all_go_unanswered_stops(hostile: str, tmp_path: Path) -> None:
    config = BenchConfig(
        base_url=hostile, model="m", workload=Workload(isl=4, osl=4), telemetry=False,
        load=LoadProfile(concurrency=[2], num_prompts=40, warmup=0, first_token_timeout_s=0.5),
        output_dir=tmp_path,
    )  # fmt: skip
    started = time.monotonic()
    [outcome] = run_bench(config, progress=False)
    # 40 prompts 2 at a time would take 10 s of timeouts; it stops after the first round
    assert time.monotonic() - started < 8
    assert outcome.status == "failed"
    assert "accepts requests but answers none" in outcome.result.failure_reason


class _Handle:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def alive(self) -> bool:
        return True

    def returncode(self) -> None:
        return None

    def log_tail(self, lines: int = 40) -> str:
        return ""


@pytest.mark.parametrize("hostile", ["auth"], indirect=True)
def test_readiness_stops_at_once_on_401_and_passes_with_the_key(hostile: str) -> None:
    probes = [ReadinessProbe(name="models", path="/v1/models")]
    started = time.monotonic()
    with pytest.raises(ReadinessAuthError, match="needs an API key: set api_key / INFERX_API_KEY"):
        wait_until_ready(_Handle(hostile), probes, served_model_name="m", model="m", timeout_s=60)
    assert time.monotonic() - started < 3  # not the 60 s timeout
    auth = {"Authorization": f"Bearer {KEY}"}
    wait_until_ready(
        _Handle(hostile), probes, served_model_name="m", model="m", timeout_s=10, headers=auth
    )


def test_bench_sends_the_api_key_and_never_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERX_API_KEY", KEY)
    with ServerProcess() as server:
        config = BenchConfig(
            base_url=server.base_url, workload=Workload(isl=4, osl=2), telemetry=False,
            load=LoadProfile(concurrency=[1], num_prompts=2), output_dir=tmp_path,
        )  # fmt: skip
        assert config.request_headers() == {"Authorization": f"Bearer {KEY}"}
        [outcome] = run_bench(config, progress=False)
    assert outcome.result.load.completed == 2
    for path in tmp_path.iterdir():
        assert KEY not in path.read_text(), path


def test_the_port_in_use_wait_says_what_it_waits_for(capsys: pytest.CaptureFixture[str]) -> None:
    from inferx_core.launch.preflight import PreflightTimeout, run_preflight
    from inferx_core.sdk.launch_spec import LaunchSpec, PreflightWait
    from inferx_core.sdk.log import configure_logging
    from inferx_core.sdk.platform import Platform

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        spec = LaunchSpec(engine="x", argv=("x",), port=port,
                          preflight=(PreflightWait(kind="port_free", timeout_s=1.5),))  # fmt: skip
        configure_logging()
        with pytest.raises(PreflightTimeout, match=f"port {port} is still in use"):
            run_preflight(spec, Platform(), list)
    err = capsys.readouterr().err
    assert f"waiting up to 2 s for port {port} to be free" in err


def test_inferx_run_sends_its_api_key_and_never_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fake_engine

    from inferx_core.config.models import RunConfig
    from inferx_core.pipeline.server.run import run_configs
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.platform import Platform

    monkeypatch.setenv("INFERX_API_KEY", KEY)
    cfg = RunConfig.model_validate({
        "engine": "fake", "model": "m", "plugin_options": {"mode": "ok"},
        "readiness_timeout_s": 30, "stop_grace_s": 5, "workload": {"isl": 8, "osl": 2},
        "load": {"concurrency": [1], "num_prompts": 2},
    })  # fmt: skip
    assert cfg.auth_headers() == {"Authorization": f"Bearer {KEY}"}
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    summary = run_configs([cfg], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False)
    assert [o.status for o in summary.outcomes] != ["failed"]
    result = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert result["provenance"]["config"]["api_key"] == "***"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("hostile", ["auth"], indirect=True)
def test_bench_on_a_key_protected_server_names_the_fix(
    hostile: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    from inferx_core.cli.app import main

    monkeypatch.delenv("INFERX_API_KEY", raising=False)
    argv = ["bench", "--base-url", hostile, "--no-progress", "--no-telemetry", "--output",
            str(tmp_path)]  # fmt: skip
    assert main(argv) == 2
    assert "the server needs an API key: set api_key / INFERX_API_KEY" in capsys.readouterr().err


@pytest.mark.parametrize("knobs", [{"hold_open": True}, {"hold_open": True, "fail": "no_done"}])
def test_replies_on_connections_the_server_keeps_open_are_complete(
    knobs: dict[str, object], tmp_path: Path
) -> None:
    # [DONE] (or the finish_reason and usage) arrives, the HTTP body never ends:
    # each reply is complete then, not failed after load.idle_timeout_s.
    with ServerProcess(**knobs) as server:  # type: ignore[arg-type]
        config = BenchConfig(
            base_url=server.base_url, model="test-model", workload=Workload(isl=8, osl=4),
            load=LoadProfile(concurrency=[2], num_prompts=6, warmup=0, idle_timeout_s=5),
            telemetry=False, output_dir=tmp_path,
        )  # fmt: skip
        [outcome] = run_bench(config, progress=False)
    result = outcome.result.flat()
    assert result["status"] == "ok", result["failure_reason"]
    assert result["completed"] == 6 and result["failed"] == 0
    assert result["output_token_sources"]["usage"] == 6  # the usage after the finish was kept
