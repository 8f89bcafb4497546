"""Evaluators by name, from every plugin's ``inferx_evaluators`` answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferx_core.errors import UserFacingError
from inferx_core.sdk.evaluator import Evaluator, EvaluatorInfo
from inferx_core.sdk.manager import InferxPluginManager

__all__ = ["EvaluatorError", "evaluators", "get_evaluator"]


class EvaluatorError(UserFacingError):
    """An unknown evaluator, or one name registered by two plugins."""


def evaluators(pm: InferxPluginManager) -> dict[str, tuple[str, EvaluatorInfo]]:
    """Evaluators by name with their plugin; a name registered twice is an error naming both."""
    found: dict[str, tuple[str, EvaluatorInfo]] = {}
    for plugin, infos in pm.call_each("inferx_evaluators"):
        for info in infos:
            if info.name in found and found[info.name][0] != plugin:
                raise EvaluatorError(
                    f"evaluator {info.name!r} is registered by both {found[info.name][0]!r} "
                    f"and {plugin!r}"
                )
            found.setdefault(info.name, (plugin, info))
    return found


def get_evaluator(pm: InferxPluginManager, name: str, options: Mapping[str, Any]) -> Evaluator:
    known = evaluators(pm)
    if name not in known:
        names = ", ".join(sorted(known)) or "none (install inferx-lmeval)"
        raise EvaluatorError(f"unknown evaluator {name!r}; known: {names}")
    return known[name][1].factory(dict(options))
