"""Executors by name, from every plugin's ``inferx_executors`` answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.sdk.executor import LOCAL, Executor, ExecutorError, ExecutorInfo
from inferx_core.sdk.manager import InferxPluginManager

__all__ = ["executors", "get_executor"]


def executors(pm: InferxPluginManager) -> dict[str, tuple[str, ExecutorInfo]]:
    """Executors by name with their plugin; a name registered twice is an error naming both."""
    found: dict[str, tuple[str, ExecutorInfo]] = {}
    for plugin, infos in pm.call_each("inferx_executors"):
        for info in infos:
            if info.name == LOCAL:
                raise ExecutorError(f"plugin {plugin!r} registers reserved executor name 'local'")
            if info.name in found and found[info.name][0] != plugin:
                raise ExecutorError(
                    f"executor {info.name!r} is registered by both {found[info.name][0]!r} "
                    f"and {plugin!r}"
                )
            found.setdefault(info.name, (plugin, info))
    return found


def get_executor(pm: InferxPluginManager, name: str, options: Mapping[str, Any]) -> Executor:
    known = executors(pm)
    if name not in known:
        names = ", ".join(sorted([LOCAL, *known]))
        raise UserFacingError(f"unknown executor {name!r}; known: {names}")
    return known[name][1].factory(options)
