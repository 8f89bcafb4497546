"""Limits of the validity checks (``validity:`` in bench and run configs; docs/metrics.md)."""

from __future__ import annotations

from pydantic import Field

from inferx_core.config.base import StrictModel


class ValidityLimits(StrictModel):
    """When a point's numbers stop being trustworthy. Each limit is one check's."""

    max_error_rate: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Failed / sent requests (InferenceX fails a run at 5%)",
    )
    max_zero_gap_fraction: float = Field(
        default=0.25,
        ge=0,
        le=1,
        description="Chunk gaps of exactly 0: chunks read in one go, ITL describes delivery",
    )
    max_whole_reply_fraction: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Multi-token replies whose every chunk arrived at once (TTFT = E2E)",
    )
    max_loop_lag_p95_ms: float = Field(
        default=20.0,
        gt=0,
        description="p95 event-loop lag of the client (one hiccup is not starvation)",
    )
    max_receive_lag_p99_ms: float = Field(
        default=10.0,
        gt=0,
        description="p99 of client stamp minus server write stamp, where the server stamps",
    )
    max_client_cpu_fraction: float = Field(
        default=0.9, gt=0, le=1, description="Client process CPU time / wall time (one loop)"
    )
    max_client_cores_busy: float = Field(
        default=0.95, gt=0, le=1, description="Busy fraction of the cores the client may run on"
    )
    min_rate_ratio: float = Field(
        default=0.9, gt=0, le=1, description="Open loop: achieved / target arrival rate"
    )
    max_dispatch_lateness_p99_ms: float = Field(
        default=25.0, gt=0, description="Open loop: p99 of send time minus scheduled time"
    )
    max_tokens_per_chunk: float = Field(
        default=64.0,
        gt=0,
        description="Usage cross-check: reported completion tokens per streamed chunk",
    )
