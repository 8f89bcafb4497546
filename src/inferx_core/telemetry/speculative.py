"""Speculative decoding acceptance from an engine's /metrics, over exactly the measured window.

Each scrape reads the counters the engine plugin names in its
:class:`~inferx_core.sdk.probes.EngineMetricsMap` (vLLM's
``vllm:spec_decode_num_drafts``, ``..._num_draft_tokens``,
``..._num_accepted_tokens`` and ``..._num_accepted_tokens_per_pos{position}``;
several engines' series are summed) under ``engine.spec_decode_*_total`` keys;
the window summary takes each counter's increase over the window (read
between the scrapes around each edge, as every engine counter is) and
derives, vLLM's own definitions (``vllm/v1/spec_decode/metrics.py``):

- acceptance rate = accepted tokens / draft tokens;
- mean acceptance length = 1 + accepted tokens / drafts (tokens per
  verification step, the bonus token included);
- acceptance at draft position i = accepted at i / drafts.

An engine that publishes only a mean acceptance length gauge (SGLang's
``sglang:spec_accept_length``) gives the mean of its readings in the window
as the acceptance length (its source says so); nothing else is derived from it.

Counters are read as Prometheus reads them (a drop is a reset,
:func:`inferx_core.telemetry.window.counter_increase`); a series the exposition
repeats with the same labels counts once (two DP engines' series, told apart by
their labels, are summed); every figure is then held to its bounds
(:mod:`inferx_core.telemetry.spec_bounds`): an impossible one is None, named with
its reason in ``out_of_bounds``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.telemetry.spec_bounds import bound_spec_window

__all__ = [
    "COUNTERS",
    "GAUGE_KEY",
    "spec_decode_families",
    "spec_decode_values",
    "spec_decode_window",
]

#: EngineMetricsMap field -> window key (``engine.`` + it is the scrape key).
COUNTERS = {
    "spec_decode_drafts": "spec_decode_drafts_total",
    "spec_decode_draft_tokens": "spec_decode_draft_tokens_total",
    "spec_decode_accepted_tokens": "spec_decode_accepted_tokens_total",
}
GAUGE_KEY = "spec_decode_accept_length"
_POSITION = "spec_decode_accepted_pos{}_total"
_PREFIX = "engine."


def spec_decode_families(names: EngineMetricsMap) -> set[str]:
    """The /metrics families (``_total`` cut) the speculative readings need; empty: none."""
    fields = (*COUNTERS, "spec_decode_accepted_per_position", "spec_decode_accept_length")
    return {n.removesuffix("_total") for f in fields if (n := getattr(names, f))}


def _families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Family -> (labels, value) of its plain samples."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, dict[tuple[tuple[str, str], ...], tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith(("_created", "_bucket")):
                continue
            # the same series twice (same labels) is one series, never two to sum
            series = tuple(sorted(sample.labels.items()))
            out.setdefault(family.name, {})[series] = (dict(sample.labels), float(sample.value))
    return {name: list(series.values()) for name, series in out.items()}


def _lookup(
    families: dict[str, list[tuple[dict[str, str], float]]], name: str
) -> list[tuple[dict[str, str], float]]:
    """A family's samples whether the engine or the parser wrote it with ``_total`` or not."""
    base = name.removesuffix("_total")
    return families.get(base) or families.get(base + "_total") or []


