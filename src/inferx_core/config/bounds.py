"""Upper bounds of the counts a config or a flag may ask for, shared by both.

A count past these is a typo or a unit mistake (``1e13`` prompts), never a
benchmark: it is refused with the limit before anything is allocated, instead
of a memory error or a run that cannot end. The numbers are documented in
``inferx docs configuration`` and the flags' help.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "DATASET_LINE_BYTES",
    "MAX_CONCURRENCY",
    "MAX_PROMPTS",
    "MAX_REPEATS",
    "MAX_SEED",
    "MAX_TOKENS",
    "MAX_TURNS",
    "check_prompts_per_point",
]

#: Prompts one point builds (measured or warmup); each is held in memory as text.
MAX_PROMPTS = 1_000_000
#: Requests in flight (closed loop or an open loop's cap); each holds a socket.
MAX_CONCURRENCY = 100_000
#: Tokens of one length (isl, osl, a shared prefix, a context length): past any
#: model's context window.
MAX_TOKENS = 10_000_000
#: Turns of one multi-turn session.
MAX_TURNS = 10_000
#: Runs of every point.
MAX_REPEATS = 1_000
#: Seeds are numpy's: non-negative and at most 64 bits.
MAX_SEED = 2**64 - 1
#: A dataset line (or one record's prompt) longer than this is refused, naming it, before
#: it is parsed or tokenized: a million-token prompt is ~4 MB of text.
DATASET_LINE_BYTES = 16 * 2**20


def _default_prompts(load: Any, level: str, value: float) -> tuple[float, str]:
    ppc = load.prompts_per_concurrency
    if level == "concurrency":
        return ppc * value, f"prompts_per_concurrency {ppc} x concurrency {value:g}"
    return max(20, ppc * value), f"prompts_per_concurrency {ppc} x request_rate {value:g}"


def check_prompts_per_point(load: Any) -> None:
    """A ``ValueError`` when a level's default prompt count (``prompts_per_concurrency`` x
    the level, used without ``num_prompts``) is over :data:`MAX_PROMPTS`."""
    if load.num_prompts is not None:
        return
    levels = [("concurrency", c) for c in load.concurrency or []]
    levels += [("request_rate", r) for r in load.request_rate or [] if math.isfinite(r)]
    for level, value in levels:
        prompts, why = _default_prompts(load, level, value)
        if prompts > MAX_PROMPTS:
            raise ValueError(
                f"{why} makes {prompts:.3g} prompts, over the limit of {MAX_PROMPTS} per point; "
                "set num_prompts (or lower the level)"
            )
