"""The NVIDIA fix catalogue: known container/driver problems on NVIDIA GPUs, as data.

Offered by the built-in NVML plugin (``inferx_core.builtin.nvidia.plugin``). Every fix
decides from the platform (compute capability, software versions), the server
configuration and the spec of the GPUs this launch uses, so on an AMD or CPU
platform none applies. docs/fixes.md describes each one.

Conventions (shared with inferx-rocm's catalogue):

- What the user set wins: a variable already in the spec's env (their
  ``engine_env``) is never overwritten; ``disable_fixes: [<id>]`` removes one
  fix.
- ``plugin_options: {nvidia: {...}}`` holds the options of this catalogue:
  ``cache_dir`` (host folder for the persistent caches; default
  ``$INFERX_CACHE_DIR``, else ``$XDG_CACHE_HOME/inferx``, else
  ``~/.cache/inferx``) and ``nccl_version`` (the NCCL the engine loads, when
  neither the platform nor :data:`KNOWN_IMAGE_NCCL` knows it).
- Persistent caches are host folders: a process launch uses the host path, a
  container launch mounts it under :data:`CONTAINER_CACHE_ROOT`.
- Every change is idempotent: applied twice, a fix changes nothing more.

Which NCCL the engine loads: for a container launch (``image:``), the image's
(:data:`KNOWN_IMAGE_NCCL`, a small table of images whose NCCL is known; the
host's NCCL does not apply inside a container); for a process launch, the
platform's ``software["nccl"]``; ``plugin_options.nvidia.nccl_version``
overrides both.
"""

from __future__ import annotations

import os
from importlib import resources

from inferx_core.builtin.nvidia.fix_support import (
    ARCH_ENGINES,
    CACHE_DIR_ENV,
    CUDA_CACHE_MAXSIZE,
    CUDA_ENV_DOC,
    FLASHINFER_ENGINES,
    GPU_MEMORY_THRESHOLD,
    GRAPH_ENGINES,
    KNOWN_IMAGE_NCCL,
    NCCL_ENV_DOC,
    NCCL_GRAPH_LEAK,
    NCCL_SM100_FIXED,
    PREFETCH_SCRIPT,
    PREFETCH_TIMEOUT_S,
    cache_root,
    cuda_arch,
    cuda_graphs,
    dotted_version,
    engine_nccl,
    flashinfer_arch,
    gpus_text,
    ids_text,
    in_container,
    left_as_given,
    no_nvidia_verdict,
    normalize_image,
    nvidia_gpus,
    parse_version,
    persistent_dir,
    user_set_env,
    with_missing_env,
    with_preflight,
    with_warning,
)
from inferx_core.sdk.fixes import Fix, FixContext, FixVerdict
from inferx_core.sdk.launch_spec import LaunchSpec, PreflightWait
from inferx_core.sdk.platform import Accelerator

# Helpers and constants live in fix_support.py; the public ones stay importable here.
__all__ = [
    "ARCH_ENGINES",
    "CACHE_DIR_ENV",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_ENV_DOC",
    "FIXES",
    "FLASHINFER_ENGINES",
    "GPU_MEMORY_THRESHOLD",
    "GRAPH_ENGINES",
    "KNOWN_IMAGE_NCCL",
    "NCCL_ENV_DOC",
    "NCCL_GRAPH_LEAK",
    "NCCL_SM100_FIXED",
    "PREFETCH_SCRIPT",
    "PREFETCH_TIMEOUT_S",
    "cache_root",
    "catalogue",
    "cuda_arch",
    "cuda_graphs",
    "engine_nccl",
    "flashinfer_arch",
    "in_container",
    "normalize_image",
    "nvidia_gpus",
    "parse_version",
    "persistent_dir",
    "prefetch_source",
]

# -- nvidia-visible-devices ------------------------------------------------------------------------


