"""Reports people read: a terminal table, a CSV of every point, PNG plots, one HTML page.

:func:`write_report` is the Python API of ``inferx report``. It reads every
result under the given folders (merged, see :mod:`inferx_core.results.read`),
builds one row per point (:func:`inferx_core.analysis.points.build_rows`) and
writes into ``output``:

- ``points.csv``: one row per point (``tables.points.CSV_COLUMNS``), with
  ``median_intvty``, ``tput_per_gpu``, cost columns, ``on_pareto`` and the
  ``ttft_layer*`` columns (the layer of the TTFT that moved from the series'
  previous load point: ``analysis.layers.layer_steps``);
- ``throughput_vs_interactivity.png`` (frontiers), ``throughput_vs_latency.png``,
  ``latency_vs_concurrency.png`` (TTFT, TPOT), ``cost_vs_interactivity.png``;
- ``timelines/<point>.png``: GPU power and KV-cache use over time, for every
  point whose ``.telemetry.jsonl`` sidecar has them;
- ``accuracy.csv``: every accuracy figure (point, task, metric, value, stderr,
  threshold, status) when evals ran; the page shows the headline figures per
  configuration and precision beside the Pareto chart;
- ``report.html``: all of the above in one self-contained page.

matplotlib is imported only when plots are drawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from inferx_core.analysis.buyer import search_rows
from inferx_core.analysis.cost import CostOptions
from inferx_core.analysis.points import build_rows
from inferx_core.config.points import slug
from inferx_core.config.slo import SloTarget
from inferx_core.metrics.search_model import SearchSummary
from inferx_core.report import html as html_page
from inferx_core.report.accuracy import accuracy_rows, add_accuracy, write_accuracy_csv
from inferx_core.results.read import LoadedResults, load_results, read_jsonl, telemetry_sidecar
from inferx_core.results.search_files import load_search_summaries
from inferx_core.tables.points import write_csv

__all__ = ["ReportFiles", "report_notes", "write_report"]

CSV_NAME = "points.csv"
ACCURACY_CSV_NAME = "accuracy.csv"
HTML_NAME = "report.html"
TIMELINES_DIR = "timelines"


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote, and the rows it wrote them from."""

    output: Path
    html: Path
    csv: Path
    plots: list[Path] = field(default_factory=list)
    timelines: list[Path] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    loaded: LoadedResults = field(default_factory=LoadedResults)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    accuracy_csv: Path | None = None
    search: list[dict[str, Any]] = field(default_factory=list)  # the buyer's table


def report_notes(
    rows: Sequence[dict[str, Any]], loaded: LoadedResults
) -> tuple[list[str], list[str]]:
    """(notes, warnings) a reader needs: assumptions made, conflicts, unread files."""
    notes: list[str] = []
    warnings = list(loaded.warnings)
    assumed = [r for r in rows if r.get("num_gpus_source") != "result"]
    if assumed:
        counts = sorted({r["num_gpus"] for r in assumed})
        notes.append(
            f"{len(assumed)} point(s) carry no GPU count (a server InferX did not launch, or a "
            f"CPU engine): their per-GPU figures assume {', '.join(map(str, counts))} GPU(s) "
            "(--num-gpus)."
        )
    sources = sorted({str(r.get("price_source")) for r in rows if r.get("usd_per_gpu_hour")})
    if sources:
        notes.append("Price per GPU-hour: " + "; ".join(sources) + ".")
    unpriced = [r for r in rows if r.get("status") == "ok" and r.get("usd_per_gpu_hour") is None]
    if unpriced:
        notes.append(
            f"{len(unpriced)} point(s) have no cost: unknown GPU type "
            "(give --gpu-type or --usd-per-gpu-hour)."
        )
    ok = [r for r in rows if r.get("status") == "ok"]
    measured = [r for r in ok if r.get("tok_s_per_mw_measured") is not None]
    notes.append(
        f"Measured power valid for {len(measured)} of {len(ok)} ok point(s); tok/s/MW measured "
        "uses GPU chip power (a whole node draws ~1.3-1.5x more), provisioned uses all-in kW "
        "per GPU."
    )
    failed = [r for r in rows if r.get("status") != "ok"]
    if failed:
        warnings.append(f"{len(failed)} point(s) failed or were interrupted (red in the table).")
    failed_accuracy = [r for r in rows if r.get("accuracy_status") in ("below_threshold", "error")]
    if failed_accuracy:
        warnings.append(
            f"{len(failed_accuracy)} point(s) under their accuracy threshold or not evaluated "
            "(✗ in the accuracy column)."
        )
    dupes = [c for c in loaded.conflicts if c.kind == "identical"]
    if dupes:
        notes.append(f"{len(dupes)} point(s) found as identical copies in several files.")
    # unusable files (invalid, NaN, too deep, ...) are among loaded.warnings, with the reason
    others = len(loaded.skipped) - len(loaded.unusable)
    if others:
        notes.append(f"{others} JSON file(s) skipped (not InferX results).")
    return notes, warnings


