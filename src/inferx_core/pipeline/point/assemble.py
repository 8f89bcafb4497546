"""Assemble one point's typed result from what its stages produced.

The only place a :class:`~inferx_core.results.model.PointResultBase` is
built: measured points (:func:`measured_result`) and points that never ran
(:func:`never_ran_result`) share the identity and provenance code, so an ok,
interrupted and failed file always carry the same identity fields.

Secrets: the result models mask themselves when built; a point's request
records are masked here (:func:`mask_records`) as soon as the load stage hands
them over, before metrics, validity, sidecars, exports or the database see them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from inferx_core._version import __version__
from inferx_core.config.points import LoadPoint
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.model import PointMetrics
from inferx_core.metrics.validity import Validity
from inferx_core.results.files import utc_now
from inferx_core.results.model import (
    FailedResult,
    Identity,
    InterruptedResult,
    InvalidResult,
    LoadSection,
    OkResult,
    PointResultBase,
    Provenance,
    WorkloadSection,
)
from inferx_core.sdk.redact import redact, redact_text
from inferx_core.telemetry.finite import finite_telemetry
from inferx_core.telemetry.model import TelemetrySection
from inferx_core.telemetry.spec_bounds import bound_spec_window

StoppedBy = Literal["num_prompts", "duration", "aborted"]


def mask_records(records: Iterable[RequestRecord]) -> None:
    """Mask, in place, what a server wrote into the records (an error that echoes an API
    key, a URL with credentials): the one place records are masked, before any reader."""
    for record in records:
        if record.error is not None:
            record.error = redact_text(record.error)
        if record.finish_reason is not None:
            record.finish_reason = redact_text(record.finish_reason)


@dataclass(frozen=True)
class PointSource:
    """Who produced a point: ids, the target and what every result of it carries."""

    point_id: str
    point: LoadPoint
    server_id: str | None = None
    backend: str | None = None
    base_url: str | None = None
    model_id: str | None = None
    # config, engine, platform, launch, fixes, preflight, readiness (redacted here)
    context: Mapping[str, Any] = field(default_factory=dict)


def identity(source: PointSource, started_at: str | None, finished_at: str | None) -> Identity:
    point = source.point
    closed = point.request_rate is None and not point.trace
    return Identity(
        point_id=source.point_id,
        server_id=source.server_id,
        mode="closed" if closed else "open",
        concurrency=point.concurrency if closed else None,
        request_rate=point.request_rate,
        max_concurrency=point.concurrency or point.max_concurrency,
        date=started_at or utc_now(),
        finished_at=finished_at,
    )


def provenance(source: PointSource, **more: Any) -> Provenance:
    context = redact({**source.context, **more})
    known = set(Provenance.model_fields) - {"inferx_version", "extra"}
    return Provenance(
        inferx_version=__version__,
        backend=source.backend,
        base_url=source.base_url,
        model_id=source.model_id,
        **{k: v for k, v in context.items() if k in known},
        extra={k: v for k, v in context.items() if k not in known},
    )


@dataclass(frozen=True)
class Measured:
    """What the load, metrics and telemetry stages of one point produced."""

    metrics: PointMetrics
    offered: Mapping[str, Any]  # LoadSection's offered fields (num_prompts, stopped_by...)
    workload: Mapping[str, Any]
    slo: Mapping[str, float]
    telemetry: TelemetrySection | None
    started_at: str
    validity: Validity | None = None


def point_status(
    interrupted: bool, abort_reason: str | None, completed: int
) -> tuple[Literal["ok", "failed", "interrupted"], str | None]:
    if interrupted:
        return "interrupted", "interrupted by the user (Ctrl-C)"
    if abort_reason:
        return "failed", abort_reason
    if completed == 0:
        return "failed", "no request completed successfully"
    return "ok", None


def measured_result(
    source: PointSource,
    measured: Measured,
    status: Literal["ok", "failed", "interrupted"],
    reason: str | None,
    **more_provenance: Any,
) -> PointResultBase:
    """A point whose requests ran, with its status decided by :func:`point_status`;
    an ok point whose validity failed is ``invalid``, its reason the failing checks."""
    metrics = measured.metrics
    load = LoadSection(**metrics.counts.model_dump(), **measured.offered, slo=dict(measured.slo))
    classes: dict[str, type[PointResultBase]] = {
        "ok": OkResult,
        "failed": FailedResult,
        "interrupted": InterruptedResult,
    }
    cls = classes[status]
    if status == "ok" and measured.validity is not None and not measured.validity.valid:
        cls, reason = InvalidResult, f"invalid: {measured.validity.summary()}"
    return cls(  # type: ignore[call-arg]  # each subclass fixes its status
        failure_reason=reason,
        identity=identity(source, measured.started_at, utc_now()),
        workload=WorkloadSection(**measured.workload),
        load=load,
        latency=metrics.latency,
        throughput=metrics.throughput,
        reasoning=metrics.reasoning,  # reasoning models only (TTFO, answer TPOT, tokens)
        telemetry=_bounded_telemetry(measured.telemetry, source),
        provenance=provenance(source, **more_provenance),
        null_reasons=metrics.null_reasons,
        validity=measured.validity,
    )


def _bounded_telemetry(
    telemetry: TelemetrySection | None, source: PointSource
) -> TelemetrySection | None:
    """No value that is not finite (a 1e308 gauge never loses the point), and the speculative
    window bounded by the run's own ``num_speculative_tokens`` (length in [1, k + 1])."""
    telemetry = finite_telemetry(telemetry)
    config = source.context.get("config")
    spec = (config.get("speculative") if isinstance(config, Mapping) else None) or {}
    k = spec.get("num_speculative_tokens") if isinstance(spec, Mapping) else None
    window = telemetry.engine_metrics.get("spec_decode") if telemetry is not None else None
    if telemetry is None or not isinstance(k, int) or not isinstance(window, Mapping):
        return telemetry
    engine = {**telemetry.engine_metrics, "spec_decode": bound_spec_window(window, k)}
    return telemetry.model_copy(update={"engine_metrics": engine})


def never_ran_result(source: PointSource, reason: str, **more_provenance: Any) -> FailedResult:
    """A point that never ran (the engine did not start or died before it).

    No request ran, so no latency or throughput section is written, never a zero.
    """
    return FailedResult(
        failure_reason=reason,
        identity=identity(source, None, None),
        provenance=provenance(source, **more_provenance),
    )
