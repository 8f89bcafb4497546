"""The docker launcher's argv, exactly, as data (the real daemon: tests/e2e/test_docker_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_core.launch.docker import DockerLauncher, argv_mounts, docker_run_argv
from inferx_core.sdk.launch_spec import LaunchSpec, Mount


def test_nvidia_argv(tmp_path: Path) -> None:
    spec = LaunchSpec(
        engine="vllm",
        argv=("vllm", "serve", "m", "--port", "8000"),
        image="vllm/vllm-openai:v0.11.0",
        port=8000,
        gpu_ids=(0, 1),
        ipc_host=True,
        shm_size="16g",
        env={"HF_TOKEN": "hf_secret", "NCCL_GRAPH_REGISTER": "0"},
        mounts=(Mount(host_path="/data/hf", container_path="/root/.cache/huggingface"),),
        ulimits={"core": 0},
    )
    argv = docker_run_argv(spec, tmp_path)
    assert argv == [
        "docker",
        "run",
        "--rm",
        "--init",
        "--name",
        "inferx-vllm-8000",
        "--label",
        "inferx.launch=<id of each start>",
        "--gpus",
        '"device=0,1"',
        "--ipc",
        "host",
        "--shm-size",
        "16g",
        "--network",
        "host",
        "-v",
        "/data/hf:/root/.cache/huggingface",
        "-v",
        f"{tmp_path.resolve()}:/inferx/run",
        "-e",
        "HF_TOKEN",
        "-e",
        "NCCL_GRAPH_REGISTER",
        "--ulimit",
        "core=0:0",
        "vllm/vllm-openai:v0.11.0",
        "vllm",
        "serve",
        "m",
        "--port",
        "8000",
    ]
    assert "hf_secret" not in " ".join(argv)  # values travel in the client's env
    assert "hf_secret" not in str(DockerLauncher().describe(spec, tmp_path)["argv"])


def test_amd_devices_replace_gpus_flag(tmp_path: Path) -> None:
    spec = LaunchSpec(
        engine="vllm",
        argv=("vllm", "serve", "m"),
        image="rocm/vllm",
        port=8000,
        gpu_ids=(0,),
        devices=("/dev/kfd", "/dev/dri"),
        workdir="/work",
        mounts=(Mount(host_path="/m", container_path="/models", read_only=True),),
    )
    argv = docker_run_argv(spec, tmp_path)
    assert "--gpus" not in argv
    assert argv[argv.index("--device") + 1] == "/dev/kfd"
    assert argv.count("--device") == 2
    assert "/m:/models:ro" in argv
    assert argv[argv.index("-w") + 1] == "/work"


def test_image_required(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="image"):
        docker_run_argv(LaunchSpec(engine="x", argv=("x",), port=1), tmp_path)


def test_each_start_labels_its_container_with_its_own_id(tmp_path: Path) -> None:
    spec = LaunchSpec(engine="e", argv=("e",), image="i", port=1, labels={"engine": "e"})
    argv = docker_run_argv(spec, tmp_path, launch_id="abc123")
    assert argv[argv.index("--label") + 1] == "inferx.launch=abc123"
    assert "inferx.engine=e" in argv


def test_host_paths_in_argv_are_mounted_read_only_at_the_same_path(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "w.gguf").write_text("x")
    covered = tmp_path / "data"
    covered.mkdir()
    args = [str(tmp_path / "bin"), "--model", str(model), "--draft", str(model / "w.gguf")]
    args += ["--cache", str(covered / "sub"), "--gone", str(tmp_path / "missing"), "/"]
    mounts = (Mount(host_path=str(covered), container_path=str(covered)),)
    spec = LaunchSpec(engine="e", argv=tuple(args), image="i", port=1, mounts=mounts)
    assert argv_mounts(spec) == (
        Mount(host_path=str(model), container_path=str(model), read_only=True),
    )  # the executable is the image's, a covered or missing path or / is not mounted
    argv = docker_run_argv(spec, tmp_path)
    assert f"{model}:{model}:ro" in argv
