"""Launchers start a LaunchSpec somewhere (a local process, docker, a cluster).

Plugins register launchers by name through ``inferx_launchers``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from inferx_core.sdk.launch_spec import LaunchSpec


@runtime_checkable
class ServerHandle(Protocol):
    """A started engine server."""

    base_url: str

    def alive(self) -> bool:
        """True while the engine process (or container, or job) runs."""

    def returncode(self) -> int | None:
        """Exit status once it ended, else None."""

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the engine's log."""

    def stop(self, grace_s: float = 30.0) -> None:
        """End the engine and everything it started; idempotent."""


# What a handle may also do, declared: InferX asks ``isinstance(handle, KillsNow)``,
# not whether a name happens to exist; a launcher's handle has these members or not.
@runtime_checkable
class HasPid(Protocol):
    """A handle of one local process (its process tree's CPU and memory are sampled)."""

    @property
    def pid(self) -> int:
        """The engine's process id."""


@runtime_checkable
class KillsNow(Protocol):
    def kill_now(self) -> None:
        """End at once, no grace (a second Ctrl-C); without it, ``stop(0.0)``."""


@runtime_checkable
class NamesExitedProcess(Protocol):
    def exited_process(self) -> str | None:
        """Which of its processes exited (a deployment's role, process and node), or None."""


@runtime_checkable
class HasEngineUrls(Protocol):
    def engine_urls(self) -> list[str]:
        """The URL of each engine process (a deployment: its engines' /metrics)."""


@runtime_checkable
class HasRouterMetrics(Protocol):
    def router_metrics_url(self) -> str | None:
        """The router's own metrics exporter, when the deployment has one."""


@runtime_checkable
class Launcher(Protocol):
    def start(self, spec: LaunchSpec, run_dir: Path) -> ServerHandle:
        """Start the engine; its log goes under ``run_dir``."""

    def describe(self, spec: LaunchSpec, run_dir: Path) -> dict[str, Any]:
        """What ``start`` would run (argv, env, script), without running it."""


@dataclass(frozen=True, slots=True)
class LauncherInfo:
    """A named launcher factory (``inferx run --launcher NAME``)."""

    name: str
    description: str
    factory: Callable[..., Launcher]
