"""The typed, versioned result of one load point (schema version 2).

A point result is one of four types, told apart by ``status``:

- :class:`OkResult`: the point ran, requests succeeded and every validity check
  passed (``validity``: client starvation, coalescing, error rate, ...);
- :class:`InvalidResult`: it ran but a validity check failed; the numbers are
  kept and never reported as good (``failure_reason`` names the checks);
- :class:`InterruptedResult`: Ctrl-C stopped it; what was measured is kept;
- :class:`FailedResult`: it failed (the engine died, no request succeeded) or
  never ran (the engine did not start); measured sections are None when
  nothing ran, never zeros.

Sections: ``identity`` (point, server, load level as fields), ``workload``,
``load`` (what was offered and what happened), ``latency``, ``throughput``
(with goodput), ``reasoning`` (reasoning models only), ``telemetry`` (power,
energy, sampled series) and ``provenance`` (versions, target, engine, platform,
config, launch, fixes).
``null_reasons`` says, by flat vLLM name, why a figure is None.

:meth:`PointResultBase.flat` is the flat view with vLLM ``bench serve`` and
InferenceX field names (the layout of schema-1 files); :meth:`metric`
looks one figure up by that name. Files are read with :func:`parse_result`,
which migrates schema 1, and written only by
:func:`inferx_core.results.files.write_result`.

Secrets are masked in the model itself: a result is masked
(:func:`inferx_core.sdk.redact.redact_fields`: registered secret values, inline
tokens, URL credentials) whenever it is built, read or copied with changes, so
every writer (JSON, database, Parquet, exports, console, pages) receives masked
data and none has to remember to mask it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    TypeAdapter,
    model_validator,
)

from inferx_core.evals.model import AccuracySection
from inferx_core.metrics.anatomy import Anatomy
from inferx_core.metrics.dimensions import StageStats, TurnStats
from inferx_core.metrics.model import (
    LatencyStats,
    PointMetrics,
    ReasoningStats,
    RequestCounts,
    ThroughputStats,
)
from inferx_core.metrics.repeats import RepeatSummary
from inferx_core.metrics.validity import Validity
from inferx_core.results.flat import (
    FLAT_SCHEMA_VERSION,
    OFFERED_KEYS,
    PROVENANCE_KEYS,
    TARGET_KEYS,
    speculative_flat,
    vllm_burstiness,
)
from inferx_core.sdk.redact import may_hold_secrets, redact_fields
from inferx_core.telemetry.model import TelemetrySection

SCHEMA_VERSION: Final = 2  # Final: typed Literal[2], the result's schema_version
Status = Literal["ok", "invalid", "failed", "interrupted"]
Mode = Literal["closed", "open"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Identity(_Section):
    """Which point this is: ids and the load level, never to be parsed out of an id."""

    point_id: str
    server_id: str | None = None
    mode: Mode | None = None
    concurrency: int | None = None  # closed loop: requests in flight
    request_rate: float | None = None  # open loop: requests/s (None: closed loop)
    max_concurrency: int | None = None  # closed: = concurrency; open: the cap, if any
    date: str
    finished_at: str | None = None

    @property
    def load_level(self) -> float | None:
        """Concurrency (closed loop) or request rate (open loop): the x of a sweep."""
        if self.mode == "closed":
            return float(self.concurrency) if self.concurrency is not None else None
        return self.request_rate


class WorkloadSection(_Section):
    """The prompts that were built: spec, exact token counts, how they were counted."""

    spec: dict[str, Any] = Field(default_factory=dict)
    num_prompts: int | None = None
    seed: int | None = None
    token_source: str | None = None
    token_counter: str | None = None
    estimated: bool | None = None
    input_lengths: Any = None
    output_lengths: Any = None
    total_prompt_tokens: int | None = None
    mean_prompt_tokens: float | None = None
    mean_max_tokens: float | None = None
    missed_target: Any = None
    max_abs_miss: Any = None
    mean_abs_miss: Any = None
    build_seconds: float | None = None
    notes: list[str] = Field(default_factory=list)
    api: str | None = None
    range_semantics: str | None = None
    ignore_eos: bool | None = None
    token_counting: Any = None
    # Dataset and trace prompts over the context: skipped and counted (None: no known limit).
    context: dict[str, Any] | None = None


class WorkerStats(_Section):
    """One load worker process (``load.workers`` > 1): asked, done, cost, clock."""

    worker: int
    host: str | None = None
    requests: int = 0
    target_rate: float | None = None  # open loop: its share of the rate (req/s)
    achieved_rate: float | None = None  # req/s it sent
    dispatch_lateness_p99_ms: float | None = None
    loop_lag_p95_ms: float | None = None
    cpu_fraction: float | None = None  # of one core
    clock: str = "same_host"  # same_host | exchange | wall_clock
    clock_offset_ns: int = 0
    clock_uncertainty_ns: int | None = 0  # None: unknown (wall clocks)
    error: str | None = None


class LoadSection(RequestCounts):
    """What was offered (prompts, arrivals, limits, SLOs) and what happened (counts)."""

    # Load generator processes (1: in-process) and each one's figures when several.
    workers: int = 1
    per_worker: list[WorkerStats] = Field(default_factory=list)

    num_prompts: int
    num_prompts_planned: int | None = None
    arrival: str | None = None
    duration_limit_s: float | None = None
    stopped_by: Literal["num_prompts", "duration", "aborted"]
    in_flight_finished_after_stop: bool = False
    warmup_requests: int = 0
    warmup_failed: int = 0
    # The measured window on the wall clock (InferenceX's names): what power
    # telemetry recorded elsewhere is integrated over.
    benchmark_start_time_unix: float | None = None
    benchmark_end_time_unix: float | None = None
    slo: dict[str, float] = Field(default_factory=dict)
    # Structured workloads and load: figures per multi-turn turn, per load stage.
    turns: list[TurnStats] | None = None
    stages: list[StageStats] | None = None


class EngineProvenance(_Section):
    name: str
    plugin: str | None = None
    version: str | None = None


class ImportedFrom(_Section):
    """A result another tool produced, read by ``inferx import``."""

    tool: Literal[
        "vllm bench serve", "InferenceX aggregate", "AIPerf", "GuideLLM", "inference-perf"
    ]
    path: str
    sha256: str
    # Figures the file does not report; they are None in this result.
    unknown: list[str] = Field(default_factory=list)
    # The tool's version where the file names it (``inferx audit``).
    version: str | None = None
    # Checks of the verdict that cannot run on what the file holds -> why.
    not_judged: dict[str, str] = Field(default_factory=dict)


class Provenance(_Section):
    """Where the numbers come from: versions, target, engine, platform, config, launch."""

    inferx_version: str
    backend: str | None = None
    base_url: str | None = None
    model_id: str | None = None
    engine: EngineProvenance | None = None
    platform: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    launch: dict[str, Any] | None = None
    fixes_applied: list[dict[str, Any]] = Field(default_factory=list)
    fix_decisions: list[dict[str, Any]] = Field(default_factory=list)
    preflight: list[Any] | None = None
    readiness: dict[str, Any] | None = None
    engine_log_tail: Any = None
    imported_from: ImportedFrom | None = None
    # Fields of a migrated schema-1 file that no section knows; kept, not lost.
    extra: dict[str, Any] = Field(default_factory=dict)


class PointResultBase(_Section):
    schema_version: Literal[2] = SCHEMA_VERSION
    status: Status
    failure_reason: str | None = None
    identity: Identity
    workload: WorkloadSection | None = None
    load: LoadSection | None = None
    latency: LatencyStats | None = None
    throughput: ThroughputStats | None = None
    # Reasoning models: TTFO, reasoning tokens, the answer's TPOT (None: no request reasoned).
    reasoning: ReasoningStats | None = None
    telemetry: TelemetrySection | None = None
    accuracy: AccuracySection | None = None  # evals run on this point's server (issue 17)
    provenance: Provenance
    null_reasons: dict[str, str] = Field(default_factory=dict)
    # The checks that decide whether the numbers can be trusted (None: not assessed,
    # e.g. a point that never ran or an imported result).
    validity: Validity | None = None
    # A point run N times (repeats: N): this is its median run; spread across all runs.
    repeats: RepeatSummary | None = None
    # The TTFT taken apart with the engine's own clock (metrics/anatomy.py; None: the
    # engine's replies carried no per-request timing).
    anatomy: Anatomy | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _secrets_masked(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        """The one place results are masked: built, read or copied, a result holds no
        secret (a server's error that echoes a key, a base URL's password)."""
        result = handler(data)
        if not may_hold_secrets(result.model_dump_json()):
            return result  # the common case: one search over the JSON, no walk
        plain = result.model_dump(mode="json")
        masked = redact_fields(plain)
        return result if masked == plain else handler(masked)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy, validated (hence masked) again when ``update`` changes it."""
        copy = super().model_copy(update=update, deep=deep)
        return type(self).model_validate(copy.model_dump()) if update else copy

    @property
    def point_id(self) -> str:
        return self.identity.point_id

    @property
    def measured(self) -> bool:
        """True when requests ran (the metric sections exist)."""
        return self.load is not None and self.latency is not None and self.throughput is not None

    def metrics(self) -> PointMetrics | None:
        """Counts, throughput and latency together, as :func:`summarize` made them."""
        if not self.measured:
            return None
        assert self.load is not None and self.latency is not None and self.throughput is not None
        counts = {k: getattr(self.load, k) for k in RequestCounts.model_fields}
        return PointMetrics(
            counts=RequestCounts(**counts),
            throughput=self.throughput,
            latency=self.latency,
            null_reasons=self.null_reasons,
            reasoning=self.reasoning,
        )

    def flat(self) -> dict[str, Any]:
        """The flat view with vLLM/InferenceX names (the layout of schema-1 files)."""
        return flat_view(self)

    def metric(self, name: str) -> Any:
        """One figure by its flat name (``p99_ttft_ms``, ``median_intvty``...); None if absent."""
        return self.flat().get(name)


