"""Speculative decoding against its golden acceptance length: the check that marks a broken draft.

The acceptance itself is measured from the engine's counters over the window
(:mod:`inferx_core.telemetry.speculative`, the ``spec_decode`` entry of the
point's engine metrics). Here it meets the config: with
``speculative.golden_acceptance_length`` the check ``spec_acceptance`` says how
far the measured mean acceptance length is (absolute and relative) and
invalidates the point when the relative distance exceeds
``acceptance_tolerance``; a run that asked for speculation and whose engine
made no drafts in the window is invalid too (it did not speculate). Without a
golden value, or without acceptance figures, the check only marks, saying why.

Impossible figures fail it, golden value or not: the window is bounded again with
the run's own ``num_speculative_tokens`` (:func:`bound_speculative`; length in
[1, k + 1], at most k positions), and any figure out of its bounds (an acceptance
rate of 167%, a length of 6.0 with k = 3, an SGLang length of -3.5 or 1e308)
invalidates the point: the engine's counters cannot be trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core.config.speculative import SpeculativeConfig
from inferx_core.metrics.validity import ValidityCheck
from inferx_core.telemetry.spec_bounds import bound_spec_window

__all__ = ["acceptance_check", "bound_speculative", "golden_comparison"]

NAME = "spec_acceptance"


def golden_comparison(
    measured: float | None, spec: SpeculativeConfig
) -> dict[str, float | None] | None:
    """``{golden, measured, delta, relative_delta}`` (delta = measured - golden), or None
    without a golden value."""
    golden = spec.golden_acceptance_length
    if golden is None:
        return None
    delta = None if measured is None else measured - golden
    return {
        "golden_acceptance_length": golden,
        "mean_acceptance_length": measured,
        "delta": delta,
        "relative_delta": None if delta is None else delta / golden,
    }


def _mark(value: float | None, why: str, passed: bool = False) -> ValidityCheck:
    return ValidityCheck(
        name=NAME, value=value, limit=None, passed=passed, severity="marks", why=why
    )


_NOT_SPECULATING = (
    "the engine made no speculative drafts in the measured window: this is not a "
    "speculative-decoding result (is the draft model loaded?)"
)
_BROKEN_DRAFT = (
    ": the draft does not perform as it should (wrong or broken draft model, wrong workload?)"
)


def _seen(measured: float | None, rate: float | None) -> str:
    """What the window measured, as the check's reason starts."""
    seen = f"mean acceptance length {measured:.3f}" if measured is not None else "no length"
    return seen + (f", acceptance rate {rate:.1%}" if rate is not None else "")


def _impossible(out_of_bounds: Mapping[str, str]) -> ValidityCheck:
    figures = "; ".join(f"{name} {why}" for name, why in out_of_bounds.items())
    return ValidityCheck(
        name=NAME,
        value=None,
        limit=None,
        passed=False,
        why=f"impossible speculative-decoding figures ({figures}): the engine's counters "
        "contradict each other, so no acceptance is reported",
    )


def bound_speculative(
    engine_metrics: Mapping[str, Any], spec: SpeculativeConfig | None
) -> dict[str, Any]:
    """``engine_metrics`` with its ``spec_decode`` window bounded by the run's own
    ``num_speculative_tokens`` (impossible figures None, with the reason)."""
    window = engine_metrics.get("spec_decode")
    if spec is None or not isinstance(window, Mapping):
        return dict(engine_metrics)
    return {**engine_metrics, "spec_decode": bound_spec_window(window, spec.num_speculative_tokens)}


def acceptance_check(
    engine_metrics: Mapping[str, Any] | None, spec: SpeculativeConfig | None
) -> ValidityCheck | None:
    """The ``spec_acceptance`` check of a point; None when the run asked for no speculation."""
    if spec is None:
        return None
    window = (engine_metrics or {}).get("spec_decode")
    if not isinstance(window, Mapping):
        return _mark(
            None,
            f"speculative.method {spec.method!r} was asked for, but the engine's /metrics "
            "gave no speculative-decoding figures (the engine plugin names none, or the "
            "engine did not enable it): acceptance not measured",
        )
    window = bound_spec_window(window, spec.num_speculative_tokens)
    if window["out_of_bounds"]:
        return _impossible(window["out_of_bounds"])
    measured = window.get("mean_acceptance_length")
    if window.get("source") == "counters" and not window.get("drafts"):
        return ValidityCheck(name=NAME, value=0.0, limit=None, passed=False, why=_NOT_SPECULATING)
    seen = _seen(measured, window.get("acceptance_rate"))
    comparison = golden_comparison(measured, spec)
    if comparison is None or measured is None:
        return _mark(measured, f"{seen}; no golden_acceptance_length to compare", passed=True)
    rel = comparison["relative_delta"]
    assert rel is not None
    tol = spec.acceptance_tolerance
    ok = abs(rel) <= tol
    why = (
        f"{seen} against golden {spec.golden_acceptance_length:g}: "
        f"{comparison['delta']:+.3f} ({rel:+.1%}; tolerance {tol:.0%})"
    )
    return ValidityCheck(
        name=NAME, value=rel, limit=tol, passed=ok, why=why + ("" if ok else _BROKEN_DRAFT)
    )
