"""The conditions and changes of the ROCm fixes; :mod:`inferx_rocm.fixes` lists them.

Each ``*_condition(ctx, spec)`` says whether its fix applies to this launch and
why; each ``*_change(spec, ctx)`` returns the fixed spec. What the user set
always wins (see :mod:`inferx_rocm.fixes`).
"""

from __future__ import annotations

import itertools
from typing import Any

from inferx_core import (
    Accelerator,
    FixContext,
    FixVerdict,
    LaunchSpec,
    PreflightWait,
    checked_plugin_options,
)
from inferx_rocm.smi import bare_arch

PLUGIN_OPTIONS_KEY = "rocm"
#: plugin_options.rocm keys and their types.
OPTIONS: dict[str, type] = {"aiter": bool}

AITER_ARCHS = frozenset({"gfx942", "gfx950"})  # CDNA3 (MI300X/MI325X), CDNA4 (MI350X/MI355X)
MI355X_ARCH = "gfx950"
SCRATCH_RECLAIM_ARCH = "gfx942"
MEC_FIRMWARE_FIXED = 177
CHUNKED_PREFILL_CAP = 32768
DOCKER_DEVICES = ("/dev/kfd", "/dev/dri")
DOCKER_ARGS = (
    "--group-add",
    "video",
    "--cap-add",
    "SYS_PTRACE",
    "--security-opt",
    "seccomp=unconfined",
)
VISIBILITY = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
#: Inherited from e.g. Slurm; would filter the HIP view a second time.
CONFLICTING_VISIBILITY = ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
FALSE = frozenset({"0", "false", "no", "off"})

ROCM_DOCKER_DOC = "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/how-to/docker.html"
GPU_ISOLATION_DOC = (
    "https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html; "
    "https://github.com/ROCm/ROCR-Runtime/issues/155"
)


# -- helpers -----------------------------------------------------------------------------------


def amd_gpus(ctx: FixContext, spec: LaunchSpec) -> list[Accelerator]:
    """The AMD accelerators this launch uses (in ``spec.gpu_ids`` order)."""
    by_index = {a.index: a for a in ctx.platform.accelerators_of("amd")}
    return [by_index[i] for i in spec.gpu_ids if i in by_index]


def _no_amd(ctx: FixContext) -> FixVerdict:
    if not ctx.platform.accelerators_of("amd"):
        return FixVerdict(False, "no AMD GPU on this platform")
    return FixVerdict(False, "this launch uses no AMD GPU")


def arch_of(acc: Accelerator) -> str | None:
    if acc.arch:
        return bare_arch(acc.arch)
    return bare_arch(acc.arch_full) if acc.arch_full else None


def _archs(gpus: list[Accelerator]) -> list[str]:
    return sorted({a for a in (arch_of(g) for g in gpus) if a})


def _ids(values: Any) -> str:
    return ",".join(str(v) for v in values)


def rocm_options(ctx: FixContext) -> dict[str, Any]:
    """``plugin_options.rocm``, checked: unknown keys and wrong types are the user's to fix."""
    return checked_plugin_options(ctx, PLUGIN_OPTIONS_KEY, OPTIONS, "aiter: false")


def _int_flag(spec: LaunchSpec, flag: str) -> int | str | None:
    value = spec.flag_value(flag)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return value


# -- HIP_VISIBLE_DEVICES follows ROCR_VISIBLE_DEVICES ---------------------------------------------


def visibility_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = amd_gpus(ctx, spec)
    if not gpus:
        return _no_amd(ctx)
    given = {k: spec.env[k] for k in VISIBILITY if k in spec.env}
    rocr = given.get("ROCR_VISIBLE_DEVICES")
    if rocr is not None and len(given) == 1:
        n = len([p for p in rocr.split(",") if p.strip()])
        return FixVerdict(
            True,
            f"ROCR_VISIBLE_DEVICES={rocr} set in engine_env exposes {n} GPU(s); "
            "HIP_VISIBLE_DEVICES must index within them",
        )
    if given:
        shown = ", ".join(f"{k}={v}" for k, v in given.items())
        return FixVerdict(False, f"GPU visibility set in engine_env ({shown}); left as given")
    ids = _ids(g.index for g in gpus)
    return FixVerdict(
        True,
        f"GPUs {ids} selected with ROCR_VISIBLE_DEVICES; HIP indexes the devices ROCr "
        "exposes, so HIP_VISIBLE_DEVICES counts from 0",
    )


