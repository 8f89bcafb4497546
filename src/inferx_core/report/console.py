"""The table people read after a run: one row per load point."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from rich.markup import escape as esc

from inferx_core.report.dimensions import dimension_lines
from inferx_core.report.figures import figure_lines
from inferx_core.results.model import PointResultBase
from inferx_core.sdk.redact import redact_text

COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (header, flat (vLLM-named) field of the result, format)
    ("status", "status", "s"),
    ("conc", "max_concurrency", "s"),
    ("rate", "request_rate", "s"),
    ("ok", "completed", "d"),
    ("fail", "failed", "d"),
    ("out tok/s", "output_throughput", ",.1f"),
    ("tot tok/s", "total_token_throughput", ",.1f"),
    ("tok/s/gpu", "tput_per_gpu", ",.1f"),
    ("TTFT p50 ms", "median_ttft_ms", ",.1f"),
    ("TTFT p99 ms", "p99_ttft_ms", ",.1f"),
    ("TPOT p50 ms", "median_tpot_ms", ",.2f"),
    ("ITL p99 ms", "p99_itl_ms", ",.2f"),
    ("tok/s/user", "median_intvty", ",.1f"),
    ("goodput req/s", "request_goodput", ",.2f"),
)

_PER_GPU = next(i for i, (_, f, _) in enumerate(COLUMNS) if f == "tput_per_gpu")


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    if fmt == "s":
        return str(value)
    try:
        return format(value, fmt)
    except (TypeError, ValueError):
        return str(value)


#: Said under the table when a point's tok/s/gpu divides by an assumed GPU count.
ASSUMED_GPUS_NOTE = (
    "tok/s/gpu: total (input + output) tokens/s per GPU; * = GPU count assumed "
    "(the result has none: 1, as `inferx report` assumes; give --num-gpus)"
)


def per_gpu_cell(result: PointResultBase) -> str:
    """tok/s/gpu exactly as `inferx report` computes it: the result's own figure, else its
    total tokens/s over the assumed GPU count, marked ``*``."""
    from inferx_core.analysis.cost import CostOptions, per_gpu_throughputs, resolve_num_gpus

    num_gpus, source = resolve_num_gpus(result, CostOptions())
    value = per_gpu_throughputs(result, num_gpus, source)["tput_per_gpu"]
    text = _cell(value, ",.1f")
    return text if source == "result" or value is None else f"{text}*"


def _summary_row(result: PointResultBase) -> list[str]:
    flat = result.flat()  # the columns are named by their flat (vLLM) names
    cells = [
        per_gpu_cell(result) if f == "tput_per_gpu" else _cell(flat.get(f), fmt)
        for _, f, fmt in COLUMNS
    ]
    return [result.point_id, *cells]


def summary_rows(results: Iterable[PointResultBase]) -> list[list[str]]:
    return [_summary_row(r) for r in results]


def accuracy_lines(result: PointResultBase) -> list[str]:
    """One line per evaluated task: ``accuracy gsm8k exact_match,strict-match 0.6250 ± 0.1830
    (threshold 0.9: below_threshold)``."""
    section = result.accuracy
    if section is None:
        return []
    lines = []
    for task in section.tasks:
        figure = "-" if task.value is None else f"{task.value:.4f}"
        if task.stderr is not None:
            figure += f" ± {task.stderr:.4f}"
        check = (
            task.status
            if task.threshold is None
            else f"threshold {task.threshold:g}: {task.status}"
        )
        reason = f"; {task.error.splitlines()[0]}" if task.error else ""
        lines.append(f"accuracy {task.task} {task.metric or ''} {figure} ({check}{reason})")
    return lines


def print_summary(results: Iterable[PointResultBase], console: Any = None, title: str = "") -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Off a terminal (CI logs, pipes) rich would wrap at 80 columns; keep rows whole.
    console = console or Console(width=None if sys.stdout.isatty() else 220)
    table = Table(title=Text(redact_text(title or "InferX results")))  # e.g. a URL's password
    table.add_column("point")
    for header, _, _ in COLUMNS:
        table.add_column(header, justify="right")
    results = list(results)
    rows = summary_rows(results)
    for result, row in zip(results, rows, strict=True):
        style = None if result.status == "ok" else "red"
        table.add_row(*map(Text, row), style=style)  # cells are data, never rich markup
    console.print(table)
    if any(row[1 + _PER_GPU].endswith("*") for row in rows):
        console.print(ASSUMED_GPUS_NOTE, markup=False, highlight=False)
    for result in results:
        if result.failure_reason:
            console.print(f"[red]{esc(result.point_id)}[/]: {esc(result.failure_reason)}")
        if result.repeats is not None:
            console.print(f"{esc(result.point_id)}: {repeat_line(result.repeats)}", highlight=False)
        for line in (*dimension_lines(result), *figure_lines(result)):
            console.print(f"{esc(result.point_id)}: {esc(line)}", highlight=False)
        for line in accuracy_lines(result):
            style = "green" if result.accuracy is not None and result.accuracy.ok else "red"
            console.print(f"[{style}]{esc(result.point_id)}[/]: {esc(line)}", highlight=False)
        if result.load is not None and result.load.output_tokens_estimated:
            console.print(
                f"[yellow]{esc(result.point_id)}[/]: output tokens estimated from chunks "
                "(the server sent no usage)"
            )


def repeat_line(repeats: Any) -> str:
    """``3 runs: out tok/s 725.0 (661.0-1255.0, 95% CI 70.3-1690.9)``; the median run shown."""
    stat = repeats.stats.get("output_throughput")
    if stat is None or stat.median is None:
        return f"{repeats.n} runs"
    ci = "" if stat.ci95_low is None else f", 95% CI {stat.ci95_low:.1f}-{stat.ci95_high:.1f}"
    return (
        f"{repeats.n} runs (median run #{repeats.chosen}): out tok/s {stat.median:.1f} "
        f"(min-max {stat.min:.1f}-{stat.max:.1f}{ci})"
    )
