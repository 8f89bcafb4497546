"""Build an engine image here, cached by its inputs (no registry needed).

An image is named by a :class:`ImageRecipe`: what goes in (the ``inputs``,
hashed into the image's ``inferx.inputs`` label) and how its build folder is
made. :func:`build_image` compares the hash with the label of the image of
that name: equal, the build is a no-op; else the folder is made and
``docker build`` (the classic builder) runs, its output in a log beside the
folder. A failed build is one line naming the log, never a traceback.

The recipes themselves (base, vllm-cpu, llama-server) are in
:mod:`inferx_core.launch.image_recipes`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from inferx_core.launch.image import (
    INPUTS_LABEL,
    DockerUnavailable,
    docker,
    docker_env,
    image_label,
    inspect_image,
    require_daemon,
)


def images_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inferx" / "images"


@dataclass(frozen=True)
class ImageRecipe:
    """One image: its name, what it is built from, and how (``make(folder, digest)``)."""

    name: str
    inputs: dict[str, str]
    #: Makes the image (writes the folder, runs the build); ``digest`` goes in its label.
    make: Callable[[Path, str], None] = field(compare=False)

    @property
    def digest(self) -> str:
        text = json.dumps({"name": self.name, **self.inputs}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class BuildOutcome:
    name: str
    image_id: str
    cached: bool
    seconds: float


def build_image(recipe: ImageRecipe, *, force: bool = False) -> BuildOutcome:
    """Build ``recipe`` unless an image of its name carries its inputs' hash already."""
    require_daemon()
    started = time.monotonic()
    info = inspect_image(recipe.name)
    if info is not None and not force and image_label(info, INPUTS_LABEL) == recipe.digest:
        return BuildOutcome(recipe.name, str(info["Id"]), True, time.monotonic() - started)
    folder = images_cache_dir() / "build" / recipe.name.replace("/", "_").replace(":", "-")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        recipe.make(folder, recipe.digest)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    old = info
    info = inspect_image(recipe.name)
    if info is None or image_label(info, INPUTS_LABEL) != recipe.digest:
        raise DockerUnavailable(f"the build of {recipe.name} left no image with its label")
    if old is not None and old["Id"] != info["Id"]:
        # the image it replaced, now untagged: its gigabytes go (refused while a container
        # or another tag still uses it, which is then left alone)
        docker("image", "rm", str(old["Id"]))
    return BuildOutcome(recipe.name, str(info["Id"]), False, time.monotonic() - started)


def build_log(folder: Path) -> Path:
    """Where a build's output goes: beside its folder (which is removed after the build)."""
    return folder.with_name(folder.name + ".log")


def run_logged(argv: list[str], folder: Path, what: str, **kwargs: object) -> None:
    """Run one build step with its output in the build log; a failure is one clear line."""
    log = build_log(folder)
    with log.open("a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        try:
            done = subprocess.run(
                argv, stdout=out, stderr=subprocess.STDOUT, env=docker_env(), check=False, **kwargs
            )  # type: ignore[call-overload]  # **kwargs: run's keywords, untyped here
        except FileNotFoundError as exc:
            raise DockerUnavailable(f"{what}: {argv[0]} is not installed ({exc})") from None
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:]
        last = tail[0] if tail else ""
        raise DockerUnavailable(
            f"{what} failed (exit {done.returncode}): {last.strip()[:200]}; full log: {log}"
        )


def docker_build(folder: Path, name: str, dockerfile: str) -> None:
    """``docker build`` of ``folder`` with ``dockerfile``; host network (no bridge here,
    and nothing is fetched: every input is in the folder)."""
    (folder / "Dockerfile").write_text(dockerfile)
    argv = ["docker", "build", "--network", "host", "--force-rm", "-t", name, str(folder)]
    run_logged(argv, folder, f"docker build of {name}")
