"""Executors by name, from every plugin's ``inferx_executors`` answer.

Conflicts are the one name registry's (``sdk.names``): a name offered by two
plugins is an error naming both; ``local`` is this machine and no plugin's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.sdk.executor import LOCAL, Executor, ExecutorError, ExecutorInfo
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.names import NameConflictError, NameRegistry

__all__ = ["executors", "get_executor"]


class ExecutorConflictError(ExecutorError, NameConflictError):
    """An executor name is registered by two plugins."""


class ExecutorRegistry(NameRegistry[ExecutorInfo]):
    """Executors by name; a name offered by two *plugins* is a conflict."""

    def __init__(self) -> None:
        super().__init__("executor", "plugin", {}, {})

    def conflict_error(self, name: str) -> ExecutorConflictError:
        return ExecutorConflictError(self.conflict_message(name))


def executors(pm: InferxPluginManager) -> dict[str, tuple[str, ExecutorInfo]]:
    """Executors by name with their plugin; a name registered twice is an error naming both."""
    answers = pm.call_each("inferx_executors")
    for plugin, infos in answers:
        if any(info.name == LOCAL for info in infos):
            raise ExecutorError(f"plugin {plugin!r} registers reserved executor name 'local'")
    registry = ExecutorRegistry()
    registry.add_all((plugin, pm.distribution_of(plugin), infos) for plugin, infos in answers)
    return registry.by_name()


def get_executor(pm: InferxPluginManager, name: str, options: Mapping[str, Any]) -> Executor:
    known = executors(pm)
    if name not in known:
        names = ", ".join(sorted([LOCAL, *known]))
        raise UserFacingError(f"unknown executor {name!r}; known: {names}")
    return known[name][1].factory(options)
