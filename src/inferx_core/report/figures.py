"""Report lines for the figures only some points have: reasoning models, speculative decoding.

``bench``/``run`` print them under the summary table, one line per figure group, so
a reasoning model's TTFO and a speculative server's acceptance are read where the
latencies are. An impossible speculative figure (out of its bounds) shows as ``-``
with the reason; the point's ``spec_acceptance`` check says it failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["figure_lines"]


def _num(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _reasoning_line(result: Any) -> str | None:
    section = getattr(result, "reasoning", None)
    if section is None:
        return None
    ttfo, tpot = section.ttfo_ms, section.tpot_answer_ms
    return (
        f"reasoning: {section.requests} requests, {section.total_reasoning_tokens} reasoning "
        f"tokens; TTFO p50 {_num(ttfo.median, '.1f')} p99 "
        f"{_num(ttfo.percentiles.get('p99'), '.1f')} ms; answer TPOT p50 "
        f"{_num(tpot.median, '.2f')} ms"
        + (f"; {section.no_answer_requests} never answered" if section.no_answer_requests else "")
    )


def _speculative_line(result: Any) -> str | None:
    telemetry = getattr(result, "telemetry", None)
    window = telemetry.engine_metrics.get("spec_decode") if telemetry is not None else None
    if not isinstance(window, Mapping) or not _speculated(window):
        return None
    positions = window.get("acceptance_per_position")
    line = (
        f"speculative: mean acceptance length {_num(window.get('mean_acceptance_length'), '.3f')}"
        f", acceptance rate {_num(window.get('acceptance_rate'), '.1%')}"
        f", drafts {_num(window.get('drafts'), '.0f')}"
    )
    if positions and None not in positions:
        line += ", by position " + " ".join(f"{p:.2f}" for p in positions)
    bad = window.get("out_of_bounds") or {}
    if bad:
        line += "; out of bounds: " + "; ".join(f"{k} {why}" for k, why in bad.items())
    return line


def _speculated(window: Mapping[str, Any]) -> bool:
    """Whether the window has a speculative figure to print: a server that drafted nothing
    (null counts with the reason, or a 0 in a result written before) gets no line, since a
    figure that does not apply is never shown as 0; an impossible one is shown, as ``-``."""
    figures = ("mean_acceptance_length", "acceptance_rate", "drafts")
    return any(window.get(f) for f in figures) or bool(window.get("out_of_bounds"))


def figure_lines(result: Any) -> list[str]:
    """The reasoning and speculative-decoding lines of a point (none for other points)."""
    return [line for line in (_reasoning_line(result), _speculative_line(result)) if line]
