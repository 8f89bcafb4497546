"""The serving engine's own tokenizer endpoints (the truth: what the engine counts).

The core knows no engine's format: each engine plugin describes its tokenize
(and detokenize) route, request body and reply with a
:class:`~inferx_core.sdk.tokenize_api.TokenizeEndpoint` (hook
``inferx_engine_tokenize_endpoints``), and :class:`ServerTokenizer` follows
that description. :func:`engine_endpoints` asks the hook: the engine's own
plugin when the server is known, else every plugin; :meth:`ServerTokenizer.probe`
finds which of the endpoints the server speaks.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import numpy as np

from inferx_core.load.tokens.tokenizer import (
    TokenizerBase,
    TokenizerError,
    TokenSource,
    choose_pools,
)
from inferx_core.sdk.tokenize_api import TokenizeEndpoint

if TYPE_CHECKING:
    from inferx_core.config.models import ServerConfig
    from inferx_core.sdk.manager import InferxPluginManager

__all__ = ["ServerTokenizer", "engine_endpoints", "server_root"]

_T = TypeVar("_T")
_R = TypeVar("_R")

_SERVER_STABLE_PROBE = 4096  # at most this many ids are decoded to choose the pools

HOOK = "inferx_engine_tokenize_endpoints"

_PROBE_TEXT = "Hello world, 123 tokens!"


def engine_endpoints(
    pm: InferxPluginManager | None = None, server: ServerConfig | None = None
) -> tuple[TokenizeEndpoint, ...]:
    """The tokenize endpoints to try (hook ``inferx_engine_tokenize_endpoints``).

    With ``server`` only its engine's plugin answers; without it (an external
    server whose engine is not named) every plugin's endpoints, in call order,
    duplicates dropped. ``pm`` defaults to the installed plugins.
    """
    if pm is None:
        from inferx_core.sdk.manager import get_plugin_manager

        pm = get_plugin_manager()
    if server is not None:
        answers = [pm.call_first(HOOK, server=server)[1]]
    else:
        answers = [answer for _, answer in pm.call_each(HOOK, server=None)]
    found: list[TokenizeEndpoint] = []
    for answer in answers:
        for endpoint in answer or ():
            if not isinstance(endpoint, TokenizeEndpoint):
                raise TypeError(f"{HOOK} answered {endpoint!r}, not a TokenizeEndpoint")
            if endpoint not in found:
                found.append(endpoint)
    return tuple(found)


def server_root(base_url: str) -> str:
    """``http://host:port`` from a base URL that may end in ``/v1``."""
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root


#: Token ids are int64 everywhere they are held (numpy arrays of candidate ids).
MAX_TOKEN_ID = 2**63


def _parse_tokens(endpoint: TokenizeEndpoint, data: Any, url: str) -> list[int]:
    key = endpoint.tokens_field
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise TokenizerError(f"{url}: reply has no {key!r} list: {str(data)[:200]}")
    out: list[int] = []
    for t in data[key]:
        if isinstance(t, dict) and endpoint.token_id_field is not None:
            t = t.get(endpoint.token_id_field)
        if isinstance(t, bool) or not isinstance(t, int):
            raise TokenizerError(f"{url}: non-integer token {t!r} in reply")
        if not 0 <= t < MAX_TOKEN_ID:  # ids travel as int64 (numpy, prompts): no vocab is larger
            raise TokenizerError(
                f"{url}: token id {str(t)[:40]} in reply is outside [0, 2**63): not an id of any "
                "vocabulary (check the server's tokenize route, or set `tokenizer:`)"
            )
        out.append(t)
    return out


def _parse_text(endpoint: TokenizeEndpoint, data: Any, url: str) -> str:
    if isinstance(data, dict):
        for key in endpoint.detokenize_text_fields:
            if isinstance(data.get(key), str):
                return data[key]
    wanted = "/".join(repr(k) for k in endpoint.detokenize_text_fields)
    raise TokenizerError(f"{url}: reply has no {wanted} string: {str(data)[:200]}")


