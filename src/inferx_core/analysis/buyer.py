"""The buyer's table as rows: one per server configuration, ranked by cost at SLO.

Each :class:`~inferx_core.metrics.search_model.SearchSummary` names its capacity
point; that point's report row gives the cost per million tokens and tokens per MW
(``analysis/cost.py``: price and power from the config, flags or the built-in
table). Rows without a known cost sort after those with one, by throughput per GPU.

Rows come from search summaries (source ``search``) and, under each of their SLOs,
from the other points of the report: a plain sweep's (``sweep points``) and imported
results (``import``), their capacity derived from the points by
:func:`~inferx_core.analysis.capacity.derived_capacities`. Built here, beside the
capacity it ranks, so the report hands rows down and renders what comes back
(:mod:`inferx_core.tables.buyer` draws them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inferx_core.analysis.capacity import derived_capacities
from inferx_core.analysis.cost import CostOptions
from inferx_core.analysis.points import build_rows
from inferx_core.config.slo import SloTarget
from inferx_core.metrics.search_model import SearchSummary
from inferx_core.results.model import PointResultBase

__all__ = ["search_rows"]


def _evidence(s: SearchSummary, unit: str = "run") -> str:
    def one(p: Any, word: str) -> str:
        if p is None:
            return f"no {word}"
        spread = f" [{p.spread[0]:.2f}-{p.spread[1]:.2f}]" if p.runs > 1 and p.spread else ""
        flag = " uncertain" if p.uncertain else ""
        runs = f"{p.runs} {unit}{'s' * (p.runs > 1)}"
        score = "over any limit" if p.score >= 1e300 else f"{p.score:.2f}x limit"  # inf, capped
        return f"{word} {p.level:g} ({score}, {runs}{spread}{flag})"

    return f"{one(s.last_pass, 'pass')}; {one(s.first_fail, 'fail')}"


def _row(s: SearchSummary, cost: Mapping[str, Any]) -> dict[str, Any]:
    """``cost``: the capacity point's report row (its cost and power figures), or empty."""
    return {
        "search_id": s.search_id,
        "source": "search",
        "slo": s.slo,
        "status": s.status,
        "capacity": s.capacity,
        "binding_slo": s.binding_slo,
        "tput_per_gpu": cost.get("tput_per_gpu", s.at_capacity.get("tput_per_gpu")),
        "request_goodput": s.at_capacity.get("request_goodput"),
        "cost_per_mtok_total": cost.get("cost_per_mtok_total"),
        "tok_s_per_mw_provisioned": cost.get("tok_s_per_mw_provisioned"),
        "evidence": _evidence(s),
        "knee": f"{s.knee.level:g}" if s.knee else "none found",
        "reason": s.reason,
    }


def _constraints(summaries: Sequence[SearchSummary], slos: Sequence[SloTarget]) -> list[SloTarget]:
    """The distinct SLOs (limits and goodput share) of the searches, then ``slos``."""
    out: dict[tuple[Any, ...], SloTarget] = {}
    for c in [*(s.target() for s in summaries), *slos]:
        out.setdefault(c.key(), c)
    return list(out.values())


def search_rows(
    summaries: Sequence[SearchSummary],
    results: Sequence[PointResultBase],
    options: CostOptions | None = None,
    *,
    paths: Mapping[str, Path] | None = None,
    slos: Sequence[SloTarget] = (),
    point_rows: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The summaries as rows, and under each of their SLOs (and ``slos``) the capacity of
    every other server configuration in ``results`` (a plain sweep, imported points),
    derived from its points; cheapest at SLO first. ``paths`` (point id -> result file)
    lets a point be judged from its request records; ``point_rows``: the report's rows of
    ``results`` (each point's cost, computed once; built here when not given)."""
    constraints = _constraints(summaries, slos)
    built = point_rows if point_rows is not None else build_rows(results, options)
    by_id: dict[str, Mapping[str, Any]] = {str(r["point_id"]): r for r in built}
    derived = derived_capacities(results, constraints, by_id, paths)

    def cost(s: SearchSummary) -> Mapping[str, Any]:
        return by_id.get(s.capacity_point_id or "", {})

    rows = [_row(s, cost(s)) for s in summaries]
    for d in derived:
        row = _row(d.summary, cost(d.summary))
        row["source"] = d.source
        row["evidence"] = f"{_evidence(d.summary, 'point')}; judged on {d.basis}"
        rows.append(row)

    def rank(row: dict[str, Any]) -> tuple[int, float, float]:
        cost, tput = row["cost_per_mtok_total"], row["tput_per_gpu"]
        return (cost is None, cost or 0.0, -(tput or 0.0))

    return sorted(rows, key=rank)
