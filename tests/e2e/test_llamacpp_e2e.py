"""End to end on a second real engine: llama.cpp's llama-server, launched through
inferx_llamacpp on the demo's sweep (the same config as vLLM's but ``engine:``).

`make test` builds llama-server into the engine cache first (`make llama-server`)
and sets INFERX_REQUIRE_ENGINE=1, so there a missing binary is a failure, never
a skip. llama-server is ready in under a second: the whole module takes about
half a minute.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.demo.run import SERVED_NAME, demo_config
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import read_result

pytestmark = pytest.mark.engine

N = 6
#: The sweep's reply length: each point's load lasts well past several engine-metrics
#: intervals (0.1 s), so a gauge read during it is certain, not lucky. At 24 tokens a
#: point took 67-91 ms on a quiet machine and CI once sampled no request running.
SWEEP_OSL = 320
ENGINE_METRICS_S = 0.1


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llamacpp-e2e")


def config_for(root: Path, name: str, osl: int = 24, **update: object):
    base = demo_config(
        output_dir=root / name, engine="llamacpp", concurrency=[1, 3], isl=40, osl=osl,
        num_prompts=N, model_dir=root / "model",
    )  # fmt: skip
    intervals = {"host": 0.2, "engine_metrics": ENGINE_METRICS_S}
    fast = {"telemetry_intervals": intervals, "max_num_seqs": None}
    return base.model_copy(update={"name": name, **fast, **update})


@pytest.fixture(scope="module")
def sweep(llama_server: Path, root: Path):
    config = config_for(root, "sweep", osl=SWEEP_OSL)
    return config, run_configs([config], progress=False)


def test_every_point_completed_with_the_servers_usage(sweep) -> None:
    _, summary = sweep
    assert summary.ok, [o.result.failure_reason for o in summary.outcomes]
    assert len(summary.outcomes) == 2
    for outcome in summary.outcomes:
        result = read_result(outcome.path).flat()
        assert result["completed"] == N and result["failed"] == 0
        assert result["model_id"] == SERVED_NAME
        assert result["output_token_sources"]["usage"] == N  # usage on the finish chunk
        assert result["median_ttft_ms"] > 0 and result["mean_tpot_ms"] >= 0
        assert result["median_e2el_ms"] >= result["median_ttft_ms"]
        assert result["workload"]["token_source"] == "server"  # llama.cpp's /tokenize
        assert result["workload"]["missed_target"] == 0
        assert result["engine"]["name"] == "llamacpp" and result["engine"]["version"]
        argv = result["launch"]["spec"]["argv"]
        # slots from the load's highest concurrency; each slot holds max_model_len
        assert argv[argv.index("--parallel") + 1] == "3"
        assert argv[argv.index("--ctx-size") + 1] == str(2048 * 3)
        assert "--no-cache-prompt" in argv


def test_usage_counts_agree_with_the_stream_and_ignore_eos(sweep) -> None:
    _, summary = sweep
    for outcome in summary.outcomes:
        sidecar = outcome.path.with_name(outcome.point_id + ".requests.jsonl")
        rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
        measured = [r for r in rows if not r["warmup"]]
        assert len(measured) == N
        for row in measured:
            assert row["usage_output_tokens"] == row["max_tokens"]  # ignore_eos honoured
            assert row["usage_prompt_tokens"] == row["prompt_tokens"]
            # one content chunk per token (the finish chunk carries no text)
            assert len(row["chunk_ns"]) == row["max_tokens"]
            assert row["chunk_ns"][0] > row["send_ns"]


def test_itl_present_and_metrics_scraped(sweep) -> None:
    _, summary = sweep
    outcome = summary.outcomes[-1]
    result = outcome.result.flat()
    assert result["mean_itl_ms"] is not None
    sidecar = outcome.path.with_name(outcome.point_id + ".telemetry.jsonl")
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
    engine_rows = [r for r in rows if r["sampler"] == "engine_metrics" and "error" not in r]
    assert engine_rows
    requests = outcome.path.with_name(outcome.point_id + ".requests.jsonl")
    measured = [r for r in map(json.loads, requests.read_text().splitlines()) if not r["warmup"]]
    load_s = (max(r["chunk_ns"][-1] for r in measured) - min(r["send_ns"] for r in measured)) / 1e9
    # the gauge below is read during the load only if the load outlasts several readings
    assert load_s >= 5 * ENGINE_METRICS_S, f"the load lasted {load_s:.3f} s: raise SWEEP_OSL"
    # read while requests ran, and never more than the point's 3 slots
    assert 1 <= max(r["engine.requests_running"] for r in engine_rows) <= 3
    assert max(r["engine.generation_tokens_total"] for r in engine_rows) > 0
    assert all(r["engine.prefix_cache_hits_total"] == 0 for r in engine_rows)


def test_engine_stopped(sweep) -> None:
    _, summary = sweep
    result = read_result(summary.outcomes[0].path).flat()
    port = int(result["launch"]["spec"]["port"])
    assert not [
        c
        for c in psutil.net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
    ]
    assert not engine_procs(os.getpid())


def engine_procs(parent: int) -> list[psutil.Process]:
    """llama-server processes under ``parent`` (InferX starts it in its own group)."""
    try:
        children = psutil.Process(parent).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [p for p in children if "llama-server" in " ".join(_cmdline(p))]


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


@pytest.mark.parametrize("caching", [True, False])
def test_prefix_cache_on_hits_the_shared_prefix_and_off_hits_nothing(
    llama_server: Path, root: Path, caching: bool
) -> None:
    base = config_for(root, f"cache-{caching}")
    config = base.model_copy(
        update={
            "prefix_caching": caching,
            "workload": Workload(isl=320, osl=8, range_semantics="fixed", shared_prefix=256,
                                 tokenizer=base.workload.tokenizer),
            "load": LoadProfile(concurrency=[1], num_prompts=10),
        }
    )  # fmt: skip
    [outcome] = run_configs([config], progress=False).outcomes
    flat = outcome.result.flat()
    rate = (flat["engine_metrics"].get("prefix_cache_hit_rate") or {}).get("value")
    if caching:
        # 256 of every 320 prompt tokens are shared: after the first request they hit
        assert rate is not None and rate > 0.5, flat["engine_metrics"]
    else:
        assert rate is not None and rate == 0, flat["engine_metrics"]


def test_chat_streams_carry_usage_on_their_own_chunk(llama_server: Path, root: Path) -> None:
    """Chat: llama-server sends usage on a separate chunk with empty choices, after the
    finish chunk; every request's count comes from it, and equals max_tokens."""
    base = config_for(root, "chat")
    config = base.model_copy(
        update={
            "workload": base.workload.model_copy(update={"api": "chat"}),
            "load": LoadProfile(concurrency=[2], num_prompts=N),
        }
    )
    [outcome] = run_configs([config], progress=False).outcomes
    flat = outcome.result.flat()
    assert outcome.result.status in ("ok", "invalid"), flat["failure_reason"]
    assert flat["completed"] == N and flat["failed"] == 0
    assert flat["output_token_sources"]["usage"] == N
    sidecar = outcome.path.with_name(outcome.point_id + ".requests.jsonl")
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
    for row in (r for r in rows if not r["warmup"]):
        assert row["usage_output_tokens"] == row["max_tokens"]
        assert row["usage_prompt_tokens"] > 0
        assert len(row["chunk_ns"]) >= 1 and row["chunk_ns"][0] > row["send_ns"]
    assert flat["median_ttft_ms"] > 0 and flat["mean_itl_ms"] is not None


