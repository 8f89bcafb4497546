"""``inferx run`` end to end with a fake engine (the scripted SSE server as a process).

Covers the runner's promises: one launch per server, one result per point,
readiness and launch recorded, the engine stopped afterwards, failures
(crash on start, death mid-load, never ready) recorded per point with the
log tail and no made-up numbers, --resume, secrets kept out of results, and
the CLI paths that start nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fake_engine
import psutil
import pytest

from inferx_core.config.models import RunConfig
from inferx_core.config.points import point_ids, server_id
from inferx_core.launch.process import port_is_free
from inferx_core.pipeline.point.measure import PointOutcome
from inferx_core.pipeline.server.run import RunSummary, run_configs
from inferx_core.results.files import read_result, result_path
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform

SECRET = "hf_secret_value_42"
LATENCY_FIELDS = ("median_ttft_ms", "mean_ttft_ms", "p99_e2el_ms", "output_throughput")
PLATFORMS = Path(__file__).parents[2] / "platforms"


def fake_pm() -> Any:
    return get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])


def fake_config(mode: str = "ok", **overrides: Any) -> RunConfig:
    options = {"mode": mode, "ttft_ms": 5, "itl_ms": 1, **overrides.pop("plugin_options", {})}
    data: dict[str, Any] = {
        "engine": "fake",
        "model": "org/tiny-model",
        "plugin_options": options,
        "readiness_timeout_s": 30,
        "stop_grace_s": 5,
        "workload": {"isl": 16, "osl": 4},
        "load": {"concurrency": [1, 2], "num_prompts": 4},
    }
    data.update(overrides)
    return RunConfig.model_validate(data)


def engine_pids(port: int) -> list[int]:
    """Processes whose command line is the fake engine on ``port``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if str(port) in cmdline and cmdline[:1] == [sys.executable]:
            found.append(proc.info["pid"])
    return found


class Watcher:
    """An ``on_point`` callback that notes the engine process while it still runs."""

    def __init__(self) -> None:
        self.outcomes: list[PointOutcome] = []
        self.pids: set[int] = set()
        self.ports: set[int] = set()
        self.engine_env: dict[str, str] = {}

    def __call__(self, outcome: PointOutcome) -> None:
        self.outcomes.append(outcome)
        port = outcome.result.flat()["launch"]["spec"]["port"]
        self.ports.add(port)
        for pid in engine_pids(port):
            self.pids.add(pid)
            with contextlib.suppress(psutil.Error):
                self.engine_env = psutil.Process(pid).environ()


def assert_engine_gone(watcher: Watcher) -> None:
    for pid in watcher.pids:
        alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        assert not alive, f"engine process {pid} survived the run"
    for port in watcher.ports:
        assert port_is_free(port), f"something still listens on port {port}"


def results_in(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: read_result(p).flat() for p in sorted(out.glob("*.json"))}


def run(configs: list[RunConfig], out: Path, **kwargs: Any) -> tuple[RunSummary, float]:
    started = time.monotonic()
    summary = run_configs(
        configs, pm=fake_pm(), platform=Platform(), output_dir=out, progress=False, **kwargs
    )
    return summary, time.monotonic() - started


# -- happy path (one engine launch shared by several tests) ------------------------------------
@pytest.fixture(scope="module")
def happy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("happy")
    cfg = fake_config(engine_env={"HF_TOKEN": SECRET, "FAKE_ENGINE_FLAG": "on"})
    watcher = Watcher()
    summary, elapsed = run([cfg], out, on_point=watcher)
    return {"cfg": cfg, "out": out, "summary": summary, "watcher": watcher, "elapsed": elapsed}


def test_happy_path_writes_one_ok_result_per_point(happy: dict[str, Any]) -> None:
    summary, out, cfg = happy["summary"], happy["out"], happy["cfg"]
    assert summary.ok and not summary.skipped
    expected = [pid for _, pid in point_ids(cfg)]
    assert expected == [
        "tiny-model-fake-tp1-completions-isl16-osl4-c1",
        "tiny-model-fake-tp1-completions-isl16-osl4-c2",
    ]
    assert [o.point_id for o in summary.outcomes] == expected
    results = results_in(out)
    assert sorted(results) == expected
    for pid, result in results.items():
        assert result["status"] == "ok", result["failure_reason"]
        assert result["failure_reason"] is None
        assert result["point_id"] == pid
        assert result["completed"] == 4 and result["failed"] == 0
        assert result["model_id"] == "org/tiny-model"
        assert result["median_ttft_ms"] > 0
        assert (out / f"{pid}.requests.jsonl").is_file()
        # No GPU: per-GPU figures are null with the runner's reason, never divided by zero.
        assert result["num_gpus"] is None and result["tput_per_gpu"] is None
        assert result["null_reasons"]["tput_per_gpu"] == "the engine uses no GPU (CPU build)"
    assert [r["max_concurrency"] for r in results.values()] == [1, 2]


