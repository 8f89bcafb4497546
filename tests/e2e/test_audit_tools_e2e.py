"""AIPerf and GuideLLM against the real vLLM CPU engine (the tiny demo model, the demo's
argv), their files audited by ``inferx audit`` and held to InferX's own run (issue 42).

The starved load is AIPerf at concurrency 64 (one worker process reading 64 streams
beside an engine that keeps both cores busy; at concurrency 8 it already sent requests
21 ms, p99 123 ms, after handing them out): the audit must reject it for a starved
client.

The light load (constant arrivals at 2 req/s, about one request in flight) is run by the
tool and by InferX *at the same time* against the one engine (two clients sharing the
same seconds see the same engine; runs minutes apart do not on these shared cores). On
these two cores no client reads this engine's stream cleanly: its tokens come every
~4 ms and, at load average 10-16, in bursts. Measured beside AIPerf, InferX's own run
had 46% zero chunk gaps and whole replies in one read (invalid by its own verdict), and
at load average 16 its median TPOT was 0.008 ms (every reply read at once); AIPerf had
67% zero gaps and one request sent 525 ms late, GuideLLM sent p99 50-113 ms late; all
three at niceness -10 did worse, not better. So neither "the audit passes it" nor a TPOT
agreement holds for every run here (both are proven on the scripted server's 40 ms
tokens, tests/interop/test_tools_live.py). What holds for every run, and is asserted:
the workload checks pass (errors, usage, token counts, records, output length: whatever
the client checks say, the files describe the load that was asked), and the output
throughput, which the schedule and the server's token counts set, agrees with InferX's
within :data:`TOLERANCE`.

Slow (a vLLM start, then each tool's start-up and ~15 s runs); `make test` sets
INFERX_REQUIRE_ENGINE=1 and INFERX_REQUIRE_TOOLS=1, so a missing engine or tool fails
instead of skipping. The agreement measured is printed (`-s`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from audit_tools import (
    agreement,
    aiperf_argv,
    assert_agree,
    audit,
    failing,
    finished,
    guidellm_argv,
    imported,
    inferx_argv,
    inferx_result,
    run_aiperf,
    tool_bin,
)

from inferx_core.demo.engine import API_SERVER_MODULE
from inferx_core.demo.run import SERVED_NAME
from inferx_core.launch.process import free_port

pytestmark = pytest.mark.engine

#: The tool's output throughput against InferX's run beside it: 30 replies of 32 tokens
#: (the server's count) at a constant 2 req/s are ~64 tok/s for any client that keeps the
#: schedule, over each client's own window (AIPerf's opens at its phase's start, up to one
#: arrival gap before its first send: 0.5 s of ~15). Measured at load average 11-16:
#: AIPerf 60.5, 63.7, 61.8 against 65.4, 65.9, 65.8 tok/s (-7%, -3%, -6%); GuideLLM 65.0
#: against 65.5 (-1%). Their median TPOTs against InferX's in the same runs: -6%, -74%
#: (AIPerf), +56% (GuideLLM): the reads, not the engine.
TOLERANCE = 0.15
#: The light load of both tools and InferX (rate: constant arrivals; c caps in flight).
LIGHT = {"rate": 2, "c": 4, "n": 30, "osl": 32, "model": SERVED_NAME}


def _engine_argv(python: Path, model: Path, port: int) -> list[str]:
    """The demo's vLLM CPU launch (``inferx plan`` of the demo), on ``port``."""
    return [
        str(python), "-m", API_SERVER_MODULE, "--model", str(model),
        "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port),
        "--max-num-seqs", "16", "--max-model-len", "2048", "--no-enable-prefix-caching",
        "--dtype", "float32", "--enforce-eager",
    ]  # fmt: skip


