"""The ``docker`` launcher: ``docker run`` built from a LaunchSpec, argv only.

Environment values never appear in the argv (``-e NAME`` only): the docker
client passes them from its own environment, so secrets stay out of ``ps``
and out of ``--dry-run`` output.

The run folder is mounted at :data:`CONTAINER_RUN_DIR`; ``{run_dir}`` in the
spec's argv and env values becomes that path (see
:mod:`inferx_core.launch.process`). Read-write mount sources that do not exist
yet are created by InferX (as the invoking user) before ``docker run``, which
would otherwise create them owned by root. Host paths the engine's argv names
(``--model /data/m``) are mounted read-only at the same path, so a config runs
unchanged in a container.

Every container carries InferX's launch label (``inferx.launch=<id>``, one id
per start) and is stopped and removed by that label, not by its name, on
every exit path: a normal stop, a second Ctrl-C (``docker rm -f``), and
InferX's death (the watchdog runs the same removal). Inside a SLURM job the
container also carries the job's id (``inferx.slurm.job``): scancel's SIGTERM
ends the runner, which removes the container as on Ctrl-C (docs/containers.md).
Before the start the
daemon and the image are checked (one line with the fix each); the image is
never pulled: its versions are read from it first
(:mod:`inferx_core.launch.image_versions`) and land in ``describe()``, which
the result's provenance keeps under ``launch.image``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

from inferx_core.launch.envutil import engine_environment
from inferx_core.launch.image import (
    LAUNCH_LABEL,
    containers_labelled,
    daemon_problem,
    docker,
    remove_labelled,
    remove_labelled_argv,
    require_image,
)
from inferx_core.launch.image_versions import image_versions
from inferx_core.launch.process import (
    LOG_NAME,
    ProcessHandle,
    ProcessLauncher,
    resolve_run_dir,
    write_run_files,
)
from inferx_core.sdk.launch_spec import LaunchSpec, Mount

#: Where the run folder appears inside the container.
CONTAINER_RUN_DIR = "/inferx/run"
#: The launch label's value in ``describe()`` (each start makes its own id).
LAUNCH_ID_PLACEHOLDER = "<id of each start>"
#: Started inside a SLURM job, a container also carries the job's id: what a cluster's
#: epilog (or a person) removes by, should the whole step be killed at once.
SLURM_JOB_LABEL = "inferx.slurm.job"


def container_name(spec: LaunchSpec) -> str:
    return f"inferx-{spec.engine}-{spec.port}"


def argv_mounts(spec: LaunchSpec) -> tuple[Mount, ...]:
    """Read-only mounts, at the same path, of the host paths the engine's argv names
    (after the executable, which is the image's): files or folders that exist here and
    that no mount of the spec covers already."""
    covered = [Path(m.container_path) for m in spec.mounts]
    found: list[Mount] = []
    for arg in spec.argv[1:]:
        path = Path(arg)
        if not arg.startswith("/") or arg == "/" or not path.exists():
            continue
        if any(path == c or c in path.parents for c in covered):
            continue
        found.append(Mount(host_path=arg, container_path=arg, read_only=True))
        covered.append(path)
    return tuple(found)


def docker_run_argv(
    spec: LaunchSpec,
    run_dir: Path,
    *,
    docker: str = "docker",
    launch_id: str = "",
    slurm_job: str = "",
) -> list[str]:
    """The exact ``docker run`` command for ``spec`` (tested as data; see module doc)."""
    if spec.image is None:
        raise ValueError("the docker launcher needs `image:` in the config")
    image = spec.image  # checked here, before spec is rebound below
    spec = resolve_run_dir(spec, CONTAINER_RUN_DIR)
    argv = [docker, "run", "--rm", "--init", "--name", container_name(spec)]
    argv += ["--label", f"{LAUNCH_LABEL}={launch_id or LAUNCH_ID_PLACEHOLDER}"]
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
    for mount in (*spec.mounts, *argv_mounts(spec)):
        suffix = ":ro" if mount.read_only else ""
        argv += ["-v", f"{mount.host_path}:{mount.container_path}{suffix}"]
    argv += ["-v", f"{run_dir.resolve()}:{CONTAINER_RUN_DIR}"]
    for name in sorted(spec.env):
        argv += ["-e", name]
    for name, value in sorted(spec.ulimits.items()):
        argv += ["--ulimit", f"{name}={value}:{value}" if value >= 0 else f"{name}=-1"]
    if spec.workdir:
        argv += ["-w", spec.workdir]
    for key, label in sorted(spec.labels.items()):
        argv += ["--label", f"inferx.{key}={label}"]
    if slurm_job:
        argv += ["--label", f"{SLURM_JOB_LABEL}={slurm_job}"]
    argv.append(image)
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
    """The ``docker run`` client process; stopping it also removes its container.

    Killing the client alone would leave the container running, so every stop
    (and the watchdog when InferX died) finds the container by this start's
    launch label and stops and removes it.
    """

    def __init__(self, proc: Any, spec: LaunchSpec, log_path: Path, launch_id: str) -> None:
        self.launch_id = launch_id  # before the watchdog starts: it asks orphan_stop_argv
        super().__init__(proc, spec, log_path)

    def orphan_stop_argv(self) -> list[str]:
        return remove_labelled_argv(self.launch_id)

    def stop(self, grace_s: float = 30.0) -> None:
        if not self._stopped:
            try:
                ids = containers_labelled(self.launch_id)
                if ids:
                    docker("stop", "--time", str(int(grace_s)), *ids, timeout=grace_s + 30)
            except KeyboardInterrupt:
                self._stopped = True
                self.kill_now()
                raise
            except (OSError, subprocess.SubprocessError):
                pass  # the removal below (rm -f) still runs
        super().stop(grace_s=5.0)
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            remove_labelled(self.launch_id)  # --rm removes it too; an exit path it missed

    def kill_now(self) -> None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            remove_labelled(self.launch_id)
        super().kill_now()


def image_view(image: str) -> dict[str, Any]:
    """What the result records about the image: its id and the versions read from it."""
    problem = daemon_problem()
    if problem:
        return {"image": image, "id": None, "versions": None, "reason": problem}
    try:
        return image_versions(image)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:  # a hung or odd daemon
        return {"image": image, "id": None, "versions": None, "reason": f"docker: {exc}"}


class DockerLauncher:
    name = "docker"

    def describe(self, spec: LaunchSpec, run_dir: Path) -> dict[str, Any]:
        return {
            "launcher": self.name,
            "argv": docker_run_argv(spec, run_dir, slurm_job=os.environ.get("SLURM_JOB_ID", "")),
            "env": dict(resolve_run_dir(spec, CONTAINER_RUN_DIR).env),
            "log": str(run_dir / LOG_NAME),
            "image": image_view(spec.image) if spec.image else None,
        }

    def start(self, spec: LaunchSpec, run_dir: Path) -> DockerHandle:
        if spec.image is None:
            raise ValueError("the docker launcher needs `image:` in the config")
        require_image(spec.image)  # a missing daemon or image: one line, before any start
        write_run_files(spec, run_dir)
        for mount in spec.mounts:
            if not mount.read_only and not Path(mount.host_path).exists():
                Path(mount.host_path).mkdir(parents=True, exist_ok=True)
        launch_id = uuid.uuid4().hex
        slurm_job = os.environ.get("SLURM_JOB_ID", "")
        argv = docker_run_argv(spec, run_dir, launch_id=launch_id, slurm_job=slurm_job)
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
        return DockerHandle(proc, spec, log_path, launch_id)


__all__ = ["DockerLauncher", "ProcessLauncher", "docker_run_argv"]
