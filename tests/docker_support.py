"""The Docker daemon and InferX's engine images, for the tests that start real containers.

Under INFERX_REQUIRE_DOCKER=1 (.ci/run, which starts the daemon and builds the
images first) a missing daemon or image is a failure; elsewhere a skip that
names the command that fixes it.
"""

from __future__ import annotations

import os

import pytest

from inferx_core.launch.image import LAUNCH_LABEL, daemon_problem, docker, inspect_image

VLLM_IMAGE = "inferx/vllm-cpu:0.32.0"
LLAMA_IMAGE = "inferx/llama-server:0.3.36"
BASE_IMAGE = "inferx/base-bookworm"


def _missing(why: str) -> None:
    if os.environ.get("INFERX_REQUIRE_DOCKER") == "1":
        pytest.fail(why)
    pytest.skip(why)


def need_image(name: str) -> str:
    """``name`` when a daemon answers and the image is here; else skip (fail in CI)."""
    problem = daemon_problem()
    if problem:
        _missing(problem)
    if inspect_image(name) is None:
        _missing(f"image {name} is not here: build it with `make images`")
    return name


def inferx_containers() -> list[str]:
    """Every container (running or not) that carries InferX's launch label."""
    return docker("ps", "-aq", "--filter", f"label={LAUNCH_LABEL}").stdout.split()
