"""Test doubles for InferX: a scripted OpenAI-compatible streaming server.

Names are imported lazily so ``python -m inferx_core.testing.sse_server``
does not import its own module twice.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FAIL_MODES", "SSETestServer", "ServerKnobs", "ServerProcess"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from inferx_core.testing import sse_server

        return getattr(sse_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
