"""Random prompt text fitted to a target token length.

Two ways, chosen by what the counter can do:

* :func:`exact_random_texts` (a tokenizer that decodes): seeded random token
  ids -> decode -> re-encode, then trim or extend each prompt and re-check
  until its measured length equals the target (bounded rounds; the closest
  attempt is kept, a miss is the caller's to record).
* :func:`fitted_word_texts` (a counter that only counts): random word text
  cut on a character, searched per prompt for the cut whose count reaches
  the target.

Prompt ``i`` depends only on ``(seed, i)`` and its target length: every prompt
draws from its own random stream (:func:`stream_rng`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from inferx_core.load.tokens.tokenizer import TokenCounter

__all__ = [
    "STREAM_INPUT",
    "STREAM_OUTPUT",
    "content_values",
    "exact_random_texts",
    "fitted_word_texts",
    "stream_rng",
]

# independent random streams derived from the seed
STREAM_INPUT = 0
STREAM_OUTPUT = 1
_STREAM_PROMPT = 2
_STREAM_TEXT = 3


def stream_rng(seed: int, *stream: int) -> np.random.Generator:
    """The random stream ``stream`` (e.g. ``STREAM_INPUT``, or prompt ``i``) of ``seed``."""
    return np.random.default_rng([seed, *stream])


def content_values(counter: TokenCounter, texts: Sequence[str], chat: bool) -> list[int]:
    """Token counts used as the length: with specials (completions) or content only (chat)."""
    if chat and callable(getattr(type(counter), "encode_batch", None)):
        return [len(x) for x in counter.encode_batch(list(texts))]  # type: ignore[attr-defined]  # probed above
    return counter.count_batch(list(texts))


# --------------------------------------------------------------------------
# exact: random token ids, fixed up until the tokenizer's count hits the target


class _ExactFit:
    """Every prompt's current ids, best and last attempt while fitting exact lengths."""

    def __init__(
        self,
        tok: Any,
        targets: Sequence[int],
        seed: int,
        *,
        chat: bool,
        unique_prefix: bool,
        shared_prefixes: Sequence[list[int]] | None = None,
    ) -> None:
        n = len(targets)
        self.tok = tok
        self.targets = list(targets)
        self.chat = chat
        self.cand = tok.candidate_ids()
        self.refill = tok.refill_ids()
        self.special: frozenset[int] = tok.special_ids
        overhead = 0 if chat else int(tok.special_overhead)
        self.rngs = [stream_rng(seed, _STREAM_PROMPT, i) for i in range(n)]
        self.body_targets = [max(0, t - overhead) for t in targets]
        self.prefixes: list[list[int]] = [[] for _ in range(n)]
        if unique_prefix and n:
            enc = tok.encode_batch([f"[{seed}-{i}]" for i in range(n)])
            self.prefixes = [
                e if len(e) < bt else [] for e, bt in zip(enc, self.body_targets, strict=True)
            ]
        if shared_prefixes is not None:
            # every prompt starts with its group's ids; fitting trims and extends after them
            self.prefixes = [list(ids) for ids in shared_prefixes]
        self.ids: list[list[int]] = [self._restart(i) for i in range(n)]
        self.best_text: list[str | None] = [None] * n
        self.best_val: list[int] = [0] * n
        self.last_text: list[str] = [""] * n
        self.last_val: list[int] = [0] * n
        self.tries: list[int] = [0] * n

    def _fresh(self, i: int, k: int) -> list[int]:
        if k <= 0:
            return []
        return self.cand[self.rngs[i].integers(0, len(self.cand), size=k)].tolist()

    def _more(self, i: int, k: int) -> list[int]:
        if k <= 0:
            return []
        return self.refill[self.rngs[i].integers(0, len(self.refill), size=k)].tolist()

    def _restart(self, i: int) -> list[int]:
        return self.prefixes[i] + self._fresh(i, self.body_targets[i] - len(self.prefixes[i]))

    def run(self, max_rounds: int) -> tuple[list[str], list[int]]:
        pending = list(range(len(self.targets)))
        for _ in range(max_rounds):
            if not pending:
                break
            texts = self.tok.decode_batch([self.ids[i] for i in pending])
            measured = self.tok.measure_batch(texts)
            pending = [
                i
                for i, text, (count, body) in zip(pending, texts, measured, strict=True)
                if self._update(i, text, count, body)
            ]
        return self._results()

    def _update(self, i: int, text: str, count: int, body: list[int]) -> bool:
        """Record one measurement of prompt ``i``; True when it needs another round."""
        val = len(body) if self.chat else count
        self.last_text[i], self.last_val[i] = text, val
        if not self.special.isdisjoint(body):
            # the decoded text spells a special token: start this prompt over
            self.ids[i] = self._restart(i)
            return True
        diff = val - self.targets[i]
        if self.best_text[i] is None or abs(diff) < abs(self.best_val[i] - self.targets[i]):
            self.best_text[i], self.best_val[i] = text, val
        if diff == 0 or (diff > 0 and not body):
            return False  # hit, or too short a target for the added specials
        self.tries[i] += 1
        if diff > 0:
            # After a failed trim, cut deeper and refill with fresh ids: a
            # cut inside a multi-byte character or a word re-encodes longer
            # and plain trimming would cycle.
            want = len(body) - diff
            keep = max(min(len(self.prefixes[i]), want), want - (self.tries[i] - 1))
            self.ids[i] = body[:keep] + self._more(i, want - keep)
        else:
            self.ids[i] = body + self._more(i, -diff)
        return True

    def _results(self) -> tuple[list[str], list[int]]:
        out_texts: list[str] = []
        out_vals: list[int] = []
        for i, best in enumerate(self.best_text):
            if best is None:
                out_texts.append(self.last_text[i])
                out_vals.append(self.last_val[i])
            else:
                out_texts.append(best)
                out_vals.append(self.best_val[i])
        return out_texts, out_vals


