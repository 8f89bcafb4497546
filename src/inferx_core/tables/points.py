"""The points' tables: a CSV of every point and the summary people read (terminal, HTML).

Rows in (``analysis.points.build_rows`` makes them), text out: the CLI prints the
summary after the report is written, and the report's page shows the same cells.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inferx_core.results.files import write_text_atomic
from inferx_core.tables.columns import column_names

#: CSV columns, in order (one row per point): every column of a row, declared once
#: in ``tables.columns.ROW_COLUMNS``.
CSV_COLUMNS: tuple[str, ...] = column_names()

#: (header, row field, format) of the summary table (terminal and HTML).
SUMMARY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("point", "point_id", "s"),
    ("status", "status", "s"),
    ("hardware", "hardware", "s"),
    ("GPUs", "num_gpus", "gpus"),
    ("engine", "engine", "engine"),
    ("precision", "precision", "s"),
    ("load", "concurrency", "load"),
    ("ok", "completed", "d"),
    ("failed", "failed", "d"),
    ("valid", "valid", "valid"),
    ("tok/s/gpu", "tput_per_gpu", ",.1f"),
    ("tok/s/user", "median_intvty", ",.1f"),
    ("TTFT p50 ms", "median_ttft_ms", ",.1f"),
    ("TTFT p99 ms", "p99_ttft_ms", ",.1f"),
    ("TPOT p50 ms", "median_tpot_ms", ",.2f"),
    ("E2E p50 ms", "median_e2el_ms", ",.0f"),
    ("$/Mtok", "cost_per_mtok_total", ",.3f"),
    ("$/Mtok out", "cost_per_mtok_output", ",.3f"),
    ("tok/s/MW prov.", "tok_s_per_mw_provisioned", ",.0f"),
    ("tok/s/MW meas.", "tok_s_per_mw_measured", ",.0f"),
    ("J/out tok", "joules_per_output_token", ",.3f"),
    ("accuracy", "accuracy", "accuracy"),
    ("Pareto", "on_pareto", "pareto"),
)


#: Columns shown only when some point has the figure (reasoning models, speculative
#: decoding), after E2E; a figure out of its bounds is None and shows as ``-``.
OPTIONAL_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("TTFO p50 ms", "median_ttfo_ms", ",.1f"),
    ("answer TPOT p50 ms", "median_tpot_answer_ms", ",.2f"),
    ("spec accept len", "spec_mean_acceptance_length", ",.2f"),
    ("spec accept rate", "spec_acceptance_rate", ".1%"),
    ("TTFT layer moved", "ttft_layer_summary", "layer"),
)
_AFTER = next(i for i, (_, f, _) in enumerate(SUMMARY_COLUMNS) if f == "median_e2el_ms") + 1


def summary_columns(rows: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str, str], ...]:
    """The summary table's columns for ``rows``: every fixed one, and each optional one that
    some row has a value for."""
    extra = tuple(c for c in OPTIONAL_COLUMNS if any(r.get(c[1]) is not None for r in rows))
    return SUMMARY_COLUMNS[:_AFTER] + extra + SUMMARY_COLUMNS[_AFTER:]


def csv_value(value: Any) -> Any:
    """Plain CSV cells: '' for None, true/false for booleans, repr-exact floats."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, (dict, list, tuple)):
        return str(value)
    return value


