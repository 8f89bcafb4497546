"""Built-in launchers (process, docker), registered through ``inferx_launchers``."""

from __future__ import annotations

from inferx_core import hookimpl
from inferx_core.launch.launcher import LauncherInfo


def _process():  # imported lazily: launching is rare next to listing
    from inferx_core.launch.process import ProcessLauncher

    return ProcessLauncher()


def _docker():
    from inferx_core.launch.docker import DockerLauncher

    return DockerLauncher()


@hookimpl(trylast=True)
def inferx_launchers() -> list[LauncherInfo]:
    return [
        LauncherInfo("process", "a local process in its own process group", _process),
        LauncherInfo("docker", "docker run with GPUs/devices, ipc host, mounts", _docker),
    ]
