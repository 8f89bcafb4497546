"""The ``inferx`` command line: argument parsing and rendering only."""

from __future__ import annotations

from typing import Any


def main(argv: list[str] | None = None) -> Any:
    """Console entry point (``inferx``); imports the CLI only when called."""
    from inferx_core.cli.app import main as _main

    return _main(argv)