class OkResult(PointResultBase):
    status: Literal["ok"] = "ok"
    workload: WorkloadSection
    load: LoadSection
    latency: LatencyStats
    throughput: ThroughputStats


class InvalidResult(PointResultBase):
    """It ran, but a validity check failed: the numbers are kept, never reported as good."""

    status: Literal["invalid"] = "invalid"
    failure_reason: str
    workload: WorkloadSection
    load: LoadSection
    latency: LatencyStats
    throughput: ThroughputStats
    validity: Validity


class InterruptedResult(PointResultBase):
    status: Literal["interrupted"] = "interrupted"
    failure_reason: str
    load: LoadSection
    latency: LatencyStats
    throughput: ThroughputStats


class FailedResult(PointResultBase):
    status: Literal["failed"] = "failed"
    failure_reason: str


PointResult = Annotated[
    OkResult | InvalidResult | InterruptedResult | FailedResult, Field(discriminator="status")
]
_ADAPTER: TypeAdapter[PointResultBase] = TypeAdapter(PointResult)  # type: ignore[arg-type, unused-ignore]  # a union (mypy cold vs warm cache differ)


class ResultSchemaError(ValueError):
    """A file that claims to be an InferX result but does not fit the schema."""


def parse_result(data: Mapping[str, Any]) -> PointResultBase:
    """A result file's JSON as its typed model; schema-1 files are migrated first."""
    version = data.get("schema_version")
    if version == 1:
        from inferx_core.results.migrate import migrate_v1

        data = migrate_v1(data)
    elif version != SCHEMA_VERSION:
        raise ResultSchemaError(
            f"unknown result schema_version {version!r}; this InferX reads 1 and {SCHEMA_VERSION}"
        )
    return _ADAPTER.validate_python(data)