class ServerTokenizer(TokenizerBase):
    """The serving engine's /tokenize (and /detokenize) endpoints.

    One keep-alive ``httpx.Client`` is shared by a small thread pool, so a
    batch of N texts costs N pipelined requests on ``max_workers`` connections.
    ``endpoint`` is the engine plugin's description of the routes; use
    :meth:`probe` to find the one a server speaks. Close with :meth:`close` (or
    use it as a context manager).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        endpoint: TokenizeEndpoint,
        timeout: float = 30.0,
        max_workers: int = 8,
        vocab_size: int | None = None,
        client: httpx.Client | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._endpoint = endpoint
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
        endpoints: Sequence[TokenizeEndpoint] | None = None,
    ) -> ServerTokenizer:
        """The first of ``endpoints`` that tokenizes and detokenizes on this server, else
        the first that tokenizes; raise TokenizerError saying why none worked.

        ``endpoints`` default to every engine plugin's (:func:`engine_endpoints`);
        pass the engine's own when the engine is known.
        """
        if endpoints is None:
            endpoints = engine_endpoints()
        if not endpoints:
            raise TokenizerError(
                f"no tokenize endpoint to try at {server_root(base_url)}: no engine plugin "
                f"describes one (hook {HOOK})"
            )
        reasons: list[str] = []
        fallback: ServerTokenizer | None = None
        for endpoint in endpoints:
            tok = cls(
                base_url,
                model,
                endpoint=endpoint,
                timeout=timeout,
                max_workers=max_workers,
                vocab_size=vocab_size,
                headers=headers,
            )
            reason = tok._try_round_trip()
            if reason is not None:
                reasons.append(f"{endpoint.name}: {reason}")
                tok.close()
                continue
            if tok._can_decode:
                if fallback is not None:
                    fallback.close()
                return tok
            if fallback is None:
                fallback = tok  # counts; another endpoint may also decode
            else:
                tok.close()
        if fallback is not None:
            return fallback
        raise TokenizerError(
            f"no tokenize endpoint at {server_root(base_url)}: " + "; ".join(reasons)
        )

    def _try_round_trip(self) -> str | None:
        """Tokenize a probe text and decode it back: why this endpoint cannot count, or None.

        Decoding is optional (it only serves shared prefixes): its failure is kept in
        ``decode_unavailable_reason``, not returned.
        """
        try:
            ids = self._tokenize_one(_PROBE_TEXT, False)
            if not ids:
                raise TokenizerError("returned no tokens for a non-empty probe text")
        except TokenizerError as exc:
            return str(exc)
        try:
            self._detokenize_one(ids)
            self._can_decode = True
        except TokenizerError as exc:
            self._can_decode = False
            self.decode_unavailable_reason = str(exc)
        return None

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
        """The name of the endpoint in use (the engine plugin's, e.g. ``vllm``)."""
        return self._endpoint.name

    @property
    def endpoint(self) -> TokenizeEndpoint:
        """The engine plugin's description of the endpoint in use."""
        return self._endpoint

    @property
    def description(self) -> str:
        return f"server {self._root}{self._endpoint.path} ({self._endpoint.name})"

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
        e = self._endpoint
        data = self._post(e.path, e.tokenize_body(text, add_special, self._model))
        limit = e.max_model_len_field
        if limit and isinstance(data, dict) and isinstance(data.get(limit), int):
            self.max_model_len = data[limit]
        return _parse_tokens(e, data, self._root + e.path)

    def _detokenize_one(self, ids: Sequence[int]) -> str:
        e = self._endpoint
        if e.detokenize_path is None:
            raise TokenizerError(f"{e.name}: the engine has no detokenize endpoint")
        data = self._post(e.detokenize_path, e.detokenize_body([int(i) for i in ids], self._model))
        return _parse_text(e, data, self._root + e.detokenize_path)

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
