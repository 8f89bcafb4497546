"""The ``srun`` launcher: the engine as a job step of the SLURM job the runner runs in.

Used by the ``slurm`` executor for container jobs: with ``spec.image`` the
step runs in that image through pyxis (``--container-image``,
``--container-mounts``), sharing the node's network, so the runner outside
the container reaches it at ``spec.host:spec.port`` as it would a local
process. Without an image it is a plain step (useful to put the engine under
SLURM's accounting and cgroup of the step).

The ``srun`` client runs as a local process in its own process group (log,
ulimits, ``spec.files``: see the process launcher); stopping it sends SIGTERM,
which srun forwards to the step, then SIGKILL after the grace period.
Environment values travel in srun's environment, never in its argv.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inferx_core.launch.process import LOG_NAME, ProcessHandle, ProcessLauncher, resolve_run_dir
from inferx_core.sdk.launch_spec import LaunchSpec

#: Extra pyxis mounts (``SRC:DST[:ro],...``) set by the slurm executor's batch script.
CONTAINER_MOUNTS_ENV = "INFERX_CONTAINER_MOUNTS"
RUN_DIR_IN_CONTAINER = "/inferx/run"
#: How long srun gets to end the step after the double SIGINT before its client is killed.
STEP_KILL_WAIT_S = 3.0


def container_mounts(
    spec: LaunchSpec, run_dir: Path, env: Mapping[str, str] | None = None
) -> list[str]:
    env = os.environ if env is None else env
    mounts = [
        f"{m.host_path}:{m.container_path}{':ro' if m.read_only else ''}" for m in spec.mounts
    ]
    mounts.append(f"{run_dir.resolve()}:{RUN_DIR_IN_CONTAINER}")
    mounts += [m for m in env.get(CONTAINER_MOUNTS_ENV, "").split(",") if m.strip()]
    return mounts


_PATTERN = re.compile(r"^[A-Za-z0-9_*?]+$")
_UNSET_SCRIPT = (
    "for v in $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do "
    'case "$v" in {patterns}) unset "$v";; esac; done; exec "$@"'
)


def step_argv(spec: LaunchSpec) -> list[str]:
    """The engine's argv, wrapped so ``spec.unset_env`` is removed inside the step.

    The srun client itself needs ``SLURM_*`` to find its job, so the patterns
    cannot be applied to its environment as the process launcher would.
    """
    if not spec.unset_env:
        return list(spec.argv)
    bad = [p for p in spec.unset_env if not _PATTERN.match(p)]
    if bad:
        raise ValueError(f"unset_env patterns {bad} must be NAME, NAME* or NAME?")
    script = _UNSET_SCRIPT.format(patterns="|".join(spec.unset_env))
    return ["/bin/sh", "-c", script, "inferx-unset-env", *spec.argv]


def engine_view(spec: LaunchSpec, run_dir: Path) -> LaunchSpec:
    """``{run_dir}`` as the engine sees it: the mount point in a container, else the path."""
    return resolve_run_dir(spec, RUN_DIR_IN_CONTAINER if spec.image else str(run_dir.resolve()))


def srun_argv(
    spec: LaunchSpec, run_dir: Path, *, srun: str = "srun", env: Mapping[str, str] | None = None
) -> list[str]:
    """The exact ``srun`` command for ``spec`` (tested as data)."""
    spec = engine_view(spec, run_dir)
    argv = [
        srun,
        "--overlap",  # share the batch step's allocation (the runner keeps running)
        "--nodes=1",
        "--ntasks=1",
        "--kill-on-bad-exit=1",
        f"--job-name=inferx-{spec.engine}",
    ]
    if spec.cpus:  # one task: bind it to these CPUs of the node
        argv.append(f"--cpu-bind=mask_cpu:{hex(sum(1 << c for c in spec.cpus))}")
    if spec.image:
        argv += [
            f"--container-image={spec.image}",
            f"--container-mounts={','.join(container_mounts(spec, run_dir, env))}",
            "--no-container-mount-home",
        ]
        if spec.workdir:
            argv.append(f"--container-workdir={spec.workdir}")
    argv += step_argv(spec)
    return argv


class SrunLauncher:
    """Starts the engine with srun inside the current SLURM job (pyxis for images)."""

    name = "srun"

    def describe(self, spec: LaunchSpec, run_dir: Path) -> dict[str, Any]:
        return {
            "launcher": self.name,
            "argv": srun_argv(spec, run_dir),
            "env": dict(engine_view(spec, run_dir).env),
            "unset_env": list(spec.unset_env),
            "log": str(run_dir / LOG_NAME),
            "ulimits": dict(spec.ulimits),
        }

    def start(self, spec: LaunchSpec, run_dir: Path) -> ProcessHandle:
        if not os.environ.get("SLURM_JOB_ID"):
            raise ValueError(
                "the srun launcher runs inside a SLURM job; submit with `inferx run --executor "
                "slurm`, or use `launcher: process`/`docker` here"
            )
        return start_srun_client(spec, run_dir, srun_argv(spec, run_dir))


def start_srun_client(
    spec: LaunchSpec, run_dir: Path, argv: list[str], **update: Any
) -> ProcessHandle:
    """Run ``argv`` (an ``srun`` command for ``spec``) here as the step's client process.

    The container's own workdir goes to pyxis; the srun client runs where we are, without
    the image, and ``unset_env`` is applied inside the step (see step_argv). ``update``:
    more fields of the client's spec to override.
    """
    client = engine_view(spec, run_dir).model_copy(
        update={"argv": tuple(argv), "image": None, "workdir": None, "unset_env": (), **update}
    )
    launcher = ProcessLauncher()
    launcher.handle_class = SrunHandle
    handle = launcher.start(client, run_dir)
    handle.spec = spec
    return handle


class SrunHandle(ProcessHandle):
    """The ``srun`` client. Killing it alone might leave the step running on the node, so a
    second Ctrl-C first sends srun SIGINT twice within a second, srun's own "terminate the
    step now", then SIGKILLs the client group."""

    def kill_now(self) -> None:
        for _ in range(2):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGINT)
            time.sleep(0.2)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=STEP_KILL_WAIT_S)
        super().kill_now()
