"""A result as a database row: its content hash, the index columns, and its JSON.

The content hash is the sha256 of the result's canonical JSON (sorted keys,
no spaces), so the same point ingested twice, from a copied folder or a
re-ingest, is one row. An imported file's own path is left out of the hash
(the file's sha256 stays in): the same vLLM file read from two folders is
the same point.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inferx_core.analysis.cost import CostOptions
from inferx_core.analysis.points import build_rows
from inferx_core.config.secrets import scrub
from inferx_core.db.schema import INDEX_COLUMNS
from inferx_core.results.model import PointResultBase, parse_result

__all__ = ["PointRow", "content_hash", "point_rows", "result_from_json", "utc_iso"]


def _canonical(result: PointResultBase) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    imported = (data.get("provenance") or {}).get("imported_from")
    if isinstance(imported, dict):
        imported["path"] = ""
    return data


def content_hash(result: PointResultBase) -> str:
    text = json.dumps(_canonical(result), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_iso(value: str | None) -> str | None:
    """An ISO date in UTC (``2026-12-03T12:00:00+00:00``), so text order is time order."""
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return parsed.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class PointRow:
    """One result ready to insert: ``values`` follow ``schema.INDEX_COLUMNS``."""

    content_hash: str
    point_id: str
    values: tuple[Any, ...]
    power_valid: bool | None
    result_json: str


def _source(result: PointResultBase) -> str:
    imported = result.provenance.imported_from
    return imported.tool if imported is not None else "inferx"


def _column(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value != value:  # NaN is no figure
        return None
    return scrub(value) if isinstance(value, str) else value  # masked already; once more


def point_rows(
    results: Iterable[PointResultBase], paths: Mapping[int, str] | None = None
) -> list[PointRow]:
    """Rows for ``results``; ``paths`` maps a result's index to the file it came from."""
    out = []
    for i, result in enumerate(results):
        row = build_rows([result], CostOptions())[0]  # the report's description and figures
        flat = result.flat()
        row.update({k: flat.get(k) for k in _MORE_FIGURES})
        row["date"] = utc_iso(result.identity.date)
        row["source"] = _source(result)
        row["source_path"] = (paths or {}).get(i)
        power = flat.get("power_valid")
        # the result masked itself when built; scrubbed again all the same
        data = result.model_dump(mode="json")
        text = scrub(json.dumps(data, separators=(",", ":"), allow_nan=False))
        out.append(
            PointRow(
                content_hash(result),
                result.point_id,
                tuple(_column(row, c) for c in INDEX_COLUMNS),
                power if isinstance(power, bool) else None,
                text,
            )
        )
    return out


# Columns the report's rows do not carry.
_MORE_FIGURES = ("median_tpot_ms", "p99_tpot_ms")


def result_from_json(text: str) -> PointResultBase:
    """A stored result back as its typed model."""
    return parse_result(json.loads(text))
