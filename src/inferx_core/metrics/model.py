"""The typed metrics of one point: request counts, throughput, latency distributions.

:func:`inferx_core.metrics.summarize.summarize` computes every figure under
vLLM ``bench serve``'s flat names (``mean_ttft_ms``, ``output_throughput``...)
plus InferenceX's (``median_intvty``, seconds-valued ``median_ttft``), then
:meth:`PointMetrics.from_flat` groups them into sections. :meth:`PointMetrics.flat`
is the inverse: the flat, vLLM-named view that exports, Pareto axes and
``metric(name)`` lookups speak. InferenceX's derived fields (seconds and
``{stat}_intvty``) are not stored: the flat view recomputes them from the
millisecond distributions, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

LATENCY_NAMES: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")
_BASE_STATS: tuple[str, ...] = ("mean", "median", "std")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Distribution(_Section):
    """Mean, median, standard deviation and percentiles (``"p99.9"`` keys) of a sample."""

    mean: float | None = None
    median: float | None = None
    std: float | None = None
    percentiles: dict[str, float | None] = Field(default_factory=dict)

    def stats(self) -> dict[str, float | None]:
        """``mean``, ``median``, ``std`` then each percentile key, in order."""
        return {"mean": self.mean, "median": self.median, "std": self.std, **self.percentiles}

    @classmethod
    def from_stats(cls, stats: Mapping[str, float | None]) -> Distribution:
        return cls(
            mean=stats.get("mean"),
            median=stats.get("median"),
            std=stats.get("std"),
            percentiles={k: v for k, v in stats.items() if k not in _BASE_STATS},
        )


class ErrorSample(_Section):
    request_id: int
    error_kind: str
    error: str | None = None


class RequestCounts(_Section):
    """How many requests and tokens the measured window holds (warmup excluded).

    InferX's own results fill every field; None only in a result imported from
    a tool that does not report the figure (its null reason says so).
    """

    duration: float | None
    completed: int | None
    failed: int | None
    total_requests: int | None
    warmup_excluded: int | None
    total_input_tokens: int | None
    total_output_tokens: int | None
    total_input_tokens_server: int | None = None
    output_tokens_estimated: bool | None
    output_tokens_estimated_requests: int | None
    output_token_sources: dict[str, int]
    max_concurrent_requests: int | None
    failed_by_kind: dict[str, int]
    error_samples: list[ErrorSample]
    no_successful_requests: bool | None


class ThroughputStats(_Section):
    """Rates over the measured window, per GPU where the GPU count is known, and goodput."""

    request_throughput: float | None
    request_goodput: float | None = None
    output_throughput: float | None
    total_token_throughput: float | None
    max_output_tokens_per_s: float | None
    goodput_slos: dict[str, float] | None = None
    good_completed: int | None = None
    output_goodput: float | None = None
    total_token_goodput: float | None = None
    num_gpus: int | None = None
    num_prefill_gpus: int | None = None
    num_decode_gpus: int | None = None
    tput_per_gpu: float | None = None
    output_tput_per_gpu: float | None = None
    input_tput_per_gpu: float | None = None


class DispatchLateness(_Section):
    """Open loop: send time minus scheduled arrival per measured request, in milliseconds
    (the client's lateness; queueing behind a concurrency cap counts)."""

    requests: int
    mean: float
    p50: float
    p99: float
    max: float

    @classmethod
    def from_flat(cls, flat: Mapping[str, Any]) -> DispatchLateness | None:
        if flat.get("p99_dispatch_lateness_ms") is None:
            return None
        return cls(
            requests=flat["dispatch_lateness_requests"],
            **{s: flat[f"{s}_dispatch_lateness_ms"] for s in ("mean", "p50", "p99", "max")},
        )

    def flat(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dispatch_lateness_requests": self.requests}
        for stat in ("mean", "p50", "p99", "max"):
            out[f"{stat}_dispatch_lateness_ms"] = getattr(self, stat)
        return out


class LatencyStats(_Section):
    """Latency distributions in milliseconds and interactivity in tokens/s per user."""

    percentiles: list[float]
    ttft_ms: Distribution
    tpot_ms: Distribution
    itl_ms: Distribution
    e2el_ms: Distribution
    itl_zero_gap_fraction: float | None = None
    itl_per_token_requests: int
    itl_per_token_ms: Distribution
    ttft_ms_error_adjusted: dict[str, float | None]
    e2el_ms_error_adjusted: dict[str, float | None]
    intvty_requests: int
    # Per-request interactivity; the slow tail is the low percentiles (p1, p0.1).
    request_intvty: Distribution
    # Open loop only (None in a closed loop, and in results written before it existed).
    dispatch_lateness_ms: DispatchLateness | None = None


class ReasoningStats(_Section):
    """Reasoning models (metrics/reasoning.py): requests that streamed reasoning, their
    reasoning tokens and where the counts came from, TTFO and the answer's own TPOT (ms)."""

    requests: int
    total_reasoning_tokens: int
    reasoning_token_sources: dict[str, int]
    no_answer_requests: int
    ttfo_ms: Distribution
    tpot_answer_ms: Distribution

    @classmethod
    def from_flat(cls, flat: Mapping[str, Any]) -> ReasoningStats | None:
        if flat.get("reasoning_requests") is None:
            return None
        return cls(
            requests=flat["reasoning_requests"],
            total_reasoning_tokens=flat["total_reasoning_tokens"],
            reasoning_token_sources=dict(flat["reasoning_token_sources"]),
            no_answer_requests=flat["reasoning_no_answer_requests"],
            ttfo_ms=Distribution.from_stats(_distribution_fields(flat, "ttfo_ms")),
            tpot_answer_ms=Distribution.from_stats(_distribution_fields(flat, "tpot_answer_ms")),
        )

    def flat(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "reasoning_requests": self.requests,
            "total_reasoning_tokens": self.total_reasoning_tokens,
            "reasoning_token_sources": dict(self.reasoning_token_sources),
            "reasoning_no_answer_requests": self.no_answer_requests,
        }
        for name in ("ttfo_ms", "tpot_answer_ms"):
            for stat, value in getattr(self, name).stats().items():
                out[f"{stat}_{name}"] = value
        return out


_COUNT_FIELDS = tuple(RequestCounts.model_fields)
_THROUGHPUT_FIELDS = tuple(ThroughputStats.model_fields)


def _distribution_fields(flat: Mapping[str, Any], name: str) -> dict[str, float | None]:
    """``{stat}_{name}`` keys of ``flat`` as ``{stat: value}`` (stats in file order)."""
    suffix = f"_{name}"
    return {
        key[: -len(suffix)]: value
        for key, value in flat.items()
        if key.endswith(suffix) and not key.startswith(("itl_", "intvty_"))
    }


def _latency_from_flat(flat: Mapping[str, Any]) -> LatencyStats:
    dists = {
        f"{m}_ms": Distribution.from_stats(_distribution_fields(flat, f"{m}_ms"))
        for m in LATENCY_NAMES
    }
    return LatencyStats(
        percentiles=list(flat["percentiles"]),
        **dists,
        itl_zero_gap_fraction=flat.get("itl_zero_gap_fraction"),
        itl_per_token_requests=flat["itl_per_token_requests"],
        itl_per_token_ms=Distribution.from_stats(_distribution_fields(flat, "itl_per_token_ms")),
        ttft_ms_error_adjusted=_distribution_fields(flat, "ttft_ms_error_adjusted"),
        e2el_ms_error_adjusted=_distribution_fields(flat, "e2el_ms_error_adjusted"),
        intvty_requests=flat["intvty_requests"],
        request_intvty=Distribution.from_stats(_distribution_fields(flat, "request_intvty")),
        dispatch_lateness_ms=DispatchLateness.from_flat(flat),
    )


class PointMetrics(_Section):
    """Everything :func:`summarize` measured, in sections; ``null_reasons`` by flat name."""

    counts: RequestCounts
    throughput: ThroughputStats
    latency: LatencyStats
    null_reasons: dict[str, str] = Field(default_factory=dict)
    # Reasoning models only (None: no successful request streamed reasoning).
    reasoning: ReasoningStats | None = None

    @classmethod
    def from_flat(cls, flat: Mapping[str, Any]) -> PointMetrics:
        """Group vLLM-named fields (a summarize() output or a schema-1 file) into sections."""
        return cls(
            counts=RequestCounts(**{k: flat[k] for k in _COUNT_FIELDS if k in flat}),
            throughput=ThroughputStats(**{k: flat[k] for k in _THROUGHPUT_FIELDS if k in flat}),
            latency=_latency_from_flat(flat),
            null_reasons=dict(flat.get("null_reasons") or {}),
            reasoning=ReasoningStats.from_flat(flat),
        )

    def flat(self) -> dict[str, Any]:
        """The vLLM/InferenceX-named flat view (the layout of schema-1 files)."""
        counts = self.counts.model_dump()
        out: dict[str, Any] = {k: counts[k] for k in _COUNT_FIELDS[:11]}
        for key, value in self.throughput.model_dump().items():
            out[key] = value
            if key == "max_output_tokens_per_s":  # vLLM's order
                out["max_concurrent_requests"] = counts["max_concurrent_requests"]
        out.update(self._latency_flat())
        out["failed_by_kind"] = counts["failed_by_kind"]
        out["error_samples"] = counts["error_samples"]
        out["percentiles"] = list(self.latency.percentiles)
        out["no_successful_requests"] = counts["no_successful_requests"]
        if self.reasoning is not None:
            out.update(self.reasoning.flat())
        out["null_reasons"] = dict(self.null_reasons)
        return out

    def _latency_flat(self) -> dict[str, Any]:
        lat = self.latency
        out: dict[str, Any] = {}
        for metric in LATENCY_NAMES:
            for stat, value in getattr(lat, f"{metric}_ms").stats().items():
                out[f"{stat}_{metric}_ms"] = value
        out["itl_zero_gap_fraction"] = lat.itl_zero_gap_fraction
        out["itl_per_token_requests"] = lat.itl_per_token_requests
        for stat, value in lat.itl_per_token_ms.stats().items():
            out[f"{stat}_itl_per_token_ms"] = value
        for metric in ("ttft", "e2el"):
            for stat, value in getattr(lat, f"{metric}_ms_error_adjusted").items():
                out[f"{stat}_{metric}_ms_error_adjusted"] = value
        out.update(inferencex_fields(lat))
        out["intvty_requests"] = lat.intvty_requests
        for stat, value in lat.request_intvty.stats().items():
            out[f"{stat}_request_intvty"] = value
        if lat.dispatch_lateness_ms is not None:
            out.update(lat.dispatch_lateness_ms.flat())
        return out


def inferencex_fields(latency: LatencyStats) -> dict[str, float | None]:
    """InferenceX's aggregate names: latencies in seconds and ``{stat}_intvty``.

    ``{stat}_intvty = 1000 / {stat}_tpot_ms`` for every TPOT statistic (so
    ``p99_intvty`` is the interactivity of the slow p99 TPOT); a TPOT of 0 has
    no finite interactivity and gives None (its null reason says "infinite").
    """
    out: dict[str, float | None] = {}
    for metric in LATENCY_NAMES:
        for stat, value in getattr(latency, f"{metric}_ms").stats().items():
            out[f"{stat}_{metric}"] = None if value is None else value / 1000.0
    for stat, value in latency.tpot_ms.stats().items():
        out[f"{stat}_intvty"] = None if value is None or value == 0 else 1000.0 / value
    return out
