"""What engine plugins tell the core about a running server: readiness and metric names."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ReadinessProbe(BaseModel):
    """One HTTP check that must pass before the server counts as ready.

    Probes run in order; each is retried until it passes or the readiness
    timeout ends. ``expect_in_body`` is a substring the reply must contain
    (e.g. the served model name in ``/v1/models``); ``{served_model_name}``
    and ``{model}`` in ``path``, ``json_body`` strings and ``expect_in_body``
    are filled in by the core.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    method: Literal["GET", "POST"] = "GET"
    path: str
    json_body: dict[str, Any] | None = None
    expect_status: int = 200
    expect_in_body: str | None = None
    timeout_s: float = Field(default=30.0, gt=0, description="Per attempt")


class EngineMetricsMap(BaseModel):
    """Where an engine's Prometheus /metrics keeps the numbers InferX records.

    Each value is a metric family name as the engine exposes it (e.g.
    ``vllm:kv_cache_usage_perc``); None when the engine has no such metric.
    ``kv_cache_usage_scale`` converts the engine's unit to a 0..1 fraction.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = "/metrics"
    kv_cache_usage: str | None = None
    kv_cache_usage_scale: float = 1.0
    requests_running: str | None = None
    requests_waiting: str | None = None
    preemptions: str | None = None
    # Prefix cache counters in tokens (vLLM: vllm:prefix_cache_queries / _hits); the
    # result reports hits / queries over the measured window as prefix_cache_hit_rate.
    prefix_cache_queries: str | None = None
    prefix_cache_hits: str | None = None
    # For engines that count the prompt tokens they computed instead of those they looked
    # up (llama.cpp: llamacpp:prompt_tokens_total beside ..._cached_total): queries are
    # then hits + misses. Used only when prefix_cache_queries is None.
    prefix_cache_misses: str | None = None
    # Speculative decoding counters (vLLM: vllm:spec_decode_num_drafts, _num_draft_tokens,
    # _num_accepted_tokens, and _num_accepted_tokens_per_pos with a ``position`` label); the
    # result reports acceptance rate, mean acceptance length and per-position acceptance
    # over the measured window (docs/speculative.md).
    spec_decode_drafts: str | None = None
    spec_decode_draft_tokens: str | None = None
    spec_decode_accepted_tokens: str | None = None
    spec_decode_accepted_per_position: str | None = None
    # For engines that publish only a mean acceptance length gauge (SGLang:
    # sglang:spec_accept_length): its mean over the window's readings.
    spec_decode_accept_length: str | None = None
    # A Prometheus histogram (seconds) of each request's TTFT as the engine's own front end
    # clocks it, from its arrival there to the first token's return to it (vLLM:
    # vllm:time_to_first_token_seconds). Its _sum and _count are scraped; the anatomy reads
    # the window mean beside the per-request figures to split the rest (docs/metrics.md).
    front_end_ttft_histogram: str | None = None
    extra: dict[str, str] = Field(default_factory=dict)