def test_happy_path_records_engine_launch_fixes_and_readiness(happy: dict[str, Any]) -> None:
    out, cfg = happy["out"], happy["cfg"]
    for result in results_in(out).values():
        assert result["engine"] == {"name": "fake", "plugin": "fake", "version": None}
        spec = result["launch"]["spec"]
        argv = spec["argv"]
        assert argv[:3] == [sys.executable, "-m", "inferx_core.testing.sse_server"]
        assert argv[argv.index("--port") + 1] == str(spec["port"])
        assert argv[argv.index("--model") + 1] == "org/tiny-model"
        launcher = result["launch"]["launcher"]
        assert launcher["launcher"] == "process"
        assert launcher["argv"] == argv
        log_path = out / "servers" / server_id(cfg) / "engine.log"
        assert launcher["log"] == str(log_path)
        # The fix catalogue was consulted: one applied (with its change), one declined.
        assert [f["id"] for f in result["fixes_applied"]] == ["fake-unbuffered-log"]
        assert result["fixes_applied"][0]["changes"] == {"env": {"set": {"PYTHONUNBUFFERED": "1"}}}
        assert spec["env"]["PYTHONUNBUFFERED"] == "1"
        decisions = {d["id"]: d for d in result["fix_decisions"]}
        assert decisions["fake-unbuffered-log"]["applied"] is True
        assert decisions["fake-never"] == {
            "id": "fake-never",
            "applied": False,
            "reason": "never applies (test fix)",
        }
        readiness = result["readiness"]
        assert readiness["seconds"] > 0
        assert [p["name"] for p in readiness["probes"]] == ["health", "model listed"]
        assert result["platform"] == Platform().model_dump(mode="json")
        assert result["config"]["engine"] == "fake"


def test_happy_path_keeps_engine_log_and_stops_engine(happy: dict[str, Any]) -> None:
    out, cfg, watcher = happy["out"], happy["cfg"], happy["watcher"]
    log_path = out / "servers" / server_id(cfg) / "engine.log"
    assert log_path.is_file()
    assert "SSE_SERVER_READY" in log_path.read_text()
    assert len(watcher.outcomes) == 2
    assert len(watcher.ports) == 1, "one launch serves every load point"
    assert len(watcher.pids) == 1, "the engine process was seen while the points ran"
    assert_engine_gone(watcher)


def test_secrets_reach_the_engine_but_no_result_file(happy: dict[str, Any]) -> None:
    out, watcher = happy["out"], happy["watcher"]
    # The engine really received its environment (read from /proc while it ran) ...
    assert watcher.engine_env.get("HF_TOKEN") == SECRET
    assert watcher.engine_env.get("FAKE_ENGINE_FLAG") == "on"
    # ... and the value is nowhere on disk: results, request sidecars, engine log.
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        assert SECRET not in path.read_text(errors="replace"), path
    for result in results_in(out).values():
        # issue 15: redaction by value; a name off the allow-list (CUDA_*, ...) is masked too
        assert result["config"]["engine_env"] == {"HF_TOKEN": "***", "FAKE_ENGINE_FLAG": "***"}
        assert result["launch"]["spec"]["env"]["HF_TOKEN"] == "***"
        assert result["launch"]["launcher"]["env"]["HF_TOKEN"] == "***"


# -- failures ------------------------------------------------------------------------------------
def assert_no_measurements(result: dict[str, Any]) -> None:
    for key in LATENCY_FIELDS:
        assert result.get(key) is None, f"{key} = {result.get(key)!r} for a point that never ran"


def test_crash_on_start_fails_every_point_fast_with_log_tail(tmp_path: Path) -> None:
    watcher = Watcher()
    summary, elapsed = run([fake_config("crash_on_start")], tmp_path, on_point=watcher)
    assert elapsed < 15
    assert not summary.ok
    assert len(summary.outcomes) == 2 and len(summary.failed) == 2
    results = results_in(tmp_path)
    assert len(results) == 2
    for result in results.values():
        assert result["status"] == "failed"
        assert "exited with code 7" in result["failure_reason"]
        assert "before it was ready" in result["failure_reason"]
        assert fake_engine.CRASH_MESSAGE in result["engine_log_tail"]
        assert result["engine"]["name"] == "fake"
        assert result["launch"]["spec"]["argv"][1] == "-c"
        assert "readiness" not in result
        assert_no_measurements(result)
    assert_engine_gone(watcher)


