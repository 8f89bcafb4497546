"""Imported results into a folder, never one over another (``inferx import``).

Two files can give the same point id (every AIPerf run writes
``profile_export_aiperf.json``; two vLLM files of one name in two folders). A
result already in the folder is replaced only by the same point of the same
file (same sha256: importing it again); anything else gets the next free id
(``-2``, ``-3``...), so every file imported is kept. Per-request records go to
the point's ``.requests.jsonl`` sidecar, written with the result, all or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from inferx_core.load.records.request import RequestRecord
from inferx_core.results.files import read_result, requests_path, result_path, write_point_files
from inferx_core.results.model import PointResultBase

__all__ = ["write_imported"]


def _same_import(path: Path, result: PointResultBase) -> bool:
    try:
        existing = read_result(path)
    except (OSError, ValueError):
        return False  # an unreadable file is not ours to replace
    mine, theirs = result.provenance.imported_from, existing.provenance.imported_from
    return (
        mine is not None
        and theirs is not None
        and mine.sha256 == theirs.sha256
        and existing.point_id == result.point_id
    )


def _free_id(output: Path, result: PointResultBase, taken: set[str]) -> str:
    base = result.point_id
    candidate, n = base, 1
    while candidate in taken or (
        result_path(output, candidate).exists()
        and not _same_import(result_path(output, candidate), result)
    ):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def write_imported(
    output: Path,
    result: PointResultBase,
    records: Sequence[RequestRecord] | None,
    taken: set[str],
) -> Path:
    """Write one imported result (and its records) under a point id no other import of
    this run (``taken``, updated) or of the folder holds; returns the result's path."""
    point_id = _free_id(output, result, taken)
    if point_id != result.point_id:
        identity = result.identity.model_copy(update={"point_id": point_id})
        result = result.model_copy(update={"identity": identity})
    taken.add(point_id)
    sidecars: list[tuple[Path, Iterable[Any]]] = []
    if records is not None:
        rows = [r.to_json() for r in records]
        sidecars.append((requests_path(output, point_id), rows))
    return write_point_files(output, result, sidecars)