def exact_random_texts(
    tok: Any,
    targets: Sequence[int],
    seed: int,
    *,
    chat: bool,
    unique_prefix: bool,
    max_rounds: int,
    shared_prefixes: Sequence[list[int]] | None = None,
) -> tuple[list[str], list[int]]:
    """Random-token texts whose measured length equals each target when possible;
    ``shared_prefixes[i]``: token ids prompt ``i`` starts with (a prefix-cache workload)."""
    fit = _ExactFit(
        tok, targets, seed, chat=chat, unique_prefix=unique_prefix, shared_prefixes=shared_prefixes
    )
    return fit.run(max_rounds)


# --------------------------------------------------------------------------
# count-only: random words cut to length

_WORDS_TEXT = (
    "time year people way day man thing woman life child world school state family student "
    "group country problem hand part place case week company system program question work "
    "government number night point home water room mother area money story fact month lot "
    "right study book eye job word business issue side kind head house service friend father "
    "power hour game line end member law car city community name president team minute idea "
    "kid body information back parent face others level office door health person art war "
    "history party result change morning reason research girl guy moment air teacher force "
    "education foot boy age policy music market sense nation plan college interest death "
    "experience effect use class control care field development role effort rate heart drug "
    "show leader light voice wife police mind price report decision son view relationship town "
    "road arm difference value building action model season society tax director position "
    "player record paper space ground form event official matter center couple site project "
    "activity star table need court oil situation cost industry figure street image phone data "
    "picture practice piece land product doctor wall patient worker news test movie north love "
    "support technology step baby computer type attention film tree source organization hair "
    "window evidence population site network bank green blue quick slow bright open simple"
)
_WORDS = tuple(_WORDS_TEXT.split())
_WORD_ARRAY = np.asarray(_WORDS)
_GROW_ROUNDS = 11  # rounds of appending words to texts still shorter than their target


def _word_text(seed: int, i: int, rnd: int, k: int) -> str:
    """``k`` random words for prompt ``i``, round ``rnd``."""
    pick = stream_rng(seed, _STREAM_TEXT, i, rnd).integers(0, len(_WORD_ARRAY), k)
    return " ".join(_WORD_ARRAY[pick].tolist())


