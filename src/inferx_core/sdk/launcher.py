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
