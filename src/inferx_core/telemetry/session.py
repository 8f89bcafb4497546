"""Telemetry for one load point: which samplers, and what the result says about them.

The runner and ``inferx bench`` describe what to watch (a
:class:`TelemetryPlan`); :func:`telemetry_fields` turns the recorded series
into result fields over exactly the measured window: GPU power and energy
(valid, or null with the reason), CPU (RAPL) energy labelled apart, host and
engine statistics, a deployment router's own, and the per-sampler bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inferx_core.sdk.platform import Platform
from inferx_core.sdk.sampler import Sampler
from inferx_core.telemetry.energy import WindowCounts, cpu_energy, gpu_energy
from inferx_core.telemetry.recorder import TelemetryRecorder
from inferx_core.telemetry.router_metrics import summarize_router
from inferx_core.telemetry.window import summarize_prefix

if TYPE_CHECKING:
    from inferx_core.sdk.manager import InferxPluginManager
    from inferx_core.sdk.probes import EngineMetricsMap

NO_GPU = "no supported GPU"


@dataclass
class TelemetryPlan:
    """What to sample for one server: built once, samplers made fresh per point."""

    make_samplers: Callable[[], list[Sampler]]
    gpu_ids: list[int] = field(default_factory=list)
    no_gpu_reason: str | None = None
    interval_overrides: dict[str, float] = field(default_factory=dict)

    def samplers(self) -> list[Sampler]:
        samplers = self.make_samplers()
        for sampler in samplers:
            if sampler.name in self.interval_overrides:
                sampler.interval_s = self.interval_overrides[sampler.name]
        return samplers


def no_gpu_reason(platform: Platform) -> str:
    """Why no GPU is sampled, in words from the detectors' notes."""
    notes = [n.message for n in platform.notes if "GPU" in n.message or "TPU" in n.message]
    return f"{NO_GPU} ({'; '.join(notes)})" if notes else NO_GPU


def build_plan(
    pm: InferxPluginManager,
    platform: Platform,
    gpu_ids: list[int],
    *,
    engine_pid: int | None = None,
    base_url: str | Sequence[str] | None = None,
    metrics_map: EngineMetricsMap | None = None,
    interval_overrides: dict[str, float] | None = None,
    router_metrics_url: str | None = None,
) -> TelemetryPlan:
    """Samplers from every plugin (``inferx_telemetry_samplers``) plus the engine scraper.

    ``base_url`` is the engine's, or a deployment's engine processes' (each scraped,
    the readings combined; never its router's URL, which serves no engine metrics);
    ``router_metrics_url`` a deployment router's exporter
    (:class:`~inferx_core.telemetry.router_metrics.RouterMetricsSampler`)."""
    from inferx_core.telemetry.engine_metrics import EngineMetricsSampler
    from inferx_core.telemetry.router_metrics import RouterMetricsSampler

    def make() -> list[Sampler]:
        samplers: list[Sampler] = []
        for _, offered in pm.call_each(
            "inferx_telemetry_samplers",
            platform=platform,
            gpu_ids=list(gpu_ids),
            engine_pid=engine_pid,
        ):
            samplers.extend(offered)
        if metrics_map is not None and base_url:
            samplers.append(EngineMetricsSampler(base_url, metrics_map))
        if router_metrics_url:
            samplers.append(RouterMetricsSampler(router_metrics_url))
        return samplers

    return TelemetryPlan(
        make_samplers=make,
        gpu_ids=list(gpu_ids),
        no_gpu_reason=None if gpu_ids else no_gpu_reason(platform),
        interval_overrides=dict(interval_overrides or {}),
    )


def _power_source(recorder: TelemetryRecorder) -> tuple[str | None, str | None]:
    """The sampler that reports GPU power, and why none could, if none did."""
    unavailable = []
    for series in recorder.series:
        if any(k.startswith("gpu.") and k.endswith(".power_w") for k in series.metric_names()):
            return series.name, None
        if series.unavailable and ("GPU" in series.unavailable or "gpu" in series.name):
            unavailable.append(f"{series.name}: {series.unavailable}")
    return None, "; ".join(unavailable) or None


def telemetry_fields(
    recorder: TelemetryRecorder,
    plan: TelemetryPlan,
    *,
    start_ns: int,
    end_ns: int,
    output_tokens: int | None,
    total_tokens: int | None,
    requests: int | None,
) -> dict[str, Any]:
    """Result fields for the window [start_ns, end_ns]; nothing invented."""
    rows = recorder.merged()
    source, unavailable = _power_source(recorder)
    if not plan.gpu_ids:
        reason = plan.no_gpu_reason or NO_GPU
    elif source is None:
        reason = f"{NO_GPU}: {unavailable}" if unavailable else f"{NO_GPU}: no power readings"
    else:
        reason = None
    window_ok = end_ns > start_ns
    energy = gpu_energy(
        rows if window_ok else [],
        plan.gpu_ids if source else [],
        start_ns,
        max(end_ns, start_ns),
        counts=WindowCounts(output_tokens, total_tokens, requests),
        source=source or "none",
        unavailable_reason=reason,
    )
    cpu = cpu_energy(rows if window_ok else [], start_ns, max(end_ns, start_ns))
    return {
        **energy,
        **cpu,
        "gpu_metrics": summarize_prefix(rows, "gpu.", start_ns, end_ns),
        "host_metrics": summarize_prefix(rows, "host.", start_ns, end_ns),
        "engine_metrics": summarize_prefix(rows, "engine.", start_ns, end_ns),
        "router_metrics": summarize_router(rows, start_ns, end_ns),
        "telemetry": recorder.describe(),
    }
