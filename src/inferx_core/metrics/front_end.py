"""The anatomy's rest split at the window level with the engine front end's own clock.

No engine here clocks its front end per request, but vLLM clocks it in
aggregate: its /metrics histogram ``vllm:time_to_first_token_seconds`` is
observed in the API server, from the request's arrival there (rendering:
chat template and tokenizing come after it) to the first token's return
there, on that one process's wall clock (vLLM 0.32 v1/metrics/stats.py
``IterationStats.update_from_output``; renderers/base.py ``render_chat``).
Over a point's window its sum increase / count increase is the mean of that
TTFT (``window_ttft_mean_ms``), and beside the requests' own means::

    server front end = histogram TTFT mean - (queue + server TTFT) mean
    client + wire    = client TTFT mean    - histogram TTFT mean

(the front end's work before the engine core's clock starts and the hand-offs
both ways; then the client, the wire both ways, and the API server's HTTP
handling before arrival and its detokenizing and SSE write after). Means of
durations: no clock sync is needed.

Bounds. The counters are read at the window's edges between two scrapes
(:func:`inferx_core.telemetry.window.counter_increase`), so the count increase
may differ from the first tokens inside the window by those within one
scrape interval of an edge (the interval taken as the window over the
readings inside it, less one): a count further off than that (other
traffic, a restart) is no reading of the point's requests, and the split is
null with the reason. A part below ``-(FRONT_END_TOLERANCE_MS +
FRONT_END_TOLERANCE_SHARE x client TTFT mean)`` (the window mean holds a few
edge requests besides the point's), or not finite, is null with the reason.
An engine whose plugin declares no histogram (or a window without it) gets a
null split saying so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from inferx_core.load.records.request import RequestRecord

__all__ = [
    "FRONT_END_TOLERANCE_MS",
    "FRONT_END_TOLERANCE_SHARE",
    "FrontEndSplit",
    "front_end_split",
]

#: A part may be below zero by this much plus the share of the client TTFT mean below.
FRONT_END_TOLERANCE_MS = 1.0
FRONT_END_TOLERANCE_SHARE = 0.05
#: The window's counters (summarize_prefix names, without ``engine.``).
SUM_KEY = "front_end_ttft_seconds_sum_total"
COUNT_KEY = "front_end_ttft_count_total"
NO_HISTOGRAM = (
    "no front-end TTFT histogram in the engine's /metrics window (its plugin declares "
    "none in inferx_engine_metrics, or the histogram was not scraped): the rest is not split"
)


class FrontEndSplit(BaseModel):
    """The window-level split of the rest (ms); each figure null with its reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_ttft_mean_ms: float | None = None  # the histogram's mean over the window
    histogram_count: float | None = None  # its count increase over the window
    first_tokens_in_window: int | None = None  # requests whose first chunk came inside it
    count_tolerance: int | None = None  # first tokens within one scrape of an edge, + 1
    clocked_mean_ms: float | None = None  # (queue + server TTFT) mean of the anatomy's requests
    client_ttft_mean_ms: float | None = None
    server_front_end_ms: float | None = None
    client_wire_ms: float | None = None
    tolerance_ms: float | None = None
    null_reasons: dict[str, str] = Field(default_factory=dict)


def _increase(window: Mapping[str, Any], key: str) -> tuple[float | None, int]:
    entry = window.get(key) or {}
    value = entry.get("increase")
    return (float(value) if value is not None else None), int(entry.get("samples") or 0)


def _first_ns(records: Sequence[RequestRecord]) -> list[int]:
    return [r.chunk_ns[0] for r in records if r.chunk_ns]


def _count_tolerance(firsts: list[int], start_ns: int, end_ns: int, samples: int) -> int | None:
    """First tokens within one scrape interval of either edge, + 1; None with fewer than
    two readings inside the window (no interval to bound the edges by)."""
    if samples < 2:
        return None
    interval = (end_ns - start_ns) / (samples - 1)  # readings inside span <= the window
    near = [t for t in firsts if min(abs(t - start_ns), abs(t - end_ns)) <= interval]
    return len(near) + 1


