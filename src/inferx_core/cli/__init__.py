"""The ``inferx`` command line: argument parsing and rendering only."""

from __future__ import annotations

import signal
from typing import Any

#: The exit codes of a run ended by a signal (128 + SIGHUP, SIGINT, SIGTERM).
_SIGNAL_EXITS = frozenset({129, 130, 143})


def main(argv: list[str] | None = None) -> Any:
    """Console entry point (``inferx``); imports the CLI only when called.

    As the process's entry (``argv`` None: read from ``sys.argv``), a run that a signal
    ended keeps its exit code through the interpreter's last moments: a second Ctrl-C
    0.3 s after the first, while the process was already exiting (its engines stopped),
    made it die by SIGINT (-2) instead of exiting 130."""
    from inferx_core.cli.app import main as _main

    if argv is not None:  # called in-process (tests, embedding): handlers stay the caller's
        return _main(argv)
    try:
        code = _main(argv)
    except KeyboardInterrupt:  # a further signal inside the CLI's own exit path
        from inferx_core.launch.interrupts import exit_code

        code = exit_code(130)
    if code in _SIGNAL_EXITS:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # the exit is decided: only SIGKILL stops it
    return code
