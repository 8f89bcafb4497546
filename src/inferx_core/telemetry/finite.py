"""The last guard of a point's telemetry: no value that is not a finite number reaches a file.

A result is written as strict JSON, so one ``inf`` or ``NaN`` anywhere in the
telemetry section (an engine's gauge of ``1e308`` averaged into ``inf``, a power
reading of ``NaN``) would make the whole point unwritable, and the point would
be lost. The window statistics already refuse such values
(:mod:`inferx_core.telemetry.window`); whatever still slips through is set to
None here, with the reason beside it: in the GPU or CPU section's null reasons,
or in a window entry's ``why``.
"""

from __future__ import annotations

import math
from typing import Any

from inferx_core.telemetry.model import TelemetrySection

__all__ = ["finite_telemetry"]

_WHY = "not a finite number"
_REASONS = {"gpu": "power_null_reasons", "cpu": "cpu_energy_null_reasons"}


def _bad(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _clean(value: Any, path: str, found: list[str]) -> Any:
    """``value`` with every non-finite float None; their dotted paths added to ``found``."""
    if _bad(value):
        found.append(path)
        return None
    if isinstance(value, dict):
        before = len(found)
        out = {k: _clean(v, f"{path}.{k}", found) for k, v in value.items()}
        window_entry = "mean" in out or "increase" in out
        if len(found) > before and window_entry and not out.get("why"):
            out["why"] = _WHY
        return out
    if isinstance(value, list):
        return [_clean(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


def finite_telemetry(section: TelemetrySection | None) -> TelemetrySection | None:
    """``section`` with every value that is not a finite number None, saying so."""
    if section is None:
        return None
    data = section.model_dump()
    found: list[str] = []
    cleaned = {k: _clean(v, k, found) for k, v in data.items()}
    if not found:
        return section
    for part, reasons in _REASONS.items():
        for path in found:
            head, _, field = path.partition(".")
            if head == part and "." not in field and "[" not in field:
                cleaned[part][reasons] = {**cleaned[part][reasons], field: _WHY}
    return TelemetrySection.model_validate(cleaned)
