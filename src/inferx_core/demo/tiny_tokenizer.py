"""The tiny model's tokenizer: a byte-level BPE trained offline on a synthetic corpus.

Part of :mod:`inferx_core.demo.tiny_model` (whose build hash covers this
module's source too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "BOS_TOKEN",
    "CORPUS_SEED",
    "CORPUS_SENTENCES",
    "EOS_TOKEN",
    "PAD_TOKEN",
    "SPECIAL_TOKENS",
    "UNK_TOKEN",
    "VOCAB_SIZE",
    "build_tokenizer",
    "printable_token_mask",
    "synthetic_corpus",
]

#: Special tokens, in id order (ids 0..3).
UNK_TOKEN = "<unk>"
BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
PAD_TOKEN = "<pad>"
SPECIAL_TOKENS: tuple[str, ...] = (UNK_TOKEN, BOS_TOKEN, EOS_TOKEN, PAD_TOKEN)

#: Target tokenizer vocabulary (specials + 256 byte symbols + merges).
VOCAB_SIZE = 4096
#: Seed of the synthetic tokenizer corpus (independent of the weight seed).
CORPUS_SEED = 20240607
CORPUS_SENTENCES = 12_000

_COMMON_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "you",
    "that",
    "it",
    "he",
    "was",
    "for",
    "on",
    "are",
    "as",
    "with",
    "his",
    "they",
    "at",
    "be",
    "this",
    "have",
    "from",
    "or",
    "one",
    "had",
    "by",
    "word",
    "but",
    "not",
    "what",
    "all",
    "were",
    "we",
    "when",
    "your",
    "can",
    "said",
    "there",
    "use",
    "an",
    "each",
    "which",
    "she",
    "do",
    "how",
    "their",
    "if",
    "will",
    "up",
    "other",
    "about",
    "out",
    "many",
    "then",
    "them",
    "these",
    "so",
    "some",
    "her",
    "would",
    "make",
    "like",
    "him",
    "into",
    "time",
    "has",
    "look",
    "two",
    "more",
    "write",
    "go",
    "see",
    "number",
    "no",
    "way",
    "could",
    "people",
    "my",
    "than",
    "first",
    "water",
    "been",
    "call",
    "who",
    "oil",
    "its",
    "now",
    "find",
    "long",
    "down",
    "day",
    "did",
    "get",
    "come",
    "made",
    "may",
    "part",
    "model",
    "token",
    "request",
    "server",
    "latency",
    "throughput",
    "benchmark",
    "prompt",
    "answer",
    "question",
    "hello",
    "world",
    "please",
    "thank",
]
_ONSETS: tuple[str, ...]  # grows below: a tuple of any length
_ONSETS = ("", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z")
_ONSETS += ("br", "ch", "dr", "gl", "kr", "pl", "sh", "st", "th", "tr")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "y")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng")


def synthetic_corpus(n_sentences: int = CORPUS_SENTENCES, seed: int = CORPUS_SEED) -> list[str]:
    """Deterministic pseudo-text: Zipf-weighted made-up words, English fillers, numbers."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n_made_up = 3000
    syllables = [o + n + c for o in _ONSETS for n in _NUCLEI for c in _CODAS]
    counts = rng.integers(1, 4, size=n_made_up, endpoint=True)
    made_up = ["".join(rng.choice(syllables, size=int(k))) for k in counts]
    words = list(_COMMON_WORDS) + made_up
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    weights /= weights.sum()
    lengths = rng.integers(4, 16, size=n_sentences, endpoint=True)
    picks = rng.choice(len(words), size=int(lengths.sum()), p=weights)
    ends = rng.choice([".", ".", ".", "?", "!", ":", ";"], size=n_sentences)
    numbers = rng.integers(0, 100_000, size=n_sentences)
    has_number = rng.random(n_sentences) < 0.2
    has_comma = rng.random(n_sentences) < 0.3
    sentences: list[str] = []
    pos = 0
    for i, n in enumerate(lengths):
        toks = [words[j] for j in picks[pos : pos + n]]
        pos += int(n)
        if has_comma[i] and n > 4:
            toks[int(n) // 2] += ","
        if has_number[i]:
            toks.insert(1, str(int(numbers[i])))
        toks[0] = toks[0].capitalize()
        sentences.append(" ".join(toks) + str(ends[i]))
    return sentences


def build_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(synthetic_corpus(), trainer=trainer)
    bos_id = tok.token_to_id(BOS_TOKEN)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS_TOKEN} $A",
        pair=f"{BOS_TOKEN} $A {BOS_TOKEN} $B",
        special_tokens=[(BOS_TOKEN, bos_id)],
    )
    return tok


def printable_token_mask(tok: Any) -> np.ndarray:
    """True for ids whose text alone is non-empty printable ASCII (or tab/newline).

    False for special tokens (skipped when decoding) and for the lone bytes
    ``>= 0x80`` of the byte-level alphabet, which decode to nothing until a
    UTF-8 sequence completes.
    """
    ok = set(map(chr, range(0x20, 0x7F))) | {"\n", "\t"}
    n = tok.get_vocab_size(with_added_tokens=True)
    texts = [tok.decode([i], skip_special_tokens=True) for i in range(n)]
    return np.array([bool(t) and set(t) <= ok for t in texts], dtype=bool)
