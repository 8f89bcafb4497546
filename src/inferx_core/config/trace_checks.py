"""Checks of a trace-replay workload (``workload.kind: trace``) and of the load beside it.

Kept out of :mod:`inferx_core.config.models` so the models stay readable; they take
the models duck-typed (this module is imported by them).
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = [
    "check_trace_load",
    "check_trace_workload",
    "parse_trace_window",
    "untimed_session_trace",
]


def parse_trace_window(text: str) -> tuple[float, float | None]:
    """``"START:END"`` seconds (either side may be empty: ``"60:"``, ``":30"``)."""
    start_text, sep, end_text = text.partition(":")
    if not sep:
        raise ValueError(f"trace window {text!r} must be START:END seconds, e.g. 0:600 or 60:")
    try:
        start = float(start_text) if start_text.strip() else 0.0
        end = float(end_text) if end_text.strip() else None
    except ValueError:
        raise ValueError(f"trace window {text!r}: START and END must be numbers") from None
    return start, end


def check_trace_workload(workload: Any) -> None:
    """A trace workload names its file and format and nothing that sets prompts otherwise;
    a trace given alone implies kind 'trace'."""
    if workload.trace is not None and workload.kind != "trace":
        if "kind" in workload.model_fields_set:
            raise ValueError(
                f"trace: is read only with kind 'trace' (kind is {workload.kind!r}); "
                "set kind: trace, or remove trace:"
            )
        workload.kind = "trace"  # a trace given alone implies kind 'trace'
    if workload.kind != "trace":
        return
    if workload.trace is None or workload.trace_format is None:
        raise ValueError(
            "kind 'trace' needs 'trace: path/to/file' and 'trace_format: mooncake|azure|inferx'"
        )
    if workload.shared_prefix or workload.dataset is not None:
        raise ValueError("a trace sets the prompts: remove shared_prefix/dataset")
    if workload.trace_window is not None:
        start, end = workload.trace_window
        if not math.isfinite(start) or start < 0:
            raise ValueError(f"trace_window start must be >= 0 seconds, got {start}")
        if end is not None and not end > start:
            raise ValueError(f"trace_window end ({end}) must be after its start ({start})")


def untimed_session_trace(workload: Any) -> bool:
    """True for an InferX session trace whose first session has no ``timestamp_s``: it has
    no times to replay, so the load's closed or open loop dispatches its sessions. Only
    the first line is read (the reader refuses a trace that times some sessions only)."""
    if workload.kind != "trace" or workload.trace_format != "inferx" or workload.trace is None:
        return False
    try:
        with open(workload.trace, encoding="utf-8") as lines:
            first = next((line for line in lines if line.strip()), "")
        turns = json.loads(first).get("turns") if first else None
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return False  # the reader says what is wrong with the file
    if not isinstance(turns, list) or not turns or not isinstance(turns[0], dict):
        return False
    return turns[0].get("timestamp_s") is None


def check_trace_load(workload: Any, load: Any) -> None:
    """A trace sets the arrival times: a rate, ramp or concurrency level beside it is refused
    (an untimed session trace takes the load's levels instead)."""
    if workload.kind != "trace":
        return
    if untimed_session_trace(workload):
        if workload.trace_window is not None:
            raise ValueError(f"trace_window: {workload.trace} times no session; remove it")
        return
    given = [
        name
        for name, used in (
            ("request_rate", load.request_rate is not None),
            ("ramp", load.ramp is not None),
            ("concurrency", load.concurrency not in (None, [1])),
            ("stages", bool(getattr(load, "stages", None))),
        )
        if used
    ]
    if given:
        raise ValueError(
            f"workload kind 'trace' sends requests at the trace's times: remove load.{given[0]} "
            "(load.max_concurrency caps the requests in flight; workload.trace_speedup "
            "replays faster)"
        )