def visibility_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    rocr = spec.env.get("ROCR_VISIBLE_DEVICES")
    if rocr is None:
        rocr = _ids(g.index for g in amd_gpus(ctx, spec))
    count = len([p for p in rocr.split(",") if p.strip()])
    unset = (*spec.unset_env, *(v for v in CONFLICTING_VISIBILITY if v not in spec.unset_env))
    return spec.with_env(
        ROCR_VISIBLE_DEVICES=rocr, HIP_VISIBLE_DEVICES=_ids(range(count))
    ).model_copy(update={"unset_env": unset})


# -- AITER arch suffix ----------------------------------------------------------------------------


def gpu_archs_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = amd_gpus(ctx, spec)
    if not gpus:
        return _no_amd(ctx)
    archs = _archs(gpus)
    if not archs:
        return FixVerdict(False, "the GPU architecture is unknown (no arch in the platform)")
    current = spec.env.get("GPU_ARCHS")
    if current is None or current.strip().lower() == "native":
        full = sorted({g.arch_full for g in gpus if g.arch_full and ":" in g.arch_full})
        printed = f"amdgpu-arch prints {', '.join(full)}; " if full else ""
        return FixVerdict(
            True, f"{printed}AITER needs the bare arch ({';'.join(archs)}) in GPU_ARCHS"
        )
    if ":" in current:
        return FixVerdict(True, f"GPU_ARCHS={current} carries feature suffixes AITER cannot match")
    return FixVerdict(False, f"GPU_ARCHS={current} is already a bare arch")


def gpu_archs_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    current = spec.env.get("GPU_ARCHS")
    if current is None or current.strip().lower() == "native":
        value = ";".join(_archs(amd_gpus(ctx, spec)))
    else:
        value = ";".join(dict.fromkeys(bare_arch(p) for p in current.split(";") if p.strip()))
    return spec.with_env(GPU_ARCHS=value)


# -- AITER switches per engine --------------------------------------------------------------------


def _aiter_precheck(ctx: FixContext, spec: LaunchSpec, engine: str) -> FixVerdict | None:
    """None when AITER may be switched on for ``engine`` here, else why not."""
    gpus = amd_gpus(ctx, spec)
    if not gpus:
        return _no_amd(ctx)
    if spec.engine != engine:
        return FixVerdict(False, f"engine is {spec.engine}, not {engine}")
    archs = _archs(gpus)
    unsupported = [a for a in archs if a not in AITER_ARCHS]
    if not archs or unsupported:
        shown = ", ".join(unsupported) or "unknown"
        return FixVerdict(False, f"AITER supports gfx942/gfx950 only (GPU arch {shown})")
    if rocm_options(ctx).get("aiter") is False:
        return FixVerdict(False, f"turned off with plugin_options.{PLUGIN_OPTIONS_KEY}.aiter")
    return None


def vllm_aiter_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    blocked = _aiter_precheck(ctx, spec, "vllm")
    if blocked:
        return blocked
    if "VLLM_ROCM_USE_AITER" in spec.env:
        return FixVerdict(
            False, f"VLLM_ROCM_USE_AITER={spec.env['VLLM_ROCM_USE_AITER']} set in engine_env"
        )
    archs = ", ".join(_archs(amd_gpus(ctx, spec)))
    return FixVerdict(True, f"vLLM on {archs}: AITER kernels are off unless switched on")


def vllm_aiter_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    return spec.with_env(VLLM_ROCM_USE_AITER="1")


_SGLANG_BACKEND_FLAGS = (
    "--attention-backend",
    "--prefill-attention-backend",
    "--decode-attention-backend",
)


def _sglang_backend_given(spec: LaunchSpec) -> str | None:
    for flag in _SGLANG_BACKEND_FLAGS:
        value = spec.flag_value(flag)
        if value is not None:
            return f"{flag} {value}"
    return None


