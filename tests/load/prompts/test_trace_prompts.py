"""Trace prompts: exact input lengths, and Mooncake hash_ids reproduced as shared prefixes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.load.prompts.trace_prompts import build_trace_prompt_set, hash_block_ids
from inferx_core.load.prompts.traces import TraceRequest
from inferx_core.load.tokens.counter import EstimateCounter
from inferx_core.load.tokens.tokenizer import LocalTokenizer


@pytest.fixture(scope="session")
def local(hf_tok: Any) -> LocalTokenizer:
    return LocalTokenizer(hf_tok, "test-bpe")


def _ids(hf_tok: Any, prompt: Any) -> list[int]:
    text = prompt if isinstance(prompt, str) else prompt[0]["content"]
    return hf_tok.encode(text, add_special_tokens=False).ids


def _shared(a: list[int], b: list[int]) -> int:
    return next(
        (k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _leading_equal(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    return next(
        (k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


BLOCK = 12


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    hash_lists=st.lists(
        st.lists(st.integers(0, 5), min_size=1, max_size=4), min_size=2, max_size=6
    ),
    cuts=st.lists(st.integers(0, BLOCK - 1), min_size=6, max_size=6),
    api=st.sampled_from(["completions", "chat"]),
)
def test_equal_leading_hash_ids_share_exactly_those_tokens(
    local: LocalTokenizer, hf_tok: Any, hash_lists: list[list[int]], cuts: list[int], api: str
) -> None:
    overhead = 0 if api == "chat" else 1  # the fixture tokenizer adds a BOS
    # input lengths: all blocks, the last one cut short by cuts[i] tokens
    reqs = [
        TraceRequest(i, len(h) * BLOCK - cuts[i] + overhead, 3, tuple(h))
        for i, h in enumerate(hash_lists)
    ]
    w = build_trace_prompt_set(reqs, local, seed=5, api=api, block_tokens=BLOCK)
    assert w.missed == 0
    assert [p.prompt_tokens for p in w] == [r.input_tokens for r in reqs]
    assert [p.max_tokens for p in w] == [3] * len(reqs)
    ids = [_ids(hf_tok, p.prompt) for p in w]
    for a, ia in zip(reqs, ids, strict=True):
        for b, ib in zip(reqs, ids, strict=True):
            k = _leading_equal(a.hash_ids, b.hash_ids)  # type: ignore[arg-type]
            shared = _shared(ia, ib)
            assert shared >= min(k * BLOCK, len(ia), len(ib))
            if k < min(len(ia), len(ib)) // BLOCK:  # block k is whole in both and differs
                assert shared < (k + 1) * BLOCK
    assert any("hash_ids" in n for n in w.notes)


def test_a_block_is_the_same_tokens_whatever_else_the_trace_holds(local: LocalTokenizer) -> None:
    alone = hash_block_ids(local, [7], seed=1, block_tokens=512)
    among = hash_block_ids(local, [3, 7, 9], seed=1, block_tokens=512)
    assert alone[7] == among[7] and len(alone[7]) == 512
    assert among[3] != among[7]
    assert hash_block_ids(local, [7], seed=2, block_tokens=512)[7] != alone[7]  # seeded
    text = local.decode(alone[7])
    assert local.encode(text) == alone[7]  # stable: the text re-encodes to the same ids


def test_default_blocks_are_512_tokens_and_a_long_request_gets_a_unique_tail(
    local: LocalTokenizer, hf_tok: Any
) -> None:
    reqs = [TraceRequest(0, 1200, 4, (1, 2)), TraceRequest(1, 1300, 4, (1, 2))]
    w = build_trace_prompt_set(reqs, local, seed=0)
    assert [p.prompt_tokens for p in w] == [1200, 1300]
    a, b = (_ids(hf_tok, p.prompt) for p in w)
    assert _shared(a, b) >= 1024  # both blocks
    assert _shared(a, b) < 1024 + 16  # then each its own tokens
    assert w.summary()["spec"]["block_tokens"] == 512


def test_hash_ids_without_a_tokenizer_are_refused_plain_lengths_are_not() -> None:
    est = EstimateCounter()
    with pytest.raises(ValueError, match="needs the model's tokenizer"):
        build_trace_prompt_set([TraceRequest(0, 600, 4, (1, 2))], est, seed=0)
    w = build_trace_prompt_set([TraceRequest(0, 64, 4), TraceRequest(1, 32, 2)], est, seed=0)
    assert w.estimated and [p.max_tokens for p in w] == [4, 2]
    assert [p.target_prompt_tokens for p in w] == [64, 32]


def test_requests_without_hash_ids_are_exact_random_prompts(local: LocalTokenizer) -> None:
    reqs = [TraceRequest(i, n, 1) for i, n in enumerate((5, 77, 300))]
    w = build_trace_prompt_set(reqs, local, seed=0, api="chat")
    assert w.missed == 0 and [p.prompt_tokens for p in w] == [5, 77, 300]
    assert w.prompts[0].prompt[0]["role"] == "user"  # type: ignore[index]
    assert w.input_lengths == {"semantics": "trace", "low": 5, "high": 300, "mean": 382 / 3}
