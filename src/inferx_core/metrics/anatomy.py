"""The anatomy of a point's TTFT: the client's clock beside the engine's own.

Per successful request whose reply carried the engine's figures (hook
``inferx_engine_server_timing``, read into ``RequestRecord.server_figures``)::

    client TTFT = server queue + server TTFT + rest

``rest`` is everything the engine's clock does not see: the client's own
overhead, the wire both ways, and the server's front end (HTTP parsing,
tokenization, detokenizing and writing the first chunk). The engine plugin
names its un-clocked front end (``ServerTiming.unclocked``), and the anatomy
says it beside the rest (``rest_holds``): no engine here clocks its front end
per request, so the rest cannot be split further from the replies
(docs/metrics.md section 12 gives the evidence per engine); where the
engine's /metrics clocks its front end in aggregate (vLLM's TTFT histogram),
``front_end`` splits the rest over the point's window
(:mod:`inferx_core.metrics.front_end`). The server's
figures are durations on one process's clock, the client's on another's:
differences of durations need no clock sync, only clocks that tick at the
same rate.

Bounds: a part is a non-negative number (the stream decoder already nulled
any other); a request whose server parts exceed its client TTFT by more than
:data:`REST_TOLERANCE_MS` is no consistent reading and is left out, counted
in ``inconsistent`` with the reason. An engine that reports no queue time
(llama-server) leaves the queue inside ``rest`` (``rest_includes_queue``).

The check (:func:`anatomy_check`, severity ``marks``): the point is marked
when the rest is large against the server's TTFT at a percentile:
``rest_p50 > 0.5 x server_ttft_p50`` or ``rest_p99 > 1.0 x server_ttft_p99``
(and the rest is above :data:`MIN_FLAGGED_REST_MS`): the client and the
front end, not the engine, made those milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.front_end import FrontEndSplit, front_end_split
from inferx_core.metrics.model import Distribution
from inferx_core.metrics.requests import judged_request
from inferx_core.metrics.spec_requests import SpecPerRequest, spec_per_request
from inferx_core.metrics.stats import describe, percentile_word
from inferx_core.metrics.validity import ValidityCheck

__all__ = [
    "LAYERS",
    "MIN_FLAGGED_REST_MS",
    "REST_LIMITS",
    "REST_TOLERANCE_MS",
    "Anatomy",
    "anatomy",
    "anatomy_check",
]

#: A request's server parts may exceed its client TTFT by this much (rounding of
#: the server's milliseconds, the two clocks' reading granularity) and still count.
REST_TOLERANCE_MS = 1.0
#: Percentile -> the largest rest / server TTFT that is not marked.
REST_LIMITS: dict[float, float] = {50.0: 0.5, 99.0: 1.0}
#: A rest below this is never marked, however quick the engine's prefill.
MIN_FLAGGED_REST_MS = 1.0
#: The layers :mod:`inferx_core.analysis.compare` names, and their median figures.
LAYERS: dict[str, str] = {
    "queue": "server_queue_ms",
    "prefill": "server_ttft_ms",
    "decode": "server_tpot_ms",
    "client": "rest_ms",
}
_PERCENTILES = (50.0, 90.0, 99.0)
#: What the rest holds whatever the engine: the client and the wire both ways.
REST_CLIENT = "the client's own overhead and the wire both ways"
#: Said of the server's side of the rest when the engine plugin does not name it.
UNNAMED_FRONT_END = "the server's front end, which the engine's clock does not cover"


class Anatomy(BaseModel):
    """A point's TTFT taken apart (ms); distributions over the requests read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: str | None = None  # the description's name (vllm, llama.cpp, ...)
    requests: int = 0  # successful requests whose parts were read
    without_server_figures: int = 0  # successful, but no server TTFT in the reply
    inconsistent: int = 0  # server parts above the client TTFT (left out)
    rest_includes_queue: bool = False  # the engine reports no queue time
    # What the rest holds: the client, the wire and the engine's un-clocked front end.
    rest_holds: str = f"{REST_CLIENT}; {UNNAMED_FRONT_END}"
    client_ttft_ms: Distribution = Field(default_factory=Distribution)
    server_queue_ms: Distribution | None = None
    server_ttft_ms: Distribution = Field(default_factory=Distribution)
    rest_ms: Distribution = Field(default_factory=Distribution)
    # The server's decode time per output token after the first (decode_ms / (n - 1)).
    server_tpot_ms: Distribution | None = None
    # Median over requests of each part's share of the request's client TTFT (of the
    # parts' sum where the server's parts exceed it within the tolerance): in [0, 1].
    queue_share: float | None = None
    rest_share: float | None = None
    # rest_pX / server_ttft_pX for the percentiles in REST_LIMITS.
    rest_to_server_ttft: dict[str, float | None] = Field(default_factory=dict)
    null_reasons: dict[str, str] = Field(default_factory=dict)
    # Speculative decoding per request, beside the /metrics window (metrics/spec_requests.py).
    speculative: SpecPerRequest | None = None
    # The rest split at the window level by the engine front end's own TTFT histogram
    # (metrics/front_end.py): server front end and client + wire, or null with the reason.
    front_end: FrontEndSplit | None = None

    def median(self, figure: str) -> float | None:
        """The median of one of the distributions (``LAYERS`` values), or None."""
        dist = getattr(self, figure, None)
        return dist.median if isinstance(dist, Distribution) else None


