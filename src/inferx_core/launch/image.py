"""The Docker daemon and its images, as the docker launcher and the image builds need them.

Every question goes through the ``docker`` client (no SDK, no socket code):
the same client the user runs, so what InferX sees is what they would see.
A daemon that does not answer and an image that is not here are one clear
line each with the command that fixes it (:class:`DockerUnavailable`), never
a traceback; they are asked before any container starts.

Images are looked up here, never pulled: a container launch reads the
engine's versions from the image before its first start, so the image must
be here (``docker pull`` it, or build it with ``inferx engine image build``).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from inferx_core.errors import UserFacingError

#: The label every container InferX starts carries (its value: InferX's launch id).
LAUNCH_LABEL = "inferx.launch"
#: The label every image InferX builds carries: the hash of everything it was built from.
INPUTS_LABEL = "inferx.inputs"
#: How to get a daemon on a machine like CI's (root, Debian).
START_DAEMON = "sudo .ci/docker-daemon start (or `sudo systemctl start docker`)"


class DockerUnavailable(UserFacingError):
    """No daemon answers, or an image is not here: the message names the fix."""


def docker_env() -> dict[str, str]:
    """The client's environment: the classic builder (a 20.10 daemon has no BuildKit
    builder unless buildx is installed; the classic one is always there)."""
    return {**os.environ, "DOCKER_BUILDKIT": "0"}


def docker(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``docker ARGS``: its output as text; a missing client is an OSError like any other."""
    return subprocess.run(
        ["docker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=docker_env(),
    )


def daemon_problem() -> str | None:
    """None when a daemon answers; else one line saying why not and how to start one."""
    try:
        done = docker("version", "--format", "{{.Server.Version}}", timeout=30)
    except FileNotFoundError:
        return f"no docker client here: install Docker and start its daemon ({START_DAEMON})"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the docker client failed ({exc}); start the daemon: {START_DAEMON}"
    if done.returncode != 0 or not done.stdout.strip():
        return f"no Docker daemon answers: start one with {START_DAEMON}"
    return None


def require_daemon() -> None:
    problem = daemon_problem()
    if problem:
        raise DockerUnavailable(problem)


def inspect_image(name: str) -> dict[str, Any] | None:
    """``docker image inspect NAME`` (the first entry); None when the image is not here."""
    done = docker("image", "inspect", name)
    if done.returncode != 0:
        return None
    items = json.loads(done.stdout or "[]")
    return items[0] if items else None


def image_label(info: dict[str, Any] | None, key: str) -> str | None:
    labels = ((info or {}).get("Config") or {}).get("Labels") or {}
    return labels.get(key)


def require_image(name: str) -> dict[str, Any]:
    """The image's inspect data; a missing daemon or image raises with the fix."""
    require_daemon()
    info = inspect_image(name)
    if info is None:
        raise DockerUnavailable(
            f"image {name} is not here: build it (`make images`, or `inferx engine image "
            f"build ...`) or pull it (`docker pull {name}`)"
        )
    return info


def containers_labelled(value: str) -> list[str]:
    """Ids of the containers (running or not) whose launch label is ``value``."""
    done = docker("ps", "-aq", "--filter", f"label={LAUNCH_LABEL}={value}")
    return done.stdout.split() if done.returncode == 0 else []


def remove_labelled(value: str) -> list[str]:
    """Remove (``rm -f``) every container of launch ``value``; the ids removed."""
    ids = containers_labelled(value)
    if ids:
        docker("rm", "-f", *ids)
    return ids


def remove_labelled_argv(value: str) -> list[str]:
    """The same as :func:`remove_labelled`, as a command the watchdog runs when InferX
    died (it imports nothing from InferX): twice, for a container the daemon was still
    creating when the first look found none."""
    once = f"docker ps -aq --filter label={LAUNCH_LABEL}={value} | xargs -r docker rm -f"
    return ["sh", "-c", f"{once}; sleep 2; {once}"]
