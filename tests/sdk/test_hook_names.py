"""One hook naming style: renamed hooks' old names are refused with the new name, not aliased."""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path

import pytest

import inferx_example_plugin.hooks
import inferx_llamacpp.hooks
import inferx_rocm.hooks
from inferx_core import hookimpl
from inferx_core.sdk import hookspecs
from inferx_core.sdk.engine import EngineInfo
from inferx_core.sdk.manager import PluginError, get_plugin_manager

# Real plugins whose source implements each renamed hook under its new name.
REAL_PLUGINS = {
    "inferx_engines": inferx_example_plugin.hooks,
    "inferx_platform": inferx_rocm.hooks,
    "inferx_engine_argv_verdict": inferx_llamacpp.hooks,
}


def _with_old_names(module: types.ModuleType) -> types.ModuleType:
    """The real plugin's own source with every renamed hook written under its old name."""
    source = Path(inspect.getfile(module)).read_text()
    for old, new in hookspecs.RENAMED_HOOKS.items():
        source = re.sub(rf"\bdef {new}\(", f"def {old}(", source)
    old_module = types.ModuleType(f"{module.__name__}_old_names")
    old_module.__file__ = module.__file__
    exec(compile(source, module.__file__ or module.__name__, "exec"), old_module.__dict__)
    return old_module


def test_every_spec_follows_the_naming_rule() -> None:
    functions = inspect.getmembers(hookspecs, inspect.isfunction)
    specs = [name for name, _ in functions if name.startswith("inferx_")]
    verbs = ("register", "detect", "check", "get", "make", "build")
    assert all(not any(f"_{verb}" in name for verb in verbs) for name in specs), specs
    assert set(hookspecs.RENAMED_HOOKS.values()) <= set(specs)
    assert not set(hookspecs.RENAMED_HOOKS) & set(specs)  # no alias spec left behind


@pytest.mark.parametrize("new", sorted(REAL_PLUGINS))
def test_a_real_plugin_with_an_old_name_is_refused_naming_both(new: str) -> None:
    old = next(o for o, n in hookspecs.RENAMED_HOOKS.items() if n == new)
    plugin = _with_old_names(REAL_PLUGINS[new])
    assert callable(getattr(plugin, old)) and not hasattr(plugin, new)

    pm = get_plugin_manager(load_entry_points=False, extra_plugins=[("old-plugin", plugin)], env={})
    record = pm.record_for("old-plugin")
    assert record is not None and record.status == "error"
    assert record.error is not None and "\n" not in record.error
    assert f"implements {old}, renamed {new}" in record.error
    assert pm.get_plugin("old-plugin") is None  # not registered: no hook of it is ever called

    with pytest.raises(PluginError) as raised:
        get_plugin_manager(
            load_entry_points=False,
            extra_plugins=[("old-plugin", plugin)],
            env={"INFERX_STRICT_PLUGINS": "1"},
        )
    message = str(raised.value)
    assert "\n" not in message
    assert "'old-plugin'" in message and old in message and new in message


def test_registering_directly_is_refused_too_and_the_old_hook_never_runs() -> None:
    called: list[str] = []

    class OldStyle:
        @hookimpl
        def inferx_register_engines(self) -> list[EngineInfo]:
            called.append("old")
            return [EngineInfo(name="old-engine", description="written for the old name")]

    pm = get_plugin_manager(load_entry_points=False, env={})
    refused = r"'old-style'.*inferx_register_engines, renamed inferx_engines"
    with pytest.raises(PluginError, match=refused):
        pm.register(OldStyle(), name="old-style")
    assert pm.get_plugin("old-style") is None
    assert all(infos for _, infos in pm.call_each("inferx_engines"))
    assert "old-engine" not in pm.engine_registry().engines
    assert called == []


def test_the_plugin_manager_knows_no_old_hook_name() -> None:
    pm = get_plugin_manager(load_entry_points=False, env={})
    assert all(not hasattr(pm.hook, old) for old in hookspecs.RENAMED_HOOKS)