@dataclass(slots=True)
class _Parts:
    client: list[float]
    queue: list[float]
    server: list[float]
    rest: list[float]
    tpot: list[float]
    queue_or_zero: list[float]  # one per request read (0 where the engine gave none)
    without: int = 0
    inconsistent: int = 0
    last_problem: str | None = None


def _read(rec: RequestRecord, parts: _Parts) -> None:
    """One successful request's parts, or why it has none."""
    figures = rec.server_figures or {}
    server = figures.get("ttft_ms")
    if server is None:
        parts.without += 1
        parts.last_problem = (rec.server_problems or {}).get("ttft_ms", "no server figures")
        return
    queue = figures.get("queue_ms")
    client = (rec.chunk_ns[0] - rec.send_ns) / 1e6
    rest = client - (queue or 0.0) - server
    if rest < -REST_TOLERANCE_MS:
        parts.inconsistent += 1
        return
    parts.client.append(client)
    parts.server.append(float(server))
    parts.rest.append(rest)
    if queue is not None:
        parts.queue.append(float(queue))
    parts.queue_or_zero.append(float(queue or 0.0))
    decode, n = figures.get("decode_ms"), rec.usage_output_tokens
    if decode is not None and type(n) is int and n > 1:
        parts.tpot.append(float(decode) / (n - 1))


def _dist(values: list[float]) -> Distribution:
    return Distribution.from_stats(describe(values, _PERCENTILES))


def _median_share(part: list[float], total: list[float]) -> float | None:
    """Median of part / total, each share in [0, 1] (a rest below zero, within the
    tolerance, is a share of 0)."""
    shares = [max(p, 0.0) / t for p, t in zip(part, total, strict=True) if t > 0]
    return describe(shares, ())["median"] if shares else None


def _totals(parts: _Parts) -> list[float]:
    """Per request, the sum of its non-negative parts: the client TTFT, or the server's
    parts where they exceed it within the tolerance (so every share is in [0, 1])."""
    triples = zip(parts.queue_or_zero, parts.server, parts.rest, strict=True)
    return [q + s + max(r, 0.0) for q, s, r in triples]


def _ratios(rest: Distribution, server: Distribution) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for p in REST_LIMITS:
        key = f"p{percentile_word(p)}"
        r, s = rest.percentiles.get(key), server.percentiles.get(key)
        out[key] = r / s if r is not None and s else None
    return out


def _rest_holds(unclocked: str | None, no_queue: bool) -> str:
    holds = f"{REST_CLIENT}; {unclocked or UNNAMED_FRONT_END}"
    return holds + ("; the wait for a free slot (no queue time reported)" if no_queue else "")


