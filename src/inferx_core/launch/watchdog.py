"""A tiny guard process that stops an engine when the InferX process that started it dies.

Every launcher starts the engine in its own session (so a terminal's Ctrl-C
reaches InferX, which then stops the engine in order). That also means
nothing ends the engine when InferX itself is killed (``kill -9``, the OOM
killer, a SLURM time limit's SIGKILL): the engine would keep serving. So each
launch also starts this watchdog, in a session of its own, holding the read
end of a pipe whose only writer is InferX. The kernel closes that pipe when
InferX dies, however it dies:

- a byte then EOF: InferX stopped the engine itself; the watchdog exits.
- EOF with no byte: InferX is gone; the watchdog runs the launcher's stop
  command (for a container: ``docker rm -f`` of its InferX label), SIGTERMs the engine's
  process group and every descendant of its leader (also those that left
  the group with ``setsid``), waits a grace period, then SIGKILLs what is
  left, and finally masks the secret values in the engine's log (InferX
  would have done it at its own stop: vLLM logs its arguments).

The log path and the secret values come first on the pipe, as one JSON line:
a pipe is private to the two processes, an argv is readable by every user.

PR_SET_PDEATHSIG on the engine would reach only the group leader, and not a
container behind a ``docker run`` client; this reaches both.

It runs as a plain script (``python watchdog.py``), importing nothing from
inferx_core, so it starts fast and cannot be broken by a plugin.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

#: Seconds between SIGTERM and SIGKILL when InferX died (the engine's own stop grace is unknown).
ORPHAN_GRACE_S = 10.0
_RELEASE = b"released\n"


def _descendants(pid: int) -> list[Any]:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency of inferx
        return []
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _signal_all(pgid: int, procs: list[Any], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.send_signal(sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_orphan(pid: int, grace_s: float, stop_argv: list[str] | None) -> None:
    """Stop the engine whose group leader is ``pid``: stop command, SIGTERM, grace, SIGKILL."""
    procs = _descendants(pid)
    if stop_argv:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(stop_argv, capture_output=True, timeout=grace_s + 20, check=False)
    _signal_all(pid, procs, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_alive(pid) and not any(_running(p) for p in procs):
            return
        time.sleep(0.1)
    _signal_all(pid, procs, signal.SIGKILL)


def _running(proc: Any) -> bool:
    try:
        return bool(proc.is_running()) and proc.status() != "zombie"
    except Exception:
        return False


def scrub_log(path: str, secrets: list[str]) -> None:
    """Replace every secret value in the log with ``***`` (longest first, like InferX)."""
    if not path or not secrets:
        return
    try:
        text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return
    clean = text
    for value in sorted(secrets, key=len, reverse=True):
        clean = clean.replace(value, "***")
    if clean == text:
        return
    tmp = Path(path).with_name(f".{Path(path).name}.scrub")
    with contextlib.suppress(OSError):
        tmp.write_bytes(clean.encode("utf-8", "surrogateescape"))
        os.replace(tmp, path)


def _read_setup(pipe: IO[bytes]) -> dict[str, Any]:
    """The first line InferX writes: {"log": path, "secrets": [...]} (empty when absent)."""
    line = pipe.readline()
    try:
        setup = json.loads(line) if line.strip() else {}
    except ValueError:
        return {}
    return setup if isinstance(setup, dict) else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="inferx-watchdog")
    parser.add_argument("--pid", type=int, required=True, help="the engine's group leader")
    parser.add_argument("--grace", type=float, default=ORPHAN_GRACE_S)
    parser.add_argument(
        "--stop-argv", default="", help="JSON list run first (docker: rm -f by label)"
    )
    args = parser.parse_args(argv)
    # Ctrl-C and a closed terminal are for InferX to handle; only the pipe decides here.
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    setup = _read_setup(sys.stdin.buffer)
    message = sys.stdin.buffer.read()
    if message.startswith(_RELEASE.strip()):
        return 0
    stop_orphan(args.pid, args.grace, json.loads(args.stop_argv) if args.stop_argv else None)
    scrub_log(str(setup.get("log") or ""), [str(v) for v in setup.get("secrets") or []])
    return 0


class Watchdog:
    """InferX's end of one watchdog: :meth:`release` once the engine is stopped."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def release(self) -> None:
        """The engine is gone: tell the watchdog to exit without touching anything."""
        pipe: IO[bytes] | None = self.proc.stdin
        if pipe is None or pipe.closed:
            return
        with contextlib.suppress(OSError):
            pipe.write(_RELEASE)
            pipe.flush()
        with contextlib.suppress(OSError):
            pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def start_watchdog(
    pid: int,
    *,
    stop_argv: list[str] | None = None,
    grace_s: float = ORPHAN_GRACE_S,
    log_path: Path | None = None,
    secrets: list[str] | None = None,
) -> Watchdog:
    """Guard the engine whose process group leader is ``pid`` (see the module doc);
    after an orphan stop, mask ``secrets`` in ``log_path``."""
    # -I: the script folder (launch/, with docker.py etc.) must not shadow the stdlib
    argv = [sys.executable, "-I", str(Path(__file__).resolve()), "--pid", str(pid)]
    argv += ["--grace", str(grace_s)]
    if stop_argv:
        argv += ["--stop-argv", json.dumps(stop_argv)]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    setup = {"log": str(log_path) if log_path else "", "secrets": list(secrets or [])}
    pipe: IO[bytes] | None = getattr(proc, "stdin", None)
    if pipe is not None:
        with contextlib.suppress(OSError):
            pipe.write(json.dumps(setup).encode() + b"\n")
            pipe.flush()
    return Watchdog(proc)


if __name__ == "__main__":
    sys.exit(main())