def _timelines(rows: Iterable[dict[str, Any]], loaded: LoadedResults, folder: Path) -> list[Any]:
    from inferx_core.report.plots import has_timeline, telemetry_timeline, timeline_series

    made = []
    for row in rows:
        path = loaded.paths.get(row["point_id"])
        sidecar = telemetry_sidecar(path) if path else None
        if sidecar is None:
            continue
        series = timeline_series(read_jsonl(sidecar))
        if not has_timeline(series):
            continue
        if row.get("power_valid"):
            power = "GPU power valid"
        elif any(k.endswith(".power_w") for k in series):
            power = "GPU power not valid"
        else:
            power = "no GPU power"
        png = telemetry_timeline(
            series,
            folder / f"{slug(row['point_id'])}.png",  # a point id is data: no "../" path
            title=f"{row['point_id']} ({power})",
            window_s=row.get("duration"),
        )
        if png is not None:
            made.append(
                html_page.Figure(png, f"Telemetry of {row['point_id']}", f"tl-{row['point_id']}")
            )
    return made


# (file name, drawing function name in report.plots, caption), in page order.
_PLOTS: tuple[tuple[str, str, str], ...] = (
    (
        "throughput_vs_interactivity.png",
        "throughput_vs_interactivity",
        "Throughput per GPU vs interactivity; lines join each group's Pareto frontier, "
        "dashed: overall frontier",
    ),
    (
        "throughput_vs_latency.png",
        "throughput_vs_latency",
        "Throughput per GPU vs median end-to-end latency, with frontiers",
    ),
    (
        "latency_vs_concurrency.png",
        "latency_vs_concurrency",
        "TTFT and TPOT (p50 solid, p99 dotted) vs concurrency",
    ),
    (
        "cost_vs_interactivity.png",
        "cost_vs_interactivity",
        "Cost per million tokens vs interactivity (total solid, output dashed)",
    ),
)


def _plots(rows: list[dict[str, Any]], output: Path) -> list[html_page.Figure]:
    """Draw the summary plots; a plot with nothing to show is left out."""
    from inferx_core.report import plots as p

    figures: list[html_page.Figure] = []
    for name, draw_name, caption in _PLOTS:
        png = getattr(p, draw_name)(rows, output / name)
        if png is not None:
            figures.append(html_page.Figure(png, caption, name.removesuffix(".png")))
    return figures


def _fresh_timelines(
    rows: list[dict[str, Any]], loaded: LoadedResults, output: Path
) -> list[html_page.Figure]:
    """Redraw the timelines, first removing old ones (points may have gone since)."""
    folder = output / TIMELINES_DIR
    if folder.is_dir():
        for old in folder.glob("*.png"):
            old.unlink()
    return _timelines(rows, loaded, folder)


class _Read(NamedTuple):
    """Everything the report reads under its folders, read once before anything is built:
    the results and the search summaries (with the summary files that could not be read,
    as warnings)."""

    loaded: LoadedResults
    summaries: list[SearchSummary]
    unread: list[str]


def _read_or_fail(paths: Sequence[Path | str]) -> _Read:
    loaded = load_results(paths)
    if not loaded.results:
        from inferx_core.errors import UserFacingError

        raise UserFacingError(
            f"no InferX result under {', '.join(map(str, paths))} "
            "(looked for *.json files with schema_version and point_id)"
        )
    summaries, unread = load_search_summaries(paths)
    return _Read(loaded, summaries, [f"{path}: {why}" for path, why in unread])


def write_report(
    paths: Sequence[Path | str],
    output: Path | str,
    options: CostOptions | None = None,
    *,
    title: str | None = None,
    plots: bool = True,
    timelines: bool = True,
    slos: Sequence[SloTarget] = (),
) -> ReportFiles:
    """Read the results under ``paths`` and write the report into ``output``; a
    UserFacingError when there is no result (nothing is written then)."""
    output = Path(output)
    options = options or CostOptions()
    # read all first; each step then hands its result down (the rows' costs, computed once)
    loaded, summaries, unread = _read_or_fail(paths)
    rows = build_rows(loaded.results, options, loaded.paths)
    add_accuracy(rows, loaded.results)
    output.mkdir(parents=True, exist_ok=True)
    csv_path = write_csv(rows, output / CSV_NAME)
    accuracy = accuracy_rows(rows, loaded.results)
    accuracy_csv = write_accuracy_csv(accuracy, output / ACCURACY_CSV_NAME) if accuracy else None
    notes, warnings = report_notes(rows, loaded)
    searched = search_rows(
        summaries, loaded.results, options, paths=loaded.paths, slos=slos, point_rows=rows
    )
    warnings += unread
    figures: list[html_page.Figure] = []
    timeline_figs: list[html_page.Figure] = []
    if plots and rows:
        figures = _plots(rows, output)
        if timelines:
            timeline_figs = _fresh_timelines(rows, loaded, output)
    page = html_page.PageContent(
        title=title or "InferX benchmark report",
        sources=[str(s) for s in paths],
        rows=rows,
        figures=figures,
        timelines=timeline_figs,
        notes=notes,
        warnings=warnings,
        csv_name=CSV_NAME,
        accuracy=accuracy,
        search=searched,
    )
    html_path = html_page.write_html(page, output / HTML_NAME)
    return ReportFiles(
        output=output,
        html=html_path,
        csv=csv_path,
        plots=[f.path for f in figures],
        timelines=[f.path for f in timeline_figs],
        rows=rows,
        loaded=loaded,
        notes=notes,
        warnings=warnings,
        accuracy_csv=accuracy_csv,
        search=searched,
    )