def start_run(
    root: Path, name: str, measuring: bool = True, **update: object
) -> tuple[subprocess.Popen[str], list]:
    """``inferx run`` of a 60 s point as a subprocess, once llama-server is up and (by
    default) measuring; else once it answers /health, while InferX counts the prompts."""
    config = config_for(root, name, load=LoadProfile(concurrency=[1], duration_s=60), **update)
    path = root / f"{name}.json"
    path.write_text(json.dumps(config.model_dump(mode="json", exclude_none=True)))
    inferx = Path(sys.executable).with_name("inferx")
    proc = subprocess.Popen(
        [str(inferx), "run", str(path), "--output", str(config.output_dir), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # a run from a terminal: under `nohup make test` SIGHUP comes in ignored and
        # InferX rightly keeps it so, which the SIGHUP case would read as a lost signal
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not engine_procs(proc.pid) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.2)
    engines = engine_procs(proc.pid)
    assert engines, "llama-server never started"
    # measuring: more tokens predicted than the warmup asks (one request of 24 per slot);
    # else past the readiness probe's one-token completion, while the prompts are counted
    wait_predicted(engines[0], proc, more_than=3 * 24 if measuring else 0)
    if not measuring:
        time.sleep(0.3)
    return proc, engines


def engine_url(engine: psutil.Process) -> str:
    argv = _cmdline(engine)
    return f"http://127.0.0.1:{argv[argv.index('--port') + 1]}"


def wait_predicted(engine: psutil.Process, proc: subprocess.Popen[str], more_than: int) -> None:
    """Until llama-server's /metrics counts more than ``more_than`` predicted tokens."""
    metrics = engine_url(engine) + "/metrics"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            with urllib.request.urlopen(metrics, timeout=5) as reply:
                text = reply.read().decode()
        except OSError:
            text = ""
        predicted = [
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("llamacpp:tokens_predicted_total")
        ]
        if predicted and predicted[0] > more_than:
            return
        time.sleep(0.2)
    raise AssertionError(f"llama-server never predicted more than {more_than} tokens")


def point_status(root: Path, name: str) -> tuple[str, str | None]:
    [path] = [p for p in (root / name).glob("*.json") if not p.name.startswith(".")]
    result = read_result(path)
    return result.status, result.failure_reason


def test_the_live_server_has_the_slots_and_context_the_load_asked(
    llama_server: Path, root: Path
) -> None:
    """Read back from llama-server itself (/props, /slots) while a load of 3 runs: 3 slots,
    each with max_model_len of context, as the argv asked."""
    config = config_for(root, "slots", load=LoadProfile(concurrency=[3], duration_s=60))
    path = root / "slots.json"
    path.write_text(json.dumps(config.model_dump(mode="json", exclude_none=True)))
    inferx = Path(sys.executable).with_name("inferx")
    proc = subprocess.Popen(
        [str(inferx), "run", str(path), "--output", str(config.output_dir), "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not engine_procs(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        [engine] = engine_procs(proc.pid)
        wait_predicted(engine, proc, more_than=3 * 24)
        with urllib.request.urlopen(engine_url(engine) + "/props", timeout=10) as reply:
            props = json.loads(reply.read())
        assert props["total_slots"] == 3
        assert props["default_generation_settings"]["n_ctx"] == config.max_model_len
        with urllib.request.urlopen(engine_url(engine) + "/slots", timeout=10) as reply:
            slots = json.loads(reply.read())
        assert len(slots) == 3 and all(s["n_ctx"] == config.max_model_len for s in slots)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_leaves_no_engine_behind(llama_server: Path, root: Path, sig: int) -> None:
    name = f"signal-{sig.name}"
    proc, engines = start_run(root, name)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    _, alive = psutil.wait_procs(engines, timeout=30)
    assert not alive, [p.pid for p in alive]
    status, reason = point_status(root, name)
    assert status == "interrupted" and reason and reason.startswith("interrupted by"), reason


def test_a_second_ctrl_c_kills_llama_server_at_once(llama_server: Path, root: Path) -> None:
    proc, engines = start_run(root, "second-ctrl-c", stop_grace_s=120)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    proc.wait(timeout=60)
    assert time.monotonic() - started < 20
    assert proc.returncode == 130
    _, alive = psutil.wait_procs(engines, timeout=5)
    assert not alive, [p.pid for p in alive]


def test_kill_9_of_inferx_leaves_no_llama_server(llama_server: Path, root: Path) -> None:
    proc, engines = start_run(root, "kill-9")
    proc.kill()
    proc.wait(timeout=30)
    # the engine watchdog: SIGTERM, up to 10 s, then SIGKILL
    _, alive = psutil.wait_procs(engines, timeout=30)
    assert not alive, [p.pid for p in alive]


@pytest.mark.parametrize("measuring", [True, False], ids=["measuring", "counting-prompts"])
def test_a_crashed_llama_server_ends_the_point_with_its_reason(
    llama_server: Path, root: Path, measuring: bool
) -> None:
    """kill -9 of the engine: the point says the engine died (before the fix, a death while
    the prompts were counted read "TokenizerError: ... Connection reset by peer")."""
    name = f"crash-{'measuring' if measuring else 'counting'}"
    proc, engines = start_run(root, name, measuring=measuring)
    for engine in engines:
        engine.kill()
    proc.wait(timeout=90)
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode != 0, err
    status, reason = point_status(root, name)
    assert status == "failed", reason
    assert reason and reason.startswith("engine exited with code -9"), reason
    assert not engine_procs(proc.pid)
