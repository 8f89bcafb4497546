"""``inferx bench --search concurrency|rate --slo ...``: run the search, print its answer."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferx_core.config.models import BenchConfig

__all__ = ["add_search_arguments", "cmd_search", "search_flags"]


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


def cmd_search(args: argparse.Namespace, config: BenchConfig, on_point: Any) -> int:
    from inferx_core.pipeline.search import run_search
    from inferx_core.report.search import search_rows, search_table_text

    skipped: list[str] = []
    run = run_search(
        config,
        progress=False if args.no_progress else None,
        on_point=on_point,
        resume=args.resume,
        on_skip=skipped.append,
    )
    if args.json:
        sys.stdout.write(json.dumps(run.summary.model_dump(mode="json"), indent=2) + "\n")
    else:
        rows = search_rows([run.summary], [o.result for o in run.outcomes])
        search_table_text(rows)
        if skipped:
            print(f"reused (already complete, --resume): {', '.join(skipped)}")
        if run.summary_path is not None:
            print(f"search: {run.summary_path}")
    return 0 if run.summary.status in ("found", "above_max", "below_min") else 1