def _ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"vLLM exited ({proc.returncode}): {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"vLLM not ready in {timeout:.0f} s: {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny demo model: the engine serves it, the tools count tokens with it."""
    from inferx_core.demo.tiny_model import build_tiny_model

    return Path(build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama"))


@pytest.fixture(scope="module")
def engine_url(
    engine_python: Path, tokenizer: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    root = tmp_path_factory.mktemp("audit-engine")
    model = tokenizer
    port = free_port()
    env = os.environ | {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    log = root / "vllm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            _engine_argv(engine_python, Path(model), port),
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _ready(url, proc, log, timeout=600)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the engine's own process group only
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _served(url: str) -> float:
    """Prompt tokens the engine has served so far (its /metrics counter)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    found = re.findall(r"^vllm:prompt_tokens_total\{[^}]*\} ([0-9.e+]+)$", text, re.M)
    return sum(float(v) for v in found)


def _beside_inferx(tool: subprocess.Popen[str], url: str, out: Path) -> dict[str, Any]:
    """InferX's run of the clean load, started once the tool's first request reached the
    engine, while the tool runs; then the tool's end."""
    before = _served(url)
    deadline = time.monotonic() + 300
    while _served(url) == before and tool.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    argv = [sys.executable, "-m", "inferx_core.cli", *inferx_argv(url, out, **LIGHT)]
    ours = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    finished(ours, ours.stdout + ours.stderr)
    stdout, _ = tool.communicate(timeout=600)
    finished(tool, stdout)
    return inferx_result(out)


def _report(tool: str, pairs: dict[str, tuple[float, float]]) -> None:
    shown = ", ".join(f"{k} {a:.1f} vs {b:.1f} ({a / b - 1:+.0%})" for k, (a, b) in pairs.items())
    print(f"\n{tool} against InferX on the vLLM CPU engine, same load, same time: {shown}")


#: The checks of what the files say was sent and received (not of the client's timing).
WORKLOAD_CHECKS = ("error_rate", "usage_cross_check", "records_complete", "output_length")


def _workload_as_asked(found: dict[str, Any], more: tuple[str, ...] = ()) -> None:
    checks = {c["name"]: c for c in found["validity"]["checks"]}
    for name in (*WORKLOAD_CHECKS, *more):
        assert name in checks and checks[name]["passed"], checks.get(name, failing(found))


def _throughput(pairs: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    return {k: v for k, v in pairs.items() if k == "output tok/s"}


def test_aiperf_light_engine_run_is_the_load_asked_and_agrees_with_inferx(
    engine_url: str, tokenizer: Path, tmp_path: Path, capsys
) -> None:
    aiperf = tool_bin(".venv-aiperf", "aiperf", "aiperf")
    run = tmp_path / "aiperf"
    argv = aiperf_argv(aiperf, engine_url, run, tokenizer, **LIGHT)
    tool = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ours = _beside_inferx(tool, engine_url, tmp_path / "inferx")
    found = audit(capsys, run)
    _workload_as_asked(found, ("tool_token_count", "rate_reached"))
    pairs = agreement(imported(run / "profile_export_aiperf.json", tmp_path / "imp"), ours)
    with capsys.disabled():
        _report("AIPerf", pairs)
    assert_agree(_throughput(pairs), TOLERANCE)


def test_guidellm_light_engine_run_is_the_load_asked_and_agrees_with_inferx(
    engine_url: str, tokenizer: Path, tmp_path: Path, capsys
) -> None:
    guidellm = tool_bin(".venv-guidellm", "guidellm", "guidellm")
    argv = guidellm_argv(guidellm, engine_url, tokenizer, **LIGHT)
    tool = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    ours = _beside_inferx(tool, engine_url, tmp_path / "inferx")
    found = audit(capsys, tmp_path / "benchmarks.json")
    assert found["tool"] == "GuideLLM"
    _workload_as_asked(found)
    pairs = agreement(imported(tmp_path / "benchmarks.json", tmp_path / "imp"), ours)
    with capsys.disabled():
        _report("GuideLLM", pairs)
    assert_agree(_throughput(pairs), TOLERANCE)


def test_aiperf_starved_on_the_engine_is_flagged(
    engine_url: str, tokenizer: Path, tmp_path: Path, capsys
) -> None:
    aiperf = tool_bin(".venv-aiperf", "aiperf", "aiperf")
    load = {"c": 64, "n": 128, "osl": 32, "model": SERVED_NAME}
    run = run_aiperf(aiperf, engine_url, tmp_path / "aiperf", tokenizer, **load)
    found = audit(capsys, run)
    assert not found["trustworthy"]
    assert found["diagnosis"][0]["rule"] == "starved_client", found["diagnosis"]
