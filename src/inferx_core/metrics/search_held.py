"""What a probe really reached: the load level a run held, read from its request records.

A run is judged as its level only when it held that level (docs/search.md, "held"):

- closed loop at concurrency C: the peak number of requests in flight reached C,
  and their time-weighted mean over the dispatch window (first to last send) is at
  least :data:`MIN_HELD_SHARE` of C. A run of fewer prompts than C never has C in
  flight; a client too slow to refill its slots holds less than it was asked;
- open loop at rate R: the achieved arrival rate (arrivals - 1 over the span of
  the sends) is at least :data:`MIN_RATE_SHARE` of the DRAWN schedule's own rate
  (the same over the span of the scheduled times): the client kept its schedule.
  A seeded Poisson draw of n arrivals has a rate estimate whose relative spread is
  about 1 / sqrt(n - 1), 21% at the 24 arrivals of a short probe: judged against
  the nominal R, a perfect client failed ~16% of probes, the same ones on every
  rerun (same seed). The draw itself must be a draw of R: its rate at least
  R * (1 - :data:`DRAW_SIGMAS` / sqrt(n - 1)) (a schedule further under R is not
  the level's, whatever the client did). Records without a schedule (an import)
  are judged against R;
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
from dataclasses import dataclass, fields

from inferx_core.load.records.request import RequestRecord

__all__ = [
    "BACKLOG_GROWTH",
    "DRAW_SIGMAS",
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
#: Open loop: the achieved arrival rate must be this share of the drawn schedule's rate
#: (of the level where no schedule was recorded).
MIN_RATE_SHARE = 0.8
#: Open loop: a drawn schedule this many standard deviations (1 / sqrt(n - 1) of the
#: level, the spread of a Poisson rate estimate) under the level is not its draw; a
#: Poisson draw goes that far under about once in 10^4 (the gamma tail is thinner).
DRAW_SIGMAS = 4.0
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
    # req/s of the drawn schedule over the span of the scheduled times (None: no schedule)
    scheduled_rate: float | None = None

    def pairs(self) -> tuple[tuple[str, float | int | None], ...]:
        """Every figure as (name, value), in field order (the summary's probes[].reached)."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self))

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
    due = sorted(r.scheduled_ns for r in records if r.scheduled_ns and r.send_ns and not r.warmup)
    due_s = (due[-1] - due[0]) / 1e9 if len(due) == len(sends) else 0.0
    return Reached(
        requests=len(sends),
        peak_in_flight=max(_in_flight_at(starts, ends, t) for t in sends),
        mean_in_flight=_time_weighted(spans, sends[0], sends[-1]),
        achieved_rate=(len(sends) - 1) / span_s if span_s > 0 else None,
        backlog_middle=mid,
        backlog_last=last,
        scheduled_rate=(len(due) - 1) / due_s if due_s > 0 else None,
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
    return _rate_not_held(got, level)


def _rate_not_held(got: Reached, level: float) -> str | None:
    rate, drawn = got.achieved_rate, got.scheduled_rate
    if rate is None:
        return f"not held: the requests arrived at an unmeasurable rate of the {level:g} asked"
    if not math.isfinite(level):
        return None
    if drawn is not None and got.requests > 1:
        floor = level * (1 - DRAW_SIGMAS / math.sqrt(got.requests - 1))
        if drawn < floor:
            return (
                f"not held: the drawn schedule's {got.requests} arrivals are at {drawn:.3g} req/s, "
                f"more than {DRAW_SIGMAS:g} sd of a draw under the {level:g} asked"
            )
        if rate < MIN_RATE_SHARE * drawn:
            return (
                f"not held: the requests arrived at {rate:.3g} req/s of the {drawn:.3g} their "
                f"schedule drew for the {level:g} asked (at least {MIN_RATE_SHARE:.0%} needed: "
                "the client fell behind)"
            )
        return None
    if rate < MIN_RATE_SHARE * level:
        return (
            f"not held: the requests arrived at {rate:.3g} req/s of the {level:g} asked (at least "
            f"{MIN_RATE_SHARE:.0%} needed)"
        )
    return None
