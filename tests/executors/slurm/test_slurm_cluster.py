"""``inferx run --executor slurm`` against a real one-node SLURM cluster (see conftest.py).

The jobs run ``inferx run-job`` from this venv on the node, with the fake
engine (tests/fake_engine.py, the scripted SSE server) as an installed
plugin: a dist-info folder with an ``inferx`` entry point on PYTHONPATH, which
the job inherits through ``sbatch --export=ALL``. Covered: a sweep as a job
array with results gathered in the shared folder, resubmission skipping
finished points, a job whose engine fails (reported with the job's log
tail), Ctrl-C cancelling only the submitted job, and the ``srun`` launcher
running the engine as a job step.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import fake_engine
import psutil
import pytest

from inferx_core.results.files import read_result

pytestmark = pytest.mark.slurm

TESTS = Path(__file__).resolve().parents[2]
SECRET = "hf_slurm_secret_value_77"


@pytest.fixture(scope="session")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fake installed distribution whose ``inferx`` entry point is tests/fake_engine.py."""
    root = tmp_path_factory.mktemp("fake-plugin")
    dist = root / "inferx_test_fake_engine-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: inferx-test-fake-engine\nVersion: 0.0\n"
    )
    (dist / "entry_points.txt").write_text("[inferx]\nfake = fake_engine\n")
    return root


@pytest.fixture(scope="session")
def cli_env(slurm_cluster: Any, plugin_path: Path) -> dict[str, str]:
    env = slurm_cluster.env
    env["PYTHONPATH"] = f"{plugin_path}:{TESTS}"
    return env