def sglang_aiter_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    blocked = _aiter_precheck(ctx, spec, "sglang")
    if blocked:
        return blocked
    env = spec.env.get("SGLANG_USE_AITER")
    if env is not None and env.strip().lower() in FALSE:
        return FixVerdict(False, f"SGLANG_USE_AITER={env} set in engine_env")
    backend = _sglang_backend_given(spec)
    if env is not None and backend:
        return FixVerdict(False, f"SGLANG_USE_AITER={env} and {backend} already given")
    missing = [
        what
        for what, absent in (
            ("SGLANG_USE_AITER=1", env is None),
            ("--attention-backend aiter", backend is None),
        )
        if absent
    ]
    return FixVerdict(
        True,
        f"SGLang on {', '.join(_archs(amd_gpus(ctx, spec)))}: {' and '.join(missing)} not set",
    )


def sglang_aiter_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    if "SGLANG_USE_AITER" not in spec.env:
        spec = spec.with_env(SGLANG_USE_AITER="1")
    if _sglang_backend_given(spec) is None:
        spec = spec.replace_flag("--attention-backend", "aiter")
    return spec


# -- MI355X chunked prefill -----------------------------------------------------------------------

_CHUNK_FLAG = "--chunked-prefill-size"  # SGLang's


def _mi355x(ctx: FixContext, spec: LaunchSpec) -> FixVerdict | None:
    gpus = amd_gpus(ctx, spec)
    if not gpus:
        return _no_amd(ctx)
    if MI355X_ARCH not in _archs(gpus):
        return FixVerdict(False, f"no {MI355X_ARCH} (MI350X/MI355X) GPU in this launch")
    return None


def chunk_cap_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    blocked = _mi355x(ctx, spec)
    if blocked:
        return blocked
    if spec.engine == "vllm":
        return FixVerdict(
            False,
            "vLLM's --max-num-batched-tokens is not affected (AMD's MI355X vLLM recipes run "
            "131072)",
        )
    if spec.engine != "sglang":
        return FixVerdict(False, f"engine is {spec.engine}; the crash was SGLang's")
    flag = _CHUNK_FLAG
    value = _int_flag(spec, flag)
    if value is None:
        return FixVerdict(False, f"{flag} not given; the engine's default is below the cap")
    if isinstance(value, str):
        return FixVerdict(False, f"{flag} {value} is not an integer; left as given")
    if value < 0:
        return FixVerdict(False, f"{flag} {value}: chunked prefill disabled")
    if value <= CHUNKED_PREFILL_CAP:
        return FixVerdict(False, f"{flag} {value} <= {CHUNKED_PREFILL_CAP}")
    return FixVerdict(
        True, f"{flag} {value} > {CHUNKED_PREFILL_CAP} on {MI355X_ARCH} crashes the engine"
    )


def chunk_cap_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    return spec.replace_flag(_CHUNK_FLAG, str(CHUNKED_PREFILL_CAP))


def core_dump_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    blocked = _mi355x(ctx, spec)
    if blocked:
        return blocked
    if spec.ulimits.get("core") == 0:
        return FixVerdict(False, "core dumps already off (ulimit core 0)")
    return FixVerdict(
        True, f"a GPU fault on {MI355X_ARCH} writes gpucore.* dumps of device memory (~1 TB seen)"
    )


def core_dump_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    return spec.model_copy(update={"ulimits": {**spec.ulimits, "core": 0}})


# -- HSA_NO_SCRATCH_RECLAIM with MEC firmware < 177 -----------------------------------------------


def _mec(acc: Accelerator) -> int | None:
    raw = acc.firmware.get("mec")
    try:
        return int(str(raw).strip()) if raw is not None else None
    except ValueError:
        return None


