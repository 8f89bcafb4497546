"""Bounds on every speculative-decoding figure: an impossible one is None with its reason.

What a window's counters can honestly give (k speculative tokens per step):

- drafts, draft tokens, accepted tokens: finite and >= 0;
- acceptance rate = accepted / draft tokens: in [0, 1];
- mean acceptance length = 1 + accepted / drafts: in [1, k + 1] (the bonus token
  plus at most k accepted), and no more than 1 + draft tokens / drafts;
- acceptance at draft position i: in [0, 1], non-increasing in i (a token at
  position i is accepted only after every one before it), at most k positions,
  and summing to accepted / drafts (each accepted token sits at one position).

A figure outside its bounds is set to None and named in the window's
``out_of_bounds`` (figure -> reason); a figure derived from an impossible count
goes with it. ``k`` comes from the run's ``speculative.num_speculative_tokens``
where known (:mod:`inferx_core.metrics.speculative` bounds the window again
with it), else from the per-position series the engine publishes, else
:data:`~inferx_core.config.speculative.MAX_SPECULATIVE_TOKENS`. The window's
counters are read the way Prometheus reads them (a drop is a reset), so
impossible figures here mean the engine's own counters contradict each other.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from inferx_core.config.speculative import MAX_SPECULATIVE_TOKENS

__all__ = ["bound_spec_window"]

_COUNTS = ("drafts", "draft_tokens", "accepted_tokens")
# Which figures fall with each count: a figure derived from an impossible count is no figure.
_DERIVED_FROM = {
    "drafts": ("mean_acceptance_length", "acceptance_per_position"),
    "draft_tokens": ("acceptance_rate",),
    "accepted_tokens": ("acceptance_rate", "mean_acceptance_length"),
}


def _number(value: Any) -> TypeGuard[float]:  # then a checker knows it is a number
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _in(value: Any, low: float, high: float) -> bool:
    return _number(value) and low <= value <= high


class _Bounder:
    """One window's figures and the reasons of those that fell."""

    def __init__(self, window: Mapping[str, Any], k: int | None) -> None:
        self.out = dict(window)
        self.bad: dict[str, str] = dict(window.get("out_of_bounds") or {})
        positions = window.get("acceptance_per_position") or []
        self.k = k or len(positions) or None

    def drop(self, figure: str, why: str) -> None:
        if self.out.get(figure) in (None, []):
            return
        self.out[figure] = None
        self.bad.setdefault(figure, why)

    def counts(self) -> None:
        for count in _COUNTS:
            value = self.out.get(count)
            if value is not None and not (_number(value) and value >= 0):
                self.drop(count, f"{value!r}: a count is a finite number >= 0")
                for figure in _DERIVED_FROM[count]:
                    self.drop(figure, f"derived from {count} {value!r}, which is impossible")

    def rate(self) -> None:
        rate = self.out.get("acceptance_rate")
        if rate is not None and not _in(rate, 0.0, 1.0):
            self.drop("acceptance_rate", f"{rate!r}: a rate is in [0, 1]")

    def length(self) -> None:
        length = self.out.get("mean_acceptance_length")
        if length is None:
            return
        k = self.k or MAX_SPECULATIVE_TOKENS
        limit = f"[1, {k + 1}] for {k} speculative tokens" + ("" if self.k else " at most")
        if not _in(length, 1.0, k + 1.0):
            self.drop("mean_acceptance_length", f"{length!r}: the length is in {limit}")
            return
        drafts, tokens = self.out.get("drafts"), self.out.get("draft_tokens")
        if _number(drafts) and _number(tokens) and drafts > 0:
            most = 1.0 + tokens / drafts
            if length > most * (1 + 1e-9):
                self.drop(
                    "mean_acceptance_length",
                    f"{length!r}: more than 1 + draft tokens / drafts = {most:g}",
                )

    def positions(self) -> None:
        rates = self.out.get("acceptance_per_position")
        if not rates or any(r is None for r in rates):  # unknown (no drafts), not impossible
            return
        why = _positions_problem(rates, self.k, self.out)
        if why:
            self.drop("acceptance_per_position", why)

    def gauge_readings(self) -> None:
        """A gauge's window mean hides a reading out of bounds: each one must be possible."""
        readings = self.out.get("readings") or {}
        k = self.k or MAX_SPECULATIVE_TOKENS
        low, high = readings.get("min"), readings.get("max")
        for value in (low, high):
            if value is not None and not _in(value, 1.0, k + 1.0):
                self.drop(
                    "mean_acceptance_length",
                    f"a reading of {value!r} in the window: a length is in [1, {k + 1}]",
                )


def _positions_problem(
    rates: Sequence[Any], k: int | None, window: Mapping[str, Any]
) -> str | None:
    """Why the per-position rates are impossible, or None when they are possible."""
    if any(not _in(r, 0.0, 1.0) for r in rates):
        return f"{list(rates)!r}: each position's rate is in [0, 1]"
    if k is not None and len(rates) > k:
        return f"{len(rates)} positions for {k} speculative tokens"
    drafts = window.get("drafts")
    # Counters are scraped one after another: one verification step may be half counted.
    slack = 1e-9 + ((k or 1) / drafts if _number(drafts) and drafts > 0 else 0.0)
    if any(later > earlier + slack for earlier, later in itertools.pairwise(rates)):
        return f"{list(rates)!r}: rates rise with the position (a later token needs the earlier)"
    accepted = window.get("accepted_tokens")
    if _number(drafts) and _number(accepted) and drafts > 0:
        total = accepted / drafts
        if abs(sum(rates) - total) > slack:
            return (
                f"they sum to {sum(rates):g}, not accepted / drafts = {total:g} "
                "(duplicate or missing series?)"
            )
    return None


def bound_spec_window(window: Mapping[str, Any], k: int | None = None) -> dict[str, Any]:
    """``window`` (a ``spec_decode`` entry) with every impossible figure None and its reason
    under ``out_of_bounds``; ``k``: the speculative tokens per step, where known."""
    bounder = _Bounder(window, k)
    bounder.counts()
    bounder.rate()
    bounder.length()
    bounder.positions()
    bounder.gauge_readings()
    out = bounder.out
    out["out_of_bounds"] = bounder.bad
    if bounder.k is not None:
        out["speculative_tokens"] = bounder.k
    return out
