"""Capacity search: bracketing then bisection over one load axis, aware of noise.

Pure: the caller's ``measure(level, run)`` runs one probe run and answers a
:class:`Measurement` whose ``score`` is the worst ratio of a measured figure to
its limit (<= 1 meets the SLO; None: the run could not be judged, with the
reason). :func:`search_capacity` decides which levels to probe:

1. bracketing: from ``start``, double while probes pass (halve while they
   fail) until one level passes and another fails, or a bound is reached;
2. bisection between the last passing and the first failing level until they
   are ``tolerance`` apart (1 for concurrency: the exact boundary).

Noise: a run whose score is within ``band`` of the limit (``|score - 1| <=
band``), or runs that straddle it, are repeated up to ``max_runs``; the probe's
verdict is then its median run's, and ``uncertain`` says the runs still
straddle the limit. ``band`` is the larger of the configured ``noise`` and the
half-spread that repeated probes measured so far. A probe with no judgeable
run (an invalid or failed point) is neither pass nor fail: the search stops
and says why, keeping the bracket it had.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Budget",
    "Measurement",
    "Probe",
    "SearchOutcome",
    "SearchSpace",
    "search_capacity",
]

ProbeState = Literal["pass", "fail", "unknown"]
SearchStatus = Literal["found", "above_max", "below_min", "budget", "undetermined"]


@dataclass(frozen=True)
class Measurement:
    """One run of one probe: its score (<= 1 passes) and what bound it, or why not judged."""

    score: float | None
    binding: str | None = None
    reason: str | None = None  # why it could not be judged (score None)
    point_id: str | None = None
    note: str | None = None  # why its verdict is uncertain (a probe too short to tell)
    # what the run reached (metrics.search_held.Reached as (name, value) pairs: hashable),
    # written as the summary's probes[].reached so a "held" verdict can be checked
    reached: tuple[tuple[str, float | int | None], ...] | None = None


@dataclass(frozen=True)
class Probe:
    """One load level as the search judged it, from one or more runs."""

    level: float
    state: ProbeState
    runs: tuple[Measurement, ...]
    score: float | None  # the median run's
    spread: tuple[float, float] | None  # min and max score over the judged runs
    uncertain: bool = False  # the runs straddle the limit even after the repeats
    binding: str | None = None
    reason: str | None = None

    @property
    def point_id(self) -> str | None:
        return next((r.point_id for r in self.runs if r.point_id), None)


@dataclass(frozen=True)
class SearchSpace:
    """The axis searched: levels in [low, high], ``integer`` for concurrency."""

    start: float
    low: float
    high: float
    integer: bool = True
    tolerance: float | None = None  # None: 1 (integer) or 5% of the passing level

    def narrow(self, lo: float, hi: float) -> bool:
        tol = self.tolerance if self.tolerance is not None else (1.0 if self.integer else 0.05 * lo)
        return hi - lo <= tol

    def grow(self, level: float) -> float:
        return min(level * 2, self.high)

    def shrink(self, level: float) -> float:
        nxt = level // 2 if self.integer else level / 2
        return max(nxt, self.low)

    def middle(self, lo: float, hi: float) -> float:
        return (lo + hi) // 2 if self.integer else (lo + hi) / 2


@dataclass
class Budget:
    """Runs (repeats included) and seconds the search may spend; ``clock`` for tests."""

    max_runs: int
    max_seconds: float | None = None
    clock: Callable[[], float] = time.monotonic
    used: int = 0
    started: float | None = None

    def allows(self) -> bool:
        if self.started is None:
            self.started = self.clock()
        if self.used >= self.max_runs:
            return False
        return self.max_seconds is None or self.clock() - self.started < self.max_seconds

    def why_not(self) -> str:
        if self.used >= self.max_runs:
            return f"the budget of {self.max_runs} probe runs is spent"
        return f"the budget of {self.max_seconds:g} s is spent"


@dataclass(frozen=True)
class SearchOutcome:
    status: SearchStatus
    capacity: float | None  # the last passing level (None: none passed)
    last_pass: Probe | None
    first_fail: Probe | None
    probes: tuple[Probe, ...]
    runs: int
    reason: str  # one line: what was found, or why the search stopped
    band: float = 0.0


@dataclass
class _Search:
    space: SearchSpace
    measure: Callable[[float, int], Measurement]
    noise: float
    max_runs: int
    budget: Budget
    probes: list[Probe] = field(default_factory=list)
    learned: float = 0.0  # the half-spread of repeated probes, relative to the limit

    @property
    def band(self) -> float:
        return max(self.noise, self.learned)

    def probe(self, level: float) -> Probe | None:
        """The level judged from its runs; None when the budget allowed no run at all."""
        runs: list[Measurement] = []
        while self.budget.allows():
            self.budget.used += 1
            runs.append(self.measure(level, len(runs) + 1))
            if not self._wants_another(runs):
                break
        if not runs:
            return None
        probe = _judge(level, runs, self.band)
        if probe.spread is not None and len(_scores(runs)) > 1:
            self.learned = max(self.learned, (probe.spread[1] - probe.spread[0]) / 2)
        self.probes.append(probe)
        return probe

    def _wants_another(self, runs: list[Measurement]) -> bool:
        scores = _scores(runs)
        if not scores:
            return len(runs) < 2  # an unjudgeable run is tried once more
        if len(scores) >= self.max_runs:
            return False
        median = runs[verdict_run(runs) or 0].score or 0.0
        return abs(median - 1) <= self.band or min(scores) <= 1 < max(scores)


def _scores(runs: list[Measurement]) -> list[float]:
    return [r.score for r in runs if r.score is not None and not math.isnan(r.score)]


def verdict_run(runs: Sequence[Measurement]) -> int | None:
    """Index of the run whose score is the probe's: the median run (of an even count, the
    upper middle one, the stricter), so the probe's verdict is a real run's and its point
    result can be that run; None when no run was judged."""
    judged = sorted(
        (r.score, i) for i, r in enumerate(runs) if r.score is not None and not math.isnan(r.score)
    )
    return judged[len(judged) // 2][1] if judged else None


def _judge(level: float, runs: list[Measurement], band: float) -> Probe:
    scores = _scores(runs)
    if not scores:
        reasons = "; ".join(dict.fromkeys(r.reason or "no reason given" for r in runs))
        return Probe(level, "unknown", tuple(runs), None, None, reason=reasons)
    chosen = runs[verdict_run(runs) or 0]
    median = chosen.score or 0.0
    low, high = min(scores), max(scores)
    straddles = low <= 1 < high
    alone_near = len(scores) == 1 and abs(median - 1) <= band
    notes = "; ".join(dict.fromkeys(r.note for r in runs if r.note))
    return Probe(
        level,
        "pass" if median <= 1 else "fail",
        tuple(runs),
        median,
        (low, high),
        uncertain=straddles or alone_near or bool(notes),
        binding=chosen.binding,
        reason=notes or None,
    )


def search_capacity(
    space: SearchSpace,
    measure: Callable[[float, int], Measurement],
    *,
    noise: float = 0.1,
    max_runs: int = 3,
    budget: Budget,
) -> SearchOutcome:
    """The largest level of ``space`` whose probe passes, bracketed then bisected."""
    s = _Search(space, measure, noise, max_runs, budget)
    lo: Probe | None = None
    hi: Probe | None = None
    level = space.start
    while lo is None or hi is None:  # bracketing
        probe = s.probe(level)
        if probe is None or probe.state == "unknown":
            return _stopped(s, lo, hi, probe)
        if probe.state == "pass":
            lo = probe
            if hi is None and level >= space.high:
                return _end(s, "above_max", lo, hi, f"passes at the highest level {level:g}")
            level = space.grow(level)
        else:
            hi = probe
            if lo is None and level <= space.low:
                return _end(s, "below_min", lo, hi, f"fails at the lowest level {level:g}")
            level = space.shrink(level)
    while not space.narrow(lo.level, hi.level):  # bisection
        probe = s.probe(space.middle(lo.level, hi.level))
        if probe is None or probe.state == "unknown":
            return _stopped(s, lo, hi, probe)
        if probe.state == "pass":
            lo = probe
        else:
            hi = probe
    return _end(s, "found", lo, hi, f"capacity {lo.level:g}: passes there, fails at {hi.level:g}")


def _stopped(s: _Search, lo: Probe | None, hi: Probe | None, probe: Probe | None) -> SearchOutcome:
    if probe is None:
        return _end(s, "budget", lo, hi, s.budget.why_not())
    why = f"could not judge level {probe.level:g}: {probe.reason}"
    return _end(s, "undetermined", lo, hi, why)


def _end(
    s: _Search, status: SearchStatus, lo: Probe | None, hi: Probe | None, reason: str
) -> SearchOutcome:
    if lo is not None and lo.uncertain:  # the claim says how sure it is
        why = f" ({lo.reason})" if lo.reason else " (near the limit)"
        reason += f"; the pass at {lo.level:g} is uncertain{why}"
    return SearchOutcome(
        status=status,
        capacity=lo.level if lo is not None else None,
        last_pass=lo,
        first_fail=hi,
        probes=tuple(s.probes),
        runs=s.budget.used,
        reason=reason,
        band=s.band,
    )
