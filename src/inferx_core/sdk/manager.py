"""The plugin manager: built-ins plus entry-point plugins, loaded one by one, never fatally.

Plugins are distributions that declare ``[project.entry-points.inferx]``.
Each entry point is filtered (``INFERX_PLUGINS`` allow-list,
``INFERX_DISABLE_PLUGINS`` block-list) *before* it is imported, loaded in its
own ``try``, validated against the hook specs, and recorded with its
distribution, version and status. A broken plugin is reported by name and
skipped; ``INFERX_STRICT_PLUGINS=1`` turns that into an error for plugin
authors. Nothing is loaded at import time of this module.
"""

from __future__ import annotations

import copy
import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal, TypeVar

import pluggy
from pluggy import HookImpl

from inferx_core._version import __version__
from inferx_core.errors import UserFacingError
from inferx_core.sdk import hookspecs
from inferx_core.sdk.markers import PROJECT_NAME
from inferx_core.sdk.names import EngineRegistry

ENTRY_POINT_GROUP = "inferx"
HOOK_PREFIX = "inferx_"
CORE_DISTRIBUTION = "inferx-core"

#: Built-in plugins: (name, module) found by module name and imported here with
#: importlib, the way entry points are, so this layer never imports ``builtin``
#: (which sits above it). This table is the one place that lists them.
BUILTIN_PLUGINS: tuple[tuple[str, str], ...] = (
    ("host", "inferx_core.builtin.host"),
    ("nvml", "inferx_core.builtin.nvidia.plugin"),
    ("launchers", "inferx_core.builtin.launchers"),
)

Status = Literal["ok", "error", "disabled"]
T = TypeVar("T")


class PluginError(UserFacingError):
    """A plugin failed to load or validate (raised only in strict mode)."""


class PluginHookError(UserFacingError):
    """A plugin raised inside a hook whose answer the run needs."""

    def __init__(self, plugin: str, hook: str, error: BaseException) -> None:
        super().__init__(f"plugin {plugin!r} failed in {hook}: {type(error).__name__}: {error}")
        self.plugin, self.hook, self.error = plugin, hook, error


@dataclass
class PluginRecord:
    """What ``inferx plugins`` shows for one plugin."""

    name: str
    distribution: str
    version: str
    status: Status = "ok"
    error: str | None = None
    hooks: list[str] = field(default_factory=list)
    builtin: bool = False
    entry_point: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "error": self.error,
            "hooks": self.hooks,
            "builtin": self.builtin,
            "entry_point": self.entry_point,
        }


@dataclass(frozen=True)
class HookFailure:
    plugin: str
    hook: str
    error: str


