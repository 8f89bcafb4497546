"""How well a client kept the arrival schedule it was given (open loop and trace replay).

A Poisson or gamma schedule of N arrivals has its own sampling spread: 40
arrivals drawn at 40 req/s span anywhere from about 0.7 s to 1.4 s, so its
own rate is rarely the nominal one. Comparing the achieved rate with the
nominal rate blames the client for the draw. The client is judged here
against the schedule it was given instead: the span of its sends against
the span of the arrival times it was told (``scheduled_ns``), which for a
client that sends on time are the same whatever the draw.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from inferx_core.load.records.request import RequestRecord

__all__ = ["ScheduleKeeping", "schedule_keeping"]


@dataclass(frozen=True, slots=True)
class ScheduleKeeping:
    """The spans of the drawn arrivals and of their sends, first to last (seconds)."""

    arrivals: int
    scheduled_span_s: float
    sent_span_s: float

    @property
    def scheduled_rate(self) -> float:
        """The drawn schedule's own rate (arrivals - 1 over its span), req/s."""
        return (self.arrivals - 1) / self.scheduled_span_s if self.scheduled_span_s else math.inf

    @property
    def achieved_rate(self) -> float:
        """What the client sent (arrivals - 1 over the span of its sends), req/s."""
        return (self.arrivals - 1) / self.sent_span_s if self.sent_span_s else math.inf

    @property
    def rate_ratio(self) -> float:
        """Achieved / scheduled rate: 1 for a client on time, below 1 for one that fell behind."""
        return self.scheduled_span_s / self.sent_span_s if self.sent_span_s > 0 else 1.0

    @property
    def stretch_ms(self) -> float:
        """How much longer the sends took than the schedule: the lateness gained on the way."""
        return (self.sent_span_s - self.scheduled_span_s) * 1e3

    def fell_behind(self, min_rate_ratio: float, lateness_allowance_ms: float) -> bool:
        """Sent below ``min_rate_ratio`` of the schedule's rate, by more than the lateness
        the verdict allows anyway (a stretch within it cannot move a figure that the
        dispatch-lateness check would accept)."""
        return self.rate_ratio < min_rate_ratio and self.stretch_ms > lateness_allowance_ms


def _arrivals(records: Iterable[RequestRecord]) -> list[tuple[int, int]]:
    # the rate is of arrivals: a multi-turn session arrives with its turn 0
    return [
        (r.scheduled_ns, r.send_ns)
        for r in records
        if not r.turn and r.send_ns and r.scheduled_ns is not None
    ]


def schedule_keeping(records: Sequence[RequestRecord]) -> ScheduleKeeping | None:
    """The spans of the sent arrivals that carry their scheduled time; None under two."""
    pairs = _arrivals(records)
    if len(pairs) < 2:
        return None
    scheduled = [s for s, _ in pairs]
    sent = [t for _, t in pairs]
    return ScheduleKeeping(
        arrivals=len(pairs),
        scheduled_span_s=(max(scheduled) - min(scheduled)) / 1e9,
        sent_span_s=(max(sent) - min(sent)) / 1e9,
    )
