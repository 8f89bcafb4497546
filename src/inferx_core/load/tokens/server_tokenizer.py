"""The serving engine's own tokenizer endpoints (the truth: what the engine counts).

vLLM and SGLang: ``POST /tokenize {"model", "prompt", "add_special_tokens"}
-> {"tokens", "count", "max_model_len"}`` and ``POST /detokenize {"model",
"tokens"} -> {"prompt"}`` (``/v1/...`` too); llama.cpp: ``POST /tokenize
{"content", "add_special"} -> {"tokens"}`` and ``POST /detokenize {"tokens"}
-> {"content"}``. :meth:`ServerTokenizer.probe` finds which one a server speaks.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import numpy as np

from inferx_core.load.tokens.tokenizer import (
    TokenizerBase,
    TokenizerError,
    TokenSource,
    choose_pools,
)

__all__ = ["ServerTokenizer", "server_root"]

_T = TypeVar("_T")
_R = TypeVar("_R")

_SERVER_STABLE_PROBE = 4096  # at most this many ids are decoded to choose the pools


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


class ServerTokenizer(TokenizerBase):
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
        headers: Mapping[str, str] | None = None,
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
        # the server's API key goes with every call, as with the load itself
        self._client = client or httpx.Client(
            headers=dict(headers or {}),
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
        headers: Mapping[str, str] | None = None,
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
                headers=headers,
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
            self._candidates, self._refill = choose_pools(self, arr)
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
