"""One name registry for everything plugins register by name (engines, launchers, ...).

A registry is built from the answers of one list hook: each answer names
things, each thing is kept with the plugin (and distribution) that offered it.
Two owners claiming one name is a *conflict*: the name is kept aside and
raises, naming both owners, when someone asks for it, so the other names stay
usable. What counts as another owner is the registry's choice: for engines a
different distribution (one distribution may register a name twice through
two entry points), for launchers, executors and evaluators a different plugin.
A listing (``by_name``) is refused whole while a name is in conflict.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

from inferx_core.errors import UserFacingError
from inferx_core.sdk.engine import EngineInfo
from inferx_core.sdk.launcher import LauncherInfo


class Named(Protocol):
    @property
    def name(self) -> str: ...


InfoT = TypeVar("InfoT", bound=Named)


class NameConflictError(UserFacingError):
    """A name is claimed by two owners; the message names both."""


class NameNotFoundError(UserFacingError, LookupError):
    """No plugin registers the name asked for; the message lists the known names."""


class EngineConflictError(NameConflictError):
    """An engine name is registered by two distributions."""


class EngineNotFoundError(NameNotFoundError):
    """No installed plugin provides the engine."""


class LauncherConflictError(NameConflictError):
    """A launcher name is registered by two plugins."""


@dataclass(frozen=True)
class Registered(Generic[InfoT]):
    """One registered thing with the plugin and distribution that offered it."""

    info: InfoT
    plugin: str
    distribution: str

    @property
    def owner(self) -> str:
        return f"{self.distribution} (plugin {self.plugin!r})"


@dataclass
class NameRegistry(Generic[InfoT]):
    """Things by name; a name claimed by two owners is a conflict, raised on lookup."""

    kind: str
    clash_by: Literal["distribution", "plugin"] = "plugin"
    entries: dict[str, Registered[InfoT]] = field(default_factory=dict)
    conflicts: dict[str, list[Registered[InfoT]]] = field(default_factory=dict)

    def add(self, entry: Registered[InfoT]) -> None:
        name = entry.info.name
        if name in self.conflicts:
            self.conflicts[name].append(entry)
            return
        existing = self.entries.get(name)
        if existing is None:
            self.entries[name] = entry
        elif getattr(existing, self.clash_by) != getattr(entry, self.clash_by):
            self.conflicts[name] = [self.entries.pop(name), entry]
        # the same owner twice: the first registration stays

    def add_all(self, answers: Iterable[tuple[str, str, Iterable[InfoT]]]) -> None:
        """Add (plugin, distribution, infos) triples, in call order."""
        for plugin, distribution, infos in answers:
            for info in infos:
                self.add(Registered(info, plugin, distribution))

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def plugins(self) -> set[str]:
        """Every plugin that registered something here (a conflicting name included)."""
        entries = [*self.entries.values(), *(e for es in self.conflicts.values() for e in es)]
        return {e.plugin for e in entries}

    def get(self, name: str) -> Registered[InfoT]:
        if name in self.conflicts:
            raise self.conflict_error(name)
        if name not in self.entries:
            raise self.not_found_error(name)
        return self.entries[name]

    def by_name(self) -> dict[str, tuple[str, InfoT]]:
        """Every name with its plugin and info, for a listing that is refused whole
        while any name is in conflict (the first conflict is raised)."""
        if self.conflicts:
            raise self.conflict_error(next(iter(self.conflicts)))
        return {name: (e.plugin, e.info) for name, e in self.entries.items()}

    def conflict_message(self, name: str) -> str:
        """``<kind> 'x' is registered by both A and B``: the owners as this registry tells
        them apart (plugin names, or distributions with their plugins)."""
        entries = self.conflicts[name]
        if self.clash_by == "plugin":
            owners = " and ".join(repr(e.plugin) for e in entries)
        else:
            owners = " and ".join(e.owner for e in entries)
        return f"{self.kind} {name!r} is registered by both {owners}"

    def conflict_error(self, name: str) -> NameConflictError:
        return NameConflictError(self.conflict_message(name))

    def not_found_error(self, name: str) -> NameNotFoundError:
        known = ", ".join(sorted(self.entries)) or "none"
        return NameNotFoundError(f"unknown {self.kind} {name!r}; known: {known}")


class EngineRegistry(NameRegistry[EngineInfo]):
    """Engines by name; a name claimed by two *distributions* is a conflict."""

    def __init__(self, entries: dict[str, Registered[EngineInfo]] | None = None) -> None:
        super().__init__("engine", "distribution", entries or {}, {})

    @property
    def engines(self) -> dict[str, Registered[EngineInfo]]:
        return self.entries

    def conflict_error(self, name: str) -> EngineConflictError:
        owners = " and ".join(e.owner for e in self.conflicts[name])
        return EngineConflictError(
            f"engine {name!r} is claimed by {owners}; uninstall one or block it with "
            "INFERX_DISABLE_PLUGINS=<plugin>"
        )

    def not_found_error(self, name: str) -> EngineNotFoundError:
        known = ", ".join(sorted(self.entries)) or "none (install an engine plugin)"
        return EngineNotFoundError(
            f"no plugin provides engine {name!r}; known engines: {known}. "
            f"Install its plugin, e.g. `pip install inferx-{name}`"
        )


class LauncherRegistry(NameRegistry[LauncherInfo]):
    """Launchers by name; a name offered by two *plugins* is a conflict."""

    def __init__(self) -> None:
        super().__init__("launcher", "plugin", {}, {})

    def conflict_error(self, name: str) -> LauncherConflictError:
        return LauncherConflictError(self.conflict_message(name))
