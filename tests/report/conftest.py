"""A headless Chromium for the report tests: found, or installed once, or skipped visibly.

``chromium`` (session fixture) is the path of a Chromium binary. When none is
on the machine and the tests run as root where apt-get exists, Debian's
``chromium`` package is installed once (a lock file serialises concurrent
sessions). Otherwise the browser tests skip with the reason, except under
``INFERX_REQUIRE_BROWSER=1``, where they fail. ``INFERX_CHROMIUM=/path``
names the binary to use (nothing is installed then).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
INSTALL_TIMEOUT_S = 1200
LOCK = Path(tempfile.gettempdir()) / "inferx-chromium-install.lock"
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def find_chromium() -> str | None:
    override = os.environ.get("INFERX_CHROMIUM")
    if override:
        return override if os.access(override, os.X_OK) else None
    for name in CANDIDATES:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            return path
    return None


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    import fcntl

    with LOCK.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install_chromium() -> tuple[str | None, str]:
    """Install Debian's chromium with apt when possible; (path, why not) otherwise."""
    if os.geteuid() != 0:
        return None, "chromium is not installed and the tests do not run as root (no apt install)"
    apt = shutil.which("apt-get")
    if apt is None:
        return None, "chromium is not installed and apt-get is not available"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with _install_lock():
        found = find_chromium()  # another session may have installed it meanwhile
        if found:
            return found, ""
        install = [apt, "install", "-y", "--no-install-recommends", "chromium"]
        for argv in ([apt, "update"], install):
            try:
                proc = subprocess.run(
                    argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=env
                )
            except subprocess.TimeoutExpired:
                return None, f"`{' '.join(argv)}` timed out after {INSTALL_TIMEOUT_S} s"
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
                return None, f"`{' '.join(argv)}` failed: {' | '.join(tail)}"
    found = find_chromium()
    return found, "" if found else "apt installed chromium but no binary was found"


@pytest.fixture(scope="session")
def chromium() -> str:
    path = find_chromium()
    why = ""
    if path is None and os.environ.get("INFERX_CHROMIUM"):
        why = f"INFERX_CHROMIUM={os.environ['INFERX_CHROMIUM']} is not an executable"
    elif path is None:
        path, why = install_chromium()
    if path is None:
        message = f"headless Chromium unavailable: {why}"
        if os.environ.get("INFERX_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (INFERX_REQUIRE_BROWSER=1)")
        pytest.skip(message)
    return path


@pytest.fixture
def headless(chromium: str, tmp_path: Path):
    """``headless(*args) -> stdout``: headless Chromium on a fresh profile (fails loudly)."""
    runs = iter(range(1_000_000))

    def run(*args: str, timeout: float = 120) -> str:
        profile = tmp_path / f"chromium-profile-{next(runs)}"
        argv = [chromium, *HEADLESS_FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return proc.stdout

    return run
