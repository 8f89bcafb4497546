"""``inferx bench --search concurrency|rate --slo ...``: run the search, print its answer."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferx_core.config.models import BenchConfig

__all__ = ["add_search_arguments", "cmd_search", "search_flags", "slo_pairs"]


def slo_pairs(text: str) -> dict[str, float]:
    """``--slo ttft_ms=500,tpot_ms=30`` as limits by name (argparse type): the one parser
    of ``inferx bench`` and ``inferx report`` (:func:`~inferx_core.config.slo
    .parse_slo_text`): every key checked, a key given twice refused, before any load."""
    from inferx_core.config.slo import parse_slo_text

    try:
        return parse_slo_text(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--slo: ")) from None


def add_search_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--search",
        choices=("concurrency", "rate"),
        help="find the highest concurrency or request rate that meets --slo (99%% of "
        "requests meet every per-request limit; p99_ttft_ms=X-style keys limit a "
        "percentile; goodput=0.95 sets the share); `inferx docs search`",
    )


def search_flags(args: argparse.Namespace, data: dict[str, Any]) -> bool:
    """Put ``--search`` and ``--slo`` into the config's ``search:``; True when searching."""
    if args.search is None and not data.get("search"):
        return False
    search = dict(data.get("search") or {})
    if args.search is not None:
        search["over"] = args.search
    if args.slo:
        search["slo"] = {**search.get("slo", {}), **args.slo}
    data["search"] = search
    return True


def cost_at_capacity(run: Any) -> dict[str, Any]:
    """The capacity probe's cost and power figures (cost per million tokens, tokens per
    MW, each with the source of its inputs), as the report's buyer's table has them."""
    from inferx_core.analysis.cost import cost_fields

    point_id = run.summary.capacity_point_id
    point = next((o.result for o in run.outcomes if o.result.point_id == point_id), None)
    if point is None:
        return {"cost_at_capacity": None, "cost_at_capacity_reason": "no capacity found"}
    return {"cost_at_capacity": cost_fields(point), "cost_at_capacity_reason": None}


def cmd_search(args: argparse.Namespace, config: BenchConfig, on_point: Any) -> int:
    from inferx_core.analysis.buyer import search_rows
    from inferx_core.pipeline.search.running import run_search
    from inferx_core.tables.buyer import search_table_text

    skipped: list[str] = []
    run = run_search(
        config,
        progress=False if args.no_progress else None,
        on_point=on_point,
        resume=args.resume,
        on_skip=skipped.append,
    )
    for note in run.summary.notes:  # probe files --resume did not trust
        print(f"warning: {note}", file=sys.stderr)
    if args.json:
        answer = {**run.summary.model_dump(mode="json"), **cost_at_capacity(run)}
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    else:
        rows = search_rows([run.summary], [o.result for o in run.outcomes])
        search_table_text(rows)
        if skipped:
            print(f"reused (already complete, --resume): {', '.join(skipped)}")
        if run.summary_path is not None:
            print(f"search: {run.summary_path}")
    return 0 if run.summary.status in ("found", "above_max", "below_min") else 1
