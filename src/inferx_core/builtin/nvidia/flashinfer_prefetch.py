"""Fill FlashInfer's cubin cache once, under a lock, then become the engine.

The ``flashinfer-shared-cache`` fix writes this file's source into the run
folder and starts the engine as::

    python3 {run_dir}/inferx_flashinfer_prefetch.py --timeout 900 -- ENGINE ARGV...

It runs with whatever Python the engine's image or host has, so it uses the
standard library only, and it never stops the engine from starting: every
problem is printed (to the engine log) and the engine is started anyway.

What it does, in order:

1. finds the engine's Python (``ENGINE[0]`` when it is a python, else the
   interpreter in the shebang of ``ENGINE[0]``, else this one) and asks it for
   the installed ``flashinfer-python`` version (metadata only, no torch import);
2. does nothing more when FlashInfer is absent, when the version already has
   the upstream fix (>= :data:`FIXED_IN`), when ``FLASHINFER_NO_DOWNLOAD`` is
   set, or when the shared cache (``$FLASHINFER_WORKSPACE_BASE``) already
   holds the marker of a finished prefetch for this version;
3. otherwise takes an exclusive ``flock`` on ``$FLASHINFER_WORKSPACE_BASE/
   .inferx-flashinfer.lock`` (waiting at most ``--lock-timeout`` seconds, so
   concurrent InferX starts on the node queue up), checks the marker again,
   runs ``python -m flashinfer --download-cubin`` (FlashInfer >= 0.3; older
   releases: ``flashinfer.artifacts.download_artifacts()``) bounded by
   ``--timeout``, and writes the marker when it succeeded;
4. ``exec``s the engine (same process id, same process group).

Why: FlashInfer downloads its kernels (cubins) at the first use in every
rank; up to flashinfer-ai/flashinfer#1779 (merged 2025-09-26, first in the
0.4 releases) its lock-file cleanup raced between the ranks of one server.
With the cache filled before the ranks start, they find every cubin locally.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import IO, Any

FIXED_IN = (0, 4, 0)
LOCK_NAME = ".inferx-flashinfer.lock"
MARKER = ".inferx-flashinfer-prefetched-{version}"
DISTRIBUTIONS = ("flashinfer-python", "flashinfer")
PREFIX = "[inferx flashinfer-prefetch]"


def log(message: str) -> None:
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


def version_tuple(text: str) -> tuple[int, ...]:
    """'0.3.1.post1' -> (0, 3, 1); leading integer parts only."""
    parts = []
    for piece in text.split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(parts)


def engine_python(argv0: str) -> str:
    """The interpreter that runs the engine: argv[0] itself, its shebang, or this one."""
    if os.path.basename(argv0).startswith("python"):
        return shutil.which(argv0) or argv0
    path = shutil.which(argv0)
    if path:
        try:
            with open(path, "rb") as handle:
                first = handle.readline(512)
        except OSError:
            first = b""
        if first.startswith(b"#!"):
            words = first[2:].decode("utf-8", "replace").split()
            if words and os.path.basename(words[0]).startswith("python"):
                return words[0]
            env_python = len(words) >= 2 and os.path.basename(words[0]) == "env"
            if env_python and words[1].startswith("python"):
                return shutil.which(words[1]) or words[1]
    return sys.executable


def flashinfer_version(python: str, timeout_s: float = 60.0) -> str | None:
    """The installed FlashInfer version as the engine's Python sees it, or None."""
    code = (
        "import importlib.metadata as m\n"
        f"for d in {DISTRIBUTIONS!r}:\n"
        "    try:\n"
        "        print(m.version(d)); break\n"
        "    except m.PackageNotFoundError:\n"
        "        pass\n"
    )
    try:
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log(f"cannot ask {python} for the FlashInfer version: {exc}")
        return None
    return out.stdout.strip() or None


def acquire(handle: IO[Any], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)


def download(python: str, timeout_s: float) -> bool:
    """Run FlashInfer's own cubin download with the engine's Python; True when it succeeded."""
    commands = (
        [python, "-m", "flashinfer", "--download-cubin"],
        [python, "-c", "from flashinfer.artifacts import download_artifacts; download_artifacts()"],
    )
    deadline = time.monotonic() + timeout_s
    for command in commands:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            proc = subprocess.run(command, timeout=remaining, check=False)
        except subprocess.TimeoutExpired:
            log(f"{' '.join(command[1:3])} did not finish within {timeout_s:.0f} s")
            return False
        except OSError as exc:
            log(f"cannot run {python}: {exc}")
            return False
        if proc.returncode == 0:
            return True
        log(f"{' '.join(command[:3])} exited with {proc.returncode}")
    return False


def prefetch(engine: Sequence[str], timeout_s: float, lock_timeout_s: float) -> str:
    """Fill the shared cache if it needs it; returns what was done, in words."""
    base = os.environ.get("FLASHINFER_WORKSPACE_BASE")
    if not base:
        return "FLASHINFER_WORKSPACE_BASE is not set; nothing to share"
    if os.environ.get("FLASHINFER_NO_DOWNLOAD"):
        return "FLASHINFER_NO_DOWNLOAD is set; downloads are off"
    python = engine_python(engine[0])
    version = flashinfer_version(python)
    if version is None:
        return f"FlashInfer is not installed for {python}; nothing to prefetch"
    if version_tuple(version) >= FIXED_IN:
        fixed = ".".join(map(str, FIXED_IN))
        return f"FlashInfer {version} (>= {fixed}) has the download-lock fix; no prefetch needed"
    os.makedirs(base, exist_ok=True)
    marker = os.path.join(base, MARKER.format(version=version))
    if os.path.exists(marker):
        return f"cache in {base} already filled for FlashInfer {version}"
    with open(os.path.join(base, LOCK_NAME), "a") as lock:
        if not acquire(lock, lock_timeout_s):
            return (
                f"another start held {os.path.join(base, LOCK_NAME)} for {lock_timeout_s:.0f} s; "
                "starting without the prefetch"
            )
        try:
            if os.path.exists(marker):
                return f"cache in {base} filled for FlashInfer {version} while waiting"
            log(f"filling {base} for FlashInfer {version} before the ranks start")
            started = time.monotonic()
            if not download(python, timeout_s):
                return "the download failed; the engine's ranks download what they need"
            with open(marker, "w") as handle:
                handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n")
            return f"cache filled in {time.monotonic() - started:.0f} s"
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_UN)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        log("usage: inferx_flashinfer_prefetch.py [--timeout S] [--lock-timeout S] -- ENGINE...")
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="inferx_flashinfer_prefetch.py")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--lock-timeout", type=float, default=None)
    args = parser.parse_args(argv[:split])
    engine = argv[split + 1 :]
    if not engine:
        log("no engine command after --")
        return 2
    lock_timeout = args.timeout if args.lock_timeout is None else args.lock_timeout
    try:
        log(prefetch(engine, args.timeout, lock_timeout))
    except Exception as exc:  # never keep the engine from starting
        log(f"skipped: {type(exc).__name__}: {exc}")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(engine[0], engine)
    return 127  # pragma: no cover - execvp does not return


if __name__ == "__main__":
    sys.exit(main())