def _visible_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = nvidia_gpus(ctx, spec)
    if not gpus:
        return no_nvidia_verdict(ctx)
    if in_container(ctx, spec):
        return FixVerdict(False, "container launch: docker --gpus selects the devices")
    if "CUDA_VISIBLE_DEVICES" in spec.env:
        return left_as_given(spec, "CUDA_VISIBLE_DEVICES", "engine_env")
    return FixVerdict(
        True,
        f"process launch on {gpus_text(gpus)}: CUDA sees only those, "
        "numbered in PCI bus order like NVML",
    )


def _visible_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    ids = ids_text(g.index for g in nvidia_gpus(ctx, spec))
    return with_missing_env(spec, {"CUDA_VISIBLE_DEVICES": ids, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})


# -- nvidia-gpu-memory-preflight -------------------------------------------------------------------

GPU_WAIT = PreflightWait(
    kind="gpu_memory_below",
    threshold=GPU_MEMORY_THRESHOLD,
    timeout_s=300.0,
    reason="a previous job on these NVIDIA GPUs still holds memory",
)


def _drained_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = nvidia_gpus(ctx, spec)
    if not gpus:
        return no_nvidia_verdict(ctx)
    if any(w.kind == "gpu_memory_below" for w in spec.preflight if w != GPU_WAIT):
        return FixVerdict(False, "the spec already waits for the GPUs to drain")
    return FixVerdict(
        True,
        f"{gpus_text(gpus)} must use <= {GPU_MEMORY_THRESHOLD:.0%} of their "
        "memory before the start (a half-drained previous job fails weight loading or NCCL init)",
    )


def _drained_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    return with_preflight(spec, GPU_WAIT)


# -- nccl-sm100-jit-cache --------------------------------------------------------------------------


def _sm100_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = nvidia_gpus(ctx, spec)
    if not gpus:
        return no_nvidia_verdict(ctx)
    blackwell = [g for g in gpus if (cuda_arch(g) or (0, 0))[0] == 10]
    if not blackwell:
        caps = sorted({g.compute_capability or "unknown" for g in gpus})
        return FixVerdict(
            False, f"no compute capability 10.x GPU in this launch ({', '.join(caps)})"
        )
    if len(spec.gpu_ids) < 2:
        return FixVerdict(False, "one GPU: the engine creates no NCCL communicator")
    cc = blackwell[0].compute_capability
    version, source = engine_nccl(ctx, spec)
    if version is None:
        return FixVerdict(True, f"compute capability {cc} with {source}")
    if version >= NCCL_SM100_FIXED:
        return FixVerdict(
            False, f"{source} >= {dotted_version(NCCL_SM100_FIXED)} carries SM100 code"
        )
    return FixVerdict(
        True, f"compute capability {cc} with {source} < {dotted_version(NCCL_SM100_FIXED)}"
    )


def _sm100_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    with_mount, inside, host = persistent_dir(spec, ctx, "nv-compute-cache")
    given = spec.env.get("CUDA_CACHE_PATH")
    if given is not None and given != inside:
        host = given  # the user's cache folder: theirs to persist
    else:
        spec = with_missing_env(with_mount, {"CUDA_CACHE_PATH": inside})
    spec = with_missing_env(
        spec, {"CUDA_CACHE_MAXSIZE": CUDA_CACHE_MAXSIZE, "CUDA_CACHE_DISABLE": "0"}
    )
    warning = (
        "NCCL older than 2.26.2 has no SM100 code: the first start on this node can take up "
        "to 30 minutes while the driver JIT-compiles NCCL (GPU utilisation 0%, CPU in "
        f"libnvidia-ptxjitcompiler); the result is cached in {host} for later starts. "
        "Use an image with NCCL >= 2.26.2 to avoid it"
    )
    if ctx.server.readiness_timeout_s < 3600:
        warning += (
            f"; readiness_timeout_s is {ctx.server.readiness_timeout_s:.0f} s, "
            "raise it to at least 3600 for the first start"
        )
    return with_warning(spec, warning)


# -- flashinfer-cuda-arch-list ---------------------------------------------------------------------


