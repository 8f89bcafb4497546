"""Built-in launchers (process, docker, srun) and executors (slurm).

Registered through ``inferx_launchers`` and ``inferx_executors``; each is
imported only when used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core import hookimpl
from inferx_core.sdk.executor import ExecutorInfo
from inferx_core.sdk.launcher import LauncherInfo


def _process():  # imported lazily: launching is rare next to listing
    from inferx_core.launch.process import ProcessLauncher

    return ProcessLauncher()


def _docker():
    from inferx_core.launch.docker import DockerLauncher

    return DockerLauncher()


def _srun():
    from inferx_core.launch.srun import SrunLauncher

    return SrunLauncher()


def _slurm(options: Mapping[str, Any]):
    from inferx_core.executors.slurm import SlurmExecutor

    return SlurmExecutor(options)


@hookimpl(trylast=True)
def inferx_launchers() -> list[LauncherInfo]:
    return [
        LauncherInfo("process", "a local process in its own process group", _process),
        LauncherInfo("docker", "docker run with GPUs/devices, ipc host, mounts", _docker),
        LauncherInfo(
            "srun", "a step of the current SLURM job (pyxis --container-image for images)", _srun
        ),
    ]


@hookimpl(trylast=True)
def inferx_executors() -> list[ExecutorInfo]:
    return [
        ExecutorInfo(
            "slurm", "one sbatch job (or job array task) per server configuration", _slurm
        ),
    ]
