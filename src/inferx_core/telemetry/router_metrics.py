"""Scraping a deployment's router: its own Prometheus exporter, over the measured window.

The router is sglang-router (``sglang_router.launch_router``, a Rust binary; both the
vLLM and the SGLang plugins start it in front of their engines), whose exporter
listens on ``--prometheus-host/--prometheus-port`` (``RoleContext.metrics_port``).
Its families are named ``smg_*``; the ones read here, as sglang-router 0.3.2 publishes
them (tests/telemetry/data/sglang_router_metrics.txt is a real scrape):

- ``smg_router_requests_total``: requests the router took (every label set summed);
- ``smg_worker_cb_outcomes_total{worker,outcome}``: each worker's successes and
  failures (its circuit breaker's count of attempts: how the load was spread);
- ``smg_router_upstream_responses_total{status_code}``: workers' answers, the ones
  not 2xx counted as ``upstream_errors_total``;
- ``smg_worker_errors_total``, ``smg_worker_retries_total``;
- ``smg_router_request_duration_seconds`` (histogram): its window mean, from the
  increases of ``_sum`` and ``_count``;
- ``smg_http_connections_active`` (gauge).

The mapping lives here, not behind a plugin hook, because the router is one binary
whichever engine plugin starts it; a router with other names (``vllm-router`` for
vLLM's PD) reports an empty section until it is mapped from a real scrape of it.
Nothing is invented: a family the router does not publish is absent from the section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core.sdk.sampler import SamplerUnavailable
from inferx_core.telemetry.window import Row, counter_increase, gauge_stats, window_values

PREFIX = "router."
_UP = PREFIX + "up"  # in every reading: the exporter answered (see :func:`summarize_router`)
_WORKER = PREFIX + "worker|"  # router.worker|<url>|<outcome>
_DURATION = "smg_router_request_duration_seconds"
_COUNTERS = {  # family -> result name (every label set summed)
    "smg_router_requests_total": "requests_total",
    "smg_worker_errors_total": "worker_errors_total",
    "smg_worker_retries_total": "retries_total",
}
_GAUGES = {"smg_http_connections_active": "connections_active"}
_OUTCOMES = {"success": "successes_total", "failure": "failures_total"}


def map_router_metrics(text: str) -> dict[str, float]:
    """Flat ``router.*`` readings of one scrape; families the router lacks are left out."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {_UP: 1.0}

    def add(key: str, value: float) -> None:
        out[PREFIX + key] = out.get(PREFIX + key, 0.0) + value

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name, labels, value = sample.name, sample.labels, float(sample.value)
            if name in _COUNTERS:
                add(_COUNTERS[name], value)
            elif name in _GAUGES:
                add(_GAUGES[name], value)
            elif name == "smg_router_upstream_responses_total":
                add("upstream_responses_total", value)
                if not labels.get("status_code", "").startswith("2"):
                    add("upstream_errors_total", value)
            elif name == "smg_worker_cb_outcomes_total" and "worker" in labels:
                outcome = labels.get("outcome", "")
                add(f"worker|{labels['worker']}|{outcome}", value)
            elif name in (f"{_DURATION}_sum", f"{_DURATION}_count"):
                add("request_duration_seconds" + name.removeprefix(_DURATION), value)
    return out


def summarize_router(rows: list[Row], start_ns: int, end_ns: int) -> dict[str, Any]:
    """``telemetry.router_metrics``: the router's counters' increases over the window
    (``{increase, samples}``, as ``engine_metrics`` has them), its gauges' statistics,
    its mean request duration, and ``workers``: each worker's successes and failures.

    A labelled counter appears in the exporter's text at its first increment (a worker's
    outcomes at its first request), so in a reading of the router (``router.up``) a counter
    seen in other readings and absent from this one counted 0: a worker first served
    mid-window has all its requests in the window's increase."""
    rows = [(t_ns, values) for t_ns, values in rows if values.get(_UP) is not None]
    keys = sorted({k for _, values in rows for k in values if k.startswith(PREFIX)} - {_UP})
    if not keys:
        return {}
    counters = [k for k in keys if k.removeprefix(PREFIX) not in _GAUGES.values()]
    rows = [(t_ns, {**dict.fromkeys(counters, 0.0), **values}) for t_ns, values in rows]
    out: dict[str, Any] = {}
    workers: dict[str, dict[str, Any]] = {}
    for key in keys:
        increase = counter_increase(rows, key, start_ns, end_ns)
        if key.startswith(_WORKER):
            url, outcome = key.removeprefix(_WORKER).rsplit("|", 1)
            workers.setdefault(url, {})[_OUTCOMES.get(outcome, f"{outcome}_total")] = increase
            continue
        name = key.removeprefix(PREFIX)
        if name in _GAUGES.values():
            out[name] = gauge_stats(rows, key, start_ns, end_ns)
        elif not name.startswith("request_duration_seconds"):
            samples = len(window_values(rows, key, start_ns, end_ns))
            out[name] = {"increase": increase, "samples": samples}
    duration = _mean_duration(rows, start_ns, end_ns)
    if duration is not None:
        out["request_duration_s"] = duration
    if workers:
        out["workers"] = workers
    return out


def _mean_duration(rows: list[Row], start_ns: int, end_ns: int) -> dict[str, Any] | None:
    """The router's own request-duration histogram over the window: sum / count increases."""
    key = PREFIX + "request_duration_seconds"
    if not any(key + "_count" in values for _, values in rows):
        return None
    total = counter_increase(rows, key + "_sum", start_ns, end_ns)
    count = counter_increase(rows, key + "_count", start_ns, end_ns)
    mean = total / count if total is not None and count else None
    return {"mean": mean, "requests": count}


class RouterMetricsSampler:
    """Scrapes the router's exporter (``http://host:metrics_port/metrics``) at ``interval_s``."""

    name = "router_metrics"

    def __init__(self, url: str, interval_s: float = 1.0) -> None:
        self.url = url
        self.interval_s = interval_s
        self._client: Any = None

    def start(self) -> None:
        import httpx

        self._client = httpx.Client(timeout=5.0)
        try:
            reply = self._client.get(self.url)
        except httpx.HTTPError as exc:
            self.stop()
            raise SamplerUnavailable(f"router metrics unreachable at {self.url}: {exc}") from exc
        if reply.status_code != 200:
            self.stop()
            raise SamplerUnavailable(
                f"router metrics at {self.url} answered HTTP {reply.status_code}"
            )

    def read(self) -> Mapping[str, float | None]:
        reply = self._client.get(self.url)
        reply.raise_for_status()
        return map_router_metrics(reply.text)

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