def test_engine_dying_mid_load_fails_the_point_fast_and_the_rest_before_running(
    tmp_path: Path,
) -> None:
    # Each request would stream 2000 tokens at 10 ms (20 s); the engine dies 2.5 s
    # after the first request, during the first point's warmup or measured requests.
    cfg = fake_config(
        "die_after_s",
        plugin_options={"itl_ms": 10, "die_after_s": 2.5},
        workload={"isl": 16, "osl": 2000},
        load={"concurrency": [1, 2], "num_prompts": 50},
    )
    watcher = Watcher()
    summary, elapsed = run([cfg], tmp_path, on_point=watcher)
    assert elapsed < 20, f"the run hung for {elapsed:.1f} s after the engine died"
    assert not summary.ok
    first, second = (o.result.flat() for o in summary.outcomes)
    assert "readiness" in first, "the engine died before it was ready; raise die_after_s"
    assert first["status"] == "failed"
    assert first["completed"] == 0
    assert "fake engine: worker died" in first["engine_log_tail"]
    assert second["status"] == "failed"
    assert second["failure_reason"] == (
        f"engine exited with code {fake_engine.DIE_CODE} before this point"
    )
    assert "fake engine: worker died" in second["engine_log_tail"]
    assert_no_measurements(second)
    on_disk = results_in(tmp_path)
    assert on_disk[first["point_id"]]["engine_log_tail"] == first["engine_log_tail"]
    assert on_disk[second["point_id"]]["status"] == "failed"
    assert_engine_gone(watcher)
    assert first["failure_reason"].startswith(
        f"engine exited with code {fake_engine.DIE_CODE} during the load"
    )


def test_readiness_timeout_names_probe_and_stops_engine(tmp_path: Path) -> None:
    cfg = fake_config("never_ready", readiness_timeout_s=2)
    watcher = Watcher()
    summary, elapsed = run([cfg], tmp_path, on_point=watcher)
    assert elapsed < 15
    assert not summary.ok and len(summary.failed) == 2
    assert watcher.pids, "the never-ready engine was running when its points were recorded"
    for result in results_in(tmp_path).values():
        reason = result["failure_reason"]
        assert result["status"] == "failed"
        assert reason.startswith("engine not ready after 2 s: probe 'health' kept failing")
        assert "HTTP 404" in reason
        assert "raise readiness_timeout_s" in reason
        assert "GET /health" in result["engine_log_tail"]
        assert_no_measurements(result)
    assert_engine_gone(watcher)


def test_missing_executable_fails_its_points_and_the_run_moves_on(tmp_path: Path) -> None:
    missing = fake_config("missing_executable", name="missing")
    ok = fake_config("ok", name="ok", load={"concurrency": [1], "num_prompts": 2})
    summary, _ = run([missing, ok], tmp_path)
    by_status = {o.point_id: o.status for o in summary.outcomes}
    assert by_status == {
        "missing-tiny-model-fake-tp1-completions-isl16-osl4-c1": "failed",
        "missing-tiny-model-fake-tp1-completions-isl16-osl4-c2": "failed",
        "ok-tiny-model-fake-tp1-completions-isl16-osl4-c1": "ok",
    }
    failed = read_result(
        result_path(tmp_path, "missing-tiny-model-fake-tp1-completions-isl16-osl4-c1")
    )
    assert fake_engine.MISSING_EXECUTABLE in failed.failure_reason


