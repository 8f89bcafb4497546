"""A deployment on the real one-node SLURM cluster: two workers behind the real sglang-router.

``inferx run --executor slurm --executor-opt nodes=1 --wait`` of a ``wide_ep``
deployment (role ``both`` x2 and a ``router``): one job, whose runner starts
each worker and the router as ``srun --overlap --nodelist=NODE`` steps of the
job. The workers are the scripted SSE server (tests/fake_engine.py, through
tests/executors/slurm/deployment_roles.py): a vLLM CPU worker takes minutes to start on
two cores, and what is under test is the job, its steps and their ends, not
the engine. The router is sglang-router (PyPI, the ``dev`` group).

Checked on what really ran: the result, each process's step on the node, and
that nothing is left (no step in ``squeue -s``, no worker, router or srun
process) after the run and after a worker dies mid-load (the point fails
naming the role).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from free_ports import free_base_port

from inferx_core.results.files import read_result

pytestmark = pytest.mark.slurm

TESTS = Path(__file__).resolve().parents[2]
CLI = (sys.executable, "-m", "inferx_core.cli")
NUM_PROMPTS = 8
#: Ports of a deployment from its base: router, both-0, both-1, the router's metrics.
SPAN = 4


def router_command() -> list[str]:
    if importlib.util.find_spec("sglang_router") is None:
        message = "sglang-router is not installed: `pip install sglang-router` (make install)"
        if os.environ.get("INFERX_REQUIRE_SLURM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return [sys.executable, "-m", "sglang_router.launch_router"]


@pytest.fixture(scope="module")
def env(slurm_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The cluster's client environment with the fake engine and its roles as installed plugins
    (a dist-info on PYTHONPATH; the job inherits it through sbatch --export=ALL)."""
    root = tmp_path_factory.mktemp("deployment-plugin")
    dist = root / "inferx_test_fake_deployment-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: inferx-test-fake-deployment\nVersion: 0.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[inferx]\nfake = fake_engine\nfake-roles = deployment_roles\n"
    )
    environ = slurm_cluster.env
    environ["PYTHONPATH"] = f"{root}:{TESTS}:{Path(__file__).resolve().parent}"
    return environ


def write_config(path: Path, **options: Any) -> tuple[Path, int]:
    port = free_base_port(SPAN)
    # sglang-router's Prometheus exporter listens on 0.0.0.0:29000 by default, one port for
    # the whole machine: a router of any other run here (another test, e2e) makes this one
    # panic at start ("Address already in use"). Its own port, on 127.0.0.1.
    metrics = ["--prometheus-host", "127.0.0.1", "--prometheus-port", str(port + 3)]
    data = {
        "engine": "fake",
        "name": path.stem,
        "model": "org/tiny-model",
        "plugin_options": {
            "router_command": [*router_command(), *metrics],
            "ttft_ms": 5,
            "itl_ms": 2,
            **options,
        },
        "readiness_timeout_s": 60,
        "stop_grace_s": 5,
        "workload": {"isl": 16, "osl": 8},
        "load": {"concurrency": [2], "num_prompts": NUM_PROMPTS},
        "deployment": {
            "kind": "wide_ep",
            "port": port,
            "roles": [{"role": "both", "replicas": 2}, {"role": "router"}],
        },
    }
    path.write_text(json.dumps(data, indent=2))
    return path, port


def run(env: dict[str, str], config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "run", str(config), "--output", str(out), "--executor", "slurm",
         "--gpus-per-node", "0", "--executor-opt", "nodes=1", "--wait"],
        env=env, cwd=config.parent, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def job_id(out: Path) -> str:
    (submission,) = (out / ".inferx-jobs").glob("slurm-*/submission.json")
    (job,) = json.loads(submission.read_text())["jobs"]
    return job["job_id"]


def leftovers(port: int) -> list[str]:
    """Workers, router or srun clients of this deployment still running on the machine."""
    ports = {str(p) for p in range(port, port + SPAN)}
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if any(a in ports for a in cmdline) and any(
            "sse_server" in a or "sglang_router" in a or a.endswith("srun") or a == "-c"
            for a in cmdline
        ):
            found.append(" ".join(cmdline))
    return found