def result_json_schema() -> dict[str, Any]:
    """The JSON Schema of a result file (``inferx schema result``)."""
    return _ADAPTER.json_schema()


# -- the flat view ------------------------------------------------------------
def _identity(result: PointResultBase) -> dict[str, Any]:
    ident = result.identity
    out: dict[str, Any] = {
        "schema_version": FLAT_SCHEMA_VERSION,
        "inferx_version": result.provenance.inferx_version,
        "point_id": ident.point_id,
        "status": result.status,
        "failure_reason": result.failure_reason,
        "date": ident.date,
    }
    if result.validity is not None:
        out["valid"] = result.validity.valid
        out["validity_failing"] = [c.name for c in result.validity.failing]
    if result.repeats is not None:
        out["repeats"] = result.repeats.n
        out["repeat_stats"] = {k: v.model_dump() for k, v in result.repeats.stats.items()}
    if ident.finished_at is not None:
        out["finished_at"] = ident.finished_at
    if ident.server_id is not None:
        out["server_id"] = ident.server_id
    return out


def _load_level(result: PointResultBase) -> dict[str, Any]:
    ident = result.identity
    out: dict[str, Any] = {"mode": ident.mode}
    load = result.load
    if load is not None:
        out["num_prompts"] = load.num_prompts
        out["num_prompts_planned"] = load.num_prompts_planned
    # vLLM writes "inf" for a closed loop's request rate.
    out["request_rate"] = "inf" if ident.request_rate is None else ident.request_rate
    if load is not None:
        out["arrival"] = load.arrival
        out["burstiness"] = vllm_burstiness(ident.mode, load.arrival, result.provenance.config)
    out["max_concurrency"] = ident.max_concurrency
    if load is not None:
        for key in OFFERED_KEYS[3:]:
            out[key] = getattr(load, key)
    return out


def flat_view(result: PointResultBase) -> dict[str, Any]:
    """Every field of ``result`` under its flat name, in schema-1 file order."""
    prov = result.provenance
    out = _identity(result)
    target = {k: getattr(prov, k) for k in TARGET_KEYS if getattr(prov, k) is not None}
    out.update(target)
    if result.measured or result.identity.mode is not None:
        out.update(_load_level(result))
    metrics = result.metrics()
    if metrics is not None:
        out.update(metrics.flat())
    if result.workload is not None:
        workload = result.workload.model_dump(mode="json", exclude_none=False)
        if workload.get("context") is None:
            workload.pop("context", None)  # absent from files before it existed: kept so
        out["workload"] = workload
    if result.load is not None:
        out["slo"] = dict(result.load.slo)
    if result.telemetry is not None:
        out.update(result.telemetry.flat())
        out.update(speculative_flat(result.telemetry.engine_metrics))
    for key in PROVENANCE_KEYS:
        value = getattr(prov, key)
        if key in ("engine", "imported_from") and value is not None:
            value = value.model_dump(mode="json")
        if value is not None or key in ("fixes_applied", "fix_decisions"):
            out[key] = value
    out.update(prov.extra)
    return out