def _arch_lists(gpus: list[Accelerator]) -> tuple[str, str] | None:
    archs = sorted({a for a in (cuda_arch(g) for g in gpus) if a})
    if not archs:
        return None
    flashinfer = " ".join(flashinfer_arch(*a) for a in archs)
    torch = " ".join(f"{major}.{minor}" for major, minor in archs)
    return flashinfer, torch


def _arch_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = nvidia_gpus(ctx, spec)
    if not gpus:
        return no_nvidia_verdict(ctx)
    if spec.engine not in ARCH_ENGINES:
        return FixVerdict(False, f"engine {spec.engine} does not use FlashInfer")
    lists = _arch_lists(gpus)
    if lists is None:
        return FixVerdict(False, "compute capability unknown (not in the platform)")
    given = user_set_env(spec, "FLASHINFER_CUDA_ARCH_LIST", "TORCH_CUDA_ARCH_LIST")
    if len(given) == 2:
        return FixVerdict(False, "FLASHINFER_CUDA_ARCH_LIST and TORCH_CUDA_ARCH_LIST set in env")
    caps = ", ".join(sorted({g.compute_capability or "" for g in gpus}))
    return FixVerdict(
        True,
        f"compute capability {caps}: FLASHINFER_CUDA_ARCH_LIST={lists[0]!r} (FlashInfer's name "
        f"for its AOT/JIT arch list) and TORCH_CUDA_ARCH_LIST={lists[1]!r} (the old name)",
    )


def _arch_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    lists = _arch_lists(nvidia_gpus(ctx, spec))
    if lists is None:
        return spec
    return with_missing_env(
        spec, {"FLASHINFER_CUDA_ARCH_LIST": lists[0], "TORCH_CUDA_ARCH_LIST": lists[1]}
    )


# -- nccl-graph-register-off -----------------------------------------------------------------------


def _graph_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = nvidia_gpus(ctx, spec)
    if not gpus:
        return no_nvidia_verdict(ctx)
    if spec.engine not in GRAPH_ENGINES:
        return FixVerdict(False, f"engine {spec.engine} is not known to capture CUDA graphs")
    if len(spec.gpu_ids) < 2:
        return FixVerdict(False, "one GPU: the engine creates no NCCL communicator")
    if "NCCL_GRAPH_REGISTER" in spec.env:
        return left_as_given(spec, "NCCL_GRAPH_REGISTER")
    graphs, why = cuda_graphs(spec)
    if not graphs:
        return FixVerdict(False, why)
    version, source = engine_nccl(ctx, spec)
    low, high = NCCL_GRAPH_LEAK
    if version is None:
        return FixVerdict(
            False,
            f"{source}; set plugin_options.nvidia.nccl_version (or NCCL_GRAPH_REGISTER=0 in "
            "engine_env) if it is 2.26 or 2.27",
        )
    if not low <= version[:2] < high:
        return FixVerdict(False, f"{source} is outside 2.26-2.27")
    return FixVerdict(True, f"{source} with CUDA graphs ({why}) registers user buffers")


def _graph_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    return with_missing_env(spec, {"NCCL_GRAPH_REGISTER": "0"})


# -- flashinfer-shared-cache -----------------------------------------------------------------------


def prefetch_source() -> str:
    """The wrapper written into the run folder: the source of flashinfer_prefetch.py."""
    return (
        resources.files("inferx_core.builtin.nvidia").joinpath("flashinfer_prefetch.py").read_text()
    )


def _prefetch_python(argv0: str) -> str:
    return argv0 if os.path.basename(argv0).startswith("python") else "python3"


def _script_path() -> str:
    return "{run_dir}/" + PREFETCH_SCRIPT


def _flashinfer_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = nvidia_gpus(ctx, spec)
    if not gpus:
        return no_nvidia_verdict(ctx)
    if spec.engine not in FLASHINFER_ENGINES:
        return FixVerdict(False, f"engine {spec.engine} does not download FlashInfer kernels")
    if len(spec.gpu_ids) < 2:
        return FixVerdict(False, "one GPU: one process downloads, nothing races")
    if "FLASHINFER_WORKSPACE_BASE" in spec.env and _script_path() not in spec.argv:
        return left_as_given(spec, "FLASHINFER_WORKSPACE_BASE")
    return FixVerdict(
        True,
        f"{len(spec.gpu_ids)} GPU processes of {spec.engine} would each download FlashInfer's "
        "kernels at start",
    )


