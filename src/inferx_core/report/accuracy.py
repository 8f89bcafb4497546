"""Accuracy in the report: per point in ``points.csv``, every figure in ``accuracy.csv``, and
a table per configuration (series) and precision beside the Pareto chart.

A point row carries its first task's headline figure (``accuracy``,
``accuracy_stderr``, ``accuracy_task``, ``accuracy_threshold``) and the
section's ``accuracy_status`` (``passed``, ``below_threshold``, ``unchecked``,
``error``); points that were not evaluated leave them empty.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inferx_core.results.files import write_text_atomic
from inferx_core.results.model import PointResultBase
from inferx_core.tables.columns import ACCURACY_FIELDS
from inferx_core.tables.points import csv_value

__all__ = [
    "ACCURACY_CSV_COLUMNS",
    "POINT_FIELDS",
    "accuracy_html",
    "accuracy_rows",
    "add_accuracy",
    "print_accuracy_comparison",
    "write_accuracy_csv",
]

#: Accuracy columns of points.csv (declared with the others in tables.columns).
POINT_FIELDS = ACCURACY_FIELDS

#: What each accuracy.csv row repeats of its point's row (its first columns).
_CONTEXT = (
    "point_id",
    "series",
    "group",
    "precision",
    "engine",
    "model",
    "concurrency",
    "request_rate",
)

#: accuracy.csv: one row per point, task and metric.
ACCURACY_CSV_COLUMNS = (
    *_CONTEXT,
    "task",
    "status",
    "threshold",
    "headline",
    "metric",
    "value",
    "stderr",
    "samples",
    "num_fewshot",
    "limit",
    "evaluator",
    "evaluator_version",
    "error",
)


def _point_fields(result: PointResultBase) -> dict[str, Any]:
    section = result.accuracy
    if section is None or not section.tasks:
        return dict.fromkeys(POINT_FIELDS)
    first = section.tasks[0]
    return {
        "accuracy": first.value,
        "accuracy_stderr": first.stderr,
        "accuracy_task": first.task,
        "accuracy_threshold": first.threshold,
        "accuracy_status": section.status,
    }


def add_accuracy(rows: Iterable[dict[str, Any]], results: Iterable[PointResultBase]) -> None:
    """Fill each row's accuracy columns from its result (rows are matched by point id)."""
    by_id = {r.point_id: r for r in results}
    for row in rows:
        result = by_id.get(row["point_id"])
        row.update(_point_fields(result) if result is not None else dict.fromkeys(POINT_FIELDS))


def accuracy_rows(
    rows: Sequence[Mapping[str, Any]], results: Iterable[PointResultBase]
) -> list[dict[str, Any]]:
    """Every accuracy figure with its point's configuration, in the rows' order."""
    by_id = {r.point_id: r for r in results}
    out: list[dict[str, Any]] = []
    for row in rows:
        result = by_id.get(row["point_id"])
        section = result.accuracy if result is not None else None
        if section is None:
            continue
        context = {k: row.get(k) for k in _CONTEXT}
        for task in section.tasks:
            base = {**context, "task": task.task, "status": task.status}
            base |= {"threshold": task.threshold, "error": task.error}
            base |= {"evaluator": section.evaluator, "evaluator_version": section.evaluator_version}
            if not task.records:
                out.append({**base, "headline": True})
            for record in task.records:
                out.append(
                    {
                        **base,
                        "headline": record.primary,
                        "metric": record.metric,
                        "value": record.value,
                        "stderr": record.stderr,
                        "samples": record.samples,
                        "num_fewshot": record.num_fewshot,
                        "limit": record.limit,
                        "evaluator_version": record.evaluator_version or section.evaluator_version,
                    }
                )
    return out


def write_accuracy_csv(rows: Iterable[Mapping[str, Any]], path: Path) -> Path:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(ACCURACY_CSV_COLUMNS)
    for row in rows:
        writer.writerow([csv_value(row.get(c)) for c in ACCURACY_CSV_COLUMNS])
    return write_text_atomic(path, buffer.getvalue())


def _figure(value: Any, stderr: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" + (f" ± {stderr:.4f}" if stderr is not None else "")


def accuracy_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The headline figures per configuration, precision and load level (an HTML table)."""
    heads: tuple[str, ...] = ("configuration", "precision", "load", "task", "metric")
    heads += ("accuracy ± stderr",)
    heads += ("samples", "threshold", "status")
    body = []
    for row in (r for r in rows if r.get("headline")):
        load = f"c{row['concurrency']}" if row.get("concurrency") is not None else "-"
        if row.get("request_rate") is not None:
            load = f"{row['request_rate']:g} req/s"
        status = str(row.get("status"))
        if row.get("error"):
            status += ": " + str(row["error"]).splitlines()[0]
        cells = [row.get("series"), row.get("precision"), load, row.get("task")]
        cells += [row.get("metric") or "-", _figure(row.get("value"), row.get("stderr"))]
        cells += [row.get("samples"), row.get("threshold"), status]
        tds = "".join(f"<td>{html.escape('-' if c is None else str(c))}</td>" for c in cells)
        bad = row.get("status") in ("below_threshold", "error")
        klass = ' class="failed"' if bad else ""
        body.append(f"<tr{klass}>{tds}</tr>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in heads)
    return (
        '<div class="scroll"><table class="points" id="accuracy"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table></div>"
    )


def print_accuracy_comparison(rows: Sequence[Mapping[str, Any]], console: Any) -> None:
    """``inferx compare``'s accuracy table (analysis.accuracy rows); nothing when empty."""
    if not rows:
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Accuracy B vs A (headline figure ± stderr)")
    for col in ("point", "task", "A", "B", "B - A", "verdict"):
        table.add_column(col, justify="right" if col in ("A", "B", "B - A") else "left")
    for row in rows:
        diff = f"{row['diff']:+.4f}"
        if row.get("diff_stderr") is not None:
            diff += f" ± {row['diff_stderr']:.4f}"
        table.add_row(  # labels and tasks are data: Text, so "[...]" is not rich markup
            Text(str(row["label"])),
            Text(str(row["task"])),
            _figure(row["a"], row.get("a_stderr")),
            _figure(row["b"], row.get("b_stderr")),
            diff,
            f"{row['verdict']} ({row['basis']})",
            style="red" if row["verdict"] == "worse" else None,
        )
    console.print(table)
