"""A point's TTFT taken apart with the engine's own clock, added to what it measured.

The anatomy (:mod:`inferx_core.metrics.anatomy`) is read from the point's
records (the server's figures the stream decoder kept) and the speculative
window of its telemetry; its ``client_rest`` check (severity ``marks``) joins
the point's validity checks, and the section joins the written result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.anatomy import Anatomy, anatomy, anatomy_check
from inferx_core.pipeline.point.assemble import Measured
from inferx_core.pipeline.point.requests import BenchTarget
from inferx_core.results.model import PointResultBase

__all__ = ["point_anatomy", "with_anatomy"]


def _spec_window(measured: Measured) -> Any:
    telemetry = measured.telemetry
    return telemetry.engine_metrics.get("spec_decode") if telemetry is not None else None


def point_anatomy(
    target: BenchTarget,
    records: Sequence[RequestRecord],
    measured: Measured,
    window_ns: tuple[int, int] | None = None,
    *,
    ignore_eos: bool = False,
) -> tuple[Anatomy | None, Measured]:
    """The anatomy (None: no reply carried the engine's figures) and ``measured`` with
    its check among the validity checks; ``window_ns``: the measured window, for the
    split of the rest by the engine's front-end histogram; ``ignore_eos``: the
    workload's, so a reply cut short is failed here as in the point's figures."""
    timing = target.server_timing
    an = anatomy(
        records,
        timing.name if timing else None,
        _spec_window(measured),
        unclocked=timing.unclocked if timing else None,  # the front end its clock leaves out
        engine_window=measured.telemetry.engine_metrics if measured.telemetry else None,
        window_ns=window_ns,
        ignore_eos=ignore_eos,
    )
    check = anatomy_check(an)
    validity = measured.validity
    if check is None or validity is None:
        return an, measured
    return an, replace(
        measured, validity=validity.model_copy(update={"checks": [*validity.checks, check]})
    )


def with_anatomy(result: PointResultBase, an: Anatomy | None) -> PointResultBase:
    """``result`` carrying the anatomy section (unchanged without one)."""
    return result if an is None else result.model_copy(update={"anatomy": an})
