"""``launcher: docker`` through the real one-node SLURM cluster (conftest.py) and the real
Docker daemon: the engine (llama-server, image inferx/llama-server) runs in a container
inside the job step, and scancel leaves no container behind.

This cluster's srun has no pyxis, so ``container_runtime=auto`` keeps the config on
the docker launcher (inferx_core/executors/slurm_runtime.py): the job's runner runs
``docker run``, the container carries the job's id as a label, and scancel's SIGTERM
reaches the runner, which stops and removes the container by its launch label.
Needs the daemon and the image (``make images``): a skip naming the command elsewhere,
a failure under INFERX_REQUIRE_DOCKER=1.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from docker_support import LLAMA_IMAGE, inferx_containers, need_image

from inferx_core.demo.run import demo_config
from inferx_core.executors.slurm_runtime import srun_has_pyxis
from inferx_core.launch.docker import SLURM_JOB_LABEL
from inferx_core.launch.image import docker
from inferx_core.results.files import read_result

pytestmark = [pytest.mark.slurm, pytest.mark.engine]

CLI = (sys.executable, "-m", "inferx_core.cli")


def job_containers(job_id: str) -> list[str]:
    """Every container (running or not) labelled with this SLURM job's id."""
    return docker("ps", "-aq", "--filter", f"label={SLURM_JOB_LABEL}={job_id}").stdout.split()


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.3)


def long_sweep(root: Path) -> Path:
    """A llama-server sweep in its image, long enough to be cancelled while it streams."""
    base = demo_config(
        output_dir=root / "results", engine="llamacpp", concurrency=[1], isl=32, osl=1024,
        num_prompts=300, model_dir=root / "model",
    )  # fmt: skip
    config = base.model_copy(
        update={
            "name": "slurm-docker",
            "launcher": "docker",
            "image": LLAMA_IMAGE,
            "executable": ["llama-server"],
            "max_num_seqs": None,
            # under the cluster's KillWait (5 s): scancel's SIGKILL follows its SIGTERM then
            "stop_grace_s": 2,
        }
    )
    path = root / "slurm-docker.json"
    path.write_text(json.dumps(config.model_dump(mode="json", exclude_none=True), indent=2))
    return path


def job_log(root: Path) -> str:
    return "".join(
        p.read_text(errors="replace") for p in (root / "results").glob(".inferx-jobs/*/logs/*.log")
    )


def tokens_predicted(root: Path) -> float:
    """llama-server's own count of tokens it finished generating (0 until it answers)."""
    ports = re.findall(r"'--port', '(\d+)'", job_log(root))
    if not ports:
        return 0.0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ports[-1]}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return 0.0
    found = re.search(r"^llamacpp:tokens_predicted_total (\S+)", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_scancel_leaves_no_container_of_the_job(slurm_cluster: Any, tmp_path: Path) -> None:
    need_image(LLAMA_IMAGE)
    assert not srun_has_pyxis(), "this cluster has pyxis: the docker path is not the one taken"
    before = set(inferx_containers())
    config = long_sweep(tmp_path)
    submit = subprocess.run(
        [*CLI, "run", str(config), "--output", str(tmp_path / "results"),
         "--executor", "slurm", "--gpus-per-node", "0"],
        env=slurm_cluster.env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert submit.returncode == 0, submit.stdout + submit.stderr
    (job_id,) = [
        ln.split()[2].rstrip(":") for ln in submit.stdout.splitlines() if "submitted job" in ln
    ]
    try:
        wait_for(
            lambda: "engine ready" in job_log(tmp_path), 180, "the engine in its container ready"
        )
        (container,) = job_containers(job_id)
        inspect = json.loads(docker("inspect", container).stdout)[0]
        assert inspect["State"]["Running"]
        assert inspect["Config"]["Image"] == LLAMA_IMAGE
        assert inspect["HostConfig"]["NetworkMode"] == "host"
        # the warmup and a measured request done: scancel lands while the point measures
        wait_for(lambda: tokens_predicted(tmp_path) >= 2 * 1024, 120, "two requests served")
        assert slurm_cluster.run("scancel", job_id).returncode == 0
        wait_for(lambda: not job_containers(job_id), 60, "the job's container removed")
        wait_for(lambda: slurm_cluster.state(job_id) in ("CANCELLED", ""), 60, "job cancelled")
    finally:
        slurm_cluster.run("scancel", job_id)
        leftover = job_containers(job_id)
        if leftover:  # never leave one to the next test; the assertion above has failed then
            docker("rm", "-f", *leftover)
    assert set(inferx_containers()) <= before
    # the runner ended as on Ctrl-C: its point written as interrupted, the engine's log kept
    wait_for(lambda: list((tmp_path / "results").glob("*.json")), 30, "the point's result")
    (path,) = (tmp_path / "results").glob("*.json")
    result = read_result(path).flat()
    assert result["status"] == "interrupted", result.get("failure_reason")
    assert result["launch"]["launcher"]["launcher"] == "docker"
    argv = result["launch"]["launcher"]["argv"]
    assert argv[:2] == ["docker", "run"] and f"{SLURM_JOB_LABEL}={job_id}" in argv
    logs = list((tmp_path / "results").rglob("engine.log"))
    assert logs and "llama" in logs[0].read_text(errors="replace").lower()
