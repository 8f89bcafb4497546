"""Token counting with an explicit, recorded source.

Three sources, tried in this order by :func:`resolve_token_counter`:

``server``
    the engine's own tokenizer endpoint
    (:class:`~inferx_core.load.tokens.server_tokenizer.ServerTokenizer`; the truth:
    it is what the engine will count), as the engine's plugin describes it
    (hook ``inferx_engine_tokenize_endpoints``).
``local``
    a ``tokenizer.json`` file (or a model directory holding one) loaded with
    the ``tokenizers`` library (:class:`~inferx_core.load.tokens.tokenizer.LocalTokenizer`).
``estimate``
    ``ceil(chars / 4)`` or ``ceil(words * 1.3)``; every number it gives is an
    estimate and is flagged as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferx_core.load.tokens.server_tokenizer import ServerTokenizer, engine_endpoints
from inferx_core.load.tokens.tokenizer import (
    EstimateMethod,
    LocalTokenizer,
    TokenCounter,
    TokenizerError,
    TokenSource,
)

if TYPE_CHECKING:
    from inferx_core.config.models import ServerConfig
    from inferx_core.sdk.manager import InferxPluginManager
    from inferx_core.sdk.tokenize_api import TokenizeEndpoint

__all__ = ["CounterAttempt", "CounterResolution", "EstimateCounter", "resolve_token_counter"]


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
    headers: Mapping[str, str] | None = None,
    server: ServerConfig | None = None,
    pm: InferxPluginManager | None = None,
    endpoints: Sequence[TokenizeEndpoint] | None = None,
) -> CounterResolution:
    """Pick a counter: the server's endpoint, else the local file, else an estimate.

    ``headers`` (the API key) go with the server's tokenize calls. The endpoints
    tried are ``endpoints`` when given, else those the engine plugins describe:
    ``server``'s engine's plugin when the server is known, else every plugin's
    (``pm``: the plugin manager to ask; default the installed plugins)."""
    attempts: list[CounterAttempt] = []
    if base_url:
        try:
            if endpoints is None:
                endpoints = engine_endpoints(pm, server)
            tok = ServerTokenizer.probe(
                base_url,
                model,
                timeout=timeout,
                max_workers=max_workers,
                headers=headers,
                endpoints=endpoints,
            )
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
