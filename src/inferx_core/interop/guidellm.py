"""GuideLLM's ``benchmarks.json`` (placeholder until the real file is read)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from inferx_core.interop.tool_run import ToolRun


def is_guidellm(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list)


def guidellm_runs(data: Mapping[str, Any], path: Path, date: str) -> Iterator[ToolRun]:
    return iter(())