def scratch_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = amd_gpus(ctx, spec)
    if not gpus:
        return _no_amd(ctx)
    if "HSA_NO_SCRATCH_RECLAIM" in spec.env:
        return FixVerdict(
            False, f"HSA_NO_SCRATCH_RECLAIM={spec.env['HSA_NO_SCRATCH_RECLAIM']} set in engine_env"
        )
    mi300 = [g for g in gpus if arch_of(g) == SCRATCH_RECLAIM_ARCH]
    if not mi300:
        mecs = sorted({g.firmware.get("mec", "?") for g in gpus})
        return FixVerdict(
            False,
            f"the MEC < {MEC_FIRMWARE_FIXED} threshold is for {SCRATCH_RECLAIM_ARCH} "
            f"(MI300X/MI325X) firmware; {', '.join(_archs(gpus)) or 'this arch'} firmware "
            f"(mec {', '.join(mecs)}) is numbered separately",
        )
    versions = {g.index: _mec(g) for g in mi300}
    unknown = [i for i, v in versions.items() if v is None]
    old = sorted({v for v in versions.values() if v is not None and v < MEC_FIRMWARE_FIXED})
    if old:
        return FixVerdict(True, f"MEC firmware {', '.join(map(str, old))} < {MEC_FIRMWARE_FIXED}")
    if unknown:
        return FixVerdict(
            False, f"MEC firmware version unknown for gpu {_ids(unknown)}; not applied"
        )
    newest = sorted({v for v in versions.values() if v is not None})
    return FixVerdict(False, f"MEC firmware {', '.join(map(str, newest))} >= {MEC_FIRMWARE_FIXED}")


def scratch_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    return spec.with_env(HSA_NO_SCRATCH_RECLAIM="1")


# -- docker: device nodes, groups, security options -----------------------------------------------


def docker_args_supported(spec: LaunchSpec | None = None) -> bool:
    """Whether this inferx-core's LaunchSpec carries extra ``docker run`` arguments."""
    cls = LaunchSpec if spec is None else type(spec)
    return "docker_args" in cls.model_fields


def docker_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = amd_gpus(ctx, spec)
    if not gpus:
        return _no_amd(ctx)
    if spec.image is None:
        return FixVerdict(False, "not a container launch (no image)")
    missing_devices = [d for d in DOCKER_DEVICES if d not in spec.devices]
    have_args = tuple(getattr(spec, "docker_args", ()))
    missing_args = [
        " ".join(DOCKER_ARGS[i : i + 2])
        for i in range(0, len(DOCKER_ARGS), 2)
        if not _has_pair(have_args, DOCKER_ARGS[i], DOCKER_ARGS[i + 1])
    ]
    if not missing_devices and not missing_args:
        return FixVerdict(False, "ROCm devices and container options already present")
    return FixVerdict(
        True,
        "a ROCm container needs /dev/kfd and /dev/dri, the video group, SYS_PTRACE and "
        "seccomp=unconfined",
    )


def _has_pair(args: tuple[str, ...], flag: str, value: str) -> bool:
    return (
        any(a == flag and b == value for a, b in itertools.pairwise(args))
        or f"{flag}={value}" in args
    )


def docker_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    devices = (*spec.devices, *(d for d in DOCKER_DEVICES if d not in spec.devices))
    update: dict[str, Any] = {"devices": devices}
    if docker_args_supported(spec):
        have = tuple(getattr(spec, "docker_args", ()))
        extra: list[str] = []
        for i in range(0, len(DOCKER_ARGS), 2):
            if not _has_pair(have, DOCKER_ARGS[i], DOCKER_ARGS[i + 1]):
                extra += [DOCKER_ARGS[i], DOCKER_ARGS[i + 1]]
        update["docker_args"] = (*have, *extra)
    else:
        update["warnings"] = (
            *spec.warnings,
            "this inferx-core cannot pass extra docker run options; the ROCm container also "
            "needs: " + " ".join(DOCKER_ARGS),
        )
    return spec.model_copy(update=update)


# -- preflight: GPUs drained before launch --------------------------------------------------------


def preflight_condition(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    gpus = amd_gpus(ctx, spec)
    if not gpus:
        return _no_amd(ctx)
    if any(w.kind == "gpu_memory_below" for w in spec.preflight):
        return FixVerdict(False, "a GPU memory wait is already in the spec")
    ids = _ids(g.index for g in gpus)
    return FixVerdict(True, f"RCCL init fails on a GPU a previous job still holds (gpu {ids})")


def preflight_change(spec: LaunchSpec, ctx: FixContext) -> LaunchSpec:
    wait = PreflightWait(
        kind="gpu_memory_below",
        threshold=0.10,
        reason="a half-drained previous job on these AMD GPUs breaks RCCL init",
    )
    return spec.model_copy(update={"preflight": (*spec.preflight, wait)})
