"""Search summaries on disk: ``OUTPUT/search/<search_id>.json``, beside the probes.

The folder carries the export marker, so readers of point results skip it;
:func:`load_search_summaries` is how the report finds them (recursively, like
results), with the same strict, bounded JSON reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from inferx_core.config.parsing import ParseError
from inferx_core.metrics.search_model import SearchSummary
from inferx_core.results.read import EXPORT_MARKER, read_json

__all__ = ["SEARCH_DIR", "load_search_summaries", "write_search_summary"]

SEARCH_DIR = "search"


def write_search_summary(output_dir: Path, summary: SearchSummary) -> Path:
    """Write ``summary`` atomically (a temporary file renamed over the old one)."""
    folder = output_dir / SEARCH_DIR
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / EXPORT_MARKER
    if not marker.exists():
        marker.write_text("capacity search summaries; the probes are the results above\n")
    path = folder / f"{summary.search_id}.json"
    tmp = folder / f".{summary.search_id}.json.tmp"
    tmp.write_text(json.dumps(summary.model_dump(mode="json"), indent=2, allow_nan=False) + "\n")
    os.replace(tmp, path)
    return path


def load_search_summaries(
    paths: Iterable[Path | str],
) -> tuple[list[SearchSummary], list[tuple[Path, str]]]:
    """Every summary under ``paths`` (folders, recursively), and the files skipped with why."""
    found: list[SearchSummary] = []
    skipped: list[tuple[Path, str]] = []
    for entry in paths:
        root = Path(entry)
        if not root.is_dir():
            continue
        for path in sorted(root.rglob(f"{SEARCH_DIR}/*.json")):
            if path.name.startswith("."):
                continue
            try:
                found.append(SearchSummary.model_validate(read_json(path)))
            except (OSError, ParseError, ValidationError) as exc:
                skipped.append((path, f"not a search summary: {str(exc).splitlines()[0]}"))
    return found, skipped
