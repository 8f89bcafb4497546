"""Typed answers from the plugin manager: engines, platform, fixes, launchers.

These wrap the raw hooks with the combination rules the specs promise, so
the runner, the CLI and embedding code all ask the same questions the same
way. What is built from registration hooks (engines, launchers, the fix
catalogue) is built once per plugin manager and cached on it; registering or
unregistering a plugin resets the cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from inferx_core.errors import UserFacingError
from inferx_core.sdk.engine import EngineInfo
from inferx_core.sdk.evaluator import EvaluatorInfo
from inferx_core.sdk.executor import ExecutorInfo
from inferx_core.sdk.fixes import DuplicateFixError, Fix, ordered
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.launcher import LauncherInfo
from inferx_core.sdk.manager import HookFailure, InferxPluginManager, PluginError, PluginHookError
from inferx_core.sdk.names import (
    EngineConflictError,
    EngineNotFoundError,
    EngineRegistry,
    LauncherConflictError,
    LauncherRegistry,
    Registered,
)
from inferx_core.sdk.platform import Platform, PlatformNote, merge_platforms
from inferx_core.sdk.probes import EngineMetricsMap, ReadinessProbe

#: An engine as the registry keeps it: ``info``, ``plugin``, ``distribution``.
EngineEntry = Registered[EngineInfo]


def engine_registry(pm: InferxPluginManager) -> EngineRegistry:
    """All engines by name; a name claimed by two distributions becomes a conflict.

    Built once per plugin manager (again after a plugin is registered).
    """
    return pm.engine_registry()


def detect_platform(pm: InferxPluginManager) -> Platform:
    """Ask every detector and merge; a failing detector becomes a note, not a crash."""
    already_failed = len(pm.hook_failures)
    pairs = pm.call_each("inferx_platform")
    answers = [platform for _, platform in pairs if isinstance(platform, Platform)]
    wrong = _wrong_answers("inferx_platform", pairs)  # not a Platform: a note too
    failures = [
        Platform(notes=(PlatformNote(source=f.plugin, message=f"detection failed: {f.error}"),))
        for f in [*pm.hook_failures[already_failed:], *wrong]
        if f.hook == "inferx_platform"
    ]
    return merge_platforms([*answers, *failures])


def fix_catalogue(pm: InferxPluginManager) -> list[tuple[str, Fix]]:
    """Every fix offered, with the plugin that offers it, in application order (built once)."""
    return list(pm.cached("fixes", lambda: _fix_catalogue(pm)))


def _fix_catalogue(pm: InferxPluginManager) -> tuple[tuple[str, Fix], ...]:
    owner: dict[str, str] = {}
    fixes: list[Fix] = []
    for plugin, offered in pm.call_each("inferx_container_fixes"):
        for fix in offered:
            if fix.id in owner and owner[fix.id] != plugin:
                raise DuplicateFixError(
                    f"fix id {fix.id!r} is offered by both {owner[fix.id]!r} and {plugin!r}; "
                    "fix ids must be unique (block one with INFERX_DISABLE_PLUGINS)"
                )
            owner.setdefault(fix.id, plugin)
            fixes.append(fix)
    return tuple((owner[f.id], f) for f in ordered(fixes))


def launcher_registry(pm: InferxPluginManager) -> LauncherRegistry:
    """Launchers by name; a name registered by two plugins is a conflict (built once)."""

    def build() -> LauncherRegistry:
        registry = LauncherRegistry()
        registry.add_all(
            (plugin, pm.distribution_of(plugin), infos)
            for plugin, infos in pm.call_each("inferx_launchers")
        )
        return registry

    return pm.cached("launchers", build)


def launchers(pm: InferxPluginManager) -> dict[str, tuple[str, LauncherInfo]]:
    """Launchers by name with their plugin; a name registered twice is an error naming both."""
    registry = launcher_registry(pm)
    if registry.conflicts:
        raise registry.conflict_error(next(iter(registry.conflicts)))
    return {name: (e.plugin, e.info) for name, e in registry.entries.items()}


def launcher_named(pm: InferxPluginManager, name: str) -> tuple[str, LauncherInfo]:
    """The launcher a config's ``launcher:`` names, with its plugin; an unknown name is a
    user error listing the known ones and the fix (``inferx plan`` and ``inferx run`` alike,
    for a single server and a deployment)."""
    known = launchers(pm)
    entry = known.get(name)
    if entry is None:
        raise UserFacingError(
            f"unknown launcher {name!r} in the config's `launcher` field; "
            f"known: {', '.join(sorted(known))}. Set `launcher:` to one of them, or install "
            "the plugin that provides it"
        )
    return entry


# The hooks `inferx plugins` calls to check every plugin, and what each answer
# must hold (a list of these; detection: one Platform).
_CHECKED_LIST_HOOKS: dict[str, type] = {
    "inferx_engines": EngineInfo,
    "inferx_container_fixes": Fix,
    "inferx_launchers": LauncherInfo,
    "inferx_executors": ExecutorInfo,
    "inferx_evaluators": EvaluatorInfo,
}


def _wrong_answers(hook: str, answers: Iterable[tuple[str, object]]) -> list[HookFailure]:
    expected = _CHECKED_LIST_HOOKS.get(hook)
    wrong = []
    for plugin, answer in answers:
        if expected is None:
            bad = None if isinstance(answer, Platform) else f"{type(answer).__name__}, not Platform"
        elif not isinstance(answer, (list, tuple)):
            bad = f"{type(answer).__name__}, not a list of {expected.__name__}"
        else:
            odd = [type(a).__name__ for a in answer if not isinstance(a, expected)]
            bad = f"items of type {', '.join(odd)}, not {expected.__name__}" if odd else None
        if bad:
            wrong.append(HookFailure(plugin, hook, f"returned {bad}"))
    return wrong


CHECK_MODEL = "org/placeholder-model"


def _ask(
    pm: InferxPluginManager, hook: str, expected: type, many: bool, **kwargs: object
) -> tuple[object, HookFailure | None]:
    """One engine hook's answer, or the failure: it raised, or answered the wrong type.

    A ``UserFacingError`` is the plugin refusing this configuration on purpose
    (e.g. "no TPU here"): neither an answer nor a failure.
    """
    try:
        plugin, answer = pm.call_first(hook, **kwargs)
    except PluginHookError as exc:
        if isinstance(exc.error, UserFacingError):
            return None, None
        return None, HookFailure(exc.plugin, hook, f"{type(exc.error).__name__}: {exc.error}")
    if answer is None:
        return None, None
    items = answer if many and isinstance(answer, (list, tuple)) else [answer]
    if (many and not isinstance(answer, (list, tuple))) or not all(
        isinstance(a, expected) for a in items
    ):
        wanted = f"a list of {expected.__name__}" if many else expected.__name__
        return None, HookFailure(plugin or "?", hook, f"returned {answer!r:.80}, not {wanted}")
    return answer, None


def _engine_hook_failures(pm: InferxPluginManager) -> list[HookFailure]:
    """Each engine's launch spec, readiness and metrics hooks, for a placeholder model here."""
    platform = detect_platform(pm)
    failures = []
    for name, entry in sorted(pm.engine_registry().engines.items()):
        from inferx_core.config.models import ServerConfig

        server = ServerConfig(engine=name, model=CHECK_MODEL, port=entry.info.default_port)
        spec, failure = _ask(
            pm,
            "inferx_engine_launch_spec",
            LaunchSpec,
            False,
            server=server,
            platform=platform,
            load=None,
        )
        failures.append(failure)
        if spec is not None:
            _, failure = _ask(
                pm, "inferx_engine_readiness", ReadinessProbe, True, server=server, spec=spec
            )
            failures.append(failure)
        failures.append(
            _ask(pm, "inferx_engine_metrics", EngineMetricsMap, False, server=server)[1]
        )
    return [f for f in failures if f is not None]


