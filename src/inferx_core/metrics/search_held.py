"""What a probe really reached: the load level a run held, read from its request records.

A run is judged as its level only when it held that level (docs/search.md, "held"):

- closed loop at concurrency C: the peak number of requests in flight reached C,
  and their time-weighted mean over the dispatch window (first to last send) is at
  least :data:`MIN_HELD_SHARE` of C. A run of fewer prompts than C never has C in
  flight; a client too slow to refill its slots holds less than it was asked;
- open loop at rate R: the achieved arrival rate (arrivals - 1 over the span of
  the sends) is at least :data:`MIN_RATE_SHARE` of R (wider than the draw's own
  spread, which the validity verdict judges against the drawn schedule);
- backlog (open loop): the requests in flight at each send, the mean of the last
  third of the dispatch window against the middle third (the first third is the
  fill). A server that keeps up has a backlog that wanders around a level; one
  that does not grows it steadily, by (arrival - service rate) per second. The
  detector is that difference of thirds rather than a fitted slope because it
  needs no model of the noise and a steady queue's random walk (sqrt(t)) seldom
  moves a third's mean by :data:`BACKLOG_GROWTH` of it; a queue that grows
  linearly does so within the minimum duration the search gives a rate probe.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from inferx_core.load.records.request import RequestRecord

__all__ = [
    "BACKLOG_GROWTH",
    "MIN_HELD_SHARE",
    "MIN_RATE_SHARE",
    "Reached",
    "not_held",
    "reached",
]

#: Closed loop: the time-weighted mean in flight must be this share of the level (half:
#: a loaded client refills its slots late, which the loop-lag check judges; a run that
#: never filled them is caught by the peak).
MIN_HELD_SHARE = 0.5
#: Open loop: the achieved arrival rate must be this share of the level.
MIN_RATE_SHARE = 0.8
#: Open loop: a backlog whose last third's mean exceeds its middle third's by this
#: share (and by at least :data:`BACKLOG_MIN_REQUESTS`) is growing.
BACKLOG_GROWTH = 0.25
BACKLOG_MIN_REQUESTS = 2.0


@dataclass(frozen=True)
class Reached:
    """What the run's measured requests did: in flight, arrivals, backlog."""

    requests: int
    peak_in_flight: int
    mean_in_flight: float | None  # time-weighted over the dispatch window
    achieved_rate: float | None  # req/s over the span of the sends
    backlog_middle: float | None  # mean in flight at the sends of the middle third
    backlog_last: float | None  # ... of the last third

    @property
    def backlog_grows(self) -> bool:
        mid, last = self.backlog_middle, self.backlog_last
        if mid is None or last is None:
            return False
        return last - mid > max(BACKLOG_MIN_REQUESTS, BACKLOG_GROWTH * mid)


def _spans(records: Sequence[RequestRecord]) -> list[tuple[int, int]]:
    out = []
    for r in records:
        if not r.send_ns:
            continue  # never sent
        end = r.end_ns or (r.chunk_ns[-1] if r.chunk_ns else r.send_ns)
        out.append((r.send_ns, max(end, r.send_ns)))
    return out


def _in_flight_at(starts: Sequence[int], ends: Sequence[int], t: int) -> int:
    """Requests sent at or before ``t`` and not ended by then (both lists sorted)."""
    return bisect_right(starts, t) - bisect_right(ends, t)


def _time_weighted(spans: Sequence[tuple[int, int]], lo: int, hi: int) -> float | None:
    """Mean in flight over [lo, hi] (None for an empty window)."""
    if hi <= lo:
        return None
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    area, level, last = 0.0, 0, lo
    for t, step in events:
        if t > lo:
            area += level * (min(t, hi) - last)
            last = min(t, hi)
        if t >= hi:
            break
        level += step
    area += level * (hi - last) if last < hi else 0.0
    return area / (hi - lo)


def _backlog(
    spans: Sequence[tuple[int, int]], sends: Sequence[int]
) -> tuple[float | None, float | None]:
    if len(sends) < 9:
        return None, None
    starts, ends = sorted(s for s, _ in spans), sorted(e for _, e in spans)
    lo, hi = sends[0], sends[-1]
    third = (hi - lo) / 3
    mid = [_in_flight_at(starts, ends, t) for t in sends if lo + third <= t < lo + 2 * third]
    last = [_in_flight_at(starts, ends, t) for t in sends if t >= lo + 2 * third]
    if not mid or not last:
        return None, None
    return sum(mid) / len(mid), sum(last) / len(last)


def reached(records: Sequence[RequestRecord]) -> Reached | None:
    """What the measured (non-warmup) ``records`` reached; None when none was sent. In
    flight counts every request the server had, warmups still running included (a
    closed loop's first measured requests go out as its warmups end)."""
    spans = _spans(records)
    sends = sorted(r.send_ns for r in records if r.send_ns and not r.warmup)
    if not sends:
        return None
    starts, ends = sorted(s for s, _ in spans), sorted(e for _, e in spans)
    span_s = (sends[-1] - sends[0]) / 1e9
    mid, last = _backlog(spans, sends)
    return Reached(
        requests=len(sends),
        peak_in_flight=max(_in_flight_at(starts, ends, t) for t in sends),
        mean_in_flight=_time_weighted(spans, sends[0], sends[-1]),
        achieved_rate=(len(sends) - 1) / span_s if span_s > 0 else None,
        backlog_middle=mid,
        backlog_last=last,
    )


def not_held(got: Reached | None, over: str, level: float) -> str | None:
    """Why the run did not hold ``level`` on axis ``over``; None when it did."""
    if got is None:
        return "no request was sent"
    if over == "concurrency":
        if got.peak_in_flight < level:
            return (
                f"not held: at most {got.peak_in_flight} requests were in flight of the "
                f"{level:g} asked ({got.requests} measured prompts)"
            )
        mean = got.mean_in_flight
        if mean is not None and mean < MIN_HELD_SHARE * level:
            return (
                f"not held: {mean:.1f} requests in flight on average (time-weighted) of the "
                f"{level:g} asked (at least {MIN_HELD_SHARE:.0%} needed)"
            )
        return None
    rate = got.achieved_rate
    if rate is None or (math.isfinite(level) and rate < MIN_RATE_SHARE * level):
        sent = "an unmeasurable rate" if rate is None else f"{rate:.3g} req/s"
        return (
            f"not held: the requests arrived at {sent} of the {level:g} asked (at least "
            f"{MIN_RATE_SHARE:.0%} needed)"
        )
    return None
