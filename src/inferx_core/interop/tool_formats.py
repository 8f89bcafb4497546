"""Which other tool wrote a file, and its runs as judged results (AIPerf, GuideLLM,
inference-perf; vLLM and InferenceX files are :mod:`.importers`' own)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from inferx_core.interop.aiperf import aiperf_run, is_aiperf
from inferx_core.interop.guidellm import guidellm_runs, is_guidellm
from inferx_core.interop.inference_perf import (
    inference_perf_requests_run,
    inference_perf_run,
    is_inference_perf,
)
from inferx_core.interop.inference_perf_requests import (
    is_inference_perf_requests,
    read_with_summary,
)
from inferx_core.interop.judged import judge
from inferx_core.load.records.request import RequestRecord
from inferx_core.results.model import PointResultBase

__all__ = ["sniff_tool", "tool_points"]


def sniff_tool(data: Any, path: Path | None = None) -> str | None:
    """``aiperf``, ``guidellm``, ``inference-perf``, ``inference-perf-requests`` or None
    (also for an inference-perf per-request report beside its summary: read with it)."""
    if is_aiperf(data):
        return "aiperf"
    if is_guidellm(data):
        return "guidellm"
    if is_inference_perf(data):
        return "inference-perf"
    if is_inference_perf_requests(data) and not read_with_summary(path):
        return "inference-perf-requests"
    return None


def _mtime(path: Path) -> str:
    stamp = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)
    return stamp.isoformat(timespec="seconds")


def tool_points(
    kind: str, data: Any, path: Path
) -> Iterator[tuple[PointResultBase, list[RequestRecord] | None]]:
    """Every run of one file of ``kind`` (see :func:`sniff_tool`), judged."""
    if kind == "aiperf":
        run = aiperf_run(data, path, _mtime(path))
        yield judge(run), run.records
    elif kind == "guidellm":
        for run in guidellm_runs(data, path, _mtime(path)):
            yield judge(run), run.records
    elif kind == "inference-perf":
        run, flat = inference_perf_run(data, path, _mtime(path))
        yield judge(run, flat), run.records
    elif kind == "inference-perf-requests":
        run = inference_perf_requests_run(data, path, _mtime(path))
        yield judge(run), run.records
    else:
        raise ValueError(f"unknown tool file kind {kind!r}")
