"""Executors: where a whole run executes (SLURM built in; plugins add more)."""

from __future__ import annotations

from typing import Any

#: names the pre-0.2 module inferx_core.executors held that now live in executors.registry
_REGISTRY_NAMES = frozenset({"executors", "get_executor"})


def __getattr__(name: str) -> Any:
    # inferx_core.executors was a module before 0.2: its names still resolve (deprecated).
    from inferx_core._compat import lazy_reexport

    target = (
        "inferx_core.executors.registry" if name in _REGISTRY_NAMES else "inferx_core.sdk.executor"
    )
    return lazy_reexport(__name__, target, name)
