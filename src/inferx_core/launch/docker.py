"""The ``docker`` launcher: ``docker run`` built from a LaunchSpec, argv only.

Environment values never appear in the argv (``-e NAME`` only): the docker
client passes them from its own environment, so secrets stay out of ``ps``
and out of ``--dry-run`` output.

The run folder is mounted at :data:`CONTAINER_RUN_DIR`; ``{run_dir}`` in the
spec's argv and env values becomes that path (see
:mod:`inferx_core.launch.process`). Read-write mount sources that do not exist
yet are created by InferX (as the invoking user) before ``docker run``, which
would otherwise create them owned by root.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

from inferx_core.launch.envutil import engine_environment
from inferx_core.launch.process import (
    LOG_NAME,
    ProcessHandle,
    ProcessLauncher,
    resolve_run_dir,
    write_run_files,
)
from inferx_core.sdk.launch_spec import LaunchSpec

#: Where the run folder appears inside the container.
CONTAINER_RUN_DIR = "/inferx/run"


def container_name(spec: LaunchSpec) -> str:
    return f"inferx-{spec.engine}-{spec.port}"


def docker_run_argv(spec: LaunchSpec, run_dir: Path, *, docker: str = "docker") -> list[str]:
    """The exact ``docker run`` command for ``spec`` (tested as data; see module doc)."""
    if spec.image is None:
        raise ValueError("the docker launcher needs `image:` in the config")
    spec = resolve_run_dir(spec, CONTAINER_RUN_DIR)
    argv = [docker, "run", "--rm", "--init", "--name", container_name(spec)]
    if spec.devices:
        # AMD (/dev/kfd, /dev/dri) or other device-node accelerators.
        for device in spec.devices:
            argv += ["--device", device]
    elif spec.gpu_ids:
        argv += ["--gpus", f'"device={",".join(str(i) for i in spec.gpu_ids)}"']
    argv += list(spec.docker_args)
    argv += _resource_args(spec)
    # Host networking: the engine binds spec.host:spec.port exactly as a local
    # process would (no NAT in the measured path; what benchmark recipes use).
    argv += ["--network", "host"]
    for mount in spec.mounts:
        suffix = ":ro" if mount.read_only else ""
        argv += ["-v", f"{mount.host_path}:{mount.container_path}{suffix}"]
    argv += ["-v", f"{run_dir.resolve()}:{CONTAINER_RUN_DIR}"]
    for name in sorted(spec.env):
        argv += ["-e", name]
    for name, value in sorted(spec.ulimits.items()):
        argv += ["--ulimit", f"{name}={value}:{value}" if value >= 0 else f"{name}=-1"]
    if spec.workdir:
        argv += ["-w", spec.workdir]
    for key, value in sorted(spec.labels.items()):
        argv += ["--label", f"inferx.{key}={value}"]
    argv.append(spec.image)
    argv += list(spec.argv)
    return argv


def _resource_args(spec: LaunchSpec) -> list[str]:
    """IPC, shared memory and the CPUs the container may use."""
    argv: list[str] = []
    if spec.ipc_host:
        argv += ["--ipc", "host"]
    if spec.shm_size:
        argv += ["--shm-size", spec.shm_size]
    if spec.cpus:
        argv += ["--cpuset-cpus", ",".join(map(str, spec.cpus))]
    return argv


class DockerHandle(ProcessHandle):
    """The ``docker run`` client process; stopping it also removes the container.

    Killing the client alone would leave the container running, so the
    watchdog and a second Ctrl-C ``docker kill`` it by name first.
    """

    def orphan_stop_argv(self) -> list[str]:
        return ["docker", "kill", container_name(self.spec)]

    def stop(self, grace_s: float = 30.0) -> None:
        if not self._stopped:
            try:
                subprocess.run(
                    ["docker", "stop", "--time", str(int(grace_s)), container_name(self.spec)],
                    capture_output=True,
                    timeout=grace_s + 30,
                    check=False,
                )
            except KeyboardInterrupt:
                self._stopped = True
                self.kill_now()
                raise
        super().stop(grace_s=5.0)

    def kill_now(self) -> None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(self.orphan_stop_argv(), capture_output=True, timeout=30, check=False)
        super().kill_now()


class DockerLauncher:
    name = "docker"

    def describe(self, spec: LaunchSpec, run_dir: Path) -> dict[str, Any]:
        return {
            "launcher": self.name,
            "argv": docker_run_argv(spec, run_dir),
            "env": dict(resolve_run_dir(spec, CONTAINER_RUN_DIR).env),
            "log": str(run_dir / LOG_NAME),
        }

    def start(self, spec: LaunchSpec, run_dir: Path) -> DockerHandle:
        write_run_files(spec, run_dir)
        for mount in spec.mounts:
            if not mount.read_only and not Path(mount.host_path).exists():
                Path(mount.host_path).mkdir(parents=True, exist_ok=True)
        argv = docker_run_argv(spec, run_dir)
        log_path = run_dir / LOG_NAME
        # The docker client gets the engine env: `-e NAME` reads values from it.
        env = engine_environment(resolve_run_dir(spec, CONTAINER_RUN_DIR), os.environ)
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        return DockerHandle(proc, spec, log_path)


__all__ = ["DockerLauncher", "ProcessLauncher", "docker_run_argv"]