def check_hooks(pm: InferxPluginManager) -> list[HookFailure]:
    """Call every hook that needs no running engine and check each answer's type.

    Detection, engines, fixes, launchers, executors and evaluators, then each
    engine's launch spec, readiness and metrics hooks for a placeholder model
    on the detected platform (telemetry samplers and roles need a run). A
    hook that raises (e.g. a detector building an invalid ``Accelerator``) or
    answers the wrong type is a failure, recorded in ``pm.hook_failures`` so
    `inferx plugins` shows it. In strict mode (``INFERX_STRICT_PLUGINS=1``)
    all of them are collected first, then raised as one ``PluginError``.
    """
    strict, pm.strict = pm.strict, False  # collect every failure, not just the first
    try:
        pm.engine_registry()  # built (and cached) first: its failures are not counted twice
        for hook in ("inferx_platform", *_CHECKED_LIST_HOOKS):
            pm.hook_failures.extend(_wrong_answers(hook, pm.call_each(hook)))
        pm.hook_failures.extend(_engine_hook_failures(pm))
    finally:
        pm.strict = strict
    failures = list(dict.fromkeys(pm.hook_failures))  # a hook called twice fails once
    pm.hook_failures[:] = failures
    if strict and failures:
        lines = [
            f"{f.plugin} ({pm.distribution_of(f.plugin)}) in {f.hook}: {f.error}" for f in failures
        ]
        raise PluginError("plugin hooks failed (INFERX_STRICT_PLUGINS=1):\n  " + "\n  ".join(lines))
    return failures


__all__ = [
    "EngineConflictError",
    "EngineEntry",
    "EngineNotFoundError",
    "EngineRegistry",
    "LauncherConflictError",
    "LauncherRegistry",
    "check_hooks",
    "detect_platform",
    "engine_registry",
    "fix_catalogue",
    "launcher_registry",
    "launchers",
]
