"""The ROCm fix catalogue: known AMD Instinct container/driver problems, as data.

Every fix decides from the platform (``Accelerator.arch``, ``firmware``) and
the spec of the GPUs this launch uses, so on an NVIDIA or CPU platform none
applies and the launch is exactly what it would be without this plugin.
What the user set wins: a variable already in the spec's env (their
``engine_env``) or a flag already in argv (their ``engine_args`` /
``extra_argv``) is never overwritten; ``disable_fixes: [<id>]`` removes one
fix and ``plugin_options: {rocm: {aiter: false}}`` turns the AITER switches off.
"""

from __future__ import annotations

from collections.abc import Callable

from inferx_core import Fix, FixContext, FixVerdict, LaunchSpec
from inferx_rocm.fix_rules import (
    AITER_ARCHS,
    CHUNKED_PREFILL_CAP,
    CONFLICTING_VISIBILITY,
    DOCKER_ARGS,
    DOCKER_DEVICES,
    FALSE,
    GPU_ISOLATION_DOC,
    MEC_FIRMWARE_FIXED,
    MI355X_ARCH,
    OPTIONS,
    PLUGIN_OPTIONS_KEY,
    ROCM_DOCKER_DOC,
    SCRATCH_RECLAIM_ARCH,
    VISIBILITY,
    amd_gpus,
    arch_of,
    chunk_cap_change,
    chunk_cap_condition,
    core_dump_change,
    core_dump_condition,
    docker_args_supported,
    docker_change,
    docker_condition,
    gpu_archs_change,
    gpu_archs_condition,
    preflight_change,
    preflight_condition,
    rocm_options,
    scratch_change,
    scratch_condition,
    sglang_aiter_change,
    sglang_aiter_condition,
    visibility_change,
    visibility_condition,
    vllm_aiter_change,
    vllm_aiter_condition,
)

# The constants and helpers above stay importable from here, as before the split.
__all__ = [
    "AITER_ARCHS",
    "CHUNKED_PREFILL_CAP",
    "CONFLICTING_VISIBILITY",
    "DOCKER_ARGS",
    "DOCKER_DEVICES",
    "FALSE",
    "FIXES",
    "GPU_ISOLATION_DOC",
    "MEC_FIRMWARE_FIXED",
    "MI355X_ARCH",
    "OPTIONS",
    "PLUGIN_OPTIONS_KEY",
    "ROCM_DOCKER_DOC",
    "SCRATCH_RECLAIM_ARCH",
    "VISIBILITY",
    "amd_gpus",
    "arch_of",
    "catalogue",
    "docker_args_supported",
    "rocm_options",
]


# -- the catalogue --------------------------------------------------------------------------------


def _fix(
    fix_id: str,
    title: str,
    symptom: str,
    condition_text: str,
    change_text: str,
    reference: str,
    condition: Callable[[FixContext, LaunchSpec], FixVerdict],
    change: Callable[[LaunchSpec, FixContext], LaunchSpec],
    order: int,
    *tags: str,
) -> Fix:
    return Fix(
        id=fix_id,
        title=title,
        symptom=symptom,
        condition_text=condition_text,
        change_text=change_text,
        reference=reference,
        condition=condition,
        change=change,
        order=order,
        tags=("rocm", *tags),
    )


