"""The typed telemetry of one point: GPU power and energy, CPU energy, sampled series.

Energy is computed once, over exactly the measured window, by
:mod:`inferx_core.telemetry.energy`; these models hold what it found. Nothing
is invented: a value that could not be measured is None and its
``*_null_reasons`` entry says why. :meth:`TelemetrySection.flat` gives the
flat names of schema-1 result files (``gpu_energy_j``, ``cpu_power_avg_w``...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuPower(_Section):
    """GPU power and energy over the window, from the sampler that reported power."""

    power_valid: bool
    power_invalid_reason: str | None = None
    power_invalid_reasons: list[str] = Field(default_factory=list)
    power_source: str
    gpu_ids: list[int | str] = Field(default_factory=list)
    gpu_power_avg_w: float | None = None
    gpu_power_max_w: float | None = None
    gpu_energy_j: float | None = None
    gpu_energy_counter_j: float | None = None
    energy_counter_diff_pct: float | None = None
    joules_per_output_token: float | None = None
    joules_per_total_token: float | None = None
    joules_per_request: float | None = None
    output_tokens_per_s_per_kw: float | None = None
    total_tokens_per_s_per_kw: float | None = None
    max_sample_gap_s: float | None = None
    power_window_s: float | None = None
    power_covered_fraction: float | None = None
    gpu_power_avg_w_per_gpu: dict[str, float | None] = Field(default_factory=dict)
    gpu_power_max_w_per_gpu: dict[str, float | None] = Field(default_factory=dict)
    gpu_energy_j_per_gpu: dict[str, float | None] = Field(default_factory=dict)
    gpu_energy_counter_j_per_gpu: dict[str, float | None] = Field(default_factory=dict)
    gpu_power_max_method: str | None = None
    energy_counter_reset_detected: bool | None = None
    samples: int | None = None
    power_null_reasons: dict[str, str] = Field(default_factory=dict)


class CpuEnergy(_Section):
    """CPU package energy (RAPL): not GPU energy, not wall power."""

    cpu_energy_scope: str
    cpu_energy_source: str
    cpu_packages: list[str] = Field(default_factory=list)
    cpu_energy_j: float | None = None
    cpu_energy_j_per_package: dict[str, float | None] = Field(default_factory=dict)
    cpu_power_avg_w: float | None = None
    cpu_energy_covered_fraction: float | None = None
    cpu_energy_reset_detected: bool | None = None
    cpu_energy_null_reasons: dict[str, str] = Field(default_factory=dict)


class SamplerReport(_Section):
    """One sampler's run: how many samples, errors, and why it was unavailable."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    interval_s: float | None = None
    samples: int = 0
    errors: int = 0
    first_errors: list[str] = Field(default_factory=list)
    unavailable: str | None = None
    notes: list[str] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list)


WindowStats = dict[str, dict[str, Any]]


class TelemetrySection(_Section):
    """What the samplers saw during the measured window."""

    gpu: GpuPower
    cpu: CpuEnergy
    gpu_metrics: WindowStats = Field(default_factory=dict)
    host_metrics: WindowStats = Field(default_factory=dict)
    engine_metrics: WindowStats = Field(default_factory=dict)
    # a deployment's router, from its own exporter (telemetry/router_metrics.py); {} without
    router_metrics: dict[str, Any] = Field(default_factory=dict)
    samplers: list[SamplerReport] = Field(default_factory=list)

    @classmethod
    def from_flat(cls, flat: Mapping[str, Any]) -> TelemetrySection:
        """From the flat fields of ``telemetry_fields`` or a schema-1 file."""
        return cls(
            gpu=GpuPower(**{k: flat[k] for k in GpuPower.model_fields if k in flat}),
            cpu=CpuEnergy(**{k: flat[k] for k in CpuEnergy.model_fields if k in flat}),
            gpu_metrics=flat.get("gpu_metrics") or {},
            host_metrics=flat.get("host_metrics") or {},
            engine_metrics=flat.get("engine_metrics") or {},
            router_metrics=flat.get("router_metrics") or {},
            samplers=list(flat.get("telemetry") or []),
        )

    def flat(self) -> dict[str, Any]:
        return {
            **self.gpu.model_dump(),
            **self.cpu.model_dump(),
            "gpu_metrics": self.gpu_metrics,
            "host_metrics": self.host_metrics,
            "engine_metrics": self.engine_metrics,
            "router_metrics": self.router_metrics,
            "telemetry": [s.model_dump() for s in self.samplers],
        }

    @classmethod
    def flat_keys(cls) -> frozenset[str]:
        """Every flat key a schema-1 file uses for telemetry."""
        return frozenset(
            {*GpuPower.model_fields, *CpuEnergy.model_fields}
            | {"gpu_metrics", "host_metrics", "engine_metrics", "router_metrics", "telemetry"}
        )
