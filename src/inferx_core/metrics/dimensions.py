"""Figures along a structured workload's dimensions: per multi-turn turn, per load stage.

* :func:`turn_stats`: one :class:`TurnStats` per turn index (0-based) of the
  measured multi-turn records: requests, successes, TTFT and E2EL (mean,
  median, p99, ms) and mean prompt tokens, so the cost of a growing
  conversation (and a prefix cache's help on later turns) shows turn by turn.
* :func:`stage_stats`: one :class:`StageStats` per stage that ran, with its
  target and what was achieved over the stage's own window (start to the
  next stage's start): ``dispatched_rps`` counts requests sent in the stage,
  ``completed_rps`` successful requests that ended in it (whatever stage sent
  them), each divided by the stage's length.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.stages import StageWindow
from inferx_core.metrics.requests import judged_request
from inferx_core.metrics.stats import describe

__all__ = ["StageStats", "TurnStats", "stage_stats", "turn_stats"]


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TurnStats(_Row):
    """One turn index of a multi-turn workload."""

    turn: int
    requests: int
    completed: int
    mean_prompt_tokens: float | None = None
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_e2el_ms: float | None = None
    median_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None


class StageStats(_Row):
    """One load stage: its target and what was achieved in its window."""

    stage: int
    target_rate: float | None = None  # requests/s of a rate stage
    target_concurrency: int | None = None  # units in flight of a closed-loop stage
    duration_s: float  # as configured
    window_s: float  # as it ran
    dispatched: int
    completed: int  # successful requests that ended in the window
    failed: int  # requests sent in the stage that failed
    dispatched_rps: float
    completed_rps: float
    median_ttft_ms: float | None = None  # of the requests sent in the stage
    median_e2el_ms: float | None = None


def _triple(values: list[float]) -> tuple[float | None, float | None, float | None]:
    stats = describe(values, [99.0])
    return stats["mean"], stats["median"], stats["p99"]


def turn_stats(
    records: Sequence[RequestRecord], ignore_eos: bool = False
) -> list[TurnStats] | None:
    """Per-turn figures; None when no record belongs to a multi-turn session. A reply cut
    short of what was asked (``ignore_eos``) is failed, as the point counts it."""
    by_turn: dict[int, list[RequestRecord]] = {}
    for rec in records:
        if rec.turn is not None and not rec.warmup:
            by_turn.setdefault(rec.turn, []).append(rec)
    if not by_turn:
        return None
    return [_turn_row(turn, by_turn[turn], ignore_eos) for turn in sorted(by_turn)]


def _turn_row(turn: int, recs: list[RequestRecord], ignore_eos: bool) -> TurnStats:
    ok = [m for m in (judged_request(r, ignore_eos) for r in recs) if m.ok]
    ttft = _triple([m.ttft_ms for m in ok if m.ttft_ms is not None])
    e2el = _triple([m.e2el_ms for m in ok if m.e2el_ms is not None])
    return TurnStats(
        turn=turn,
        requests=len(recs),
        completed=len(ok),
        mean_prompt_tokens=sum(r.prompt_tokens for r in recs) / len(recs),
        mean_ttft_ms=ttft[0],
        median_ttft_ms=ttft[1],
        p99_ttft_ms=ttft[2],
        mean_e2el_ms=e2el[0],
        median_e2el_ms=e2el[1],
        p99_e2el_ms=e2el[2],
    )


def stage_stats(
    records: Sequence[RequestRecord], windows: Sequence[StageWindow], ignore_eos: bool = False
) -> list[StageStats] | None:
    """Per-stage target and achieved rates; None without stages. A reply cut short of
    what was asked (``ignore_eos``) is failed, as the point counts it."""
    if not windows:
        return None
    rows = []
    judged = {id(r): judged_request(r, ignore_eos) for r in records if not r.warmup}
    for win in windows:
        sent = [r for r in records if r.stage == win.index and not r.warmup]
        ended = [
            r
            for r in records
            if not r.warmup and judged[id(r)].ok and win.start_ns <= r.end_ns < win.end_ns
        ]
        window_s = max(win.end_ns - win.start_ns, 1) / 1e9
        metrics = [m for r in sent if (m := judged[id(r)]).ok]
        rows.append(
            StageStats(
                stage=win.index,
                target_rate=win.stage.rate,
                target_concurrency=win.stage.concurrency,
                duration_s=win.stage.duration_s,
                window_s=window_s,
                dispatched=len(sent),
                completed=len(ended),
                failed=sum(1 for r in sent if r.end_ns and not judged[id(r)].ok),
                dispatched_rps=len(sent) / window_s,
                completed_rps=len(ended) / window_s,
                median_ttft_ms=_triple([m.ttft_ms for m in metrics if m.ttft_ms is not None])[1],
                median_e2el_ms=_triple([m.e2el_ms for m in metrics if m.e2el_ms is not None])[1],
            )
        )
    return rows
