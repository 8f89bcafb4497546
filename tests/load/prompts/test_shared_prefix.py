"""Shared-prefix workloads: groups of prompts that start with the same tokens, exact lengths."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.load.prompts.prompt_set import WorkloadSpec, build_prompt_set
from inferx_core.load.tokens.tokenizer import LocalTokenizer


@pytest.fixture(scope="session")
def local(hf_tok: Any) -> LocalTokenizer:
    return LocalTokenizer(hf_tok, "test-bpe")


def _ids(hf_tok: Any, prompt: Any) -> list[int]:
    text = prompt if isinstance(prompt, str) else prompt[0]["content"]
    return hf_tok.encode(text, add_special_tokens=False).ids


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prefix=st.integers(8, 48),
    groups=st.integers(1, 3),
    extra=st.integers(4, 40),
    api=st.sampled_from(["completions", "chat"]),
)
def test_groups_share_their_prefix_and_lengths_stay_exact(
    local: LocalTokenizer, hf_tok: Any, prefix: int, groups: int, extra: int, api: str
) -> None:
    spec = WorkloadSpec(
        isl=prefix + extra, osl=4, semantics="fixed", api=api, shared_prefix=prefix,
        prefix_groups=groups,
    )  # fmt: skip
    w = build_prompt_set(spec, local, 6, seed=3)
    assert w.missed == 0  # every prompt exactly isl tokens, as without a prefix
    ids = [_ids(hf_tok, p.prompt) for p in w]
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            common = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            shared = min(len(a), len(b)) if common is None else common
            if i % groups == j % groups:
                assert shared >= prefix - 1  # the group's tokens (a boundary token may merge)
            elif i != j:
                assert shared < prefix // 2  # other groups start differently
    assert any("shared prefixes" in n for n in w.notes)


def test_a_shared_prefix_without_a_tokenizer_is_refused() -> None:
    from inferx_core.load.tokens.counter import EstimateCounter

    spec = WorkloadSpec(isl=64, osl=4, shared_prefix=32)
    with pytest.raises(ValueError, match="needs the model's tokenizer"):
        build_prompt_set(spec, EstimateCounter(), 2, seed=0)