def assert_all_gone(cluster: Any, job: str, port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        steps = cluster.run("squeue", "-h", "-s", "-j", job, "-o", "%i").stdout.split()
        left = leftovers(port)
        if not steps and not left and cluster.state(job) not in ("RUNNING", "COMPLETING"):
            break
        time.sleep(0.5)
    assert not steps, f"steps of job {job} still there: {steps}"
    assert not left, f"processes left: {left}"
    assert cluster.state(job) in ("COMPLETED", "FAILED", "CANCELLED", ""), cluster.state(job)
    ports = set(range(port, port + SPAN))  # router, both-0, both-1, router metrics: all closed
    listening = [
        c
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in ports
    ]
    assert not listening, listening


def test_two_workers_behind_sglang_router_run_as_steps_of_one_job(
    slurm_cluster: Any, env: dict[str, str], tmp_path: Path
) -> None:
    config, port = write_config(tmp_path / "dep.json")
    out = tmp_path / "results"
    started = time.monotonic()
    proc = run(env, config, out)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = sorted(out.glob("*.json"))
    result = read_result(path).flat()
    assert result["status"] == "ok", result["failure_reason"]
    assert result["completed"] == NUM_PROMPTS and result["failed"] == 0
    launcher = result["launch"]["launcher"]
    procs = {p["name"]: p for p in launcher["processes"]}
    assert list(procs) == ["both-0", "both-1", "router"]
    for name, p in procs.items():
        # each process a step of the job on the cluster's node, named after it
        assert p["node"] == slurm_cluster.node
        assert p["argv"][:5] == ["srun", "--overlap", "--nodes=1", "--ntasks=1",
                                 f"--nodelist={slurm_cluster.node}"]  # fmt: skip
        assert f"--job-name=inferx-{name}" in p["argv"]
    router = procs["router"]["argv"]
    assert "sglang_router.launch_router" in router
    assert router[router.index("--worker-urls") + 1 :][:2] == [
        procs["both-0"]["url"],
        procs["both-1"]["url"],
    ]
    assert launcher["endpoint"] == f"http://127.0.0.1:{port}" == procs["router"]["url"]
    # the router's own log: it found both workers healthy and served through them
    (server_dir,) = (out / "servers").iterdir()
    router_log = (server_dir / "router" / "engine.log").read_text(errors="replace")
    assert procs["both-0"]["url"] in router_log and procs["both-1"]["url"] in router_log
    assert_all_gone(slurm_cluster, job_id(out), port)
    print(f"\nslurm deployment run: {seconds:.1f} s")


def test_a_worker_dying_mid_load_aborts_naming_its_role_and_ends_every_step(
    slurm_cluster: Any, env: dict[str, str], tmp_path: Path
) -> None:
    config, port = write_config(
        tmp_path / "dies.json", replica_modes={"1": "die_after_s"}, die_after_s=2, itl_ms=200
    )
    out = tmp_path / "results"
    proc = run(env, config, out)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = sorted(out.glob("*.json"))
    result = read_result(path).flat()
    assert result["status"] != "ok"
    # the reason names the process that died: its role, name and node
    reason = result["failure_reason"] or ""
    assert f"role both (both-1 on {slurm_cluster.node}) exited with code 9 during the load" in (
        reason
    ), result
    tail = result["engine_log_tail"] or ""  # and the end of its own log
    assert f"role both (both-1 on {slurm_cluster.node}) exited with code 9" in tail, tail
    assert "fake engine: worker died" in tail, tail
    assert_all_gone(slurm_cluster, job_id(out), port)


def test_scancel_mid_load_ends_every_step_and_process(
    slurm_cluster: Any, env: dict[str, str], tmp_path: Path
) -> None:
    """scancel of the job (what Ctrl-C of ``inferx run --wait`` sends, and an operator does):
    the runner is ended like Ctrl-C and SLURM ends every step; nothing is left."""
    import urllib.request

    config, port = write_config(tmp_path / "cancel.json", itl_ms=300)
    out = tmp_path / "results"
    submit = subprocess.run(
        [*CLI, "run", str(config), "--output", str(out), "--executor", "slurm",
         "--gpus-per-node", "0", "--executor-opt", "nodes=1"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert submit.returncode == 0, submit.stdout + submit.stderr
    job = job_id(out)
    deadline = time.monotonic() + 90
    serving = False
    while time.monotonic() < deadline and not serving:
        try:  # the router answers: every step is up and the load is on its way
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                serving = True
        except OSError:
            time.sleep(0.5)
    assert serving, slurm_cluster.logs()
    steps = slurm_cluster.run("squeue", "-h", "-s", "-j", job, "-o", "%j").stdout.split()
    assert {"inferx-both-0", "inferx-both-1", "inferx-router"} <= set(steps), steps
    assert slurm_cluster.run("scancel", job).returncode == 0
    assert_all_gone(slurm_cluster, job, port)
