"""How one server is split over GPUs, and the value types of engine flags.

Apart from the run models so that a deployment's roles
(:mod:`inferx_core.config.deployment`) can use them while the run model
holds a deployment.
"""

from __future__ import annotations

from pydantic import Field

from inferx_core.config.base import StrictModel

__all__ = ["ArgValue", "Parallelism"]


class Parallelism(StrictModel):
    """How the model is split over GPUs. GPUs used = tp x pp x dp (see ``gpus``)."""

    tp: int = Field(default=1, ge=1, description="Tensor parallel size")
    pp: int = Field(default=1, ge=1, description="Pipeline parallel size")
    dp: int = Field(default=1, ge=1, description="Data parallel size")
    ep: int | None = Field(default=None, ge=1, description="Expert parallel size (MoE)")
    expert_parallel: bool = Field(default=False, description="Enable expert parallelism")
    dp_attention: bool = Field(default=False, description="SGLang DP attention")

    @property
    def gpus(self) -> int:
        """GPUs one server uses: tp x pp x dp, except DP attention (SGLang), whose
        data-parallel attention ranks live inside the tensor-parallel group."""
        if self.dp_attention:
            return self.tp * self.pp
        return self.tp * self.pp * self.dp


ArgValue = str | int | float | bool | list[str] | None
