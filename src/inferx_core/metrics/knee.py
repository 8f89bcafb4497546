"""The knee without an SLO: where throughput stops rising while latency keeps rising.

From any set of load levels (a search's probes, a sweep's points), ordered by
level: between two neighbours, the throughput gain is the relative rise in
throughput over the relative rise in load (1: throughput follows the load, 0:
flat). The knee is the last level before the first step whose gain is below
``min_gain`` while mean latency rises by at least ``min_latency_rise`` of the load
rise: past it, more load buys latency, not throughput.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Knee", "LevelFigures", "find_knee"]

MIN_GAIN = 0.25
MIN_LATENCY_RISE = 0.5


@dataclass(frozen=True)
class LevelFigures:
    level: float
    throughput: float  # output tokens/s
    latency_ms: float  # mean end-to-end latency


@dataclass(frozen=True)
class Knee:
    level: float
    next_level: float
    gain: float  # the throughput gain of the step past the knee
    latency_rise: float  # relative latency rise over that step
    reason: str


def find_knee(
    levels: Sequence[LevelFigures],
    *,
    min_gain: float = MIN_GAIN,
    min_latency_rise: float = MIN_LATENCY_RISE,
) -> Knee | None:
    """The knee, or None when throughput still follows the load at the highest level."""
    usable = {f.level: f for f in levels if f.level > 0 and f.throughput > 0}
    ordered = sorted(usable.values(), key=lambda f: f.level)
    for a, b in itertools.pairwise(ordered):
        load_rise = b.level / a.level - 1
        gain = (b.throughput / a.throughput - 1) / load_rise
        latency_rise = b.latency_ms / a.latency_ms - 1 if a.latency_ms > 0 else 0.0
        if gain < min_gain and latency_rise >= min_latency_rise * load_rise:
            reason = (
                f"load {a.level:g} -> {b.level:g} (+{load_rise:.0%}): throughput "
                f"{b.throughput / a.throughput - 1:+.0%}, mean latency {latency_rise:+.0%}"
            )
            return Knee(a.level, b.level, gain, latency_rise, reason)
    return None
