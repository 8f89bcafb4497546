"""The Docker daemon and InferX's engine images, for the tests that start real containers.

Under INFERX_REQUIRE_DOCKER=1 (.ci/run, which starts the daemon and builds the
images first) a missing daemon or image is a failure; elsewhere a skip that
names the command that fixes it.
"""

from __future__ import annotations

import os
from pathlib import Path

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


FAKE_DOCKER = """#!/bin/sh
# answers as a daemon would, from files in $FAKE_DOCKER_DIR
echo "$@" >> "$FAKE_DOCKER_DIR/calls"
case "$1" in
  version) [ -f "$FAKE_DOCKER_DIR/up" ] && echo 20.10.24 && exit 0
           echo "Cannot connect" >&2; exit 1 ;;
  image) [ -f "$FAKE_DOCKER_DIR/image.json" ] && cat "$FAKE_DOCKER_DIR/image.json" && exit 0
         exit 1 ;;
esac
exit 0
"""


def install_fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``docker`` first on PATH, answering from files in ``tmp_path`` (``up``: a
    daemon answers; ``image.json``: what ``image inspect`` prints); the cache in tmp_path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_DOCKER_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path
