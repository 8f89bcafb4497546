"""Shared pieces of the NVIDIA fix catalogue: options, caches, versions, GPU facts.

The fixes themselves (conditions, changes and the catalogue table) are in
:mod:`inferx_core.builtin.nvidia.fixes`, whose docstring states the
conventions these helpers implement.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from inferx_core.builtin.nvidia.flashinfer_prefetch import version_tuple
from inferx_core.launch.image_versions import version_in_image
from inferx_core.sdk.fix_helpers import checked_plugin_options
from inferx_core.sdk.fixes import FixContext, FixVerdict
from inferx_core.sdk.launch_spec import LaunchSpec, Mount, PreflightWait
from inferx_core.sdk.platform import Accelerator

PLUGIN_OPTIONS_KEY = "nvidia"
#: plugin_options.nvidia keys and their types.
OPTIONS: dict[str, type] = {"cache_dir": str, "nccl_version": str}
CACHE_DIR_ENV = "INFERX_CACHE_DIR"
#: Where host cache folders are mounted inside containers.
CONTAINER_CACHE_ROOT = "/inferx/cache"

#: First NCCL release with SM100 (Blackwell) machine code.
NCCL_SM100_FIXED = (2, 26, 2)
#: NCCL releases that register user buffers under CUDA graphs by default and leak
#: a driver resource: [2.26, 2.28).
NCCL_GRAPH_LEAK = ((2, 26), (2, 28))
#: CUDA's documented maximum for the JIT cache (4 GiB; the default is 256 MiB).
CUDA_CACHE_MAXSIZE = str(4 * 1024**3)
FLASHINFER_ENGINES = ("vllm", "sglang")
ARCH_ENGINES = ("vllm", "sglang", "trtllm")
GRAPH_ENGINES = ("vllm", "sglang", "trtllm")
PREFETCH_SCRIPT = "inferx_flashinfer_prefetch.py"
PREFETCH_TIMEOUT_S = 900
GPU_MEMORY_THRESHOLD = 0.10

#: Images whose NCCL is known (``repository:tag`` -> NCCL version). vLLM images
#: ship the NCCL that their torch wheel pins (nvidia-nccl-cu12): torch 2.6 ->
#: 2.21.5, torch 2.7.x -> 2.26.2, torch 2.8 -> 2.27.3. Extend it, or set
#: ``plugin_options.nvidia.nccl_version``, for other images.
KNOWN_IMAGE_NCCL: dict[str, str] = {
    "vllm/vllm-openai:v0.8.5": "2.21.5",  # torch 2.6.0
    "vllm/vllm-openai:v0.8.5.post1": "2.21.5",  # torch 2.6.0
    "vllm/vllm-openai:v0.9.0": "2.26.2",  # torch 2.7.0
    "vllm/vllm-openai:v0.9.1": "2.26.2",  # torch 2.7.0
    "vllm/vllm-openai:v0.9.2": "2.26.2",  # torch 2.7.0
    "vllm/vllm-openai:v0.10.0": "2.26.2",  # torch 2.7.1
    "vllm/vllm-openai:v0.10.1": "2.26.2",  # torch 2.7.1
    "vllm/vllm-openai:v0.10.1.1": "2.26.2",  # torch 2.7.1
    "vllm/vllm-openai:v0.10.2": "2.27.3",  # torch 2.8.0
    "vllm/vllm-openai:v0.11.0": "2.27.3",  # torch 2.8.0
}

NCCL_ENV_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
CUDA_ENV_DOC = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"


# -- helpers -----------------------------------------------------------------------------------


def nvidia_gpus(ctx: FixContext, spec: LaunchSpec) -> list[Accelerator]:
    """The NVIDIA accelerators this launch uses (in ``spec.gpu_ids`` order).

    Where there are some, ``plugin_options.nvidia`` is checked too, so a typo
    there is reported wherever the catalogue could act.
    """
    by_index = {a.index: a for a in ctx.platform.accelerators_of("nvidia")}
    gpus = [by_index[i] for i in spec.gpu_ids if i in by_index]
    if gpus:
        nvidia_options(ctx)
    return gpus


def no_nvidia_verdict(ctx: FixContext) -> FixVerdict:
    if not ctx.platform.accelerators_of("nvidia"):
        return FixVerdict(False, "no NVIDIA GPU on this platform")
    return FixVerdict(False, "this launch uses no NVIDIA GPU")


def ids_text(values: Any) -> str:
    return ",".join(str(v) for v in values)


def gpus_text(gpus: list[Accelerator]) -> str:
    """'GPU 3' or 'GPUs 0,1,2'."""
    return ("GPUs " if len(gpus) > 1 else "GPU ") + ids_text(g.index for g in gpus)


def nvidia_options(ctx: FixContext) -> dict[str, Any]:
    """``plugin_options.nvidia``, checked: unknown keys and wrong types are the user's to fix."""
    return checked_plugin_options(
        ctx, PLUGIN_OPTIONS_KEY, OPTIONS, "cache_dir: /scratch/inferx-cache"
    )


def cache_root(ctx: FixContext) -> Path:
    """The host folder that holds InferX's persistent caches (see module doc)."""
    given = nvidia_options(ctx).get("cache_dir") or os.environ.get(CACHE_DIR_ENV)
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "inferx"


def in_container(ctx: FixContext, spec: LaunchSpec) -> bool:
    return spec.image is not None or ctx.server.launcher == "docker"


