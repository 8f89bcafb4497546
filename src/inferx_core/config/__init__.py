"""Configuration: run, sweep and bench models, the YAML loader, sweep expansion, point ids.

Inside the package, lower modules never import higher ones: ``base`` (the
strict model) <- ``axes`` (ranges, precisions) <- ``models`` (run, server,
bench) <- ``points`` (load points, server and point ids) <- ``sweep`` (the
matrix, its expansion and filters) <- ``loader``. ``parsing`` (strict, bounded
JSON and YAML) imports none of them; the loader and every reader of result,
import and platform files parse through it.
"""

from __future__ import annotations

from typing import Any

#: names the pre-0.2 module inferx_core.config held that now live in config.sweep
_SWEEP_NAMES = frozenset({"Scenario", "SweepConfig", "SweepMatrix"})


def __getattr__(name: str) -> Any:
    # inferx_core.config was a module before 0.2: its names still resolve (deprecated).
    from inferx_core._compat import lazy_reexport

    target = "inferx_core.config.sweep" if name in _SWEEP_NAMES else "inferx_core.config.models"
    return lazy_reexport(__name__, target, name)
