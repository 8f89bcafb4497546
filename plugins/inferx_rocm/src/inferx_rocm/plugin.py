"""AMD's answers to the InferX hooks: detection and telemetry through amdsmi, ROCm fixes.

Silent (None, no error) where amdsmi or AMD GPUs are absent; every fix's
condition holds only for AMD GPUs, so on NVIDIA or CPU platforms a launch is
exactly what it is without this plugin. The AMD knowledge stays here: the
core and the engine plugins know none of it.
"""

from __future__ import annotations

from inferx_core import Fix, Platform, Sampler, hookimpl
from inferx_rocm.fixes import catalogue
from inferx_rocm.sampler import AmdSmiSampler
from inferx_rocm.smi import SOURCE, bare_arch, detect_amd, load_amdsmi

__all__ = ["SOURCE", "bare_arch", "detect_amd", "load_amdsmi"]


@hookimpl
def inferx_platform() -> Platform | None:
    return detect_amd()


@hookimpl
def inferx_telemetry_samplers(platform: Platform, gpu_ids: list[int]) -> list[Sampler] | None:
    """One :class:`AmdSmiSampler` for the AMD devices among ``gpu_ids``, else None."""
    amd = {a.index for a in platform.accelerators_of("amd")}
    ids = [i for i in gpu_ids if i in amd]
    if not ids:
        return None
    return [AmdSmiSampler(ids)]


@hookimpl
def inferx_container_fixes() -> list[Fix]:
    return catalogue()