FIXES: tuple[Fix, ...] = (
    _fix(
        "rocm-visible-devices",
        "HIP_VISIBLE_DEVICES follows ROCR_VISIBLE_DEVICES",
        "'HIP error: invalid device ordinal' or no GPU at all: HIP indexes the devices "
        "ROCR_VISIBLE_DEVICES exposes, so the same physical ids in both hide every GPU past "
        "the first ones; Ray refuses ROCR_VISIBLE_DEVICES without HIP_VISIBLE_DEVICES",
        "AMD GPUs in the launch and no GPU visibility given in engine_env (or only "
        "ROCR_VISIBLE_DEVICES)",
        "ROCR_VISIBLE_DEVICES=<the launch's GPU ids>, HIP_VISIBLE_DEVICES=0..n-1; inherited "
        "CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL are removed",
        GPU_ISOLATION_DOC,
        visibility_condition,
        visibility_change,
        10,
        "env",
    ),
    _fix(
        "rocm-aiter-gpu-archs",
        "AITER needs the bare gfx arch",
        "AITER crashes at start: amdgpu-arch/rocminfo print gfx942:sramecc+:xnack- and AITER "
        "pattern-matches the bare name",
        "AMD GPUs with a known arch and GPU_ARCHS unset, 'native' or carrying ':' suffixes",
        "GPU_ARCHS=<bare arch(s), ';'-separated> (e.g. gfx942, gfx950)",
        "ROCm/aiter: GPU_ARCHS must be bare arch names (no :sramecc+:xnack- suffix)",
        gpu_archs_condition,
        gpu_archs_change,
        20,
        "env",
        "aiter",
    ),
    _fix(
        "rocm-aiter-vllm",
        "vLLM: AITER kernels on",
        "vLLM on MI300X/MI325X/MI355X runs its slower default kernels: AITER is off by default",
        "engine vllm on gfx942/gfx950; VLLM_ROCM_USE_AITER not in engine_env; "
        "plugin_options.rocm.aiter not false",
        "VLLM_ROCM_USE_AITER=1",
        "https://docs.vllm.ai/en/latest/configuration/env_vars.html (VLLM_ROCM_USE_AITER)",
        vllm_aiter_condition,
        vllm_aiter_change,
        30,
        "env",
        "aiter",
        "performance",
    ),
    _fix(
        "rocm-aiter-sglang",
        "SGLang: AITER kernels and attention backend on",
        "SGLang on MI300X/MI325X/MI355X runs its slower default kernels and attention backend",
        "engine sglang on gfx942/gfx950; SGLANG_USE_AITER not off in engine_env; "
        "plugin_options.rocm.aiter not false",
        "SGLANG_USE_AITER=1 and --attention-backend aiter, each unless already given",
        "https://docs.sglang.ai/platforms/amd_gpu.html",
        sglang_aiter_condition,
        sglang_aiter_change,
        30,
        "env",
        "argv",
        "aiter",
        "performance",
    ),
    _fix(
        "rocm-mi355x-chunked-prefill-cap",
        "MI355X: chunked prefill capped at 32768",
        "--chunked-prefill-size 196608 crashed MI355X runs (and dumped ~1 TB of gpucore.* files)",
        f"engine sglang on {MI355X_ARCH} GPUs with --chunked-prefill-size > {CHUNKED_PREFILL_CAP}",
        f"--chunked-prefill-size {CHUNKED_PREFILL_CAP}",
        "InferenceMAX benchmarks/dsr1_fp4_mi355x_docker.sh (32768 for 8k/1k at high concurrency)",
        chunk_cap_condition,
        chunk_cap_change,
        40,
        "argv",
    ),
    _fix(
        "rocm-mi355x-no-core-dumps",
        "MI355X: no core dumps from the engine",
        "a crashing engine on MI355X wrote ~1 TB of gpucore.* files and filled the disk",
        f"{MI355X_ARCH} GPUs and core dumps not already off",
        "ulimit core 0 for the engine (process rlimit, docker --ulimit core=0:0)",
        "DOMAIN.md section 6 (MI355X chunked prefill)",
        core_dump_condition,
        core_dump_change,
        40,
        "ulimit",
    ),
    _fix(
        "rocm-hsa-no-scratch-reclaim",
        "HSA_NO_SCRATCH_RECLAIM with MEC firmware < 177",
        "hangs and degraded performance on MI300X/MI325X whose MEC firmware predates 177",
        f"{SCRATCH_RECLAIM_ARCH} GPUs with MEC firmware < {MEC_FIRMWARE_FIXED}; "
        "HSA_NO_SCRATCH_RECLAIM not in engine_env",
        "HSA_NO_SCRATCH_RECLAIM=1",
        "https://rocm.docs.amd.com/en/docs-6.4.3/about/release-notes.html#amdgpu-driver-updates"
        " (InferenceMAX MI300X/MI325X scripts: rocm-smi --showfw MEC < 177)",
        scratch_condition,
        scratch_change,
        50,
        "env",
    ),
    _fix(
        "rocm-docker-devices",
        "ROCm container devices and options",
        "'No HIP GPUs are available' / 'hipErrorNoDevice' in the container: /dev/kfd and "
        "/dev/dri are not passed, or the container lacks the video group",
        "a container launch (image set) on AMD GPUs",
        "--device /dev/kfd --device /dev/dri " + " ".join(DOCKER_ARGS),
        ROCM_DOCKER_DOC,
        docker_condition,
        docker_change,
        60,
        "docker",
    ),
    _fix(
        "rocm-gpu-memory-preflight",
        "Wait until the GPUs are drained",
        "RCCL init fails when a previous job still holds VRAM on a GPU (half-drained job)",
        "AMD GPUs in the launch and no GPU memory wait in the spec",
        "preflight: wait (bounded) until every GPU shows <= 10% VRAM used",
        "DOMAIN.md section 6 (MI3xx)",
        preflight_condition,
        preflight_change,
        90,
        "preflight",
    ),
)


def catalogue() -> list[Fix]:
    return list(FIXES)
