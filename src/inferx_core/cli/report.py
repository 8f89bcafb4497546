"""``inferx report`` and ``inferx compare`` (argparse only at import; the work is lazy)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferx_core.cli.numbers import Bounds, number
from inferx_core.cli.search import slo_pairs

if TYPE_CHECKING:
    from rich.console import Console

    from inferx_core.analysis.compare import Comparison
    from inferx_core.analysis.cost import CostOptions
    from inferx_core.config.slo import SloTarget

COMPARE_HELP = """\
Compare result set B against A. Points are matched by point id (or, when the
two sides share none, by scenario + load level + parallelism). For each
metric the ratio B/A is printed with a verdict, "better" or "worse", only
where the change exceeds the run-to-run spread: |change| > the noise floor
(--noise, default 5%) and, where both sides have one, the 95% confidence
intervals do not overlap. The CI comes from replicates (the same point found
in several folders of a side), else, for medians of per-request metrics
(TTFT, TPOT, E2E, interactivity), from the .requests.jsonl sidecar (order
statistics) or std/sqrt(n). Frontiers (tok/s/gpu vs tok/s/user) are compared
by linear interpolation at --at interactivities (default: inside both ranges).
"""


def _floats(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc
    if not values or any(not v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected numbers > 0, got {text!r}")
    return values


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _add_cost_arguments(p: Any) -> None:
    g = p.add_argument_group("cost and power")
    g.add_argument(
        "--num-gpus",
        type=_positive_int,
        help="GPUs behind points whose result has no GPU count (a server InferX did not "
        "launch); per-GPU figures say they are assumed (default 1)",
    )
    g.add_argument(
        "--gpu-type",
        help="H100, H200, B200, GB200, MI300X, MI325X or MI355X for the price/kW tables "
        "(default: the config's cost.gpu_type, else the result's accelerator names)",
    )
    g.add_argument(
        "--tier", choices=("owner", "neocloud", "rental"), help="price tier (default owner)"
    )
    g.add_argument(
        "--usd-per-gpu-hour",
        action="append",
        metavar="USD|TYPE=USD",
        help="your price per GPU-hour, for every GPU or one type (repeatable)",
    )
    g.add_argument(
        "--kw-per-gpu",
        action="append",
        metavar="KW|TYPE=KW",
        help="provisioned all-in kW per GPU, for every GPU or one type (repeatable)",
    )


def register_command(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="table, CSV, plots and one HTML page for result folders",
        description="Read every result under the folders (recursively; the same point in "
        "several files: the newest wins and the conflict is reported) and write points.csv, "
        "PNG plots (frontiers, latency, cost, telemetry timelines) and report.html.",
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", help="result folders or files")
    p.add_argument("--output", help="report folder (default: DIR/report for one DIR, else report)")
    p.add_argument("--title", help="page title")
    p.add_argument("--no-plots", action="store_true", help="table and CSV only")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument(
        "--include-invalid",
        action="store_true",
        help="let points that failed a validity check onto the Pareto frontiers",
    )
    p.add_argument(
        "--slo",
        type=slo_pairs,
        help="the buyer's table also judges plain sweeps and imported points against these "
        "limits (e.g. ttft_ms=500,tpot_ms=30; beside the SLOs of any search in the folders)",
    )
    p.add_argument(
        "--goodput",
        type=number(float, Bounds(low=0, high=1, low_open=True)),
        default=0.99,
        help="share of requests that must meet every --slo limit (default 0.99)",
    )
    _add_cost_arguments(p)
    p.set_defaults(handler=cmd_report)

    p = sub.add_parser(
        "compare",
        help="B against A: ratio per matching point, verdict beyond the run-to-run spread",
        description=COMPARE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("a", metavar="A", help="baseline results (folder or file)")
    p.add_argument("b", metavar="B", help="candidate results (folder or file)")
    p.add_argument(
        "--at", type=_floats, metavar="TOK_S_USER", help="interactivities, e.g. 20,50,100"
    )
    p.add_argument(
        "--noise", type=float, default=0.05, help="noise floor as a fraction (default 0.05)"
    )
    p.add_argument("--match", choices=("auto", "point_id", "load"), default="auto")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when any verdict is worse"
    )
    _add_cost_arguments(p)
    p.set_defaults(handler=cmd_compare)


def _slos(args: argparse.Namespace) -> list[SloTarget]:
    """``--slo``/``--goodput`` as the target the buyer's table judges sweeps against (on
    each sweep's own axis); ``goodput=`` inside ``--slo`` wins over ``--goodput``."""
    from pydantic import ValidationError

    from inferx_core.config.slo import SloTarget
    from inferx_core.errors import UserFacingError

    if not args.slo:
        return []
    try:
        return [SloTarget(limits=dict(args.slo), goodput=args.goodput)]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserFacingError(f"--slo {where}: {first['msg']}") from None


