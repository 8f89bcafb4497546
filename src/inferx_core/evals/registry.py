"""Evaluators by name, from every plugin's ``inferx_evaluators`` answer.

Conflicts are the one name registry's (``sdk.names``): a name offered by two
plugins is an error naming both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.sdk.evaluator import Evaluator, EvaluatorInfo
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.names import NameConflictError, NameRegistry

__all__ = ["EvaluatorError", "evaluators", "get_evaluator"]


class EvaluatorError(UserFacingError):
    """An unknown evaluator, or one name registered by two plugins."""


class EvaluatorConflictError(EvaluatorError, NameConflictError):
    """An evaluator name is registered by two plugins."""


class EvaluatorRegistry(NameRegistry[EvaluatorInfo]):
    """Evaluators by name; a name offered by two *plugins* is a conflict."""

    def __init__(self) -> None:
        super().__init__("evaluator", "plugin", {}, {})

    def conflict_error(self, name: str) -> EvaluatorConflictError:
        return EvaluatorConflictError(self.conflict_message(name))


def evaluators(pm: InferxPluginManager) -> dict[str, tuple[str, EvaluatorInfo]]:
    """Evaluators by name with their plugin; a name registered twice is an error naming both."""
    registry = EvaluatorRegistry()
    registry.add_all(
        (plugin, pm.distribution_of(plugin), infos)
        for plugin, infos in pm.call_each("inferx_evaluators")
    )
    return registry.by_name()


def get_evaluator(pm: InferxPluginManager, name: str, options: Mapping[str, Any]) -> Evaluator:
    known = evaluators(pm)
    if name not in known:
        names = ", ".join(sorted(known)) or "none (install inferx-lmeval)"
        raise EvaluatorError(f"unknown evaluator {name!r}; known: {names}")
    return known[name][1].factory(dict(options))
