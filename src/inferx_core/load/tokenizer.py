"""Token counting with an explicit, recorded source.

Three sources, tried in this order by :func:`resolve_token_counter`:

``server``
    the engine's own tokenizer endpoint (the truth: it is what the engine
    will count). vLLM and SGLang: ``POST /tokenize {"model", "prompt",
    "add_special_tokens"} -> {"tokens", "count", "max_model_len"}`` and
    ``POST /detokenize {"model", "tokens"} -> {"prompt"}`` (``/v1/...`` too);
    llama.cpp: ``POST /tokenize {"content", "add_special"} -> {"tokens"}`` and
    ``POST /detokenize {"tokens"} -> {"content"}``.
``local``
    a ``tokenizer.json`` file (or a model directory holding one) loaded with
    the ``tokenizers`` library.
``estimate``
    ``ceil(chars / 4)`` or ``ceil(words * 1.3)``; every number it gives is an
    estimate and is flagged as such.

Conventions shared by every counter: ``count(text)`` is the number of tokens
the engine sees for ``text`` sent as a completions prompt, *including* the
special tokens the tokenizer adds (e.g. BOS). ``encode(text)`` returns the ids
*without* those added tokens, and ``decode(ids)`` is its inverse.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import httpx
import numpy as np

TokenSource = Literal["server", "local", "estimate"]
EstimateMethod = Literal["chars", "words"]

_T = TypeVar("_T")
_R = TypeVar("_R")


class TokenizerError(RuntimeError):
    """A tokenizer source failed (unreachable server, bad file, bad reply)."""


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


class _TokenizerBase:
    """count/encode/decode/measure built on two primitives per source."""

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
            return self._affix_cache  # type: ignore[return-value]
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


def _choose_pools(tok: _TokenizerBase, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


_SERVER_STABLE_PROBE = 4096


def _find_sub(seq: Sequence[int], sub: Sequence[int]) -> int | None:
    n, m = len(seq), len(sub)
    for i in range(n - m + 1):
        if list(seq[i : i + m]) == list(sub):
            return i
    return None


# --------------------------------------------------------------------------
# local tokenizer.json


class LocalTokenizer(_TokenizerBase):
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
            self._candidates, self._refill = _choose_pools(self, np.asarray(ids, dtype=np.int64))
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


# --------------------------------------------------------------------------
# server endpoints


@dataclass(frozen=True, slots=True)
class _Dialect:
    name: str
    tokenize_path: str
    detokenize_path: str
    text_key: str  # request field carrying the text
    special_key: str  # request field for "add special tokens"
    send_model: bool


_DIALECTS: tuple[_Dialect, ...] = (
    # vLLM (root), SGLang (root): {"model", "prompt", "add_special_tokens"}
    _Dialect("vllm", "/tokenize", "/detokenize", "prompt", "add_special_tokens", True),
    # the same shape under /v1 (SGLang's OpenAI routes, proxies)
    _Dialect("openai-v1", "/v1/tokenize", "/v1/detokenize", "prompt", "add_special_tokens", True),
    # llama.cpp server: {"content", "add_special"}
    _Dialect("llama.cpp", "/tokenize", "/detokenize", "content", "add_special", False),
)

_PROBE_TEXT = "Hello world, 123 tokens!"


def server_root(base_url: str) -> str:
    """``http://host:port`` from a base URL that may end in ``/v1``."""
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root


def _parse_tokens(data: Any, url: str) -> list[int]:
    if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
        raise TokenizerError(f"{url}: reply has no 'tokens' list: {str(data)[:200]}")
    out: list[int] = []
    for t in data["tokens"]:
        if isinstance(t, dict):  # llama.cpp with_pieces
            t = t.get("id")
        if isinstance(t, bool) or not isinstance(t, int):
            raise TokenizerError(f"{url}: non-integer token {t!r} in reply")
        out.append(t)
    return out


def _parse_text(data: Any, url: str) -> str:
    if isinstance(data, dict):
        for key in ("prompt", "text", "content"):
            if isinstance(data.get(key), str):
                return data[key]
    raise TokenizerError(f"{url}: reply has no 'prompt'/'text'/'content' string: {str(data)[:200]}")


