"""Impossible speculative-decoding figures are None with their reason, and fail the check.

Each case the issue quoted, reproduced from /metrics text as the engines write it
(read through ``map_metrics`` and ``summarize_prefix``, the point's own path):
counters that go backwards (-13%), an engine restart mid-run (drafts halved), a
rate of 167% and a length of 6.0 with 3 speculative tokens, an SGLang length of
-3.5 or 1e308, a series the exposition repeats. Every one failed nothing before.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.speculative import SpeculativeConfig
from inferx_core.metrics.speculative import acceptance_check, bound_speculative
from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.telemetry.engine_metrics import map_metrics
from inferx_core.telemetry.spec_bounds import bound_spec_window
from inferx_core.telemetry.window import summarize_prefix

VLLM = EngineMetricsMap(
    spec_decode_drafts="vllm:spec_decode_num_drafts",
    spec_decode_draft_tokens="vllm:spec_decode_num_draft_tokens",
    spec_decode_accepted_tokens="vllm:spec_decode_num_accepted_tokens",
    spec_decode_accepted_per_position="vllm:spec_decode_num_accepted_tokens_per_pos",
)
SGLANG = EngineMetricsMap(spec_decode_accept_length="sglang:spec_accept_length")
K3 = SpeculativeConfig(method="mtp", num_speculative_tokens=3)
K3_GOLDEN = K3.model_copy(update={"golden_acceptance_length": 2.0})


def vllm_text(drafts: float, tokens: float, accepted: float, per_pos: list[float]) -> str:
    name = "vllm:spec_decode_num_{}_total".format
    lines = [f"# TYPE {name('drafts')} counter", f'{name("drafts")}{{engine="0"}} {drafts}']
    lines += [f"# TYPE {name('draft_tokens')} counter", f"{name('draft_tokens')} {tokens}"]
    lines += [f"# TYPE {name('accepted_tokens')} counter", f"{name('accepted_tokens')} {accepted}"]
    pos = name("accepted_tokens_per_pos")
    lines.append(f"# TYPE {pos} counter")
    lines += [f'{pos}{{engine="0",position="{i}"}} {v}' for i, v in enumerate(per_pos)]
    return "\n".join(lines) + "\n"


def window_of(scrapes: list[tuple[int, str]], names: EngineMetricsMap = VLLM) -> dict:
    rows = [(t, map_metrics(text, names)) for t, text in scrapes]
    spec = summarize_prefix(rows, "engine.", scrapes[0][0], scrapes[-1][0])["spec_decode"]
    json.dumps(spec, allow_nan=False)  # always writable
    return spec


def test_counters_that_go_backwards_never_give_a_negative_rate() -> None:
    """Accepted 200 -> 161 while drafts rose: end minus start said -13%; a drop is a reset."""
    spec = window_of(
        [(0, vllm_text(100, 300, 200, [90, 70, 40])), (10, vllm_text(200, 600, 161, [70, 55, 36]))]
    )
    assert spec["accepted_tokens"] == pytest.approx(161)  # the piece after the reset
    assert spec["acceptance_rate"] is not None and spec["acceptance_rate"] >= 0
    assert all(r is None or 0 <= r <= 1 for r in spec["acceptance_per_position"] or [])


def test_an_engine_restart_mid_run_keeps_the_drafts_before_it() -> None:
    """0 -> 100 drafts, restart (0), -> 100 again: 200 drafts, not 100."""
    before = vllm_text(0, 0, 0, [0, 0, 0])
    peak = vllm_text(100, 300, 100, [50, 30, 20])
    restarted = vllm_text(0, 0, 0, [0, 0, 0])
    spec = window_of([(0, before), (10, peak), (11, restarted), (20, peak)])
    assert (spec["drafts"], spec["draft_tokens"], spec["accepted_tokens"]) == (200, 600, 200)
    assert spec["mean_acceptance_length"] == pytest.approx(2.0)
    assert spec["out_of_bounds"] == {}
    check = acceptance_check({"spec_decode": spec}, K3_GOLDEN)
    assert check is not None and check.passed


def test_a_rate_of_167_percent_and_a_length_of_6_with_k3_fail_without_a_golden_value() -> None:
    spec = window_of([(0, vllm_text(0, 0, 0, [])), (10, vllm_text(100, 300, 500, []))])
    assert spec["acceptance_rate"] is None and spec["mean_acceptance_length"] is None
    assert "in [0, 1]" in spec["out_of_bounds"]["acceptance_rate"]
    assert "1.66" in spec["out_of_bounds"]["acceptance_rate"]
    for spec_config in (K3, K3_GOLDEN.model_copy(update={"golden_acceptance_length": 6.0})):
        check = acceptance_check({"spec_decode": spec}, spec_config)
        assert check is not None and not check.passed and check.severity == "invalidates"
        assert "impossible" in check.why and "acceptance_rate" in check.why


def test_a_length_beyond_k_plus_one_is_out_of_bounds_with_the_runs_own_k() -> None:
    """A window that looks possible alone (5 draft tokens per draft) is not with k = 3."""
    spec = window_of([(0, vllm_text(0, 0, 0, [])), (10, vllm_text(100, 500, 500, []))])
    assert spec["mean_acceptance_length"] == pytest.approx(6.0)  # k unknown here: <= 65
    bounded = bound_speculative({"spec_decode": spec}, K3)["spec_decode"]
    assert bounded["mean_acceptance_length"] is None
    assert "[1, 4] for 3 speculative tokens" in bounded["out_of_bounds"]["mean_acceptance_length"]
    check = acceptance_check({"spec_decode": spec}, K3)
    assert check is not None and not check.passed and "mean_acceptance_length" in check.why


@pytest.mark.parametrize("reading", [-3.5, 1e308, 0.5])
def test_an_sglang_length_out_of_bounds_is_none_and_fails(reading: float) -> None:
    text = f"# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length {reading}\n"
    spec = window_of([(t, text) for t in (0, 5, 10)], SGLANG)
    assert spec["mean_acceptance_length"] is None
    assert "mean_acceptance_length" in spec["out_of_bounds"]
    check = acceptance_check({"spec_decode": spec}, K3)
    assert check is not None and not check.passed and check.severity == "invalidates"
    json.dumps(check.model_dump(), allow_nan=False)


def test_a_gauge_of_1e308_has_no_infinite_mean_anywhere() -> None:
    """Two readings of 1e308 overflow a mean: None with why, never inf in the file."""
    text = "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length 1e308\n"
    rows = [(t, map_metrics(text, SGLANG)) for t in (0, 5, 10)]
    out = summarize_prefix(rows, "engine.", 0, 10)
    gauge = out["spec_decode_accept_length"]
    assert gauge["mean"] is None and "not a finite number" in gauge["why"]
    json.dumps(out, allow_nan=False)


def test_a_repeated_series_does_not_halve_the_per_position_rates() -> None:
    """The exposition repeats the drafts series (same labels): it counts once."""

    def doubled(drafts: float, tokens: float, accepted: float, per_pos: list[float]) -> str:
        text = vllm_text(drafts, tokens, accepted, per_pos)
        return text + f'vllm:spec_decode_num_drafts_total{{engine="0"}} {drafts}\n'

    spec = window_of([(0, doubled(0, 0, 0, [0, 0, 0])), (10, doubled(100, 300, 150, [70, 50, 30]))])
    assert spec["drafts"] == 100
    assert spec["acceptance_per_position"] == pytest.approx([0.7, 0.5, 0.3])
    assert spec["mean_acceptance_length"] == pytest.approx(2.5)


def test_per_position_rates_that_contradict_the_totals_are_none() -> None:
    rising = bound_spec_window(_counters(100, 300, 150, [0.2, 0.6, 0.7]))
    assert rising["acceptance_per_position"] is None
    assert "rise with the position" in rising["out_of_bounds"]["acceptance_per_position"]
    summing = bound_spec_window(_counters(100, 300, 150, [0.7, 0.5, 0.1]))
    assert "not accepted / drafts = 1.5" in summing["out_of_bounds"]["acceptance_per_position"]
    too_many = bound_spec_window(_counters(100, 300, 150, [0.7, 0.5, 0.3]), k=2)
    assert "3 positions for 2" in too_many["out_of_bounds"]["acceptance_per_position"]


def test_a_negative_count_takes_the_figures_derived_from_it() -> None:
    """'rate 60%' beside negative drafts: the drafts and the length and positions fall."""
    window = bound_spec_window(_counters(-5, 300, 180, [0.6]))
    assert window["drafts"] is None and window["mean_acceptance_length"] is None
    assert window["acceptance_per_position"] is None
    assert set(window["out_of_bounds"]) >= {"drafts", "mean_acceptance_length"}


def _counters(drafts: float, tokens: float, accepted: float, per_pos: list[float]) -> dict:
    return {
        "source": "counters",
        "drafts": drafts,
        "draft_tokens": tokens,
        "accepted_tokens": accepted,
        "acceptance_rate": accepted / tokens,
        "mean_acceptance_length": 1 + accepted / drafts,
        "acceptance_per_position": per_pos,
    }


readings = st.lists(
    st.one_of(
        st.floats(-1e308, 1e308, allow_nan=False), st.sampled_from([0.0, math.nan, math.inf])
    ),
    min_size=5,
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(series=st.lists(readings, min_size=2, max_size=6), k=st.integers(1, 5))
def test_whatever_the_counters_say_every_figure_is_in_bounds_or_none(
    series: list[list[float]], k: int
) -> None:
    """drafts, draft tokens, accepted, position 0 and 1: any readings, resets, nan, 1e308."""
    scrapes = [(10 * i, vllm_text(d, t, a, [p0, p1])) for i, (d, t, a, p0, p1) in
               enumerate(series)]  # fmt: skip
    rows = [(t, map_metrics(text, VLLM)) for t, text in scrapes]
    spec = summarize_prefix(rows, "engine.", 0, scrapes[-1][0]).get("spec_decode")
    json.dumps(spec, allow_nan=False)
    if spec is None:
        return
    spec = bound_speculative({"spec_decode": spec}, K3.model_copy(
        update={"num_speculative_tokens": k}))["spec_decode"]  # fmt: skip
    for count in ("drafts", "draft_tokens", "accepted_tokens"):
        assert spec[count] is None or spec[count] >= 0
    assert spec["acceptance_rate"] is None or 0 <= spec["acceptance_rate"] <= 1
    length = spec["mean_acceptance_length"]
    assert length is None or 1 <= length <= k + 1
    rates = spec["acceptance_per_position"]
    if rates and None not in rates:
        assert len(rates) <= k and all(0 <= r <= 1 for r in rates)
    check = acceptance_check({"spec_decode": spec}, K3)
    assert check is not None
    if spec["out_of_bounds"]:
        assert not check.passed and check.severity == "invalidates"
