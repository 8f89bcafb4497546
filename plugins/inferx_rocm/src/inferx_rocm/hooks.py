"""AMD's answers to the InferX hooks: the entry point (``[project.entry-points.inferx]``).

Only the hook implementations live here, each delegating down: detection to
:mod:`inferx_rocm.smi`, telemetry to :mod:`inferx_rocm.sampler`, the ROCm
fixes to :mod:`inferx_rocm.fixes`. Silent (None, no error) where amdsmi or AMD
GPUs are absent; every fix's condition holds only for AMD GPUs, so on NVIDIA
or CPU platforms a launch is exactly what it is without this plugin. The AMD
knowledge stays in this package: the core and the engine plugins know none of it.
"""

from __future__ import annotations

from inferx_core import Fix, Platform, Sampler, hookimpl
from inferx_rocm import fixes, sampler, smi


@hookimpl
def inferx_platform() -> Platform | None:
    return smi.detect_amd()


@hookimpl
def inferx_telemetry_samplers(platform: Platform, gpu_ids: list[int]) -> list[Sampler] | None:
    """One :class:`~inferx_rocm.sampler.AmdSmiSampler` for the AMD devices among ``gpu_ids``."""
    return sampler.samplers_for(platform, gpu_ids)


@hookimpl
def inferx_container_fixes() -> list[Fix]:
    return fixes.catalogue()
