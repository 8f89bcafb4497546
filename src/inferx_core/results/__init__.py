"""The typed, versioned result model, its one atomic writer and its readers."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # inferx_core.results was a module before 0.2: its names still resolve (deprecated).
    from inferx_core._compat import lazy_reexport

    return lazy_reexport(__name__, "inferx_core.results.files", name)