# -- resume ---------------------------------------------------------------------------------------
def test_resume_skips_complete_points_and_reruns_missing_ones(
    happy: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "results"
    shutil.copytree(happy["out"], out)  # copy2: mtimes kept
    cfg = happy["cfg"]
    ids = [pid for _, pid in point_ids(cfg)]
    before = {pid: result_path(out, pid).stat().st_mtime_ns for pid in ids}
    contents = {pid: result_path(out, pid).read_bytes() for pid in ids}

    watcher = Watcher()
    summary, elapsed = run([cfg], out, resume=True, on_point=watcher)
    assert summary.skipped == ids
    assert summary.outcomes == [] and summary.ok
    assert not watcher.pids and elapsed < 5, "nothing to do: no engine launched"
    for pid in ids:
        assert result_path(out, pid).stat().st_mtime_ns == before[pid]
        assert result_path(out, pid).read_bytes() == contents[pid]

    result_path(out, ids[1]).unlink()
    summary, _ = run([cfg], out, resume=True, on_point=watcher)
    assert summary.skipped == [ids[0]]
    assert [o.point_id for o in summary.outcomes] == [ids[1]]
    assert summary.ok
    assert result_path(out, ids[0]).stat().st_mtime_ns == before[ids[0]]
    assert read_result(result_path(out, ids[1])).status == "ok"
    assert_engine_gone(watcher)


# -- CLI ------------------------------------------------------------------------------------------
def inferx(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_cli_dry_run_prints_the_command_and_starts_nothing(tmp_path: Path) -> None:
    out = tmp_path / "results"
    config = tmp_path / "run.yaml"
    config.write_text(
        f"engine: vllm\nmodel: m\noutput_dir: {out}\nengine_env: {{HF_TOKEN: {SECRET}}}\n"
    )
    proc = inferx(
        "run", str(config), "--dry-run", "--platform", str(PLATFORMS / "cpu.json"), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    command = (
        "vllm serve m --host 127.0.0.1 --port 8000 --served-model-name m "
        "--tensor-parallel-size 1 --no-enable-prefix-caching --enable-per-request-metrics "
        "--enable-request-id-headers"
    )
    assert command in proc.stdout.splitlines(), proc.stdout
    assert "env HF_TOKEN=***" in proc.stdout
    assert "points: m-vllm-tp1-completions-isl1024-osl1024-c1" in proc.stdout
    assert SECRET not in proc.stdout + proc.stderr
    assert not out.exists(), "a dry run writes nothing"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.yaml"]


def test_cli_run_unknown_engine_exits_2_naming_known_engines(tmp_path: Path) -> None:
    out = tmp_path / "results"
    config = tmp_path / "run.yaml"
    config.write_text(f"engine: nosuchengine\nmodel: m\noutput_dir: {out}\n")
    proc = inferx(
        "run", str(config), "--no-progress", "--platform", str(PLATFORMS / "cpu.json"), cwd=tmp_path
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no plugin provides engine 'nosuchengine'" in proc.stderr
    assert "known engines:" in proc.stderr
    assert "vllm" in proc.stderr and "sglang" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_cli_execute_returns_1_when_a_point_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inferx_core.cli.run import _execute

    args = argparse.Namespace(output=str(tmp_path), no_progress=True, resume=False)
    code = _execute([fake_config("crash_on_start")], args, fake_pm(), Platform())
    assert code == 1
    printed = capsys.readouterr().out
    assert f"results: {tmp_path}" in printed
    statuses = {r["status"] for r in results_in(tmp_path).values()}
    assert statuses == {"failed"}


def test_a_point_that_raises_fails_alone_and_the_sweep_moves_on(tmp_path: Path) -> None:
    bad = tmp_path / "prompts.jsonl"
    bad.write_text('{"prompt": "fine"}\nnot json at all\n')
    broken = fake_config(
        "ok",
        name="broken",
        load={"concurrency": [1], "num_prompts": 2},
        workload={"kind": "dataset", "dataset": str(bad), "osl": 4},
    )
    healthy = fake_config("ok", name="healthy", load={"concurrency": [1], "num_prompts": 2})
    summary, _ = run([broken, healthy], tmp_path)
    by_id = {o.point_id: o for o in summary.outcomes}
    [failed] = [o for pid, o in by_id.items() if pid.startswith("broken-")]
    [ok] = [o for pid, o in by_id.items() if pid.startswith("healthy-")]
    assert failed.status == "failed"
    assert "DatasetError" in failed.result.failure_reason
    assert "prompts.jsonl:2: invalid JSON" in failed.result.failure_reason
    assert read_result(result_path(tmp_path, failed.point_id)).status == "failed"
    assert ok.status == "ok", ok.result.failure_reason


def test_after_the_engine_dies_no_burst_of_refused_requests_joins_the_point(
    tmp_path: Path,
) -> None:
    # short requests: at death the client would otherwise send hundreds more in the
    # poll interval, each refused at once, and count them in the point
    cfg = fake_config(
        "die_after_s",
        plugin_options={"itl_ms": 1, "die_after_s": 2.5},
        workload={"isl": 16, "osl": 40},
        load={"concurrency": [2], "num_prompts": 400},
    )
    summary, _ = run([cfg], tmp_path)
    [first] = (o.result.flat() for o in summary.outcomes)
    assert first["status"] == "failed" and first["completed"] > 0, first.get("failure_reason")
    assert (first["failed_by_kind"] or {}).get("connection", 0) <= 4, first["failed_by_kind"]
