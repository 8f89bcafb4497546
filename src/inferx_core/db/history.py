"""One metric of one configuration over dates and engine versions: rows and a PNG.

A configuration is a point id (server configuration, scenario and load level);
each stored version of it is one row (date, engine version, labels, value).
The metric is a stored column or any flat result name (read from the stored
result then).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inferx_core.db.schema import METRIC_COLUMNS
from inferx_core.db.store import Filters, ResultsDB
from inferx_core.errors import UserFacingError

__all__ = ["MAX_LINES", "history_rows", "plot_history"]

MAX_LINES = 12


def _value(item: Any, metric: str) -> Any:
    if metric in METRIC_COLUMNS:
        return item.row.get(metric)
    value = item.result.metric(metric)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def history_rows(db: ResultsDB, metric: str, filters: Filters) -> list[dict[str, Any]]:
    """Rows (point_id, date, engine, engine_version, labels, status, value), oldest first."""
    stored = db.points(filters, with_json=True)
    rows = []
    for item in stored:
        row = item.row
        try:
            value = _value(item, metric)
        except KeyError:
            raise UserFacingError(f"unknown metric {metric!r} (a flat result name)") from None
        rows.append(
            {
                "point_id": row["point_id"],
                "date": row["date"],
                "engine": row["engine"],
                "engine_version": row["engine_version"],
                "labels": list(item.labels),
                "status": row["status"],
                "value": value,
            }
        )
    configs = sorted({r["point_id"] for r in rows})
    if len(configs) > MAX_LINES:
        raise UserFacingError(
            f"{len(configs)} configurations match; narrow to at most {MAX_LINES} "
            "(--point, --series, --engine, --hardware, --isl/--osl, ...)"
        )
    return rows


def plot_history(rows: Sequence[dict[str, Any]], metric: str, output: Path) -> Path:
    """A line per configuration: value over date, each point marked with its engine version."""
    import datetime as dt

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    for pid in sorted({r["point_id"] for r in rows}):
        mine = [r for r in rows if r["point_id"] == pid and r["value"] is not None and r["date"]]
        if not mine:
            continue
        xs = [dt.datetime.fromisoformat(r["date"]) for r in mine]
        ys = [r["value"] for r in mine]
        # matplotlib plots datetimes through its date units; its stubs name numbers only
        ax.plot(xs, ys, marker="o", label=pid)  # type: ignore[arg-type]  # dates: see above
        for x, y, r in zip(xs, ys, mine, strict=True):
            ax.annotate(
                str(r["engine_version"] or "?"),
                (x, y),
                fontsize=7,
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
            )
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        ax.set_title(f"{len(bad)} point(s) not ok (no value)", fontsize=9, color="red")
    ax.set_xlabel("date (UTC)")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    if rows:
        ax.legend(fontsize=7)
    fig.autofmt_xdate()
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output)
    plt.close(fig)
    return output
