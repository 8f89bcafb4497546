"""Prompts for a trace replay: each request's exact input length, and shared prefixes from
Mooncake ``hash_ids``.

A hash block id ``b`` becomes a deterministic block of exactly ``block_tokens``
(512) token ids, drawn from the seed's stream ``(seed, b)`` and made stable
(its text re-encodes to the same ids), so the same id gives the same tokens in
every request and every run with that seed. A request's prompt is its blocks'
ids in order, cut to its input length, then decoded and fitted to exactly that
length by the exact-length machinery of
:func:`~inferx_core.load.prompts.prompt_text.exact_random_texts` (requests longer than
their blocks get unique random tokens after them). Requests whose leading
ids are equal therefore start with the same ``k * block_tokens`` tokens.

Blocks count the prompt's own tokens: what the tokenizer adds around a text
(a BOS) comes before block 0 and is included in the input length, as
everywhere in InferX (``api='completions'``). With ``api='chat'`` the length
counts message content only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inferx_core.load.prompts.prompt_set import (
    PromptSet,
    PromptSpec,
    WorkloadSpec,
    require_decoding,
)
from inferx_core.load.prompts.prompt_text import exact_random_texts, fitted_word_texts, stream_rng
from inferx_core.load.prompts.traces import BLOCK_TOKENS, TraceRequest
from inferx_core.load.tokens.tokenizer import TokenCounter, is_tokenizer

__all__ = ["TracePromptSet", "build_trace_prompt_set", "hash_block_ids"]

_STREAM_HASH_BLOCK = 17  # the seed's stream for hash block contents


@dataclass(slots=True)
class TracePromptSet(PromptSet):
    """A built workload whose prompts come from a trace; ``trace`` describes it."""

    trace: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out = PromptSet.summary(self)
        out["spec"] = dict(self.trace)
        return out


def hash_block_ids(
    tok: Any, block_ids: Sequence[int], seed: int, *, block_tokens: int, max_rounds: int = 16
) -> dict[int, list[int]]:
    """Each block id's ``block_tokens`` token ids: random candidate ids from the stream
    ``(seed, id)``, re-encoded until the ids survive decode + encode unchanged."""
    cand, refill = tok.candidate_ids(), tok.refill_ids()
    special: frozenset[int] = tok.special_ids
    rngs = {b: stream_rng(seed, _STREAM_HASH_BLOCK, b) for b in block_ids}

    def draw(b: int, pool: np.ndarray, k: int) -> list[int]:
        return pool[rngs[b].integers(0, len(pool), size=k)].tolist() if k > 0 else []

    ids = {b: draw(b, cand, block_tokens) for b in rngs}
    pending = list(ids)
    for _ in range(max_rounds):
        if not pending:
            break
        measured = tok.measure_batch(tok.decode_batch([ids[b] for b in pending]))
        unstable = []
        for b, (_, body) in zip(pending, measured, strict=True):
            if body == ids[b]:
                continue
            unstable.append(b)
            if not special.isdisjoint(body):
                ids[b] = draw(b, cand, block_tokens)  # the text spelled a special token
            else:
                ids[b] = body[:block_tokens] + draw(b, refill, block_tokens - len(body))
        pending = unstable
    return ids


def _prefixes(
    tok: Any, requests: Sequence[TraceRequest], seed: int, *, chat: bool, block_tokens: int
) -> list[list[int]]:
    """Each request's block ids laid end to end, cut to its input length (body tokens)."""
    overhead = 0 if chat else int(tok.special_overhead)
    used = sorted({h for r in requests for h in r.hash_ids or ()})
    blocks = hash_block_ids(tok, used, seed, block_tokens=block_tokens)
    out = []
    for r in requests:
        body = max(r.input_tokens - overhead, 0)
        ids: list[int] = []
        for h in r.hash_ids or ():
            if len(ids) >= body:
                break
            ids += blocks[h]
        out.append(ids[:body])
    return out


def _lengths(values: Sequence[int]) -> dict[str, Any]:
    return {
        "semantics": "trace",
        "low": min(values, default=0),
        "high": max(values, default=0),
        "mean": float(np.mean(values)) if values else 0.0,
    }


def _texts(
    counter: TokenCounter,
    requests: Sequence[TraceRequest],
    seed: int,
    *,
    chat: bool,
    block_tokens: int,
    max_rounds: int,
    notes: list[str],
) -> tuple[list[str], list[int]]:
    targets = [r.input_tokens for r in requests]
    with_blocks = any(r.hash_ids for r in requests)
    if is_tokenizer(counter):
        prefixes = _prefixes(counter, requests, seed, chat=chat, block_tokens=block_tokens)
        if with_blocks:
            notes.append(
                f"hash_ids: every id is a block of {block_tokens} tokens; requests with equal "
                "leading ids share those leading tokens"
            )
        return exact_random_texts(
            counter,
            targets,
            seed,
            chat=chat,
            unique_prefix=False,
            max_rounds=max_rounds,
            shared_prefixes=prefixes,
        )
    if with_blocks:
        require_decoding(counter, "a trace with hash_ids")
    notes.append("counter cannot decode token ids: prompts are word text cut to length")
    return fitted_word_texts(counter, targets, seed, chat=chat, unique_prefix=False)


def build_trace_prompt_set(
    requests: Sequence[TraceRequest],
    counter: TokenCounter,
    *,
    seed: int,
    api: str = "completions",
    describe: dict[str, Any] | None = None,
    block_tokens: int = BLOCK_TOKENS,
    max_rounds: int = 16,
) -> TracePromptSet:
    """Prompts of exactly each request's input length, max_tokens its output length."""
    t0 = time.perf_counter()
    chat = api == "chat"
    notes: list[str] = []
    texts, values = _texts(
        counter,
        requests,
        seed,
        chat=chat,
        block_tokens=block_tokens,
        max_rounds=max_rounds,
        notes=notes,
    )
    estimated = counter.source == "estimate"
    prompts = [
        PromptSpec(
            prompt=[{"role": "user", "content": t}] if chat else t,
            prompt_tokens=v,
            target_prompt_tokens=r.input_tokens,
            max_tokens=r.output_tokens,
            estimated=estimated,
        )
        for t, v, r in zip(texts, values, requests, strict=True)
    ]
    misses = [abs(p.miss) for p in prompts if p.miss]
    return TracePromptSet(
        prompts=prompts,
        spec=WorkloadSpec(api="chat" if chat else "completions"),
        seed=seed,
        token_source=counter.source,
        token_counter=counter.description,
        input_lengths=_lengths([r.input_tokens for r in requests]),
        output_lengths=_lengths([r.output_tokens for r in requests]),
        estimated=estimated,
        missed=len(misses),
        max_abs_miss=max(misses, default=0),
        mean_abs_miss=float(np.mean(misses)) if misses else 0.0,
        build_seconds=time.perf_counter() - t0,
        notes=notes,
        trace={**(describe or {}), "block_tokens": block_tokens},
    )
