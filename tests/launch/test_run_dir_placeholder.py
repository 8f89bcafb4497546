"""``{run_dir}`` in a spec's argv and env: each launcher names the run folder as the engine sees it.

A plugin writes a file through ``LaunchSpec.files`` and points the engine at
it as ``{run_dir}/name``; the process launcher substitutes the host path, the
docker launcher the container mount point, both in ``describe`` and ``start``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from inferx_core.launch.docker import CONTAINER_RUN_DIR, DockerLauncher, docker_run_argv
from inferx_core.launch.process import (
    RUN_DIR_PLACEHOLDER,
    ProcessLauncher,
    free_port,
    resolve_run_dir,
    write_run_files,
)
from inferx_core.sdk.launch_spec import LaunchSpec, Mount

READ_BACK = "import sys, os; print(open(sys.argv[1]).read().strip(), os.environ['CFG'])"


def spec(**kw: object) -> LaunchSpec:
    base: dict[str, object] = {
        "engine": "fake",
        "argv": (sys.executable, "-c", READ_BACK, "{run_dir}/engine.yaml"),
        "env": {"CFG": "{run_dir}/engine.yaml", "PLAIN": "x"},
        "port": free_port(),
        "files": {"engine.yaml": "answer: 42"},
    }
    base.update(kw)
    return LaunchSpec(**base)  # type: ignore[arg-type]


def test_process_launcher_writes_the_file_and_substitutes_the_host_path(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    handle = ProcessLauncher().start(spec(), run_dir)
    handle.proc.wait(timeout=30)
    assert (run_dir / "engine.yaml").read_text() == "answer: 42"
    log = (run_dir / "engine.log").read_text().strip()
    assert log == f"answer: 42 {run_dir.resolve()}/engine.yaml"
    view = ProcessLauncher().describe(spec(), run_dir)
    assert view["argv"][-1] == f"{run_dir.resolve()}/engine.yaml"
    assert view["env"] == {"CFG": f"{run_dir.resolve()}/engine.yaml", "PLAIN": "x"}


def test_docker_uses_the_container_mount_point(tmp_path: Path) -> None:
    s = spec(image="img:1", gpu_ids=(0,))
    argv = docker_run_argv(s, tmp_path)
    assert argv[-1] == f"{CONTAINER_RUN_DIR}/engine.yaml"
    assert f"{tmp_path.resolve()}:{CONTAINER_RUN_DIR}" in argv
    view = DockerLauncher().describe(s, tmp_path)
    assert view["env"]["CFG"] == f"{CONTAINER_RUN_DIR}/engine.yaml"
    assert RUN_DIR_PLACEHOLDER not in " ".join(view["argv"])


def test_spec_without_placeholder_is_unchanged() -> None:
    s = LaunchSpec(engine="x", argv=("a", "b"), env={"K": "v"}, port=1)
    assert resolve_run_dir(s, "/r") is s


def test_file_names_must_stay_in_the_run_folder(tmp_path: Path) -> None:
    for name in ("../escape.txt", "sub/dir.txt", ".."):
        with pytest.raises(ValueError, match="plain file name"):
            write_run_files(spec(files={name: "x"}), tmp_path / "run")


def test_docker_start_creates_missing_rw_mount_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[list[str]] = []

    class FakePopen:
        pid = 1

        def __init__(self, argv: list[str], **_: object) -> None:
            started.append(argv)

    monkeypatch.setattr("inferx_core.launch.docker.subprocess.Popen", FakePopen)
    monkeypatch.setattr("inferx_core.launch.docker.require_image", lambda image: {})  # no daemon
    monkeypatch.setattr("inferx_core.launch.process.os.getpgid", lambda pid: pid)
    cache = tmp_path / "cache" / "nv-compute-cache"
    ro = tmp_path / "models"
    s = spec(
        image="img:1",
        mounts=(
            Mount(host_path=str(cache), container_path="/inferx/cache/nv-compute-cache"),
            Mount(host_path=str(ro), container_path="/models", read_only=True),
        ),
    )
    DockerLauncher().start(s, tmp_path / "run")
    assert cache.is_dir() and not ro.exists()
    assert (tmp_path / "run" / "engine.yaml").read_text() == "answer: 42"
    assert started[0][-1] == f"{CONTAINER_RUN_DIR}/engine.yaml"
