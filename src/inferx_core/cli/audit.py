"""``inferx audit FILE_OR_DIR...``: other tools' result files judged by InferX's verdict."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

AUDIT_HELP = """\
reads: AIPerf profile_export_aiperf.json (+ profile_export.jsonl beside it),
GuideLLM benchmarks.json, vllm bench serve --save-result [--save-detailed],
inference-perf reports (summary_lifecycle_metrics.json + per_request_lifecycle_metrics.json
beside it), InferenceX aggregates, and InferX's own results.
Exit status: 0 when every point is trustworthy, 1 when one is not (or a file
could not be read). `inferx docs why-numbers` lists every symptom and its fix."""


def _verdict(audit: Any) -> str:
    if audit.trustworthy:
        return "trustworthy"
    validity = audit.result.validity
    if validity is None:
        return f"{audit.result.status}: no verdict"
    failing = [c.name for c in validity.failing]
    return "NOT trustworthy: " + (", ".join(failing) or audit.result.status)


def _print_table(report: Any) -> None:
    from rich.table import Table

    from inferx_core.cli.app import _console

    table = Table(title="inferx audit")
    for column in ("file", "tool", "point", "status", "verdict", "not judged"):
        table.add_column(column, overflow="fold")
    for audit in report.audits:
        tool = f"{audit.tool} {audit.version or '(version unknown)'}"
        table.add_row(
            audit.path,
            tool,
            audit.result.point_id,
            audit.result.status,
            _verdict(audit),
            str(len(audit.not_judged)),
        )
    console = _console()
    console.print(table, markup=False)
    for audit in report.audits:
        _print_details(console, audit)


def _print_details(console: Any, audit: Any) -> None:
    head = f"\n{audit.path} :: {audit.result.point_id}"
    console.print(head, markup=False, highlight=False)
    for f in audit.findings:
        console.print(f"  {f.rank}. [{f.category}] {f.symptom}", markup=False, highlight=False)
        for line in f.evidence:
            console.print(f"     evidence: {line}", markup=False, highlight=False)
        console.print(f"     avoid it: {f.fix}", markup=False, highlight=False)
    for name, why in audit.not_judged.items():
        console.print(f"  not judged: {name}: {why}", markup=False, highlight=False)


def cmd_audit(args: argparse.Namespace) -> int:
    from inferx_core.interop.audit import audit_paths

    report = audit_paths(args.paths)
    if args.json:
        out = {
            "trustworthy": report.trustworthy,
            "audits": [a.to_json() for a in report.audits],
            "errors": [{"path": p, "why": w} for p, w in report.errors],
            "ignored": report.ignored,
        }
        sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
    else:
        _print_table(report)
        if report.ignored:
            sys.stderr.write(
                f"inferx: {len(report.ignored)} other JSON file(s) ignored (not results; "
                "--json lists them)\n"
            )
    for path, why in report.errors:
        sys.stderr.write(f"inferx: cannot audit {path}: {why}\n")
    if not report.audits and not report.errors:
        sys.stderr.write("inferx: no result file found under the given paths\n")
    return 0 if report.trustworthy else 1


def register_command(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="judge AIPerf / GuideLLM / vllm bench / inference-perf files by InferX's verdict",
        description="Read other tools' result files (and InferX's own), run every check of "
        "InferX's verdict that the file allows, say which cannot run and why, and give a "
        "ranked diagnosis with the flag that avoids each problem.",
        epilog=AUDIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    p.add_argument("--json", action="store_true", help="the verdicts and diagnosis as JSON")
    p.set_defaults(handler=cmd_audit)