def _window_mean(
    window: Mapping[str, Any], firsts: list[int], start_ns: int, end_ns: int
) -> tuple[dict[str, Any], str | None]:
    """The histogram's window figures, and why its mean is not used (None: it is)."""
    total, _ = _increase(window, SUM_KEY)
    count, samples = _increase(window, COUNT_KEY)
    inside = sum(1 for t in firsts if start_ns <= t <= end_ns)
    tol = _count_tolerance(firsts, start_ns, end_ns, samples)
    out: dict[str, Any] = {
        "histogram_count": count,
        "first_tokens_in_window": inside,
        "count_tolerance": tol,
    }
    if total is None or count is None:
        return out, "the histogram's _sum/_count were not read on both sides of the window"
    if tol is None:
        return out, (
            f"{samples} /metrics reading(s) inside the window: fewer than two, so its "
            "edges cannot be bounded"
        )
    if abs(count - inside) > tol:
        return out, (
            f"the histogram counted {count:g} first tokens in the window, the point's "
            f"requests {inside} (tolerance {tol} from the readings around its edges): "
            "not a reading of the point's requests"
        )
    if count <= 0:
        return out, "no first token counted in the window"
    mean = 1000.0 * total / count
    if not math.isfinite(mean) or mean < 0:
        return out, f"the histogram's window mean {mean:g} ms is not a duration"
    return {**out, "window_ttft_mean_ms": mean}, None


def _part(name: str, value: float, tol: float, reasons: dict[str, str]) -> float | None:
    if not math.isfinite(value):
        reasons[name] = "not a finite number"
        return None
    if value < -tol:
        reasons[name] = (
            f"{value:.2f} ms: below zero beyond the tolerance ({tol:.2f} ms); the "
            "histogram's window mean and the requests' own figures disagree"
        )
        return None
    return value


def _unusable(
    window: Mapping[str, Any] | None, window_ns: tuple[int, int] | None, client: Sequence[float]
) -> str | None:
    """Why there is no split to read at all (None: read it)."""
    if window is None:
        return "no engine /metrics window for the point (its scraping was off or failed)"
    if COUNT_KEY not in window or SUM_KEY not in window:
        return NO_HISTOGRAM
    if window_ns is None:
        return "no measured window"
    return None if client else "no request read"


def front_end_split(
    client: Sequence[float],
    clocked: Sequence[float],
    records: Sequence[RequestRecord],
    window: Mapping[str, Any] | None,
    window_ns: tuple[int, int] | None,
) -> FrontEndSplit:
    """The split for the anatomy's requests: ``client`` their client TTFTs, ``clocked``
    their queue + server TTFT (ms); ``records`` every record of the point (warm-up
    included: its first tokens count at the edges); ``window`` the point's engine
    /metrics window (telemetry ``engine_metrics``); ``window_ns`` its [start, end]."""
    unusable = _unusable(window, window_ns, client)
    if unusable is not None or window is None or window_ns is None:
        return FrontEndSplit(null_reasons={"window_ttft_mean_ms": unusable or NO_HISTOGRAM})
    start_ns, end_ns = window_ns
    figures, why = _window_mean(window, _first_ns(records), start_ns, end_ns)
    client_mean = sum(client) / len(client)
    clocked_mean = sum(clocked) / len(clocked)
    base = {**figures, "client_ttft_mean_ms": client_mean, "clocked_mean_ms": clocked_mean}
    if why is not None:
        names = ("window_ttft_mean_ms", "server_front_end_ms", "client_wire_ms")
        return FrontEndSplit(**base, null_reasons=dict.fromkeys(names, why))
    mean = figures["window_ttft_mean_ms"]
    tol = FRONT_END_TOLERANCE_MS + FRONT_END_TOLERANCE_SHARE * client_mean
    reasons: dict[str, str] = {}
    return FrontEndSplit(
        **base,
        server_front_end_ms=_part("server_front_end_ms", mean - clocked_mean, tol, reasons),
        client_wire_ms=_part("client_wire_ms", client_mean - mean, tol, reasons),
        tolerance_ms=tol,
        null_reasons=reasons,
    )
