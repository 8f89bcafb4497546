"""The engine's own per-request clock, as the client reads it from the replies.

An engine plugin describes where its replies carry per-request timing
(:class:`~inferx_core.sdk.server_timing_api.ServerTiming`, hook
``inferx_engine_server_timing``). :class:`ServerClock` is that description
made ready for the hot path: the top-level fields the stream decoder keeps,
the bytes added to every request body, and :meth:`ServerClock.read`, which
turns the kept fields into the record's figures after the reply ended (never
per chunk). A figure that is missing or not a non-negative number is null
with the reason; it never fails the request (the server's view is extra, the
client's measurement stands without it).

Every request also carries a client-made ``X-Request-Id`` (:func:`request_id_prefix`),
so a user can join InferX's records with the server's logs.
"""

from __future__ import annotations

import json
import math
import secrets
from typing import TYPE_CHECKING, Any

from inferx_core.sdk.server_timing_api import SERVER_FIGURES, ServerTiming

if TYPE_CHECKING:
    from inferx_core.config.models import ServerConfig
    from inferx_core.load.records.request import RequestRecord
    from inferx_core.sdk.manager import InferxPluginManager

__all__ = ["HOOK", "ServerClock", "engine_server_timing", "request_id_prefix"]

HOOK = "inferx_engine_server_timing"

#: A duration on the server's clock above this (one day) is no reading of one request.
MAX_SERVER_MS = 86_400_000.0
_COUNTS = frozenset({"spec_drafts", "spec_draft_tokens", "spec_accepted_tokens", "cached_tokens"})


def request_id_prefix() -> str:
    """A fresh prefix for one connection pool's ``X-Request-Id`` values (random, so ids
    stay unique across runs and worker processes on one server: vLLM uses the header as
    its own request id, and two requests in flight with one id would collide there)."""
    return f"inferx-{secrets.token_hex(4)}"


def engine_server_timing(
    server: ServerConfig | None, pm: InferxPluginManager | None = None
) -> ServerTiming | None:
    """The engine plugin's description (hook ``inferx_engine_server_timing``); None when
    the engine is not known or its plugin describes none."""
    if server is None:
        return None
    if pm is None:
        from inferx_core.sdk.manager import get_plugin_manager

        pm = get_plugin_manager()
    answer = pm.call_first(HOOK, server=server)[1]
    if answer is not None and not isinstance(answer, ServerTiming):
        raise TypeError(f"{HOOK} answered {answer!r}, not a ServerTiming")
    return answer


def _at(kept: dict[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) at a dotted path into the kept fields."""
    node: Any = kept
    for part in path.split("."):
        if type(node) is not dict or part not in node:
            return False, None
        node = node[part]
    return True, node


def _shown(value: Any) -> str:
    text = json.dumps(value)[:60] if not isinstance(value, float) else repr(value)
    return f"{text} ({type(value).__name__})"


def _problem(figure: str, path: str, found: bool, value: Any) -> str | None:
    """Why ``value`` read at ``path`` is no ``figure``, else None."""
    if not found or value is None:
        return f"the reply carried no {path}"
    if figure in _COUNTS:
        if type(value) is not int or value < 0:
            return f"{path} is {_shown(value)}, not a non-negative integer"
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        return f"{path} is {_shown(value)}, not a non-negative number of milliseconds"
    if value > MAX_SERVER_MS:
        return f"{path} is {value:g} ms, more than a day: not one request's duration"
    return None


class ServerClock:
    """One :class:`ServerTiming` made ready for the stream decoder."""

    __slots__ = ("body_prefix", "keys", "timing")

    def __init__(self, timing: ServerTiming) -> None:
        self.timing = timing
        self.keys: tuple[str, ...] = timing.reply_fields
        body = json.dumps(timing.request_body, separators=(",", ":")).encode()
        # The fields go first in the body, so a field the request sets itself wins
        # (JSON readers keep the last of a repeated key).
        self.body_prefix = body[1:-1]

    def add_to_body(self, payload: bytes) -> bytes:
        """``payload`` (a JSON object) with ``request_body``'s fields in front."""
        if not self.body_prefix or not payload.startswith(b"{"):
            return payload
        rest = payload[1:]
        sep = b"" if rest.lstrip().startswith(b"}") else b","
        return b"{" + self.body_prefix + sep + rest

    def read(self, rec: RequestRecord, kept: dict[str, Any]) -> None:
        """Fill ``rec.server_fields``/``server_figures``/``server_problems`` from ``kept``."""
        rec.server_fields = kept or None
        figures: dict[str, float | int | None] = {}
        problems: dict[str, str] = {}
        for figure, path in self.timing.paths().items():
            found, value = _at(kept, path)
            why = _problem(figure, path, found, value)
            figures[figure] = None if why else value
            if why:
                problems[figure] = why
        for figure in SERVER_FIGURES:
            if figure not in figures:
                figures[figure] = None
                problems[figure] = f"{self.timing.name} does not report it"
        rec.server_figures = figures
        rec.server_problems = problems or None