class InferxPluginManager(pluggy.PluginManager):
    """A pluggy manager that remembers what it loaded and what failed."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.records: list[PluginRecord] = []
        self.hook_failures: list[HookFailure] = []
        self.strict = False
        self._cache: dict[str, Any] = {}

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        # Like pytest: a callable named inferx_* is an implementation even
        # without the marker, so a misspelt hook is reported, not ignored.
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(HOOK_PREFIX):
            obj = getattr(plugin, name, None)
            if callable(obj) and not isinstance(obj, type):
                return {}
        return opts

    def record_for(self, name: str) -> PluginRecord | None:
        return next((r for r in self.records if r.name == name), None)

    def _fail(self, record: PluginRecord, message: str) -> None:
        record.status = "error"
        record.error = message
        if self.strict:
            raise PluginError(
                f"plugin {record.name!r} ({record.distribution} {record.version}): {message}"
            )

    def load_plugin(self, obj: Any, record: PluginRecord) -> None:
        """Register ``obj`` under ``record.name`` and validate its hooks."""
        self.records.append(record)
        renamed = old_hook_names(obj)
        if renamed:
            self._fail(record, renamed)
            return
        try:
            self.register(obj, name=record.name)
        except Exception as exc:  # any plugin error is reported, not fatal
            self._unregister_quietly(record.name)
            self._fail(record, f"registration failed: {type(exc).__name__}: {exc}")
            return
        unknown = sorted(
            caller.name for caller in (self.get_hookcallers(obj) or []) if caller.spec is None
        )
        if unknown:
            self._unregister_quietly(record.name)
            self._fail(
                record,
                f"implements unknown hook(s) {', '.join(unknown)}; "
                "`inferx docs hooks` lists the hook names",
            )
            return
        record.hooks = sorted(c.name for c in (self.get_hookcallers(obj) or []))

    def _unregister_quietly(self, name: str) -> None:
        plugin = self.get_plugin(name)
        if plugin is not None:
            self.unregister(plugin=plugin, name=name)
        # pluggy leaves spec-less callers behind; drop them so later
        # check_pending() calls see only healthy plugins.
        for hook_name in [n for n in vars(self.hook) if n.startswith(HOOK_PREFIX)]:
            caller = getattr(self.hook, hook_name)
            if caller.spec is None and not caller.get_hookimpls():
                delattr(self.hook, hook_name)

    # -- caching what is built from hook answers ---------------------------
    def register(self, plugin: Any, name: str | None = None) -> str | None:
        renamed = old_hook_names(plugin)
        if renamed:  # refused however it is registered, not only through load_plugin
            raise PluginError(f"plugin {name or self.get_canonical_name(plugin)!r}: {renamed}")
        self._cache.clear()  # registries built from the old plugin set are stale
        return super().register(plugin, name)

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        self._cache.clear()
        return super().unregister(plugin, name)

    def cached(self, key: str, build: Callable[[], T]) -> T:
        """``build()`` once per plugin manager; registering or unregistering a plugin resets it."""
        if key not in self._cache:
            self._cache[key] = build()
        built: T = self._cache[key]  # what build() made for this key
        return built

    def engine_registry(self) -> EngineRegistry:
        """Engines by name with the plugin that registered each (built once)."""

        def build() -> EngineRegistry:
            registry = EngineRegistry()
            registry.add_all(
                (plugin, self.distribution_of(plugin), infos)
                for plugin, infos in self.call_each("inferx_engines")
            )
            return registry

        return self.cached("engines", build)

    # -- calling hooks through pluggy, one plugin's failure staying its own -
    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call every implementation of a list hook; a raising plugin is recorded, not fatal.

        Returns (plugin name, answer) pairs in pluggy's call order, skipping
        None answers. An answer a wrapper added or replaced is the wrapper's.
        """
        impls = getattr(self.hook, hook_name).get_hookimpls()
        result, answered = self._call(hook_name, kwargs, impls, firstresult=False)
        pending = list(answered)
        pairs = []
        for answer in result:
            index = next((i for i, (_, a) in enumerate(pending) if a is answer), None)
            plugin = _outer_wrapper(impls) if index is None else pending.pop(index)[0]
            pairs.append((plugin, answer))
        return pairs

    def call_first(self, hook_name: str, **kwargs: Any) -> tuple[str, Any] | tuple[None, None]:
        """Call a firstresult hook; a raising plugin raises PluginHookError naming it.

        An engine hook (``hookspecs.ENGINE_HOOKS``) is not asked of plugins
        that register other engines: only the engine's own plugin, plugins
        that register no engine (extensions) and wrappers see it.
        """
        impls = getattr(self.hook, hook_name).get_hookimpls()
        if hook_name in hookspecs.ENGINE_HOOKS:
            impls = self._not_of_other_engines(impls, getattr(kwargs.get("server"), "engine", None))
        result, answered = self._call(hook_name, kwargs, impls, firstresult=True)
        if result is None:
            return None, None
        if answered and answered[-1][1] is result:
            return answered[-1][0], result
        return _outer_wrapper(impls), result

    def _not_of_other_engines(self, impls: list[HookImpl], engine: str | None) -> list[HookImpl]:
        if engine is None:
            return impls
        registry = self.engine_registry()
        owner = registry.get(engine).plugin  # unknown or claimed twice: a clear error
        others = registry.plugins() - {owner}
        return [i for i in impls if _is_wrapper(i) or i.plugin_name not in others]

    def _call(
        self, hook_name: str, kwargs: Mapping[str, Any], impls: list[HookImpl], *, firstresult: bool
    ) -> tuple[Any, list[tuple[str, Any]]]:
        """Run ``impls`` through pluggy (wrappers, tracing, monitoring apply), each isolated.

        Returns pluggy's result and the (plugin, answer) pairs the
        implementations gave, in call order.
        """
        answered: list[tuple[str, Any]] = []
        isolated = [
            impl if _is_wrapper(impl) else self._isolated(impl, hook_name, answered, firstresult)
            for impl in impls
        ]
        failures_before = len(self.hook_failures)
        try:
            return self._hookexec(hook_name, isolated, kwargs, firstresult), answered
        except (PluginHookError, pluggy.HookCallError):
            raise
        except Exception as exc:  # implementations are isolated: a wrapper raised
            wrapper = _outer_wrapper(impls)
            if firstresult or self.strict:
                raise PluginHookError(wrapper, hook_name, exc) from exc
            # The other plugins' answers still count: ask again without wrappers.
            del self.hook_failures[failures_before:]
            plain = [impl for impl in impls if not _is_wrapper(impl)]
            result = self._call(hook_name, kwargs, plain, firstresult=firstresult)
            self.hook_failures.append(HookFailure(wrapper, hook_name, _describe(exc)))
            return result

    def _isolated(
        self, impl: HookImpl, hook_name: str, answered: list[tuple[str, Any]], always_raise: bool
    ) -> HookImpl:
        """A copy of ``impl`` whose failure is recorded against its plugin (or raised, named)."""
        function = impl.function

        def call(*args: Any) -> Any:
            try:
                answer = function(*args)
            except Exception as exc:  # recorded against the plugin, never fatal
                if always_raise or self.strict:
                    raise PluginHookError(impl.plugin_name, hook_name, exc) from exc
                self.hook_failures.append(HookFailure(impl.plugin_name, hook_name, _describe(exc)))
                return None
            if answer is not None:
                answered.append((impl.plugin_name, answer))
            return answer

        isolated = copy.copy(impl)
        isolated.function = call  # type: ignore[misc]  # pluggy marks it Final
        return isolated

    def distribution_of(self, plugin_name: str) -> str:
        record = self.record_for(plugin_name)
        return record.distribution if record else "?"


