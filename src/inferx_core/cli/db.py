"""``inferx db ...`` (ingest, list, regress, history, info), ``inferx dashboard``, and the
``--db`` option of ``bench``/``run`` (argparse only at import; the work is lazy)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DB_HELP = (
    "results database: a DuckDB file PATH, or postgresql://user@host:port/db "
    "(default: $INFERX_DB, else ~/.local/share/inferx/results.duckdb)"
)

_FILTERS = (
    ("engine", "engine", "engine name(s)"),
    ("engine-version", "engine_version", "engine version(s)"),
    ("model", "model", "model name(s) (short: Llama-3.1-8B-Instruct)"),
    ("hardware", "hardware", "hardware (h200, mi300x, CPU, ...)"),
    ("precision", "precision", "precision as the report writes it (fp8, bfloat16, default)"),
    ("label", "label", "label(s) given at ingest"),
    ("status", "status", "ok, failed, interrupted"),
    ("point", "point_id", "point id(s)"),
    ("series", "series", "point id(s) without the load level"),
)


# -- bench / run --db ----------------------------------------------------------
def add_db_arguments(p: argparse.ArgumentParser) -> None:
    """``--db [URL]`` and ``--db-label`` for ``bench``/``run``: each point stored as it ends."""
    g = p.add_argument_group("results database (`inferx docs database`)")
    g.add_argument(
        "--db",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="store each point in the results database as it finishes (no URL: the default)",
    )
    g.add_argument("--db-label", metavar="LABEL", help="label of the stored points (nightly-...)")


def db_ingester(args: argparse.Namespace, then: Any = None) -> Any:
    """The ``on_point`` callback: ``then`` (e.g. the exporter), plus ``--db`` when given."""
    if getattr(args, "db", None) is None:
        return then
    from inferx_core.db.backends import resolve_url
    from inferx_core.db.ingest import PointIngester
    from inferx_core.db.store import open_db

    url = resolve_url(args.db or None)
    open_db(url).close()  # a wrong URL fails before any load, and the schema exists
    return PointIngester(url, getattr(args, "db_label", None), then)


# -- filters -------------------------------------------------------------------
def _add_filters(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("filters (comma-separated values; repeat to add)")
    for flag, dest, what in _FILTERS:
        g.add_argument(f"--{flag}", dest=f"f_{dest}", action="append", default=[], help=what)
    g.add_argument("--isl", dest="f_isl", action="append", default=[], help="input length(s)")
    g.add_argument("--osl", dest="f_osl", action="append", default=[], help="output length(s)")
    g.add_argument("--since", metavar="DATE", help="points dated on or after (2026-12-01)")
    g.add_argument("--until", metavar="DATE", help="points dated up to (a day: inclusive)")


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def filters_from_args(args: argparse.Namespace) -> Any:
    from inferx_core.db.store import Filters
    from inferx_core.errors import UserFacingError

    given = {dest: _split(getattr(args, f"f_{dest}", [])) for _, dest, _ in _FILTERS}
    try:
        lengths = {k: [int(v) for v in _split(getattr(args, f"f_{k}", []))] for k in ("isl", "osl")}
    except ValueError as exc:
        raise UserFacingError(f"--isl/--osl take whole numbers: {exc}") from None
    # the names are Filters' fields (_FILTERS, isl/osl): a dict of them is not typed per field
    return Filters(**given, **lengths, since=args.since, until=args.until)  # type: ignore[arg-type]  # see above


def _open(args: argparse.Namespace) -> Any:
    from inferx_core.db.store import open_db

    return open_db(getattr(args, "db", None))


# -- commands ------------------------------------------------------------------
def cmd_ingest(args: argparse.Namespace) -> int:
    from inferx_core.db.backends import describe_url
    from inferx_core.db.ingest import ingest_into

    # a failed ingest leaves nothing it created behind (no 0-byte database file)
    done = ingest_into(getattr(args, "db", None), args.paths, args.label)
    report, total, where = done.report, done.total, describe_url(done.url)
    for path, why in report.skipped:
        sys.stderr.write(f"inferx: skipped {path}: {why}\n")
    if report.ignored:
        names = ", ".join(Path(p).name for p in report.ignored[:3])
        more = ", ..." if len(report.ignored) > 3 else ""
        print(
            f"{len(report.ignored)} other JSON file(s) ignored ({names}{more}): "
            "neither InferX, vLLM nor InferenceX results"
        )
    label = f" under label {args.label!r}" if args.label else ""
    print(
        f"{len(report.stored)} point(s) stored, {len(report.already)} already stored{label}; "
        f"{total} in {where}"
    )
    return 0


_LIST_COLUMNS = (
    "date", "point_id", "status", "hardware", "engine", "engine_version",
    "precision", "isl", "osl", "concurrency", "tput_per_gpu", "median_intvty",
)  # fmt: skip


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    with _open(args) as db:
        if args.labels:
            summary = db.label_summary()
            if args.json:
                sys.stdout.write(json.dumps(summary, indent=2) + "\n")
            for row in [] if args.json else summary:
                print(f"{row['label']}\t{row['points']} point(s)\t{row['first']} .. {row['last']}")
            return 0
        rows = db.points(filters_from_args(args))
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return 0
    cells = [
        [*(_fmt(row[c]) for c in _LIST_COLUMNS), ",".join(row["labels"]) or "-"] for row in rows
    ]
    if not sys.stdout.isatty():  # piped: tab-separated, nothing cut to a terminal's width
        print(f"{len(rows)} point(s)")
        for line in [[*_LIST_COLUMNS, "labels"], *cells]:
            print("\t".join(line))
        return 0
    table = Table(title=f"{len(rows)} point(s)")
    for col in (*_LIST_COLUMNS, "labels"):
        table.add_column(col)
    for line in cells:
        table.add_row(*(Text(str(c)) for c in line))  # data, never rich markup
    Console(soft_wrap=True).print(table)
    return 0


def cmd_regress(args: argparse.Namespace) -> int:
    from inferx_core.db.regress import regress

    with _open(args) as db:
        result = regress(
            db,
            args.baseline,
            args.candidate,
            metrics=_split(args.metric),
            filters=filters_from_args(args),
            noise=args.noise,
            by=args.match,
        )
    if args.json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    else:
        for v in result.verdicts:
            parts = [
                f"{m['label']} {m['change']:+.1%} {m['verdict']}"
                if m["change"] is not None
                else f"{m['label']} n/a ({m['basis']})"
                for m in v["metrics"]
            ]
            print(f"{v['verdict'].upper():7} {v['label']}: " + "; ".join(parts))
        for line in result.regressions:
            print(f"REGRESSION {line}")
        n = len(result.regressions)
        print(f"{args.candidate} vs {args.baseline}: {n} regression(s) beyond the spread")
    return 1 if result.regressions else 0


def cmd_history(args: argparse.Namespace) -> int:
    from inferx_core.db.history import history_rows, plot_history

    with _open(args) as db:
        rows = history_rows(db, args.metric, filters_from_args(args))
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
    else:
        print("\t".join(("date", "point_id", "engine", "version", "labels", args.metric)))
        for r in rows:
            value = _fmt(r["value"]) if r["status"] == "ok" else r["status"]
            cells = (r["date"], r["point_id"], r["engine"], r["engine_version"])
            print("\t".join([*map(_fmt, cells), ",".join(r["labels"]) or "-", value]))
    if args.output:
        print(f"wrote {plot_history(rows, args.metric, Path(args.output))}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from inferx_core.db.backends import describe_url
    from inferx_core.db.schema import SCHEMA_VERSION
    from inferx_core.db.store import open_db

    with open_db(args.db, migrate=False) as db:
        before = db.version()
        db.migrate()
        print(
            f"{describe_url(db.url)} ({db.kind}): schema {before} -> {SCHEMA_VERSION}, "
            f"{db.count()} point(s), {len(db.label_summary())} label(s)"
        )
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from inferx_core.dashboard.data import points_from_paths
    from inferx_core.dashboard.page import dashboard_points, serve, write_dashboard

    if args.paths:
        skipped: list[tuple[str, str]] = []
        points = points_from_paths(args.paths, skipped)
        for path, why in skipped:
            sys.stderr.write(f"inferx: skipped {path}: {why}\n")
    else:
        points = dashboard_points(db_url=args.db)
    out = write_dashboard(points, Path(args.output), title=args.title)
    print(f"wrote {out} ({len(points)} point(s))")
    if args.serve:
        serve(out, args.port)
    return 0


def _db_parser(sub: Any, name: str, help: str, handler: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help, description=help)
    p.add_argument("--db", metavar="URL", help=DB_HELP)
    p.set_defaults(handler=handler)
    return p


def register_command(sub: Any) -> None:
    top = sub.add_parser(
        "db",
        help="the results database: ingest, list, regress, history",
        description="Results in DuckDB (default) or PostgreSQL; see `inferx docs database`.",
    )
    dbsub = top.add_subparsers(dest="db_command", metavar="COMMAND", required=True)
    p = _db_parser(dbsub, "ingest", "store InferX, vLLM and InferenceX results", cmd_ingest)
    p.add_argument("paths", nargs="+", metavar="DIR", help="result folders or files")
    p.add_argument("--label", help="label for these points (a nightly's date, a branch)")
    p = _db_parser(dbsub, "list", "the stored points (filters below)", cmd_list)
    p.add_argument("--json", action="store_true")
    p.add_argument("--labels", action="store_true", help="the labels and their point counts")
    _add_filters(p)
    p = _db_parser(dbsub, "regress", "verdict per point: candidate vs baseline", cmd_regress)
    p.add_argument("--baseline", required=True, metavar="LABEL")
    p.add_argument("--candidate", required=True, metavar="LABEL")
    p.add_argument("--metric", action="append", default=[], help="field(s) to judge (all)")
    p.add_argument("--noise", type=float, default=0.05, help="noise floor (default 0.05)")
    p.add_argument("--match", choices=("auto", "point_id", "load"), default="auto")
    p.add_argument("--json", action="store_true")
    _add_filters(p)
    p = _db_parser(dbsub, "history", "a metric over dates and engine versions", cmd_history)
    p.add_argument("--metric", required=True, help="tput_per_gpu, median_intvty, p99_ttft_ms ...")
    p.add_argument("--output", metavar="FILE.png", help="also draw the history")
    p.add_argument("--json", action="store_true")
    _add_filters(p)
    _db_parser(dbsub, "info", "create or migrate the schema; counts", cmd_info)

    p = sub.add_parser(
        "dashboard",
        help="one self-contained interactive HTML page (Pareto, filters, $/GPU/hr)",
        description="Write the dashboard of a results database or of result folders.",
    )
    p.add_argument("paths", nargs="*", metavar="DIR", help="result folders (instead of --db)")
    p.add_argument("--db", metavar="URL", help=DB_HELP + " (used when no DIR is given)")
    p.add_argument("--output", required=True, metavar="FILE.html")
    p.add_argument("--title", default="InferX dashboard")
    p.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.set_defaults(handler=cmd_dashboard)