class ServerTokenizer(_TokenizerBase):
    """The serving engine's /tokenize (and /detokenize) endpoints.

    One keep-alive ``httpx.Client`` is shared by a small thread pool, so a
    batch of N texts costs N pipelined requests on ``max_workers`` connections.
    Use :meth:`probe` to detect the dialect; close with :meth:`close` (or use
    it as a context manager).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        dialect: str = "vllm",
        timeout: float = 30.0,
        max_workers: int = 8,
        vocab_size: int | None = None,
        client: httpx.Client | None = None,
    ) -> None:
        matches = [d for d in _DIALECTS if d.name == dialect]
        if not matches:
            raise ValueError(
                f"unknown dialect {dialect!r}; use one of {[d.name for d in _DIALECTS]}"
            )
        self._dialect = matches[0]
        self._root = server_root(base_url)
        self._model = model
        self._max_workers = max(1, int(max_workers))
        self._own_client = client is None
        self._client = client or httpx.Client(
            timeout=timeout,
            limits=httpx.Limits(
                max_connections=self._max_workers, max_keepalive_connections=self._max_workers
            ),
        )
        self._vocab_size = vocab_size
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._can_decode: bool | None = None
        self.decode_unavailable_reason: str | None = None
        self.max_model_len: int | None = None
        self._special: frozenset[int] | None = None
        self._candidates: np.ndarray | None = None
        self._refill: np.ndarray | None = None

    # lifecycle --------------------------------------------------------------
    @classmethod
    def probe(
        cls,
        base_url: str,
        model: str | None = None,
        *,
        timeout: float = 10.0,
        max_workers: int = 8,
        vocab_size: int | None = None,
    ) -> ServerTokenizer:
        """Find the dialect the server speaks; raise TokenizerError saying why none worked."""
        reasons: list[str] = []
        for d in _DIALECTS:
            tok = cls(
                base_url,
                model,
                dialect=d.name,
                timeout=timeout,
                max_workers=max_workers,
                vocab_size=vocab_size,
            )
            try:
                ids = tok._tokenize_one(_PROBE_TEXT, False)
                if not ids:
                    raise TokenizerError("returned no tokens for a non-empty probe text")
            except TokenizerError as exc:
                reasons.append(f"{d.name}: {exc}")
                tok.close()
                continue
            try:
                tok._detokenize_one(ids)
                tok._can_decode = True
            except TokenizerError as exc:
                tok._can_decode = False
                tok.decode_unavailable_reason = str(exc)
            return tok
        raise TokenizerError(
            f"no tokenize endpoint at {server_root(base_url)}: " + "; ".join(reasons)
        )

    def close(self) -> None:
        """Release the thread pool and (if owned) the HTTP client."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._own_client:
            self._client.close()

    def __enter__(self) -> ServerTokenizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # properties -------------------------------------------------------------
    @property
    def source(self) -> TokenSource:
        return "server"

    @property
    def dialect(self) -> str:
        return self._dialect.name

    @property
    def description(self) -> str:
        return f"server {self._root}{self._dialect.tokenize_path} ({self._dialect.name})"

    @property
    def vocab_size(self) -> int | None:
        """Known only when given (the endpoints do not report it)."""
        return self._vocab_size

    @property
    def can_decode(self) -> bool:
        if self._can_decode is None:
            try:
                self._detokenize_one(self._tokenize_one(_PROBE_TEXT, False))
                self._can_decode = True
            except TokenizerError as exc:
                self._can_decode = False
                self.decode_unavailable_reason = str(exc)
        return self._can_decode

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids the server adds around a prompt (BOS/EOS); others are unknown."""
        if self._special is None:
            self._special = frozenset(self._affix_ids())
        return self._special

    def candidate_ids(self) -> np.ndarray:
        """Ids for random prompts: ``range(vocab_size)`` when known, else the ids
        the server produced for a fixed synthetic corpus; special ids removed."""
        if self._candidates is None:
            special = self.special_ids
            if self._vocab_size:
                ids = [i for i in range(self._vocab_size) if i not in special]
            else:
                found: set[int] = set()
                for ids_ in self.encode_batch(_synthetic_corpus()):
                    found.update(ids_)
                ids = sorted(found - special)
            if not ids:
                raise TokenizerError(f"{self.description}: no usable token ids")
            arr = np.asarray(ids, dtype=np.int64)
            if len(arr) > _SERVER_STABLE_PROBE:  # bound the HTTP calls
                pick = np.random.default_rng(0).choice(
                    len(arr), _SERVER_STABLE_PROBE, replace=False
                )
                arr = np.sort(arr[pick])
            self._candidates, self._refill = _choose_pools(self, arr)
        return self._candidates

    def refill_ids(self) -> np.ndarray:
        """Ids the length fix appends: word-start ids, else clean ids."""
        self.candidate_ids()
        assert self._refill is not None
        return self._refill

    # HTTP -------------------------------------------------------------------
    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        url = self._root + path
        try:
            resp = self._client.post(url, json=payload)
        except httpx.HTTPError as exc:
            raise TokenizerError(f"POST {url} failed: {exc!r}") from exc
        if resp.status_code != 200:
            raise TokenizerError(f"POST {url} -> HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            return resp.json()
        except ValueError as exc:
            raise TokenizerError(f"POST {url}: reply is not JSON: {resp.text[:200]}") from exc

    def _tokenize_one(self, text: str, add_special: bool) -> list[int]:
        d = self._dialect
        payload: dict[str, Any] = {d.text_key: text, d.special_key: add_special}
        if d.send_model and self._model:
            payload["model"] = self._model
        data = self._post(d.tokenize_path, payload)
        if isinstance(data, dict) and isinstance(data.get("max_model_len"), int):
            self.max_model_len = data["max_model_len"]
        return _parse_tokens(data, self._root + d.tokenize_path)

    def _detokenize_one(self, ids: Sequence[int]) -> str:
        d = self._dialect
        payload: dict[str, Any] = {"tokens": [int(i) for i in ids]}
        if d.send_model and self._model:
            payload["model"] = self._model
        return _parse_text(self._post(d.detokenize_path, payload), self._root + d.detokenize_path)

    def _map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        if len(items) <= 1 or self._max_workers == 1:
            return [fn(x) for x in items]
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix="inferx-tok")
            pool = self._pool
        return list(pool.map(fn, items))

    def _tokenize_many(self, texts: Sequence[str], add_special: bool) -> list[list[int]]:
        return self._map(lambda t: self._tokenize_one(t, add_special), list(texts))

    def _detokenize_many(self, ids: Sequence[Sequence[int]]) -> list[str]:
        if self._can_decode is False:
            raise TokenizerError(
                f"{self.description}: no detokenize endpoint ({self.decode_unavailable_reason})"
            )
        return self._map(self._detokenize_one, list(ids))


_CORPUS_WORDS_TEXT = (
    "the of and to in is was for on that with as by at from it his an were are which this be "
    "or has had not first one their its new after but who they have her she two been other when "
    "there all during into school time may years more most only over city some world would where "
    "later up such used many can state about national out known university united then made "
    "system between data model number value result function server token request group also "
    "0 1 2 3 4 5 6 7 8 9 10 42 100 2024 , . ; : ! ? ( ) [ ] { } - _ / = + * # @ $ % & ' \""
)
_CORPUS_WORDS = tuple(_CORPUS_WORDS_TEXT.split())


def _synthetic_corpus() -> list[str]:
    """A fixed pseudo-random corpus (seeded) used to discover server token ids."""
    rng = random.Random(20240601)
    texts: list[str] = []
    for _ in range(16):
        words = [rng.choice(_CORPUS_WORDS) for _ in range(400)]
        words = [w.capitalize() if rng.random() < 0.15 else w for w in words]
        texts.append(" ".join(words))
    return texts


# --------------------------------------------------------------------------
# estimate


class EstimateCounter:
    """Heuristic counter: ``ceil(chars/4)`` or ``ceil(words*1.3)``. Always flagged."""

    estimated = True

    def __init__(self, method: EstimateMethod = "chars") -> None:
        if method not in ("chars", "words"):
            raise ValueError(f"unknown estimate method {method!r}; use 'chars' or 'words'")
        self.method: EstimateMethod = method

    @property
    def source(self) -> TokenSource:
        return "estimate"

    @property
    def description(self) -> str:
        rule = "ceil(chars/4)" if self.method == "chars" else "ceil(words*1.3)"
        return f"estimate {rule} (not a real token count)"

    def count(self, text: str) -> int:
        """Estimated tokens in ``text``."""
        if self.method == "chars":
            return math.ceil(len(text) / 4)
        return math.ceil(len(text.split()) * 1.3)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """``count`` for many texts, in order."""
        return [self.count(t) for t in texts]


# --------------------------------------------------------------------------
# resolution


@dataclass(frozen=True, slots=True)
class CounterAttempt:
    """One source tried by :func:`resolve_token_counter` and what happened."""

    source: TokenSource
    ok: bool
    detail: str


@dataclass(frozen=True, slots=True)
class CounterResolution:
    """The counter chosen, and why each earlier source was not."""

    counter: TokenCounter
    attempts: tuple[CounterAttempt, ...]

    @property
    def source(self) -> TokenSource:
        return self.counter.source

    @property
    def estimated(self) -> bool:
        return self.counter.source == "estimate"

    def describe(self) -> dict[str, Any]:
        """JSON-ready record for the run result."""
        return {
            "token_source": self.source,
            "counter": self.counter.description,
            "estimated": self.estimated,
            "attempts": [
                {"source": a.source, "ok": a.ok, "detail": a.detail} for a in self.attempts
            ],
        }


def resolve_token_counter(
    base_url: str | None,
    model: str | None,
    tokenizer_path: str | Path | None,
    *,
    timeout: float = 10.0,
    max_workers: int = 8,
    estimate_method: EstimateMethod = "chars",
) -> CounterResolution:
    """Pick a counter: the server's endpoint, else the local file, else an estimate."""
    attempts: list[CounterAttempt] = []
    if base_url:
        try:
            tok = ServerTokenizer.probe(base_url, model, timeout=timeout, max_workers=max_workers)
        except TokenizerError as exc:
            attempts.append(CounterAttempt("server", False, str(exc)))
        else:
            detail = tok.description
            if not tok.can_decode:
                detail += f"; no detokenize ({tok.decode_unavailable_reason})"
            attempts.append(CounterAttempt("server", True, detail))
            return CounterResolution(tok, tuple(attempts))
    else:
        attempts.append(CounterAttempt("server", False, "no server URL given"))
    if tokenizer_path:
        try:
            local = LocalTokenizer.from_file(tokenizer_path)
        except TokenizerError as exc:
            attempts.append(CounterAttempt("local", False, str(exc)))
        else:
            attempts.append(CounterAttempt("local", True, local.description))
            return CounterResolution(local, tuple(attempts))
    else:
        attempts.append(CounterAttempt("local", False, "no tokenizer file given"))
    est = EstimateCounter(estimate_method)
    attempts.append(CounterAttempt("estimate", True, est.description))
    return CounterResolution(est, tuple(attempts))
