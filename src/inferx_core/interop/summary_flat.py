"""A tool's summary figures as the flat dict :func:`~inferx_core.metrics.summarize.summarize`
would have made (every count and throughput field present, None where the file is silent)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inferx_core.metrics.model import RequestCounts, ThroughputStats
from inferx_core.metrics.stats import percentile_word

__all__ = ["distribution_keys", "summary_flat"]


def summary_flat(figures: Mapping[str, Any], percentiles: Sequence[float]) -> dict[str, Any]:
    """``figures`` (flat names) over a skeleton with every required field."""
    flat: dict[str, Any] = dict.fromkeys(RequestCounts.model_fields)
    flat |= dict.fromkeys(ThroughputStats.model_fields)
    flat |= {
        "output_token_sources": {},
        "failed_by_kind": {},
        "error_samples": [],
        "percentiles": list(percentiles),
        "itl_per_token_requests": 0,
        "intvty_requests": 0,
    }
    flat.update({k: v for k, v in figures.items() if v is not None})
    return flat


def distribution_keys(
    metric: str, stats: Mapping[str, Any] | None, *, scale: float, names: Mapping[str, str]
) -> dict[str, float]:
    """A tool's statistics block as ``{stat}_{metric}_ms`` keys; ``names`` maps InferX's
    stat (``mean``, ``median``, ``p90``...) to the tool's key; ``scale`` converts to ms."""
    out: dict[str, float] = {}
    for mine, theirs in names.items():
        value = (stats or {}).get(theirs)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"{mine}_{metric}_ms"] = float(value) * scale
    return out


def percentile_names(percentiles: Sequence[float], template: str) -> dict[str, str]:
    """InferX's ``p<P>`` names -> the tool's (``template`` formats the number: ``p{}``)."""
    return {f"p{percentile_word(p)}": template.format(percentile_word(p)) for p in percentiles}
