"""Sweep filters shared by ``inferx plan`` and ``inferx run`` (argparse only at import).

``--engine vllm --tp 1,2 --max-concurrency 64 --scenario chat`` select a subset
of the expanded matrix; :func:`inferx_core.config.sweep.filter_runs` does the work.
"""

from __future__ import annotations

import argparse
from typing import Any

from inferx_core.cli.numbers import Bounds, number, numbers


def _csv(kind: type) -> Any:
    def parse(text: str) -> list[Any]:
        try:
            return [kind(item.strip()) for item in text.split(",") if item.strip()]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated {kind.__name__}s, got {text!r}"
            ) from exc

    return parse


def add_filter_arguments(parser: Any) -> None:
    """Add --engine, --tp, --max-concurrency, --scenario (each optional, combinable)."""
    group = parser.add_argument_group("filters (select part of a sweep)")
    group.add_argument(
        "--engine", dest="filter_engine", type=_csv(str), metavar="NAMES", help="e.g. vllm,sglang"
    )
    group.add_argument(
        "--tp", dest="filter_tp", type=numbers(int, Bounds(low=1)), metavar="SIZES", help="e.g. 1,8"
    )
    group.add_argument(
        "--max-concurrency",
        dest="filter_max_concurrency",
        type=number(int, Bounds(low=1)),
        metavar="N",
        help="keep concurrency levels <= N",
    )
    group.add_argument(
        "--scenario",
        dest="filter_scenario",
        type=_csv(str),
        metavar="NAMES",
        help="scenario names or ISL/OSL, e.g. chat or 1024/8192",
    )


def apply_filters(runs: list[Any], args: argparse.Namespace) -> list[Any]:
    """The runs the parsed filter flags select; all runs when no filter was given.

    Raises UserFacingError when the filters select nothing.
    """
    engine = getattr(args, "filter_engine", None)
    tp = getattr(args, "filter_tp", None)
    max_c = getattr(args, "filter_max_concurrency", None)
    scenario = getattr(args, "filter_scenario", None)
    if engine is None and tp is None and max_c is None and scenario is None:
        return runs
    from inferx_core.config.sweep import filter_runs
    from inferx_core.errors import UserFacingError

    try:
        selected = filter_runs(runs, engine=engine, tp=tp, max_concurrency=max_c, scenario=scenario)
    except ValueError as exc:
        raise UserFacingError(str(exc)) from exc
    if not selected:
        raise UserFacingError(f"the filters select none of the {len(runs)} server configuration(s)")
    return selected