def old_hook_names(plugin: Any) -> str | None:
    """One line naming each renamed hook ``plugin`` still implements, with its new name.

    Old names are refused, never aliased: a plugin written against them would
    otherwise fail as an "unknown hook" without the new name, or (without the
    ``inferx_`` prefix rule) simply never be called.
    """
    stale = [
        f"implements {old}, renamed {new}"
        for old, new in hookspecs.RENAMED_HOOKS.items()
        if callable(getattr(plugin, old, None))
    ]
    if not stale:
        return None
    return "; ".join(stale) + " (old hook names are refused: rename the function)"


def _is_wrapper(impl: HookImpl) -> bool:
    return bool(impl.wrapper or impl.hookwrapper)


def _outer_wrapper(impls: list[HookImpl]) -> str:
    """The plugin of the outermost wrapper (pluggy calls the list from its end)."""
    return next((i.plugin_name for i in reversed(impls) if _is_wrapper(i)), "?")


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _env_list(env: Mapping[str, str], key: str) -> list[str] | None:
    if key not in env:
        return None
    return [item.strip() for item in env[key].split(",") if item.strip()]


def _dist_of(ep: metadata.EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "?", "?"
    return dist.metadata["Name"] or dist.name, dist.version


def iter_entry_points() -> list[metadata.EntryPoint]:
    """Entry points of group ``inferx``, each (distribution, name) once.

    The same distribution can be seen twice when it sits on two sys.path
    entries (an editable install plus a copy); it is loaded once.
    """
    seen: set[tuple[str, str]] = set()
    unique = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist, _ = _dist_of(ep)
        key = (dist.lower().replace("_", "-"), ep.name)
        if key in seen:
            continue
        seen.add(key)
        unique.append(ep)
    return unique


def get_plugin_manager(
    *,
    load_entry_points: bool = True,
    builtins: bool = True,
    extra_plugins: Iterable[tuple[str, Any]] = (),
    env: Mapping[str, str] | None = None,
) -> InferxPluginManager:
    """Build a plugin manager: built-ins, then entry points, then ``extra_plugins``.

    ``env`` defaults to ``os.environ`` (INFERX_PLUGINS, INFERX_DISABLE_PLUGINS,
    INFERX_STRICT_PLUGINS are read from it).
    """
    env = os.environ if env is None else env
    pm = InferxPluginManager()
    pm.strict = env.get("INFERX_STRICT_PLUGINS", "").strip().lower() not in ("", "0", "false", "no")
    if builtins:
        _load_builtins(pm)
    if load_entry_points:
        allow = _env_list(env, "INFERX_PLUGINS")
        block = set(_env_list(env, "INFERX_DISABLE_PLUGINS") or [])
        for ep in iter_entry_points():
            _load_entry_point(pm, ep, allow, block)
    for name, obj in extra_plugins:
        pm.load_plugin(obj, PluginRecord(name=name, distribution="(in-process)", version="-"))
    return pm


def _load_builtins(pm: InferxPluginManager) -> None:
    for name, module_name in BUILTIN_PLUGINS:
        record = PluginRecord(
            name=f"inferx.{name}",
            distribution=CORE_DISTRIBUTION,
            version=__version__,
            builtin=True,
            entry_point=module_name,
        )
        pm.load_plugin(importlib.import_module(module_name), record)


def _load_entry_point(
    pm: InferxPluginManager, ep: metadata.EntryPoint, allow: list[str] | None, block: set[str]
) -> None:
    """Filter, import and register one entry point; every problem lands in its record."""
    dist, version = _dist_of(ep)
    record = PluginRecord(name=ep.name, distribution=dist, version=version, entry_point=ep.value)
    if (allow is not None and ep.name not in allow) or ep.name in block:
        record.status = "disabled"
        why = "INFERX_DISABLE_PLUGINS" if ep.name in block else "INFERX_PLUGINS"
        record.error = f"not loaded ({why})"
        pm.records.append(record)
        return
    if pm.get_plugin(ep.name) is not None:
        other = pm.record_for(ep.name)
        pm.records.append(record)
        pm._fail(
            record,
            f"entry point name {ep.name!r} is already used by "
            f"{other.distribution if other else '?'}; rename one of them",
        )
        return
    try:
        obj = ep.load()
    except Exception as exc:  # reported by name, never fatal
        pm.records.append(record)
        pm._fail(record, f"import failed: {_describe(exc)}")
        return
    pm.load_plugin(obj, record)
