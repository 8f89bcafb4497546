"""Test doubles for InferX: a scripted OpenAI-compatible streaming server, a
table-driven answer server for accuracy tests (``AnswerServer``), the
plugin test kit (``plugin_kit``: ``check_plugin`` and one check per rule), and
``build_tiny_model``: the tiny local Llama that ``inferx demo`` serves, for a
plugin's tests on a real engine (no model hub).

Names are imported lazily so ``python -m inferx_core.testing.sse_server``
does not import its own module twice.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names' types for a type checker; at run time __getattr__ below
    from inferx_core.demo.tiny_model import build_tiny_model as build_tiny_model
    from inferx_core.testing.answers import AnswerServer as AnswerServer
    from inferx_core.testing.knobs import FAIL_MODES as FAIL_MODES
    from inferx_core.testing.knobs import ServerKnobs as ServerKnobs
    from inferx_core.testing.plugin_kit import check_plugin as check_plugin
    from inferx_core.testing.server import SSETestServer as SSETestServer
    from inferx_core.testing.sse_server import ServerProcess as ServerProcess

__all__ = [
    "FAIL_MODES",
    "AnswerServer",
    "SSETestServer",
    "ServerKnobs",
    "ServerProcess",
    "build_tiny_model",
    "check_plugin",
]

_HOMES = {
    "AnswerServer": "inferx_core.testing.answers",
    "FAIL_MODES": "inferx_core.testing.knobs",
    "ServerKnobs": "inferx_core.testing.knobs",
    "SSETestServer": "inferx_core.testing.server",
    "ServerProcess": "inferx_core.testing.sse_server",
    "check_plugin": "inferx_core.testing.plugin_kit",
    "build_tiny_model": "inferx_core.demo.tiny_model",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
