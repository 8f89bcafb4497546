"""The dashboard's points: from the results database or from result folders, one flat
record each, in a compact columnar form the page's script reads.

From folders every distinct result is a point, read by
:func:`~inferx_core.interop.folders.read_folders` (the results reader plus the vLLM
and InferenceX importers; no database involved) and flattened to the database's
row (:func:`~inferx_core.db.records.point_rows`: the page reads one shape from
either source), labelled by the folder it was found under, so a dashboard of two
runs' folders compares the two like two labels of a database.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from inferx_core.db.schema import INDEX_COLUMNS

__all__ = ["COLUMNS", "columnar", "points_from_db", "points_from_paths"]

#: What the page gets of each point (the database's columns plus its labels).
COLUMNS: tuple[str, ...] = (*INDEX_COLUMNS, "power_valid", "labels")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def points_from_db(url: str | None, filters: Any = None) -> list[dict[str, Any]]:
    from inferx_core.db.store import open_db

    with open_db(url) as db:
        return db.points(filters)


def points_from_paths(
    paths: Sequence[Path | str], skipped: list[tuple[str, str]] | None = None
) -> list[dict[str, Any]]:
    """Every result under each folder (InferX, vLLM, InferenceX), labelled by the folder;
    files that could not be used are added to ``skipped`` as (path, why)."""
    from inferx_core.db.records import point_rows
    from inferx_core.interop.folders import read_folders

    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in paths:
        found = read_folders([entry])
        if skipped is not None:
            skipped += found.skipped
        label = Path(entry).name or str(entry)
        for row in point_rows(found.results, found.sources):
            record = dict(zip(INDEX_COLUMNS, row.values, strict=True))
            record.update(power_valid=row.power_valid, labels=[label])
            if row.content_hash in seen:  # the same point in two folders is drawn once
                continue
            seen.add(row.content_hash)
            out.append(record)
    return out


def columnar(points: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``{"columns": [...], "rows": [[...], ...]}``: a third the size of a list of dicts."""
    return {
        "columns": list(COLUMNS),
        "rows": [[_clean(p.get(c)) for c in COLUMNS] for p in points],
    }