def write_csv(rows: Iterable[Mapping[str, Any]], path: Path) -> Path:
    """One row per point with ``CSV_COLUMNS`` (written atomically: complete or absent)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([csv_value(row.get(c)) for c in CSV_COLUMNS])
    return write_text_atomic(path, buffer.getvalue())


_ACCURACY_FAILED = ("below_threshold", "error")


def _accuracy_cell(row: Mapping[str, Any], value: Any) -> str:
    """``0.625±0.183``, with ``✗`` when under its threshold (``error``: the eval failed)."""
    stderr, status = row.get("accuracy_stderr"), row.get("accuracy_status")
    if value is None:
        return "error" if status == "error" else "-"
    text = f"{value:.3f}" + (f"±{stderr:.3f}" if stderr is not None else "")
    return text + (" ✗" if status in _ACCURACY_FAILED else "")


def _pareto_cell(row: Mapping[str, Any], value: Any) -> str:
    marks = []
    if row.get("on_pareto"):
        marks.append("grp")
    if row.get("on_pareto_overall"):
        marks.append("all")
    return "+".join(marks) or "-"


def _load_cell(row: Mapping[str, Any], value: Any) -> str:
    if row.get("request_rate") is not None:
        cap = row.get("concurrency_cap")
        return f"{row['request_rate']:g} req/s" + (f" cap {cap}" if cap else "")
    return "-" if value is None else f"c{value}"


def _gpus_cell(row: Mapping[str, Any], value: Any) -> str:
    if value is None:
        return "-"
    return f"{value}" if row.get("num_gpus_source") == "result" else f"{value}*"


def _engine_cell(row: Mapping[str, Any], value: Any) -> str:
    """``vllm 0.11.0``: the engine with the version the result recorded."""
    if value is None:
        return "-"
    version = row.get("engine_version")
    return f"{value} {version}" if version else str(value)


def _valid_cell(row: Mapping[str, Any], value: Any) -> str:
    """``yes``, or ``no: <failing checks>``; ``-`` when the point was not checked."""
    if value is None:
        return "-"
    if value:
        return "yes"
    failing = row.get("validity_failing")
    if isinstance(failing, (list, tuple)):
        failing = ", ".join(map(str, failing))
    return f"no: {failing}" if failing else "no"


def _layer_cell(row: Mapping[str, Any], value: Any) -> str:
    """``queue +827.9 ms``: the layer of the TTFT that moved most from the series' previous
    load point; ``none`` when none moved beyond the noise floor."""
    if value is None:
        return "-"
    layer, change = row.get("ttft_layer"), row.get("ttft_layer_change_ms")
    if layer is None or change is None:
        return "none"
    return f"{layer} {change:+,.1f} ms"


def layer_lines(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per point with a step: ``<point> TTFT layer: from <previous>: ...``."""
    return [
        f"{row['point_id']} TTFT layer: {row['ttft_layer_summary']}"
        for row in rows
        if row.get("ttft_layer_summary")
    ]


# Formats that read more of the row than their own field.
_ROW_CELLS = {
    "engine": _engine_cell,
    "valid": _valid_cell,
    "pareto": _pareto_cell,
    "load": _load_cell,
    "gpus": _gpus_cell,
    "accuracy": _accuracy_cell,
    "layer": _layer_cell,
}


def cell(row: Mapping[str, Any], field: str, fmt: str) -> str:
    value = row.get(field)
    if fmt in _ROW_CELLS:
        return _ROW_CELLS[fmt](row, value)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if fmt in ("s", "d"):
        return str(value)
    try:
        return format(value, fmt)
    except (TypeError, ValueError):
        return str(value)


def summary_cells(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    columns = summary_columns(rows)
    return [[cell(r, f, fmt) for _, f, fmt in columns] for r in rows]


def print_table(rows: Sequence[Mapping[str, Any]], console: Any = None, title: str = "") -> None:
    """The summary table in the terminal (rich); failed points in red, frontier in bold."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console(width=None if sys.stdout.isatty() else 240)
    table = Table(title=Text(title or "InferX report"))
    for header, field, fmt in summary_columns(rows):
        table.add_column(
            header,
            justify="left" if fmt in ("s", "pareto") else "right",
            no_wrap=field == "point_id",
        )
    for row, cells in zip(rows, summary_cells(rows), strict=True):
        style = None
        if row.get("status") != "ok":
            style = "red"
        elif row.get("on_pareto"):
            style = "bold"
        table.add_row(*map(Text, cells), style=style)  # cells are data, never rich markup
    console.print(table)
    console.print(
        "GPUs: * = assumed (the result has no GPU count; tok/s/gpu divides total "
        "input+output tokens/s by it, as `inferx run` shows); Pareto: grp = on its group's "
        "frontier, all = on the frontier of every group (tok/s/gpu vs tok/s/user); "
        "accuracy: headline figure ± stderr, ✗ = under its threshold or not evaluated",
        markup=False,
        highlight=False,
    )
    for line in layer_lines(rows):  # where the TTFT went from one load point to the next
        console.print(line, markup=False, highlight=False)
