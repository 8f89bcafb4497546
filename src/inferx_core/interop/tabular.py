"""Tables for notebooks: ``points.csv`` (the report's columns) and Parquet files.

- ``points.csv``: one row per point with ``inferx_core.tables.points.CSV_COLUMNS``,
  the same file ``inferx report`` writes;
- ``points.parquet``: one row per point with every field of the flat view
  (nested values as JSON text, so every column has one type);
- ``requests.parquet``: one row per request of every point (warmup rows
  flagged), with the raw timestamps and the per-request metrics.

Parquet needs pyarrow (``pip install 'inferx-core[parquet]'``), imported only here.
Results and records arrive masked (their models mask secrets); every text cell
is scrubbed again here all the same.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inferx_core.config.secrets import scrub
from inferx_core.errors import UserFacingError
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.requests import failure_kind, judged_request
from inferx_core.results.model import PointResultBase

CSV_NAME = "points.csv"
POINTS_PARQUET = "points.parquet"
REQUESTS_PARQUET = "requests.parquet"


def write_points_csv(results: Sequence[PointResultBase], output: Path) -> Path:
    from inferx_core.analysis.points import build_rows
    from inferx_core.report.accuracy import add_accuracy
    from inferx_core.tables.points import write_csv

    rows = build_rows(results)
    add_accuracy(rows, results)  # the accuracy measured on the point's server, as in reports
    return write_csv(rows, output / CSV_NAME)


def _cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str)
    return value


def _point_row(result: PointResultBase) -> dict[str, Any]:
    from inferx_core.report.accuracy import add_accuracy

    row = {k: _cell(v) for k, v in result.flat().items()}
    add_accuracy([row], [result])
    if result.accuracy is not None:  # every task and metric, not only the headline
        row["accuracy_tasks"] = _cell(result.accuracy.model_dump(mode="json")["tasks"])
    # One type per column: the flat view writes "inf" for a closed loop's rate.
    row["request_rate"] = None if row.get("request_rate") == "inf" else row.get("request_rate")
    return row


def _request_row(point_id: str, rec: RequestRecord, ignore_eos: bool) -> dict[str, Any]:
    """The raw record and its per-request metrics, by the result's own definitions: a
    reply cut short of what was asked is failed (``failure_kind`` short_reply), as the
    point's summary counts it (metrics.requests.judged_request)."""
    m = judged_request(rec, ignore_eos)
    return {
        "point_id": point_id,
        **rec.to_json(),
        "ok": m.ok,
        "failure_kind": failure_kind(rec, ignore_eos),
        "output_tokens": m.output_tokens if m.ok else None,
        "ttft_ms": m.ttft_ms,
        "e2el_ms": m.e2el_ms,
        "tpot_ms": m.tpot_ms,
        "interactivity": m.interactivity,
        "stream_end_ms": (rec.end_ns - rec.send_ns) / 1e6 if m.ok else None,
    }


def _scrubbed(value: Any) -> Any:
    return scrub(value) if isinstance(value, str) else value


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UserFacingError(
            "the parquet format needs pyarrow: pip install 'inferx-core[parquet]'"
        ) from None
    return pyarrow


def _write_table(rows: list[dict[str, Any]], path: Path) -> Path:
    pa = _pyarrow()
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    table = pa.Table.from_pylist([{c: _scrubbed(r.get(c)) for c in columns} for r in rows])
    buffer = io.BytesIO()
    pa.parquet.write_table(table, buffer)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(path)  # complete or absent
    return path


def write_parquet(
    results: Sequence[PointResultBase],
    records: dict[str, list[RequestRecord]],
    output: Path,
) -> list[Path]:
    """``points.parquet`` and ``requests.parquet`` (the latter only with records)."""
    output.mkdir(parents=True, exist_ok=True)
    paths = [_write_table([_point_row(r) for r in results], output / POINTS_PARQUET)]
    eos = {r.point_id: r.workload is not None and r.workload.ignore_eos is True for r in results}
    rows = [
        _request_row(pid, rec, eos.get(pid, False)) for pid, recs in records.items() for rec in recs
    ]
    if rows:
        paths.append(_write_table(rows, output / REQUESTS_PARQUET))
    return paths
