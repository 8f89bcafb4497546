"""Hooks run through pluggy: wrappers and tracing work, one plugin's failure stays its own,
engine hooks reach only the engine's plugin, registries are built once per manager."""

from __future__ import annotations

import types
from collections.abc import Generator
from typing import Any

import pytest

from inferx_core import (
    EngineInfo,
    EngineMetricsMap,
    LauncherConflictError,
    LauncherInfo,
    Platform,
    PluginHookError,
    ServerConfig,
    engine_registry,
    fix_catalogue,
    get_plugin_manager,
    hookimpl,
    launchers,
)
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.names import EngineConflictError, EngineNotFoundError


def _module(name: str, **hooks: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook, function in hooks.items():
        setattr(module, hook, function)
    return module


def _pm(*plugins: tuple[str, Any], strict: bool = False) -> InferxPluginManager:
    env = {"INFERX_PLUGINS": "", **({"INFERX_STRICT_PLUGINS": "1"} if strict else {})}
    return get_plugin_manager(env=env, builtins=False, extra_plugins=plugins)


def _engine(name: str, **hooks: Any) -> types.ModuleType:
    """A plugin registering engine ``name`` with the given hook implementations."""

    @hookimpl
    def inferx_engines() -> list[EngineInfo]:
        return [EngineInfo(name=name, description=f"engine {name}")]

    return _module(f"plugin_{name}", inferx_engines=inferx_engines, **hooks)


def _metrics(kv: str) -> Any:
    @hookimpl
    def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap:
        return EngineMetricsMap(kv_cache_usage=kv)

    return inferx_engine_metrics


def _server(engine: str) -> ServerConfig:
    return ServerConfig(engine=engine, model="org/model", port=8000)


# -- wrappers -------------------------------------------------------------------
def test_a_wrapper_runs_around_the_answer_of_a_firstresult_hook() -> None:
    seen: list[str] = []

    @hookimpl(wrapper=True)
    def inferx_engine_metrics(server: ServerConfig) -> Generator[None, Any, Any]:
        seen.append("before")
        answer = yield
        seen.append(f"after: {answer.kv_cache_usage}")
        return answer.model_copy(update={"requests_running": "wrapped:running"})

    pm = _pm(
        ("eng", _engine("eng", inferx_engine_metrics=_metrics("eng:kv"))),
        ("wrap", _module("wrap", inferx_engine_metrics=inferx_engine_metrics)),
    )
    plugin, answer = pm.call_first("inferx_engine_metrics", server=_server("eng"))
    assert seen == ["before", "after: eng:kv"]
    assert isinstance(answer, EngineMetricsMap)  # the answer, not the wrapper's generator
    assert not isinstance(answer, Generator)
    assert (answer.kv_cache_usage, answer.requests_running) == ("eng:kv", "wrapped:running")
    assert plugin == "wrap"  # the wrapper replaced the answer, so it is the wrapper's


def test_a_wrapper_that_keeps_the_answer_leaves_it_to_its_plugin() -> None:
    @hookimpl(wrapper=True)
    def inferx_engine_metrics() -> Generator[None, Any, Any]:
        return (yield)

    wrap = _module("wrap", inferx_engine_metrics=inferx_engine_metrics)
    pm = _pm(("eng", _engine("eng", inferx_engine_metrics=_metrics("eng:kv"))), ("wrap", wrap))
    plugin, answer = pm.call_first("inferx_engine_metrics", server=_server("eng"))
    assert plugin == "eng" and answer.kv_cache_usage == "eng:kv"


def test_a_wrapper_sees_and_can_change_a_list_hook() -> None:
    @hookimpl
    def inferx_launchers() -> list[LauncherInfo]:
        return [LauncherInfo("mine", "a launcher", object)]

    @hookimpl(hookwrapper=True)  # old-style wrappers work too
    def wrap_launchers() -> Generator[None, Any, None]:
        outcome = yield
        outcome.force_result(
            [*outcome.get_result(), [LauncherInfo("added", "by the wrapper", object)]]
        )

    wrapper = _module("wrapper", inferx_launchers=wrap_launchers)
    pm = _pm(("mine", _module("mine", inferx_launchers=inferx_launchers)), ("wrapper", wrapper))
    answers = pm.call_each("inferx_launchers")
    assert [(plugin, [i.name for i in infos]) for plugin, infos in answers] == [
        ("mine", ["mine"]),
        ("wrapper", ["added"]),
    ]


def test_a_raising_wrapper_is_reported_and_the_answers_still_count() -> None:
    @hookimpl(wrapper=True)
    def inferx_platform() -> Generator[None, Any, Any]:
        yield
        raise RuntimeError("wrapper on fire")

    @hookimpl
    def detect() -> Platform:
        return Platform()

    pm = _pm(
        ("ok", _module("ok", inferx_platform=detect)),
        ("bad-wrapper", _module("bad", inferx_platform=inferx_platform)),
    )
    assert [plugin for plugin, _ in pm.call_each("inferx_platform")] == ["ok"]
    assert [(f.plugin, f.error) for f in pm.hook_failures] == [
        ("bad-wrapper", "RuntimeError: wrapper on fire")
    ]


# -- tracing and monitoring --------------------------------------------------------
def test_pluggy_tracing_sees_every_hook_call() -> None:
    pm = _pm(("eng", _engine("eng", inferx_engine_metrics=_metrics("eng:kv"))))
    lines: list[str] = []
    pm.trace.root.setwriter(lines.append)
    undo = pm.enable_tracing()
    try:
        pm.call_first("inferx_engine_metrics", server=_server("eng"))
    finally:
        undo()
    text = "".join(lines)
    assert "inferx_engines" in text  # the registry, built for the dispatch
    assert "inferx_engine_metrics" in text and "finish inferx_engine_metrics" in text


def test_hookcall_monitoring_gets_the_plugins_and_the_result() -> None:
    calls: list[tuple[str, list[str]]] = []
    results: list[Any] = []
    pm = _pm(("eng", _engine("eng", inferx_engine_metrics=_metrics("eng:kv"))))
    engine_registry(pm)  # built before monitoring starts
    pm.add_hookcall_monitoring(
        lambda hook, impls, kwargs: calls.append((hook, [i.plugin_name for i in impls])),
        lambda outcome, hook, impls, kwargs: results.append(outcome.get_result()),
    )
    pm.call_first("inferx_engine_metrics", server=_server("eng"))
    assert calls == [("inferx_engine_metrics", ["eng"])]
    assert results[0].kv_cache_usage == "eng:kv"


# -- isolation and strict mode ---------------------------------------------------------
def _raising_detector() -> Any:
    @hookimpl
    def inferx_platform() -> Platform:
        raise RuntimeError("driver on fire")

    return _module("flaky", inferx_platform=inferx_platform)


def test_a_raising_plugin_in_a_list_hook_is_recorded_by_name() -> None:
    @hookimpl
    def detect() -> Platform:
        return Platform()

    pm = _pm(("ok", _module("ok", inferx_platform=detect)), ("flaky", _raising_detector()))
    assert [plugin for plugin, _ in pm.call_each("inferx_platform")] == ["ok"]
    assert [(f.plugin, f.hook) for f in pm.hook_failures] == [("flaky", "inferx_platform")]


def test_strict_mode_raises_naming_the_plugin() -> None:
    pm = _pm(("flaky", _raising_detector()), strict=True)
    with pytest.raises(PluginHookError, match="'flaky' failed in inferx_platform"):
        pm.call_each("inferx_platform")


# -- engine hooks reach the engine's own plugin --------------------------------------
def test_engine_hooks_reach_only_the_plugin_that_registered_the_engine() -> None:
    pm = _pm(
        ("a", _engine("a", inferx_engine_metrics=_metrics("a:kv"))),
        ("b", _engine("b", inferx_engine_metrics=_metrics("b:kv"))),
    )
    # Neither implementation checks the engine; each is asked about its own only.
    assert pm.call_first("inferx_engine_metrics", server=_server("a"))[0] == "a"
    assert pm.call_first("inferx_engine_metrics", server=_server("b"))[0] == "b"


def test_an_engine_plugin_without_the_hook_gives_no_answer_not_another_engines() -> None:
    pm = _pm(("a", _engine("a")), ("b", _engine("b", inferx_engine_metrics=_metrics("b:kv"))))
    assert pm.call_first("inferx_engine_metrics", server=_server("a")) == (None, None)


def test_a_plugin_that_registers_no_engine_is_still_asked() -> None:
    # A plugin written before dispatch may add a hook for another plugin's engine
    # (it checks server.engine itself); it keeps working.
    @hookimpl
    def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap | None:
        if server.engine != "a":
            return None
        return EngineMetricsMap(kv_cache_usage="extension:kv")

    extension = _module("extension", inferx_engine_metrics=inferx_engine_metrics)
    pm = _pm(("a", _engine("a", inferx_engine_metrics=_metrics("a:kv"))), ("ext", extension))
    assert pm.call_first("inferx_engine_metrics", server=_server("a"))[0] == "ext"


def test_an_unknown_or_disputed_engine_is_a_clear_error() -> None:
    pm = _pm(("a", _engine("a", inferx_engine_metrics=_metrics("a:kv"))))
    with pytest.raises(EngineNotFoundError, match="no plugin provides engine 'zzz'"):
        pm.call_first("inferx_engine_metrics", server=_server("zzz"))
    disputed = get_plugin_manager(
        env={"INFERX_PLUGINS": "vllm"},
        builtins=False,
        extra_plugins=[("impostor", _engine("vllm"))],
    )
    with pytest.raises(EngineConflictError, match="inferx-vllm"):
        disputed.call_first("inferx_engine_metrics", server=_server("vllm"))


# -- registries built once per plugin manager -------------------------------------------
def test_registries_are_built_once_and_rebuilt_after_a_registration() -> None:
    calls = {"engines": 0, "launchers": 0, "fixes": 0}

    @hookimpl
    def inferx_engines() -> list[EngineInfo]:
        calls["engines"] += 1
        return [EngineInfo(name="counted", description="counted")]

    @hookimpl
    def inferx_launchers() -> list[LauncherInfo]:
        calls["launchers"] += 1
        return [LauncherInfo("counted", "counted", object)]

    @hookimpl
    def inferx_container_fixes() -> list[Any]:
        calls["fixes"] += 1
        return []

    counted = _module(
        "counted",
        inferx_engines=inferx_engines,
        inferx_launchers=inferx_launchers,
        inferx_container_fixes=inferx_container_fixes,
    )
    pm = _pm(("counted", counted))
    for _ in range(3):
        assert engine_registry(pm).get("counted").plugin == "counted"
        assert launchers(pm)["counted"][0] == "counted"
        assert fix_catalogue(pm) == []
        pm.call_first("inferx_engine_metrics", server=_server("counted"))
    assert calls == {"engines": 1, "launchers": 1, "fixes": 1}
    pm.register(_engine("later"), name="later")
    assert set(engine_registry(pm)) == {"counted", "later"}
    assert calls["engines"] == 2


def test_a_launcher_clash_is_its_own_error() -> None:
    def offering(name: str) -> Any:
        @hookimpl
        def inferx_launchers() -> list[LauncherInfo]:
            return [LauncherInfo("k8s", f"from {name}", object)]

        return _module(name, inferx_launchers=inferx_launchers)

    pm = _pm(("one", offering("one")), ("two", offering("two")))
    with pytest.raises(LauncherConflictError, match="'k8s' is registered by both") as info:
        launchers(pm)
    assert "'one'" in str(info.value) and "'two'" in str(info.value)
    assert not isinstance(info.value, EngineConflictError)
