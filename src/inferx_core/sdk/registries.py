"""Typed answers from the plugin manager: engines, platform, fixes, launchers.

These wrap the raw hooks with the combination rules the specs promise, so
the runner, the CLI and embedding code all ask the same questions the same
way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inferx_core.errors import UserFacingError
from inferx_core.sdk.engine import EngineInfo
from inferx_core.sdk.fixes import DuplicateFixError, Fix, ordered
from inferx_core.sdk.launcher import LauncherInfo
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.platform import Platform, PlatformNote, merge_platforms


class EngineNotFoundError(UserFacingError, LookupError):
    pass


class EngineConflictError(UserFacingError):
    pass


@dataclass(frozen=True)
class EngineEntry:
    info: EngineInfo
    plugin: str
    distribution: str


@dataclass
class EngineRegistry:
    engines: dict[str, EngineEntry] = field(default_factory=dict)
    conflicts: dict[str, list[EngineEntry]] = field(default_factory=dict)

    def get(self, name: str) -> EngineEntry:
        if name in self.conflicts:
            owners = " and ".join(
                f"{e.distribution} (plugin {e.plugin!r})" for e in self.conflicts[name]
            )
            raise EngineConflictError(
                f"engine {name!r} is claimed by {owners}; uninstall one or block it with "
                "INFERX_DISABLE_PLUGINS=<plugin>"
            )
        if name not in self.engines:
            known = ", ".join(sorted(self.engines)) or "none (install an engine plugin)"
            raise EngineNotFoundError(
                f"no plugin provides engine {name!r}; known engines: {known}. "
                f"Install its plugin, e.g. `pip install inferx-{name}`"
            )
        return self.engines[name]


def engine_registry(pm: InferxPluginManager) -> EngineRegistry:
    """All engines by name; a name claimed by two distributions becomes a conflict."""
    registry = EngineRegistry()
    for plugin, infos in pm.call_each("inferx_register_engines"):
        for info in infos:
            entry = EngineEntry(info, plugin, pm.distribution_of(plugin))
            if info.name in registry.conflicts:
                registry.conflicts[info.name].append(entry)
                continue
            existing = registry.engines.get(info.name)
            if existing is None:
                registry.engines[info.name] = entry
            elif existing.distribution != entry.distribution:
                registry.conflicts[info.name] = [registry.engines.pop(info.name), entry]
            # same distribution twice: keep the first
    return registry


def detect_platform(pm: InferxPluginManager) -> Platform:
    """Ask every detector and merge; a failing detector becomes a note, not a crash."""
    already_failed = len(pm.hook_failures)
    answers = [platform for _, platform in pm.call_each("inferx_detect_platform")]
    failures = [
        Platform(notes=(PlatformNote(source=f.plugin, message=f"detection failed: {f.error}"),))
        for f in pm.hook_failures[already_failed:]
        if f.hook == "inferx_detect_platform"
    ]
    return merge_platforms([*answers, *failures])


def fix_catalogue(pm: InferxPluginManager) -> list[tuple[str, Fix]]:
    """Every fix offered, with the plugin that offers it, in application order."""
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
    return [(owner[f.id], f) for f in ordered(fixes)]


def launchers(pm: InferxPluginManager) -> dict[str, tuple[str, LauncherInfo]]:
    """Launchers by name with their plugin; a name registered twice is an error naming both."""
    found: dict[str, tuple[str, LauncherInfo]] = {}
    for plugin, infos in pm.call_each("inferx_launchers"):
        for info in infos:
            if info.name in found and found[info.name][0] != plugin:
                raise EngineConflictError(
                    f"launcher {info.name!r} is registered by both {found[info.name][0]!r} "
                    f"and {plugin!r}"
                )
            found.setdefault(info.name, (plugin, info))
    return found
