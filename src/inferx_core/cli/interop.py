"""``inferx export`` and ``inferx import``: results in and out of the field's own formats."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXPORT_HELP = """\
formats:
  vllm        <point_id>.json: the file `vllm bench serve --save-result` writes
              (vLLM's names, units and definitions; --detailed adds its
              --save-detailed lists), plus benchmark_start/end_time_unix
  inferencex  agg_<point_id>.json: what InferenceX's process_result.py and
              aggregate_power.py write (metadata from the result; --set
              hw=h200 --set precision=fp8 ... to override), and
              power_validation_<point_id>.json
  csv         points.csv: one row per point, the report's columns
  parquet     points.parquet (every field) and requests.parquet (per request)

`inferx docs interop` has each format's fields and the known differences."""


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    """``--export`` for ``bench``/``run``: each point written as it finishes."""
    g = p.add_argument_group("export (inferx docs interop)")
    g.add_argument(
        "--export",
        metavar="FORMAT[,FORMAT]",
        help="also write each point as vllm, inferencex, csv and/or parquet (in OUTPUT/export)",
    )
    g.add_argument(
        "--export-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="InferenceX metadata for the exports (hw=h200, precision=fp8, tp=8, ...)",
    )
    g.add_argument(
        "--export-metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="vLLM --metadata pairs for the vllm export (top-level strings)",
    )


def point_exporter(args: argparse.Namespace, output_dir: Path, roots: Sequence[Path] = ()) -> Any:
    """The ``on_point`` callback for ``--export``, or None; bad formats fail before any load.

    ``roots``: every results folder of the run; a point exports next to its own."""
    if not getattr(args, "export", None):
        return None
    from inferx_core.interop.export import ExportOptions, PointExporter, parse_formats
    from inferx_core.interop.metadata import parse_set

    options = ExportOptions(
        parse_formats(args.export),
        Path(output_dir) / "export",
        parse_set(args.export_set, flag="--export-set"),
        metadata=parse_set(args.export_metadata, flag="--export-metadata"),
        settings_flag="--export-set",
    )
    return PointExporter(options, roots)


def print_export_report(report: Any, out: Any = None) -> int:
    """What was written and skipped; 1 when a point or a result file could not be exported."""
    out = out or sys.stdout
    for path in report.written:
        out.write(f"wrote {path}\n")
    for pid, meta in report.metadata.items():
        out.write(f"  {pid}: InferenceX metadata {meta}\n")
    for pid, fmt, why in report.skipped:
        sys.stderr.write(f"inferx: not exported: {pid} as {fmt}: {why}\n")
    unusable = report.unusable
    for path, why in unusable:
        sys.stderr.write(f"inferx: skipped {path}: {why}\n")
    return 1 if report.skipped or unusable else 0


def cmd_export(args: argparse.Namespace) -> int:
    from inferx_core.interop.export import ExportOptions, export_paths, parse_formats
    from inferx_core.interop.metadata import parse_set

    options = ExportOptions(
        parse_formats(args.format),
        Path(args.output),
        parse_set(args.set),
        args.detailed,
        metadata=parse_set(args.metadata, flag="--metadata"),
    )
    return print_export_report(export_paths(args.results, options))


def cmd_import(args: argparse.Namespace) -> int:
    from inferx_core.errors import UserFacingError
    from inferx_core.interop.import_write import write_imported
    from inferx_core.interop.importers import import_points

    output = Path(args.output)
    read = []  # every file read whole first: a bad one stops the import before any write
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            raise UserFacingError(
                f"{path}: no such file (give AIPerf, GuideLLM, vLLM, inference-perf or "
                "InferenceX JSON files)"
            )
        read.append((path, import_points(path)))
    written = 0
    taken: set[str] = set()
    for path, points in read:
        for result, records in points:
            target = write_imported(output, result, records, taken)
            print(f"imported {path} ({_tool(result)}, {_verdict(result)}) -> {target}")
            written += 1
    print(
        f"{written} result(s) in {output}/: `inferx report {output}` shows them, "
        "`inferx audit` the verdicts"
    )
    return 0


def _tool(result: Any) -> str:
    imported = result.provenance.imported_from
    return f"{imported.tool} {imported.version or ''}".strip() if imported else "?"


def _verdict(result: Any) -> str:
    if result.validity is None:
        return result.status
    return "valid" if result.validity.valid else f"NOT valid ({result.status})"


def register_command(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write results as vLLM bench serve / InferenceX files, CSV or Parquet",
        description="Write the InferX results under RESULTS (folders or files) in the "
        "formats other tools read.",
        epilog=EXPORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="result folders or files")
    p.add_argument("--format", required=True, metavar="FORMAT[,FORMAT]", help="see below")
    p.add_argument("--output", required=True, metavar="DIR", help="folder for the exported files")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="InferenceX metadata: hw, framework, precision, tp, ep, ... (see inferx docs interop)",
    )
    p.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="vllm: pairs written at the top level, as vLLM's --metadata",
    )
    p.add_argument("--detailed", action="store_true", help="vllm: the --save-detailed lists")
    p.set_defaults(handler=cmd_export)

    p = sub.add_parser(
        "import",
        help="AIPerf / GuideLLM / vLLM bench serve / inference-perf / InferenceX files as "
        "InferX results",
        description="Read AIPerf profile_export_aiperf.json (with profile_export.jsonl beside "
        "it), GuideLLM benchmarks.json, vLLM `bench serve --save-result` files, inference-perf "
        "lifecycle reports and InferenceX aggregates (agg_*.json, or collect_results.py lists) "
        "and write InferX results (per-request data as .requests.jsonl, judged by InferX's "
        "verdict), so `inferx report` and `inferx compare` put them beside InferX's own "
        "points. No import overwrites another: a point id already taken gets -2, -3...",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--output", required=True, metavar="DIR", help="folder for the InferX results")
    p.set_defaults(handler=cmd_import)
