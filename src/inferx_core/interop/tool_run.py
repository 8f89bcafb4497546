"""One run of another benchmark tool, as read from its files, before it is judged.

Each reader (:mod:`.aiperf`, :mod:`.guidellm`, :mod:`.vllm_detailed`,
:mod:`.inference_perf`) turns a tool's files into :class:`ToolRun`: its
per-request data as :class:`~inferx_core.load.records.request.RequestRecord`
where the file has it (so InferX's own statistics and checks run on it), the
tool's own summary figures under InferX's flat names, and what the file cannot
tell (``not_judged``: check name -> why). :mod:`.judged` makes the result.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.validity import ValidityCheck

ToolName = Literal["AIPerf", "GuideLLM", "vllm bench serve", "inference-perf"]

__all__ = ["ToolName", "ToolRun", "sha256_of", "slug"]


def slug(text: str) -> str:
    """A point id from free text (a file or benchmark name)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "imported"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class ToolRun:
    """What one benchmark (one load level) of a tool's file holds."""

    tool: ToolName
    version: str | None
    path: Path  # the file the run's summary came from
    point_id: str
    date: str
    #: per-request data as records (None: the file has none, e.g. a summary only)
    records: list[RequestRecord] | None = None
    mode: Literal["closed", "open"] | None = None
    concurrency: int | None = None
    request_rate: float | None = None  # open loop: the target rate (req/s)
    arrival: str | None = None  # open loop: poisson, constant, ... as the tool names it
    #: the output / input length the run asked for (mean tokens); None: the file does not say
    requested_output_tokens: float | None = None
    requested_input_tokens: float | None = None
    #: requests the tool's own summary counts (to tell a per-request file with rows removed)
    reported_requests: int | None = None
    #: the tool's own figures by InferX's flat names (``output_throughput``, ``median_ttft_ms``)
    tool_figures: dict[str, Any] = field(default_factory=dict)
    #: check name -> why it cannot run on this file
    not_judged: dict[str, str] = field(default_factory=dict)
    #: what the file says about the tool's token counts (the usage check names it)
    token_counts: str = "the server's usage"
    model_id: str | None = None
    #: every file read for this run (sha256 of the first is kept in the result)
    sources: list[Path] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    #: checks the reader made from the file's own figures (a summary's achieved rate)
    checks: list[ValidityCheck] = field(default_factory=list)
    #: checks whose input the records only pretend to have -> why they are left out
    skip_checks: dict[str, str] = field(default_factory=dict)
    #: why the records' ITL figures are null (a file with first and last chunk only)
    no_itl: str | None = None
