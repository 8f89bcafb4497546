"""A prompt set that misses its lengths by an order of magnitude is refused before load
(verifier finding F3, issue 39 item 5): an inflating /tokenize left every prompt of a
40-token ISL empty and the point was written ``ok``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.load.prompts.length_check import (
    MAX_LENGTH_RATIO,
    PromptLengthError,
    check_prompt_lengths,
)
from inferx_core.testing import ServerProcess


@dataclass(frozen=True)
class _P:
    prompt_tokens: int
    target_prompt_tokens: int


@given(
    targets=st.lists(st.integers(1, 4096), min_size=1, max_size=50),
    scale=st.floats(0.0, 100.0, allow_nan=False),
)
def test_refused_exactly_when_the_total_is_an_order_of_magnitude_off(
    targets: list[int], scale: float
) -> None:
    prompts = [_P(int(t * scale), t) for t in targets]
    got, want = sum(p.prompt_tokens for p in prompts), sum(targets)
    off = not (want / MAX_LENGTH_RATIO <= got <= want * MAX_LENGTH_RATIO)
    if off:
        with pytest.raises(PromptLengthError, match=r"workload\.token_counter: tok-x"):
            check_prompt_lengths(prompts, "tok-x")
    else:
        check_prompt_lengths(prompts, "tok-x")


def test_a_fitted_set_missing_a_token_here_and_there_passes() -> None:
    check_prompt_lengths([_P(39, 40), _P(41, 40), _P(1, 1)], "hf")
    check_prompt_lengths([], "hf")  # nothing to judge


def test_an_inflating_tokenize_is_refused_before_any_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with ServerProcess(ttft_ms=5, itl_ms=2, tokenize_factor=1000) as server:
        argv = [
            *("bench", "--base-url", server.base_url, "--isl", "40", "--osl", "8"),
            *("--num-prompts", "8", "--concurrency", "2", "--output", str(out)),
            *("--no-telemetry", "--no-progress"),
        ]
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert "workload.token_counter" in err and "/tokenize" in err and "nothing was sent" in err
    # no point, no sidecar: nothing was measured, so nothing claims to be
    assert not list(out.rglob("*.json")) and not list(out.rglob("*.jsonl"))
