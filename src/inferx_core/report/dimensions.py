"""Report lines for a point's structured dimensions: multi-turn turns and load stages."""

from __future__ import annotations

from typing import Any

__all__ = ["dimension_lines"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def dimension_lines(result: Any) -> list[str]:
    """One line per turn (TTFT and E2EL by turn index) and per stage (target vs achieved)."""
    load = getattr(result, "load", None)
    if load is None:
        return []
    lines = [
        f"turn {t.turn}: {t.completed}/{t.requests} ok, "
        f"prompt {t.mean_prompt_tokens or 0:.0f} tok, "
        f"TTFT p50 {_ms(t.median_ttft_ms)} p99 {_ms(t.p99_ttft_ms)} ms, "
        f"E2EL p50 {_ms(t.median_e2el_ms)} p99 {_ms(t.p99_e2el_ms)} ms"
        for t in load.turns or ()
    ]
    for s in load.stages or ():
        target = (
            f"rate {s.target_rate:g}/s"
            if s.target_rate is not None
            else (f"concurrency {s.target_concurrency}")
        )
        lines.append(
            f"stage {s.stage} ({target}, {s.duration_s:g} s): sent {s.dispatched_rps:.2f}/s, "
            f"completed {s.completed_rps:.2f}/s, TTFT p50 {_ms(s.median_ttft_ms)} ms"
        )
    return lines