def _front_end(
    parts: _Parts,
    records: Sequence[RequestRecord],
    window: Mapping[str, Any] | None,
    window_ns: tuple[int, int] | None,
) -> FrontEndSplit:
    clocked = [q + s for q, s in zip(parts.queue_or_zero, parts.server, strict=True)]
    return front_end_split(parts.client, clocked, records, window, window_ns)


def anatomy(
    records: Sequence[RequestRecord],
    engine: str | None,
    spec_window: Mapping[str, Any] | None = None,
    unclocked: str | None = None,
    engine_window: Mapping[str, Any] | None = None,
    window_ns: tuple[int, int] | None = None,
    *,
    ignore_eos: bool = False,
) -> Anatomy | None:
    """The anatomy of the measured, successful ``records``; None when no request
    carried the engine's figures (nothing was asked, or the engine reports none).
    Successful as the point judges it (``ignore_eos``: the workload's): a reply cut
    short of what was asked is failed, its engine figures left out.
    ``spec_window``: the point's ``spec_decode`` figures from the engine's /metrics;
    ``unclocked``: what the engine's clock leaves out, as its plugin names it;
    ``engine_window``: the point's engine /metrics window and ``window_ns`` its
    [start, end], for the front-end split (:mod:`inferx_core.metrics.front_end`)."""
    ok = [r for r in records if not r.warmup and judged_request(r, ignore_eos).ok]
    if not any(r.server_figures for r in ok):
        return None
    parts = _Parts([], [], [], [], [], [])
    for rec in ok:
        _read(rec, parts)
    reasons: dict[str, str] = {}
    if parts.without:
        reasons["without_server_figures"] = parts.last_problem or "no server TTFT"
    if parts.inconsistent:
        reasons["inconsistent"] = (
            f"the server's queue + TTFT exceeded the client's TTFT by more than "
            f"{REST_TOLERANCE_MS:g} ms: not one request's consistent reading"
        )
    rest, server = _dist(parts.rest), _dist(parts.server)
    no_queue = not parts.queue and bool(parts.server)
    return Anatomy(
        engine=engine,
        requests=len(parts.client),
        without_server_figures=parts.without,
        inconsistent=parts.inconsistent,
        rest_includes_queue=no_queue,
        rest_holds=_rest_holds(unclocked, no_queue),
        client_ttft_ms=_dist(parts.client),
        server_queue_ms=_dist(parts.queue) if parts.queue else None,
        server_ttft_ms=server,
        rest_ms=rest,
        server_tpot_ms=_dist(parts.tpot) if parts.tpot else None,
        queue_share=_median_share(parts.queue_or_zero, _totals(parts)) if not no_queue else None,
        rest_share=_median_share(parts.rest, _totals(parts)),
        rest_to_server_ttft=_ratios(rest, server),
        null_reasons=reasons,
        speculative=spec_per_request(ok, spec_window, ignore_eos=ignore_eos),
        front_end=_front_end(parts, records, engine_window, window_ns),
    )


def anatomy_check(an: Anatomy | None) -> ValidityCheck | None:
    """Marks a point whose rest is large against the server's TTFT (see module doc);
    None when there is no anatomy, or the rest holds the queue (not judged)."""
    if an is None or not an.requests or an.rest_includes_queue:
        return None
    over: list[str] = []
    worst = 0.0
    for p, limit in REST_LIMITS.items():
        key = f"p{percentile_word(p)}"
        ratio, rest = an.rest_to_server_ttft.get(key), an.rest_ms.percentiles.get(key)
        if ratio is None or rest is None:
            continue
        worst = max(worst, ratio)
        if ratio > limit and rest > MIN_FLAGGED_REST_MS:
            over.append(
                f"{key} rest {rest:.2f} ms is {ratio:.2f}x the server's TTFT (limit {limit:g}x)"
            )
    why = (
        "; ".join(over) + f": not the engine's clocked work; the rest holds {an.rest_holds}"
        if over
        else "the client-side rest is small against the server's TTFT"
    )
    return ValidityCheck(
        name="client_rest",
        value=worst,
        limit=REST_LIMITS[50.0],
        passed=not over,
        severity="marks",
        why=why,
    )