def per_type(values: list[str] | None, what: str) -> dict[str, float] | None:
    """``--usd-per-gpu-hour``/``--kw-per-gpu`` values "2.5" (every GPU type) or "H200=2.5"
    (one type) -> {"*": 2.5, "H200": 2.5}: parsed here, with the other flags, so the
    report below is handed options and never parses a flag (CostOptions spells the types)."""
    if not values:
        return None
    out: dict[str, float] = {}
    for item in values:
        key, sep, value = item.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{what}: {item!r} is not NUMBER or TYPE=NUMBER") from None
        if not math.isfinite(number) or number <= 0:
            raise ValueError(f"{what}: {item!r} must be > 0")
        out[key.strip() if sep else "*"] = number
    return out


def cost_options(args: argparse.Namespace) -> CostOptions:
    from inferx_core.analysis.cost import CostOptions
    from inferx_core.errors import UserFacingError

    try:
        return CostOptions(
            gpu_type=args.gpu_type,
            tier=args.tier,
            usd_per_gpu_hour=per_type(args.usd_per_gpu_hour, "--usd-per-gpu-hour"),
            kw_per_gpu=per_type(args.kw_per_gpu, "--kw-per-gpu"),
            num_gpus=args.num_gpus,
            include_invalid=getattr(args, "include_invalid", False),
        )
    except ValueError as exc:
        raise UserFacingError(str(exc)) from exc


def _console() -> Console:
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 240, soft_wrap=False)


def default_output(dirs: list[str]) -> Path:
    if len(dirs) == 1 and Path(dirs[0]).is_dir():
        return Path(dirs[0]) / "report"
    return Path("report")


