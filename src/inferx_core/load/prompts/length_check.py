"""Refuse a prompt set that misses its lengths by an order of magnitude, before any load.

A counter that counts wrong (a server's ``/tokenize`` that inflates every count, a
tokenizer of another model) makes the builder cut prompts to fit counts that are not
the engine's: an inflating ``/tokenize`` left every prompt EMPTY for an ISL of 40, and
the point was written ``ok`` (the client's and the server's counts agree at 0). The
builder's own misses say it: the prompts it built hold, in all, under a tenth or over
ten times the tokens drawn for them. Such a set is not the workload asked for; no
run of it measures that workload, so it is refused naming the counter and the miss
(docs/metrics.md, "Prompt lengths").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from inferx_core.errors import UserFacingError

__all__ = ["MAX_LENGTH_RATIO", "PromptLengthError", "check_prompt_lengths"]

#: The prompts' total tokens may be at most this many times the targets' total, and at
#: least its inverse: a fitted prompt misses by a token or a few words, never 10x.
MAX_LENGTH_RATIO = 10.0


class PromptLengthError(UserFacingError, ValueError):
    """The built prompts miss their target lengths by an order of magnitude or more."""


class _Sized(Protocol):
    @property
    def prompt_tokens(self) -> int: ...

    @property
    def target_prompt_tokens(self) -> int: ...


def check_prompt_lengths(prompts: Sequence[_Sized], counter: str) -> None:
    """Raise :class:`PromptLengthError` when ``prompts`` hold in all under 1/10 or over 10
    times their targets' tokens (``counter``: the counter's description, named)."""
    target = sum(max(p.target_prompt_tokens, 0) for p in prompts)
    got = sum(max(p.prompt_tokens, 0) for p in prompts)
    if target <= 0 or target / MAX_LENGTH_RATIO <= got <= target * MAX_LENGTH_RATIO:
        return
    empty = sum(1 for p in prompts if p.prompt_tokens <= 0)
    raise PromptLengthError(
        f"the {len(prompts)} prompts built hold {got} tokens for the {target} drawn as their "
        f"lengths ({empty} empty), more than {MAX_LENGTH_RATIO:g}x off: the token counter "
        f"(workload.token_counter: {counter}) does not count as the engine does (an "
        "inflating /tokenize, another model's tokenizer); nothing was sent. Fix: give the "
        "model's tokenizer (--tokenizer, workload.tokenizer) or a server whose /tokenize "
        "counts as it serves"
    )