def persistent_dir(spec: LaunchSpec, ctx: FixContext, name: str) -> tuple[LaunchSpec, str, str]:
    """A persistent host folder for ``name``: (spec with its mount, engine-side path, host path).

    Process launches use the host path; container launches mount it at
    ``/inferx/cache/<name>`` (added once).
    """
    host = str(cache_root(ctx) / name)
    if not in_container(ctx, spec):
        return spec, host, host
    inside = f"{CONTAINER_CACHE_ROOT}/{name}"
    mount = Mount(host_path=host, container_path=inside)
    if mount not in spec.mounts:
        spec = spec.model_copy(update={"mounts": (*spec.mounts, mount)})
    return spec, inside, host


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """'2.26.2+cuda12.8' -> (2, 26, 2); None when it does not start with a number."""
    if not text:
        return None
    return version_tuple(text.strip().lstrip("vV")) or None


def normalize_image(image: str) -> str:
    """'docker.io/vllm/vllm-openai:v0.9.2' -> 'vllm/vllm-openai:v0.9.2' (digests kept)."""
    name = image.strip()
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def engine_nccl(ctx: FixContext, spec: LaunchSpec) -> tuple[tuple[int, ...] | None, str]:
    """The NCCL version the engine will load, and where that knowledge comes from."""
    given = nvidia_options(ctx).get("nccl_version")
    if given:
        return parse_version(given), f"NCCL {given} (plugin_options.nvidia.nccl_version)"
    if in_container(ctx, spec):
        if spec.image is None:
            return None, "NCCL version unknown (container launch without an image)"
        read = version_in_image(spec.image, "nvidia-nccl-cu13", "nvidia-nccl-cu12")
        if read:  # the image itself, where it is here (issue 40): beats the table
            return parse_version(read[0]), f"NCCL {read[0]} ({read[1]})"
        known = KNOWN_IMAGE_NCCL.get(normalize_image(spec.image))
        if known:
            return parse_version(known), f"NCCL {known} (image {spec.image}, known-images table)"
        return None, (
            f"NCCL version unknown (image {spec.image} is not in the known-images table; "
            "the host's NCCL does not apply inside a container)"
        )
    host = ctx.platform.software.get("nccl")
    version = parse_version(host)
    if version is None:
        return None, "NCCL version unknown (no `nccl` in the platform's software versions)"
    return version, f"NCCL {host} (platform software)"


def dotted_version(version: tuple[int, ...]) -> str:
    return ".".join(str(v) for v in version)


def user_set_env(spec: LaunchSpec, *names: str) -> dict[str, str]:
    return {n: spec.env[n] for n in names if n in spec.env}


def left_as_given(spec: LaunchSpec, name: str, where: str = "env") -> FixVerdict:
    """The verdict when the user set ``name`` themselves: their value wins, the fix stays out."""
    return FixVerdict(False, f"{name}={spec.env[name]} set in {where}; left as given")


def with_missing_env(spec: LaunchSpec, values: dict[str, str]) -> LaunchSpec:
    missing = {k: v for k, v in values.items() if k not in spec.env}
    return spec.with_env(**missing) if missing else spec


def with_warning(spec: LaunchSpec, warning: str) -> LaunchSpec:
    if warning in spec.warnings:
        return spec
    return spec.model_copy(update={"warnings": (*spec.warnings, warning)})


def with_preflight(spec: LaunchSpec, wait: PreflightWait) -> LaunchSpec:
    if wait in spec.preflight:
        return spec
    return spec.model_copy(update={"preflight": (*spec.preflight, wait)})


def cuda_graphs(spec: LaunchSpec) -> tuple[bool, str]:
    """Whether the engine captures CUDA graphs, from its own switches."""
    if "--enforce-eager" in spec.argv:
        return False, "--enforce-eager: no CUDA graphs"
    if "--disable-cuda-graph" in spec.argv:  # SGLang before 0.5.23, still accepted
        return False, "--disable-cuda-graph: no CUDA graphs"
    if all(_flag_value(spec.argv, flag) == "disabled" for flag in SGLANG_GRAPH_BACKENDS):
        return False, " and ".join(f"{flag} disabled" for flag in SGLANG_GRAPH_BACKENDS) + (
            ": no CUDA graphs"
        )
    for name, content in spec.files.items():
        if name.endswith((".yaml", ".yml")) and _yaml_disables_graphs(content):
            return False, f"{name} sets cuda_graph_config: null"
    return True, "CUDA graphs on (the engine's default)"


# SGLang 0.5.23 chooses a graph backend per phase; graphs are off only when both are.
SGLANG_GRAPH_BACKENDS = ("--cuda-graph-backend-decode", "--cuda-graph-backend-prefill")


def _flag_value(argv: tuple[str, ...], flag: str) -> str | None:
    """The value of `flag` in either spelling (`--f v` or `--f=v`); the last one wins."""
    value = None
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


def _yaml_disables_graphs(content: str) -> bool:
    import yaml

    try:
        data = yaml.safe_load(content)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and "cuda_graph_config" in data and not data["cuda_graph_config"]


def cuda_arch(acc: Accelerator) -> tuple[int, int] | None:
    if not acc.compute_capability:
        return None
    try:
        major, minor = acc.compute_capability.split(".", 1)
        return int(major), int(minor)
    except ValueError:
        return None


def flashinfer_arch(major: int, minor: int) -> str:
    """FlashInfer's spelling: '9.0a' and '10.0a' (arch-specific features), '12.0a', '8.9'."""
    if major == 12:
        return "12.0a"  # FlashInfer builds all SM 12.x as SM 120
    if major >= 9:
        return f"{major}.{minor}a"
    return f"{major}.{minor}"