def _flashinfer_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    spec, inside, host = persistent_dir(spec, ctx, "flashinfer")
    spec = with_missing_env(spec, {"FLASHINFER_WORKSPACE_BASE": inside})
    if _script_path() not in spec.argv:
        wrapper = (
            _prefetch_python(spec.argv[0]),
            _script_path(),
            "--timeout",
            str(PREFETCH_TIMEOUT_S),
            "--",
        )
        spec = spec.model_copy(update={"argv": (*wrapper, *spec.argv)})
    spec = spec.model_copy(update={"files": {**spec.files, PREFETCH_SCRIPT: prefetch_source()}})
    lock = PreflightWait(
        kind="path_unlocked",
        path=f"{host}/.inferx-flashinfer.lock",
        timeout_s=float(PREFETCH_TIMEOUT_S),
        reason="another InferX start is filling the shared FlashInfer cache",
    )
    return with_preflight(spec, lock)


# -- the catalogue ---------------------------------------------------------------------------------

FIXES: list[Fix] = [
    Fix(
        id="nvidia-visible-devices",
        title="Show the engine only its GPUs (process launches)",
        symptom=(
            "a process launch sees every GPU of the node: the engine takes GPUs 0..N-1 instead "
            "of the ones configured (gpu_ids), or collides with another job; CUDA's default "
            "fastest-first order can differ from NVML's numbering"
        ),
        condition_text=(
            "NVIDIA GPUs in the launch, process launcher (not a container), "
            "CUDA_VISIBLE_DEVICES not in engine_env"
        ),
        change_text=(
            "env CUDA_VISIBLE_DEVICES=<spec.gpu_ids>, CUDA_DEVICE_ORDER=PCI_BUS_ID "
            "(docker launches use --gpus instead)"
        ),
        reference=CUDA_ENV_DOC,
        condition=_visible_condition,
        change=_visible_change,
        order=10,
        tags=("nvidia", "generic", "process-only"),  # docker: --gpus selects the devices
    ),
    Fix(
        id="nvidia-gpu-memory-preflight",
        title="Wait until the GPUs have drained before the start",
        symptom=(
            "a previous job still holds GPU memory (its processes are exiting): the new engine "
            "runs out of memory while loading weights, sizes a too small KV cache, or hangs in "
            "NCCL init"
        ),
        condition_text="NVIDIA GPUs in the launch",
        change_text=(
            "preflight wait gpu_memory_below (every GPU of the launch at <= 10% memory used, "
            "read through the NVML sampler), bounded at 300 s"
        ),
        reference="docs/fixes.md#nvidia-gpu-memory-preflight",
        condition=_drained_condition,
        change=_drained_change,
        order=20,
        tags=("nvidia", "generic", "preflight"),
    ),
    Fix(
        id="nccl-sm100-jit-cache",
        title="Persist the CUDA JIT cache for NCCL < 2.26.2 on Blackwell",
        symptom=(
            "on Blackwell (compute capability 10.x) the first ncclCommInitRank hangs up to 30 "
            "minutes with GPU utilisation 0% and the CPU in libnvidia-ptxjitcompiler: NCCL "
            "older than 2.26.2 carries no SM100 code and the driver JIT-compiles its PTX into "
            "~/.nv/ComputeCache, which is lost where home is not persistent"
        ),
        condition_text=(
            "a compute capability 10.x GPU, more than one GPU, and the engine's NCCL < 2.26.2 "
            "or unknown"
        ),
        change_text=(
            "env CUDA_CACHE_PATH=<cache_dir>/nv-compute-cache (mounted at "
            "/inferx/cache/nv-compute-cache in containers), CUDA_CACHE_MAXSIZE=4294967296, "
            "CUDA_CACHE_DISABLE=0; warns that the first start may take 30 minutes"
        ),
        reference=(
            "NCCL 2.26.2 release notes (SM100 support); "
            f"{CUDA_ENV_DOC} (CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE)"
        ),
        condition=_sm100_condition,
        change=_sm100_change,
        order=30,
        tags=("nvidia", "nccl", "blackwell"),
    ),
    Fix(
        id="flashinfer-cuda-arch-list",
        title="Set FLASHINFER_CUDA_ARCH_LIST (and TORCH_CUDA_ARCH_LIST) to the GPUs' arch",
        symptom=(
            "FlashInfer renamed its arch variable to FLASHINFER_CUDA_ARCH_LIST; engines that set "
            "only TORCH_CUDA_ARCH_LIST leave FlashInfer without its arch-specific (sm_90a, "
            "sm_100a) kernels"
        ),
        condition_text=(
            "NVIDIA GPUs with a known compute capability, engine vllm, sglang or trtllm, "
            "the variables not in engine_env"
        ),
        change_text=(
            "env FLASHINFER_CUDA_ARCH_LIST='<major>.<minor>a' for 9.x/10.x ('12.0a' for 12.x, "
            "bare below 9; space-separated), TORCH_CUDA_ARCH_LIST='<major>.<minor>'"
        ),
        reference=(
            "flashinfer/compilation_context.py (FLASHINFER_CUDA_ARCH_LIST, split on spaces, "
            "'a' suffix for SM 9.x and 10.x)"
        ),
        condition=_arch_condition,
        change=_arch_change,
        order=40,
        tags=("nvidia", "flashinfer"),
    ),
    Fix(
        id="nccl-graph-register-off",
        title="Disable NCCL user-buffer registration under CUDA graphs (NCCL 2.26-2.27)",
        symptom=(
            "NCCL 2.26 and 2.27 register user buffers in CUDA graphs by default and leak a "
            "driver resource; after hundreds of engine starts the driver wedges: nvidia-smi "
            "hangs, 'nvidia-container-cli: initialization error: driver rpc error: timed out'"
        ),
        condition_text=(
            "NVIDIA GPUs, more than one GPU, engine with CUDA graphs on (no --enforce-eager, "
            "--disable-cuda-graph, both SGLang --cuda-graph-backend-* disabled or "
            "cuda_graph_config: null), the engine's NCCL in [2.26, 2.28)"
        ),
        change_text="env NCCL_GRAPH_REGISTER=0",
        reference=f"{NCCL_ENV_DOC} (NCCL_GRAPH_REGISTER); fixed in NCCL 2.28",
        condition=_graph_condition,
        change=_graph_change,
        order=50,
        tags=("nvidia", "nccl"),
    ),
    Fix(
        id="flashinfer-shared-cache",
        title="Share FlashInfer's cache and fill it once before the ranks start",
        symptom=(
            "with one process per GPU, every rank downloads FlashInfer's kernels at start and "
            "FlashInfer's lock-file cleanup races (before flashinfer-ai/flashinfer#1779): "
            "ranks fail or re-download; the downloads are also lost with a non-persistent home"
        ),
        condition_text="NVIDIA GPUs, engine vllm or sglang, more than one GPU",
        change_text=(
            "env FLASHINFER_WORKSPACE_BASE=<cache_dir>/flashinfer (mounted at "
            "/inferx/cache/flashinfer in containers); argv wrapped by "
            "inferx_flashinfer_prefetch.py (written into the run folder), which runs "
            "`python -m flashinfer --download-cubin` once under a file lock for FlashInfer "
            "< 0.4, then execs the engine; preflight wait path_unlocked on the lock"
        ),
        reference="https://github.com/flashinfer-ai/flashinfer/pull/1779; flashinfer/jit/env.py",
        condition=_flashinfer_condition,
        change=_flashinfer_change,
        order=900,  # wraps the final argv
        tags=("nvidia", "flashinfer"),
    ),
]


def catalogue() -> list[Fix]:
    """The NVIDIA fixes, in catalogue order."""
    return list(FIXES)