def inferx(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


def fake_run(name: str, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "engine": "fake",
        "name": name,
        "model": "org/tiny-model",
        "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 1},
        "readiness_timeout_s": 30,
        "stop_grace_s": 5,
        "workload": {"isl": 16, "osl": 4},
        "load": {"concurrency": [1], "num_prompts": 3},
        # These tests prove the orchestration (jobs, steps, cancels, gathering), not the
        # client's timing: on a loaded 2-core machine a 1 ms-ITL fake engine can make the
        # client-side checks (loop lag, chunks read together) mark a point invalid, which
        # tests/metrics/test_validity.py and the load tests prove on their own.
        "validity": {
            "max_loop_lag_p95_ms": 1e6,
            "max_client_cpu_fraction": 1,
            "max_client_cores_busy": 1,
            "max_zero_gap_fraction": 1,
            "max_whole_reply_fraction": 1,
        },
    }
    data.update(overrides)
    return data


def results(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: read_result(p).flat() for p in sorted(out.glob("*.json"))}


def job_dirs(out: Path) -> list[Path]:
    return sorted((out / ".inferx-jobs").glob("slurm-*"))


SUBMIT = ("--executor", "slurm", "--gpus-per-node", "0")
CLI = (sys.executable, "-m", "inferx_core.cli")


# -- a sweep as a job array -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep(cli_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("sweep")
    out = root / "results"
    base = fake_run("sw", engine_env={"HF_TOKEN": SECRET})
    base["load"] = {"concurrency": [1, 2], "num_prompts": 4}
    del base["workload"]
    config = write_config(
        root / "sweep.json",
        {
            "base": base,
            "matrix": {
                "scenarios": [
                    {"name": "a", "isl": 16, "osl": 4},
                    {"name": "b", "isl": 16, "osl": 8},
                ]
            },
        },
    )
    started = time.monotonic()
    proc = inferx(cli_env, root, "run", str(config), "--output", str(out), *SUBMIT, "--wait")
    return {"root": root, "out": out, "config": config, "proc": proc, "seconds": started}


def test_sweep_runs_as_a_job_array_and_gathers_every_point(sweep: dict[str, Any]) -> None:
    proc, out = sweep["proc"], sweep["out"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    print(f"sweep via slurm: {time.monotonic() - sweep['seconds']:.1f} s")
    ids = [
        "sw-a-tiny-model-fake-tp1-completions-isl16-osl4-c1",
        "sw-a-tiny-model-fake-tp1-completions-isl16-osl4-c2",
        "sw-b-tiny-model-fake-tp1-completions-isl16-osl8-c1",
        "sw-b-tiny-model-fake-tp1-completions-isl16-osl8-c2",
    ]
    found = results(out)
    assert sorted(found) == ids
    for result in found.values():
        assert result["status"] == "ok", result["failure_reason"]
        assert result["completed"] == 4 and result["failed"] == 0
        # The same runner as a local run: engine plugin, launch, fixes, readiness.
        assert result["engine"] == {"name": "fake", "plugin": "fake", "version": None}
        assert result["launch"]["launcher"]["launcher"] == "process"
        assert [f["id"] for f in result["fixes_applied"]] == ["fake-unbuffered-log"]
        assert [p["name"] for p in result["readiness"]["probes"]] == ["health", "model listed"]
        # The secret reached the job (else run-job refuses to start) and stays redacted.
        assert result["config"]["engine_env"] == {"HF_TOKEN": "***"}
    # One array of two tasks; progress and a per-job report were printed.
    text = proc.stdout
    (array_id,) = {
        line.split()[2].split("_")[0] for line in text.splitlines() if "submitted job" in line
    }
    assert f"submitted job {array_id}_0: sw-a-tiny-model-fake-tp1 (2 point(s))" in text
    assert f"submitted job {array_id}_1: sw-b-tiny-model-fake-tp1 (2 point(s))" in text
    assert "points written: 4/4 (0 failed)" in text
    assert f"job {array_id}_0 (sw-a-tiny-model-fake-tp1): done" in text
    for task in (0, 1):
        assert f"{array_id}_{task}" in text.split("jobs:")[-1]
    (job_dir,) = job_dirs(out)
    script = (job_dir / "job-0.sbatch").read_text()
    assert "#SBATCH --array=0-1" in script
    assert "run-job" in script and "--resume" not in script
    statuses = [json.loads((job_dir / "status" / f"{i}.json").read_text()) for i in (0, 1)]
    assert {s["exit_code"] for s in statuses} == {0}


def test_sweep_secret_is_in_no_file(sweep: dict[str, Any]) -> None:
    # Everything written for and by the jobs: script, manifest, logs, results, engine logs.
    files = [p for p in sweep["out"].rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in files)
    assert any(p.suffix == ".log" for p in files)  # the jobs' own logs
    for path in files:
        assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET not in sweep["proc"].stdout + sweep["proc"].stderr


def test_resubmitting_skips_finished_points(sweep: dict[str, Any], cli_env: dict[str, str]) -> None:
    out, root, config = sweep["out"], sweep["root"], sweep["config"]
    gone = "sw-b-tiny-model-fake-tp1-completions-isl16-osl8-c2"
    kept = {p: p.stat().st_mtime_ns for p in out.glob("*.json") if p.stem != gone}
    (out / f"{gone}.json").unlink()

    proc = inferx(cli_env, root, "run", str(config), "--output", str(out), *SUBMIT, "--wait")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skip sw-a-tiny-model-fake-tp1: all 2 point(s) complete" in proc.stdout
    assert "sw-b-tiny-model-fake-tp1 (1 point(s))" in proc.stdout
    assert read_result(out / f"{gone}.json").status == "ok"
    assert {p: p.stat().st_mtime_ns for p in kept} == kept, "finished points were rewritten"
    newest = job_dirs(out)[-1]
    log = next((newest / "logs").glob("*.log")).read_text()
    assert "skipped (already complete): sw-b-tiny-model-fake-tp1-completions-isl16-osl8-c1" in log

    before = job_dirs(out)
    again = inferx(cli_env, root, "run", str(config), "--output", str(out), *SUBMIT, "--wait")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing to submit: every point is complete" in again.stdout
    assert job_dirs(out) == before, "nothing submitted, nothing written"


# -- failures and cancellation --------------------------------------------------------------------
def test_job_whose_engine_fails_is_reported_with_its_log_tail(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    config = write_config(
        tmp_path / "crash.json", fake_run("crash", plugin_options={"mode": "crash_on_start"})
    )
    out = tmp_path / "results"
    proc = inferx(cli_env, tmp_path, "run", str(config), "--output", str(out), *SUBMIT, "--wait")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = proc.stdout.split("\njobs:")[-1]
    assert "failed    crash-tiny-model-fake-tp1: 0 ok, 1 failed, 0 missing, exit code 1" in report
    assert "engine exited with code 7 before it was ready" in report
    assert "log tail (" in report
    assert "| " in report and "engine not ready" in report  # the job's own log, tailed
    (result,) = results(out).values()
    assert result["status"] == "failed"
    assert fake_engine.CRASH_MESSAGE in result["engine_log_tail"]


def _read_lines(proc: subprocess.Popen[str], lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)


def _engine_processes(port: int) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = p.info.get("cmdline") or []
        if "inferx_core.testing.sse_server" in cmdline and str(port) in cmdline:
            found.append(p)
    return found


def test_ctrl_c_cancels_the_submitted_job_and_nothing_else(
    slurm_cluster: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    other = slurm_cluster.run("sbatch", "--parsable", "--wrap", "sleep 300", "-o", "/dev/null")
    assert other.returncode == 0, other.stderr
    other_id = other.stdout.strip().split(";")[0]
    # Each request streams 5000 tokens at 20 ms: the job runs far longer than the test.
    slow = fake_run(
        "slow",
        plugin_options={"mode": "ok", "itl_ms": 20},
        workload={"isl": 16, "osl": 5000},
        load={"concurrency": [1], "num_prompts": 2, "warmup": 0},
    )
    config = write_config(tmp_path / "slow.json", slow)
    out = tmp_path / "results"
    proc = subprocess.Popen(
        [*CLI, "run", str(config), "--output", str(out), *SUBMIT, "--wait"],
        env=cli_env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # a shell's background job ignores SIGINT; this one must not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    reader = threading.Thread(target=_read_lines, args=(proc, lines), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not any("running on" in line for line in lines):
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "the job never ran:\n" + "".join(lines)
            time.sleep(0.2)
        job_id = next(ln.split()[2].rstrip(":") for ln in lines if "submitted job" in ln)
        # Cancel once the job's runner has its engine up and the first request streams.
        while "engine ready" not in "".join(
            p.read_text(errors="replace") for p in out.glob(".inferx-jobs/*/logs/*.log")
        ):
            assert time.monotonic() < deadline, "the engine never got ready"
            time.sleep(0.2)
        time.sleep(1.5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130, "".join(lines)
        reader.join(timeout=10)
        text = "".join(lines)
        assert f"cancelled job(s) {job_id} (scancel)" in text
        deadline = time.monotonic() + 30
        while slurm_cluster.state(job_id) not in ("CANCELLED", ""):
            assert time.monotonic() < deadline, slurm_cluster.state(job_id)
            time.sleep(0.3)
        assert slurm_cluster.state(job_id) == "CANCELLED"
        assert slurm_cluster.state(other_id) in ("RUNNING", "PENDING"), "another job was cancelled"
        # The job's runner ended like on Ctrl-C: point written as interrupted, engine stopped.
        deadline = time.monotonic() + 20
        while not list(out.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.3)
        (result,) = results(out).values()
        assert result["status"] == "interrupted"
        port = result["launch"]["spec"]["port"]
        deadline = time.monotonic() + 20
        while _engine_processes(port) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not _engine_processes(port), "the engine outlived its cancelled job"
    finally:
        if proc.poll() is None:
            proc.kill()
        slurm_cluster.run("scancel", other_id)


# -- the srun launcher inside a job ---------------------------------------------------------------
def test_srun_launcher_runs_the_engine_as_a_step_of_the_job(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    config = write_config(tmp_path / "step.json", fake_run("step", launcher="srun"))
    out = tmp_path / "results"
    proc = inferx(cli_env, tmp_path, "run", str(config), "--output", str(out), *SUBMIT, "--wait")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = results(out).values()
    assert result["status"] == "ok", result["failure_reason"]
    launcher = result["launch"]["launcher"]
    assert launcher["launcher"] == "srun"
    assert launcher["argv"][:2] == ["srun", "--overlap"]
    assert (
        launcher["argv"][-len(result["launch"]["spec"]["argv"]) :]
        == result["launch"]["spec"]["argv"]
    )
