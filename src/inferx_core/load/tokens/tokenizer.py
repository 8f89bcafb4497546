"""Tokenizers: the counter contract, the shared machinery and the local tokenizer.json.

Conventions shared by every counter: ``count(text)`` is the number of tokens
the engine sees for ``text`` sent as a completions prompt, *including* the
special tokens the tokenizer adds (e.g. BOS). ``encode(text)`` returns the ids
*without* those added tokens, and ``decode(ids)`` is its inverse.

The engine's own endpoints are :mod:`inferx_core.load.tokens.server_tokenizer`; the
estimate and the choice between the three sources are
:mod:`inferx_core.load.tokens.counter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from inferx_core.errors import UserFacingError

TokenSource = Literal["server", "local", "estimate"]
EstimateMethod = Literal["chars", "words"]


class TokenizerError(UserFacingError):
    """A tokenizer source failed (unreachable server, bad file, bad reply); its message
    names the source, so the CLI prints it as one line, not a traceback."""


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that can count tokens, and says where its counts come from."""

    @property
    def source(self) -> TokenSource: ...

    @property
    def description(self) -> str: ...

    def count(self, text: str) -> int:
        """Tokens in ``text`` as a completions prompt (added special tokens included)."""
        ...

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """``count`` for many texts, in order."""
        ...


