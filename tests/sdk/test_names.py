"""Launchers, executors and evaluators share one name registry (``sdk.names``).

A name offered by two plugins is an error naming both, of the registry's own
error type (so ``except ExecutorError`` still catches an executor conflict)
and a ``NameConflictError``; the same plugin offering a name twice keeps the
first; a plugin may not take the reserved executor name ``local``.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from inferx_core import EvaluatorInfo, hookimpl
from inferx_core.evals.registry import EvaluatorError, evaluators
from inferx_core.executors.registry import executors
from inferx_core.sdk.executor import ExecutorError, ExecutorInfo
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.names import NameConflictError


def _factory(*_: Any) -> Any:
    raise AssertionError("not built in these tests")


def _plugin(hook: str, infos: list[Any]) -> types.ModuleType:
    def answer() -> list[Any]:
        return infos

    answer.__name__ = hook
    mod = types.ModuleType(hook)
    setattr(mod, hook, hookimpl(answer))
    return mod


def _manager(*plugins: tuple[str, types.ModuleType]) -> Any:
    return get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=list(plugins))


def _evaluator(name: str) -> EvaluatorInfo:
    return EvaluatorInfo(name, "test evaluator", _factory)


def test_evaluator_named_by_two_plugins_is_an_error_naming_both() -> None:
    pm = _manager(
        ("first", _plugin("inferx_evaluators", [_evaluator("judge")])),
        ("second", _plugin("inferx_evaluators", [_evaluator("judge")])),
    )
    with pytest.raises(EvaluatorError, match="evaluator 'judge' is registered by both") as info:
        evaluators(pm)
    assert isinstance(info.value, NameConflictError)
    assert "'first'" in str(info.value) and "'second'" in str(info.value)


def test_an_evaluator_offered_twice_by_one_plugin_keeps_the_first() -> None:
    first, again = _evaluator("judge"), _evaluator("judge")
    pm = _manager(("one", _plugin("inferx_evaluators", [first, again])))
    assert evaluators(pm)["judge"] == ("one", first)


def test_executor_named_by_two_plugins_is_an_error_naming_both() -> None:
    info = ExecutorInfo("k8s", "a cluster", _factory)
    pm = _manager(
        ("first", _plugin("inferx_executors", [info])),
        ("second", _plugin("inferx_executors", [info])),
    )
    with pytest.raises(ExecutorError, match="executor 'k8s' is registered by both") as raised:
        executors(pm)
    assert isinstance(raised.value, NameConflictError)
    assert "'first'" in str(raised.value) and "'second'" in str(raised.value)


def test_no_plugin_takes_the_local_executor_name() -> None:
    pm = _manager(("mine", _plugin("inferx_executors", [ExecutorInfo("local", "x", _factory)])))
    with pytest.raises(ExecutorError, match="plugin 'mine' registers reserved executor name"):
        executors(pm)