def _long_word_texts(
    counter: TokenCounter, targets: Sequence[int], seed: int, *, chat: bool, unique_prefix: bool
) -> tuple[list[str], list[int]]:
    """Word texts at least as long as their targets (when the rounds allow), with counts."""
    texts = [
        (f"[{seed}-{i}] " if unique_prefix else "")
        + _word_text(seed, i, 0, max(8, int(t * 1.5) + 8))
        for i, t in enumerate(targets)
    ]
    values = content_values(counter, texts, chat)
    for rnd in range(1, _GROW_ROUNDS + 1):
        short = [i for i in range(len(targets)) if values[i] < targets[i]]
        if not short:
            break
        for i in short:
            texts[i] += " " + _word_text(seed, i, rnd, max(8, 2 * (targets[i] - values[i]) + 8))
        grown = content_values(counter, [texts[i] for i in short], chat)
        for i, v in zip(short, grown, strict=True):
            values[i] = v
    return texts, values


class _CutSearch:
    """Per prompt, a bracket ``[lo, hi]`` of character cuts around its target count.

    ``vlo < target <= vhi`` are the counts of ``text[:lo]`` and ``text[:hi]``.
    Each round narrows every open bracket at once (one batch call):
    interpolation first, bisection when a round made poor progress.
    """

    def __init__(
        self,
        counter: TokenCounter,
        texts: list[str],
        values: list[int],
        targets: Sequence[int],
        *,
        chat: bool,
    ) -> None:
        n = len(targets)
        self.counter = counter
        self.chat = chat
        self.texts = texts
        self.targets = list(targets)
        self.empty = content_values(counter, [""], self.chat)[0] if n else 0
        self.lo, self.vlo = [0] * n, [self.empty] * n
        self.hi, self.vhi = [len(s) for s in texts], list(values)
        for i in range(n):
            if self.empty >= targets[i]:  # even the empty prompt reaches the target
                self.hi[i], self.vhi[i] = 0, self.empty
        self.bisect = [False] * n

    def _open(self) -> list[int]:
        return [
            i
            for i in range(len(self.targets))
            if self.hi[i] - self.lo[i] > 1 and self.vhi[i] >= self.targets[i] > self.vlo[i]
        ]

    def _next_cut(self, i: int) -> int:
        lo, hi, vlo, vhi = self.lo[i], self.hi[i], self.vlo[i], self.vhi[i]
        if self.bisect[i] or vhi == vlo:
            m = (lo + hi) // 2
        else:
            frac = (self.targets[i] - 0.5 - vlo) / (vhi - vlo)
            m = lo + round(frac * (hi - lo))
        return min(max(m, lo + 1), hi - 1)

    def run(self) -> None:
        while active := self._open():
            cuts = [self._next_cut(i) for i in active]
            pieces = [self.texts[i][:m] for i, m in zip(active, cuts, strict=True)]
            counts = content_values(self.counter, pieces, self.chat)
            for i, m, v in zip(active, cuts, counts, strict=True):
                width = self.hi[i] - self.lo[i]
                if v >= self.targets[i]:
                    self.hi[i], self.vhi[i] = m, v
                else:
                    self.lo[i], self.vlo[i] = m, v
                self.bisect[i] = (self.hi[i] - self.lo[i]) * 2 > width  # poor progress

    def closer_sides(self) -> tuple[list[str], list[int]]:
        """Each prompt cut at whichever end of its bracket is closer to the target."""
        out_t: list[str] = []
        out_v: list[int] = []
        for i, target in enumerate(self.targets):
            if self.vhi[i] - target <= target - self.vlo[i]:
                out_t.append(self.texts[i][: self.hi[i]])
                out_v.append(self.vhi[i])
            else:
                out_t.append(self.texts[i][: self.lo[i]])
                out_v.append(self.vlo[i])
        return out_t, out_v


def fitted_word_texts(
    counter: TokenCounter,
    targets: Sequence[int],
    seed: int,
    *,
    chat: bool,
    unique_prefix: bool,
) -> tuple[list[str], list[int]]:
    """Count-only path: random word text cut on a character to the target count.

    Searches the cut per prompt (interpolation with bisection as a safeguard,
    all prompts in lockstep so each round is one batch call) for the shortest
    prefix whose count reaches the target; keeps the closer of the two sides.
    """
    texts, values = _long_word_texts(counter, targets, seed, chat=chat, unique_prefix=unique_prefix)
    search = _CutSearch(counter, texts, values, targets, chat=chat)
    search.run()
    return search.closer_sides()