@runtime_checkable
class Tokenizer(TokenCounter, Protocol):
    """A counter that can also encode and decode (server or local sources)."""

    @property
    def vocab_size(self) -> int | None: ...

    @property
    def can_decode(self) -> bool: ...

    @property
    def special_ids(self) -> frozenset[int]: ...

    @property
    def special_overhead(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...

    def decode_batch(self, ids: Sequence[Sequence[int]]) -> list[str]: ...

    def measure_batch(self, texts: Sequence[str]) -> list[tuple[int, list[int]]]: ...

    def candidate_ids(self) -> np.ndarray: ...

    def refill_ids(self) -> np.ndarray: ...


_TOKENIZER_METHODS = (
    "encode_batch",
    "decode_batch",
    "measure_batch",
    "candidate_ids",
    "refill_ids",
)


def is_tokenizer(counter: object) -> bool:
    """True when ``counter`` implements :class:`Tokenizer` and can decode.

    Checks the class, not the instance: ``isinstance`` against a runtime
    protocol would evaluate properties (and make HTTP calls) on Python 3.11.
    """
    cls = type(counter)
    if not all(callable(getattr(cls, m, None)) for m in _TOKENIZER_METHODS):
        return False
    return bool(getattr(counter, "can_decode", False))


# --------------------------------------------------------------------------
# shared machinery


_AFFIX_PROBES = ("Hello world, 123 tokens!", "x")


class TokenizerBase:
    """count/encode/decode/measure built on two primitives per source.

    Shared by :class:`LocalTokenizer` and
    :class:`~inferx_core.load.tokens.server_tokenizer.ServerTokenizer`.
    """

    _affix_cache: tuple[int, int] | Literal["unset"] | None = "unset"
    candidate_pool: str = "not computed"  # what candidate_ids() draws from

    # primitives ------------------------------------------------------------
    def _tokenize_many(self, texts: Sequence[str], add_special: bool) -> list[list[int]]:
        raise NotImplementedError

    def _detokenize_many(self, ids: Sequence[Sequence[int]]) -> list[str]:
        raise NotImplementedError

    # public API -------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without added special tokens."""
        return self._tokenize_many([text], False)[0]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode`` for many texts, in order."""
        return self._tokenize_many(list(texts), False)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (special tokens kept)."""
        return self._detokenize_many([list(ids)])[0]

    def decode_batch(self, ids: Sequence[Sequence[int]]) -> list[str]:
        """``decode`` for many id lists, in order."""
        return self._detokenize_many([list(x) for x in ids])

    def count(self, text: str) -> int:
        """Tokens the engine sees for ``text`` (added special tokens included)."""
        return len(self._tokenize_many([text], True)[0])

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """``count`` for many texts, in order."""
        return [len(t) for t in self._tokenize_many(list(texts), True)]

    @property
    def special_overhead(self) -> int:
        """Tokens the tokenizer adds around any text (e.g. 1 for a BOS)."""
        aff = self._affix()
        if aff is not None:
            return aff[0] + aff[1]
        return self.count(_AFFIX_PROBES[0]) - len(self.encode(_AFFIX_PROBES[0]))

    def _affix(self) -> tuple[int, int] | None:
        """(#tokens added before, #after) the text, or None if not separable."""
        if self._affix_cache != "unset":
            return self._affix_cache
        result: tuple[int, int] | None = None
        found: set[tuple[int, int]] = set()
        withs = self._tokenize_many(list(_AFFIX_PROBES), True)
        withouts = self._tokenize_many(list(_AFFIX_PROBES), False)
        for full, plain in zip(withs, withouts, strict=True):
            pos = _find_sub(full, plain)
            if pos is None:
                found.add((-1, -1))
            else:
                found.add((pos, len(full) - pos - len(plain)))
        if len(found) == 1 and (-1, -1) not in found:
            result = found.pop()
        self._affix_cache = result
        return result

    def _affix_ids(self) -> set[int]:
        aff = self._affix()
        if aff is None:
            return set()
        full = self._tokenize_many([_AFFIX_PROBES[1]], True)[0]
        p, s = aff
        return set(full[:p]) | set(full[len(full) - s :])

    def measure_batch(self, texts: Sequence[str]) -> list[tuple[int, list[int]]]:
        """``(count(text), encode(text))`` per text, in as few passes as possible."""
        texts = list(texts)
        full = self._tokenize_many(texts, True)
        aff = self._affix()
        if aff is None:
            bodies = self._tokenize_many(texts, False)
        else:
            p, s = aff
            bodies = [t[p : len(t) - s] for t in full]
        return [(len(f), b) for f, b in zip(full, bodies, strict=True)]


_STABLE_MIN = 256  # fewer word-start tokens than this: use the whole vocabulary


def choose_pools(tok: TokenizerBase, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split ``ids`` into the pool random prompts start from and the refill pool.

    *Clean* ids decode on their own to text without U+FFFD (no partial UTF-8)
    and re-encode to themselves. *Word-start* ids are clean ids that decode to
    one space-led word: concatenating them re-encodes to the same ids with
    byte-level BPE tokenizers (Llama 3, Qwen, DeepSeek, GPT-style), so prompts
    built from them hit their length on the first pass. When too few exist
    (e.g. SentencePiece), prompts start from every id and the length fix
    refills with clean ids.
    """
    id_list = [int(i) for i in ids]
    texts = tok._detokenize_many([[i] for i in id_list])
    maybe = [(i, s) for i, s in zip(id_list, texts, strict=True) if s and "\ufffd" not in s]
    encoded = tok._tokenize_many([s for _, s in maybe], False) if maybe else []
    clean = [(i, s) for (i, s), e in zip(maybe, encoded, strict=True) if e == [i]]
    words = [
        i for i, s in clean if len(s) >= 2 and s[0] == " " and not any(c.isspace() for c in s[1:])
    ]
    if len(words) >= max(_STABLE_MIN, len(id_list) // 20):
        tok.candidate_pool = f"{len(words)} word-start ids of {len(id_list)} non-special ids"
        arr = np.asarray(words, dtype=np.int64)
        return arr, arr
    tok.candidate_pool = f"all {len(id_list)} non-special ids"
    refill = np.asarray([i for i, _ in clean], dtype=np.int64) if len(clean) >= 16 else ids
    return ids, refill


def _find_sub(seq: Sequence[int], sub: Sequence[int]) -> int | None:
    n, m = len(seq), len(sub)
    for i in range(n - m + 1):
        if list(seq[i : i + m]) == list(sub):
            return i
    return None


# --------------------------------------------------------------------------
# local tokenizer.json


class LocalTokenizer(TokenizerBase):
    """A ``tokenizers.Tokenizer`` (usually a model's ``tokenizer.json``)."""

    def __init__(self, tokenizer: Any, path: str | Path | None = None) -> None:
        self._tok = tokenizer
        # Some tokenizer.json files ship truncation/padding settings: counting
        # must see the whole text and nothing else.
        self._tok.no_truncation()
        self._tok.no_padding()
        self._path = str(path) if path is not None else None
        self._encode_fast = getattr(self._tok, "encode_batch_fast", None)
        self._special: frozenset[int] | None = None
        self._candidates: np.ndarray | None = None
        self._refill: np.ndarray | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> LocalTokenizer:
        """Load ``path`` (a tokenizer.json, or a directory that holds one)."""
        p = Path(path)
        if p.is_dir():
            p = p / "tokenizer.json"
        if not p.is_file():
            raise TokenizerError(f"no tokenizer file at {p}")
        try:
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError as exc:  # pragma: no cover - dependency present in dev
            raise TokenizerError("the 'tokenizers' package is not installed") from exc
        try:
            tok = HFTokenizer.from_file(str(p))
        except Exception as exc:  # the Rust side raises plain Exception
            raise TokenizerError(f"cannot load tokenizer file {p}: {exc}") from exc
        return cls(tok, p)

    @property
    def source(self) -> TokenSource:
        return "local"

    @property
    def description(self) -> str:
        return f"local tokenizer {self._path or '<in-memory>'}"

    @property
    def vocab_size(self) -> int:
        return int(self._tok.get_vocab_size(with_added_tokens=True))

    @property
    def can_decode(self) -> bool:
        return True

    @property
    def special_ids(self) -> frozenset[int]:
        """Added tokens (special or not) plus the ids the post-processor adds."""
        if self._special is None:
            ids = set(int(i) for i in self._tok.get_added_tokens_decoder())
            ids |= self._affix_ids()
            self._special = frozenset(ids)
        return self._special

    @property
    def special_overhead(self) -> int:
        return int(self._tok.num_special_tokens_to_add(False))

    def candidate_ids(self) -> np.ndarray:
        """Sorted ids safe for random prompts: the base vocabulary minus special ids."""
        if self._candidates is None:
            vocab = self._tok.get_vocab(with_added_tokens=False)
            special = self.special_ids
            ids = sorted(int(i) for i in vocab.values() if int(i) not in special)
            if not ids:
                raise TokenizerError("tokenizer has no non-special tokens")
            self._candidates, self._refill = choose_pools(self, np.asarray(ids, dtype=np.int64))
        return self._candidates

    def refill_ids(self) -> np.ndarray:
        """Ids the length fix appends: word-start ids, else clean ids."""
        self.candidate_ids()
        assert self._refill is not None
        return self._refill

    def _tokenize_many(self, texts: Sequence[str], add_special: bool) -> list[list[int]]:
        if not texts:
            return []
        if self._encode_fast is not None:
            encs = self._encode_fast(list(texts), add_special_tokens=add_special)
        else:  # pragma: no cover - older tokenizers
            encs = self._tok.encode_batch(list(texts), add_special_tokens=add_special)
        return [e.ids for e in encs]

    def _detokenize_many(self, ids: Sequence[Sequence[int]]) -> list[str]:
        if not ids:
            return []
        return list(self._tok.decode_batch([list(x) for x in ids], skip_special_tokens=False))
