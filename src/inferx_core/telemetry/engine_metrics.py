"""Scraping an engine's Prometheus /metrics while the load runs.

The engine plugin names its metric families (``inferx_engine_metrics``); this
sampler reads them with prometheus-client's text parser and reports them
under InferX's names: ``engine.kv_cache_usage`` (0..1), ``engine.requests_running``,
``engine.requests_waiting``, ``engine.preemptions_total``, the front-end TTFT
histogram's ``_sum`` and ``_count`` (read as counters), and the speculative
decoding counters (:mod:`inferx_core.telemetry.speculative`). Several label sets
(data-parallel engines) are summed for counts and maxed for cache usage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.sdk.sampler import SamplerUnavailable
from inferx_core.telemetry.speculative import (
    GAUGE_KEY,
    spec_decode_families,
    spec_decode_values,
)

_FIELDS = {
    "kv_cache_usage": "engine.kv_cache_usage",
    "requests_running": "engine.requests_running",
    "requests_waiting": "engine.requests_waiting",
    "preemptions": "engine.preemptions_total",
    "prefix_cache_queries": "engine.prefix_cache_queries_total",
    "prefix_cache_hits": "engine.prefix_cache_hits_total",
}

#: The front-end TTFT histogram's sum (seconds) and count, read as counters over a window.
FRONT_END_SUM = "engine.front_end_ttft_seconds_sum_total"
FRONT_END_COUNT = "engine.front_end_ttft_count_total"


def keep_families(text: str, families: set[str]) -> str:
    """Only the lines of the wanted families (plus their # HELP/# TYPE lines).

    Engines expose hundreds of families (histograms with many buckets); parsing
    all of them at every scrape costs milliseconds of the load generator's
    GIL. Cutting the text first keeps the library parser on a few lines.
    """
    wanted = tuple(families)
    kept = []
    for line in text.splitlines():
        name = line.split(" ", 3)[2] if line.startswith("# ") and line.count(" ") >= 2 else line
        if name.startswith(wanted):
            kept.append(line)
    return "\n".join(kept) + "\n"


def family_values(text: str, families: set[str] | None = None) -> dict[str, list[float]]:
    """Metric family name -> values of its plain samples (no _bucket/_created series)."""
    from prometheus_client.parser import text_string_to_metric_families

    if families:
        text = keep_families(text, families)
    out: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            # Counters expose name_total (and name_created); keep the total only.
            if sample.name.endswith(("_created", "_bucket")):
                continue
            out.setdefault(family.name, []).append(float(sample.value))
            if sample.name != family.name:
                out.setdefault(sample.name, []).append(float(sample.value))
    return out


def _found(families: dict[str, list[float]], family: str) -> list[float] | None:
    return families.get(family) or families.get(family.removesuffix("_total"))


def _queries_from_misses(
    families: dict[str, list[float]], names: EngineMetricsMap
) -> dict[str, float | None]:
    """Prefix-cache queries as hits + misses, for engines that count misses (llama.cpp)."""
    if names.prefix_cache_queries or not (names.prefix_cache_misses and names.prefix_cache_hits):
        return {}
    hits = _found(families, names.prefix_cache_hits)
    misses = _found(families, names.prefix_cache_misses)
    total = sum(hits) + sum(misses) if hits and misses else None
    return {_FIELDS["prefix_cache_queries"]: total}


def _histogram_values(
    families: dict[str, list[float]], names: EngineMetricsMap
) -> dict[str, float | None]:
    """The front-end TTFT histogram's _sum (seconds) and _count, as counters (``_total``:
    the window reads their increases). Label sets (data-parallel engines) are summed: sums
    and counts of observations add."""
    family = names.front_end_ttft_histogram
    if not family:
        return {}
    out: dict[str, float | None] = {}
    for suffix, key in (("_sum", FRONT_END_SUM), ("_count", FRONT_END_COUNT)):
        found = families.get(family + suffix)
        out[key] = sum(found) if found else None
    return out


def map_metrics(text: str, names: EngineMetricsMap) -> dict[str, float | None]:
    """InferX metric -> value for one scrape; None when the family is absent."""
    wanted = {getattr(names, f) for f in _FIELDS if getattr(names, f)} | set(names.extra.values())
    if names.front_end_ttft_histogram:
        wanted.add(names.front_end_ttft_histogram)
    if names.prefix_cache_misses:
        wanted.add(names.prefix_cache_misses)
    families = family_values(text, {w.removesuffix("_total") for w in wanted})
    values: dict[str, float | None] = {}
    for field_name, key in _FIELDS.items():
        family = getattr(names, field_name)
        if family is None:
            continue
        found = _found(families, family)
        if not found:
            values[key] = None
        elif field_name == "kv_cache_usage":
            values[key] = max(found) * names.kv_cache_usage_scale
        else:
            values[key] = sum(found)
    values.update(_queries_from_misses(families, names))
    for extra_name, family in names.extra.items():
        found = _found(families, family)
        values[f"engine.{extra_name}"] = sum(found) if found else None
    values.update(_histogram_values(families, names))
    spec = spec_decode_families(names)
    if spec:  # labelled per-position counters: read apart (family_values drops labels)
        values.update(spec_decode_values(keep_families(text, spec), names))
    return values


def combine_engines(readings: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """One reading of several engines (a deployment's engine processes), combined as
    data-parallel engines are in :func:`map_metrics`: cache usage the largest, the
    speculative acceptance-length gauge the mean, every other value the sum; None where
    any engine lacks the value (a partial sum would pass for the whole)."""
    out: dict[str, float | None] = {}
    for key in dict.fromkeys(k for reading in readings for k in reading):
        found = [reading.get(key) for reading in readings]
        values = [v for v in found if v is not None]
        if len(values) < len(found):
            out[key] = None
        elif key == _FIELDS["kv_cache_usage"]:
            out[key] = max(values)
        elif key == "engine." + GAUGE_KEY:
            out[key] = sum(values) / len(values)
        else:
            out[key] = sum(values)
    return out


class EngineMetricsSampler:
    """Scrapes ``base_url + names.path`` at ``interval_s`` (control plane: httpx).

    ``base_url`` may be several engines' URLs (every engine process of a deployment,
    never its router): each is scraped at every reading and the readings combined
    (:func:`combine_engines`)."""

    name = "engine_metrics"

    def __init__(
        self, base_url: str | Sequence[str], names: EngineMetricsMap, interval_s: float = 1.0
    ) -> None:
        bases = [base_url] if isinstance(base_url, str) else list(base_url)
        self.urls = [base.rstrip("/") + names.path for base in bases]
        self.url = self.urls[0]
        self.names = names
        self.interval_s = interval_s
        self._client: Any = None

    def start(self) -> None:
        import httpx

        self._client = httpx.Client(timeout=5.0)
        for url in self.urls:
            try:
                reply = self._client.get(url)
            except httpx.HTTPError as exc:
                self.stop()
                raise SamplerUnavailable(f"engine metrics unreachable at {url}: {exc}") from exc
            if reply.status_code != 200:
                self.stop()
                raise SamplerUnavailable(
                    f"engine metrics at {url} answered HTTP {reply.status_code}"
                )

    def read(self) -> Mapping[str, float | None]:
        readings = []
        for url in self.urls:
            reply = self._client.get(url)
            reply.raise_for_status()
            readings.append(map_metrics(reply.text, self.names))
        return readings[0] if len(readings) == 1 else combine_engines(readings)

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
