"""``launcher: docker`` in a SLURM job: pyxis where the cluster's srun has it, else
``docker run`` inside the job step (inferx_core/executors/slurm_runtime.py).

As data, no cluster; the real cluster with the real daemon: test_slurm_docker.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from inferx_core.config.models import RunConfig
from inferx_core.executors import slurm_runtime
from inferx_core.executors.slurm import SlurmExecutor, SlurmOptions
from inferx_core.launch.docker import SLURM_JOB_LABEL, docker_run_argv
from inferx_core.sdk.executor import ExecutorError
from inferx_core.sdk.launch_spec import LaunchSpec

DOCKER = {"launcher": "docker", "image": "inferx/llama-server:0.3.36"}


def cfg(**overrides: Any) -> RunConfig:
    data: dict[str, Any] = {"engine": "vllm", "model": "org/m", "load": {"concurrency": [1]}}
    return RunConfig.model_validate({**data, **overrides})


def fake_srun(folder: Path, help_text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    srun = folder / "srun"
    srun.write_text(f"#!/bin/sh\ncat <<'EOF'\n{help_text}\nEOF\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    slurm_runtime.srun_has_pyxis.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_detection():
    slurm_runtime.srun_has_pyxis.cache_clear()
    yield
    slurm_runtime.srun_has_pyxis.cache_clear()


PYXIS_HELP = "Usage: srun [OPTIONS...]\n      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH"


@pytest.mark.parametrize(("help_text", "pyxis"), [(PYXIS_HELP, True), ("Usage: srun", False)])
def test_auto_asks_the_clusters_srun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, help_text: str, pyxis: bool
) -> None:
    fake_srun(tmp_path, help_text, monkeypatch)
    assert slurm_runtime.srun_has_pyxis() is pyxis
    view = SlurmExecutor({}).describe([cfg(**DOCKER)], tmp_path)
    (launch,) = view["jobs"][0]["launch"]
    assert launch["launcher"] == ("srun" if pyxis else "docker")
    assert launch["image"] == DOCKER["image"]


def test_no_srun_means_no_pyxis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no srun at all
    assert slurm_runtime.srun_has_pyxis() is False


@pytest.mark.parametrize(("runtime", "launcher"), [("pyxis", "srun"), ("docker", "docker")])
def test_the_option_overrides_the_detection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: str, launcher: str
) -> None:
    fake_srun(tmp_path, "Usage: srun" if runtime == "pyxis" else PYXIS_HELP, monkeypatch)
    view = SlurmExecutor({"container_runtime": runtime}).describe([cfg(**DOCKER)], tmp_path)
    assert view["jobs"][0]["launch"][0]["launcher"] == launcher


def test_a_process_config_never_asks_srun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    srun = tmp_path / "srun"
    srun.write_text(f"#!/bin/sh\necho called >> {calls}\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    view = SlurmExecutor({}).describe([cfg()], tmp_path)
    assert view["jobs"][0]["launch"][0]["launcher"] == "process"
    assert not calls.exists()


def test_an_unknown_runtime_is_refused_with_the_choices() -> None:
    with pytest.raises(
        ExecutorError, match="container_runtime='podman': one of auto, pyxis, docker"
    ):
        SlurmOptions.from_mapping({"container_runtime": "podman"})


def test_a_container_started_in_a_job_carries_the_jobs_id(tmp_path: Path) -> None:
    spec = LaunchSpec(engine="llamacpp", argv=("llama-server",), port=8000, image="img:1")
    argv = docker_run_argv(spec, tmp_path, launch_id="abc", slurm_job="4711")
    labels = [argv[i + 1] for i, a in enumerate(argv) if a == "--label"]
    assert labels == ["inferx.launch=abc", f"{SLURM_JOB_LABEL}=4711"]
    outside = docker_run_argv(spec, tmp_path, launch_id="abc")
    assert [a for a in outside if a.startswith(SLURM_JOB_LABEL)] == []