def spec_decode_values(text: str, names: EngineMetricsMap) -> dict[str, float | None]:
    """This scrape's speculative-decoding readings under ``engine.*`` keys (none named: {}).

    ``text`` may be cut to :func:`spec_decode_families` first (the scraper does)."""
    fields = {f: getattr(names, f) for f in (*COUNTERS, "spec_decode_accepted_per_position")}
    gauge = names.spec_decode_accept_length
    if not spec_decode_families(names):
        return {}
    families = _families(text)
    values: dict[str, float | None] = {}
    for field_name, key in COUNTERS.items():
        family = fields[field_name]
        if family:
            found = _lookup(families, family)
            values[_PREFIX + key] = sum(v for _, v in found) if found else None
    per_pos = fields["spec_decode_accepted_per_position"]
    if per_pos:
        by_position: dict[int, float] = {}
        for labels, value in _lookup(families, per_pos):
            pos = labels.get("position")
            if pos is not None and pos.isdigit():
                by_position[int(pos)] = by_position.get(int(pos), 0.0) + value
        for k, value in sorted(by_position.items()):
            values[_PREFIX + _POSITION.format(k)] = value
    if gauge:
        found = _lookup(families, gauge)
        # several DP ranks: their mean (each rank's mean length over its own steps)
        values[_PREFIX + GAUGE_KEY] = sum(v for _, v in found) / len(found) if found else None
    return values


def _increase(metrics: Mapping[str, Mapping[str, Any]], key: str) -> float | None:
    value = (metrics.get(key) or {}).get("increase")
    return None if value is None else float(value)


def _positions(metrics: Mapping[str, Mapping[str, Any]], drafts: float) -> list[float | None]:
    out: list[float | None] = []
    pos = 0
    while _POSITION.format(pos) in metrics:
        accepted = _increase(metrics, _POSITION.format(pos))
        out.append(None if accepted is None or drafts <= 0 else accepted / drafts)
        pos += 1
    return out


def _from_gauge(metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    gauge = metrics.get(GAUGE_KEY) or {}
    if not gauge.get("samples"):
        return None
    window: dict[str, Any] = {
        "source": "accept_length_gauge",
        "acceptance_rate": None,
        "mean_acceptance_length": gauge.get("mean"),
        "acceptance_per_position": [],
        "drafts": None,
        "draft_tokens": None,
        "accepted_tokens": None,
        "readings": {"min": gauge.get("min"), "max": gauge.get("max")},
        "why": "the engine publishes only a mean acceptance length: this is the mean of its "
        f"{gauge['samples']} readings in the window (no rate, no per-position figures)",
    }
    if gauge.get("mean") is None and gauge.get("why"):
        window["out_of_bounds"] = {"mean_acceptance_length": gauge["why"]}
    return bound_spec_window(window)


def spec_decode_window(metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """Acceptance over the window from the counters' increases (``summarize_prefix``'s
    ``engine.`` stats), each figure within its bounds; None when the engine reported no
    speculative decoding at all."""
    drafts = _increase(metrics, COUNTERS["spec_decode_drafts"])
    draft_tokens = _increase(metrics, COUNTERS["spec_decode_draft_tokens"])
    accepted = _increase(metrics, COUNTERS["spec_decode_accepted_tokens"])
    if drafts is None or accepted is None:
        return _from_gauge(metrics)
    if drafts == 0 and accepted == 0 and not draft_tokens:
        return _idle()
    why = None if drafts > 0 else "no drafts in the window: speculative decoding did not run"
    return bound_spec_window(
        {
            "source": "counters",
            "acceptance_rate": accepted / draft_tokens if draft_tokens else None,
            "mean_acceptance_length": 1.0 + accepted / drafts if drafts > 0 else None,
            "acceptance_per_position": _positions(metrics, drafts),
            "drafts": drafts,
            "draft_tokens": draft_tokens,
            "accepted_tokens": accepted,
            "why": why,
        }
    )


def _idle() -> dict[str, Any]:
    """Counters that did not move: an engine that publishes them whether or not it
    speculates (llama-server, vLLM) did no speculative decoding in the window. Its counts
    are no figures of this point (null with the reason), never a 0 read as a measurement."""
    return bound_spec_window(
        {
            "source": "counters",
            "acceptance_rate": None,
            "mean_acceptance_length": None,
            "acceptance_per_position": [],
            "drafts": None,
            "draft_tokens": None,
            "accepted_tokens": None,
            "why": "no drafts in the window (the engine's counters did not move): speculative "
            "decoding did not run, so no speculative figure applies",
        }
    )