def cmd_report(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from inferx_core.report import write_report
    from inferx_core.tables.points import print_table

    # the flags first, then the report: its rooms are walked top-down, none re-entered
    output = Path(args.output) if args.output else default_output(args.dirs)
    slos = _slos(args)
    options = cost_options(args)
    files = write_report(
        args.dirs, output, options, title=args.title, plots=not args.no_plots, slos=slos
    )
    if args.json:
        # with a buyer's table (a search in the folders, or --slo) it comes along
        out: Any = files.rows
        if files.search:
            out = {"rows": files.rows, "capacity_at_slo": files.search}
        sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
        return 0
    console = _console()
    print_table(files.rows, console, title=args.title or "inferx report")
    if files.search:  # the buyer's table: capacity at SLO, cheapest first
        from inferx_core.tables.buyer import search_table_text

        search_table_text(files.search, console)
    for warning in files.warnings:
        console.print(f"[yellow]warning[/]: {escape(warning)}", highlight=False)
    for note in files.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    console.print(
        f"csv: {files.csv}\nplots: {len(files.plots)} plot(s), {len(files.timelines)} "
        f"timeline(s) in {files.output}\nreport: {files.html}",
        markup=False,
        highlight=False,
    )
    return 0


_MARK = {"better": "better", "worse": "worse", "same": "~", "n/a": ""}


def _ratio_cell(metric: dict[str, Any]) -> str:
    if metric.get("ratio") is None:
        # "point not ok in B: invalid (checks)" -> "invalid (B)": the verdict, not a blank
        head, _, verdict = str(metric.get("basis") or "").partition(": ")
        return f"{verdict.split(' (')[0]} ({head[-1]})" if verdict else "-"
    mark = _MARK[metric["verdict"]]
    return f"{metric['ratio']:.3f}x {mark}".rstrip()


def _print_plain(console: Console, lines: list[str]) -> None:
    for line in lines:
        console.print(line, markup=False, highlight=False)


def render_comparison(comparison: Comparison, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from inferx_core.analysis.compare import METRICS
    from inferx_core.report.accuracy import print_accuracy_comparison

    table = Table(
        title=f"B/A per point: A={comparison.a_label}  B={comparison.b_label} "
        f"(matched by {comparison.matched_by})"
    )
    table.add_column("point")
    for spec in METRICS:
        table.add_column(f"{spec.label} ({spec.better} better)", justify="right")
    for point in comparison.points:
        cells = [_ratio_cell(m) for m in point["metrics"]]
        worse = any(m["verdict"] == "worse" for m in point["metrics"])
        table.add_row(Text(point["label"]), *cells, style="red" if worse else None)
    console.print(table)
    print_accuracy_comparison(comparison.accuracy, console)
    if comparison.frontiers:
        ft = Table(title="Frontier: tok/s/gpu interpolated at the same interactivity")
        for col in ("scenario", "tok/s/user", "A tok/s/gpu", "B tok/s/gpu", "B/A", "verdict"):
            ft.add_column(col, justify="left" if col in ("scenario", "verdict") else "right")
        for f in comparison.frontiers:
            ft.add_row(
                Text(str(f["scenario"])),
                f"{f['at']:g}",
                "-" if f["a"] is None else f"{f['a']:,.1f}",
                "-" if f["b"] is None else f"{f['b']:,.1f}",
                "-" if f["ratio"] is None else f"{f['ratio']:.3f}x",
                f["verdict"] if f["a"] is not None and f["b"] is not None else "outside a range",
            )
        console.print(ft)
    shown = {f["scenario"] for f in comparison.frontiers}
    for scen, (ra, rb) in comparison.frontier_ranges.items():
        if scen not in shown:

            def span(r: Any) -> str:
                return "none" if r is None else f"{r[0]:,.1f}-{r[1]:,.1f}"

            console.print(
                f"frontier {scen}: no interactivity inside both ranges (A {span(ra)}, "
                f"B {span(rb)} tok/s/user); give --at to interpolate where one exists",
                markup=False,
                highlight=False,
            )
    note = (
        f"verdict only where |change| > {comparison.noise:.0%} and the 95% CIs do not overlap "
        "(where known); ~ = within the spread. See `inferx compare --help`."
    )
    _print_plain(console, [note, *comparison.layer_lines])  # and the layer of the TTFT that moved
    for label, ids in (("A", comparison.unmatched_a), ("B", comparison.unmatched_b)):
        if ids:
            listed = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            console.print(f"unmatched in {label}: {listed}", markup=False, highlight=False)
    for line in comparison.regressions:
        console.print(f"[red]worse[/]: {escape(line)}", highlight=False)


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from inferx_core.analysis.compare import compare, load_side
    from inferx_core.errors import UserFacingError

    if not 0 <= args.noise < 1:
        raise UserFacingError(f"--noise must be in [0, 1), got {args.noise}")
    options = cost_options(args)
    a = load_side(args.a, [args.a], options)
    b = load_side(args.b, [args.b], options)
    for side in (a, b):
        if not side.rows:
            raise UserFacingError(f"no InferX result under {side.label}")
    comparison = compare(a, b, at=args.at, noise=args.noise, by=args.match)
    if not comparison.points and not comparison.frontiers:
        raise UserFacingError(
            f"no point of {args.a} matches one of {args.b} (try --match load) and they share "
            "no scenario"
        )
    if args.json:
        sys.stdout.write(json.dumps(comparison.to_json(), indent=2, default=str) + "\n")
    else:
        console = _console()
        for side in (a, b):
            for warning in side.loaded.warnings:
                console.print(
                    f"[yellow]warning[/] ({escape(side.label)}): {escape(warning)}", highlight=False
                )
        render_comparison(comparison, console)
    return 1 if args.fail_on_regression and comparison.regressions else 0
