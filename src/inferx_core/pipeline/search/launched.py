"""``search:`` in ``inferx run``: one capacity search per server configuration, on the
engine the run launched.

The search is :func:`~inferx_core.pipeline.search.driver.search_probes`, the same driver as
``inferx bench --search``; only the probe runner differs: each probe is a point of
the launched server (its :class:`~inferx_core.pipeline.point.server_plan.ServerPlan`:
target, engine watchdog, speculative check...; the launch's provenance and server
id), tagged with its search. An engine that dies mid-search makes its probe a
failed point, which the search does not judge: it stops ``undetermined`` and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from inferx_core.config.models import RunConfig
from inferx_core.config.points import LoadPoint, point_id_for, server_id
from inferx_core.config.search import SearchConfig
from inferx_core.pipeline.point.assemble import PointSource
from inferx_core.pipeline.point.measure import PointOutcome, measure_point
from inferx_core.pipeline.point.server_plan import ServerPlan
from inferx_core.pipeline.search.driver import (
    SearchPlan,
    SearchRun,
    check_searchable,
    probe_plan,
    search_probes,
)
from inferx_core.pipeline.search.probes import sized_plan

__all__ = ["check_run_searchable", "search_on_server", "search_todo"]


class LaunchedServerLike(Protocol):
    """What the search needs of ``pipeline.server.lifecycle``'s launched server."""

    context: dict[str, Any]
    output_dir: Path
    plan: Any  # its server_id names the server in every probe's result

    def record(self, outcome: PointOutcome) -> None: ...


def check_run_searchable(configs: list[RunConfig]) -> None:
    """Refuse, before any engine starts, a ``search:`` its load cannot have."""
    for cfg in configs:
        if cfg.search is not None:
            check_searchable(cfg.workload, cfg.load, cfg.search)


def _first_point(search: SearchConfig, cfg: RunConfig) -> LoadPoint:
    if search.over == "concurrency":
        return LoadPoint(concurrency=int(search.first()))
    return LoadPoint(request_rate=search.first(), max_concurrency=cfg.load.max_concurrency)


def search_todo(cfg: RunConfig) -> list[tuple[LoadPoint, str]]:
    """The point a failed launch is recorded under: the search's first probe."""
    assert cfg.search is not None
    point = _first_point(cfg.search, cfg)
    return [(point, point_id_for(server_id(cfg), cfg.workload, point))]


def search_on_server(
    server: LaunchedServerLike,
    cfg: RunConfig,
    points: ServerPlan,
    *,
    resume: bool,
    on_skip: Any = None,
) -> SearchRun:
    """Search ``cfg.search`` on the server's running engine (``points``: the plan its
    points share); write the summary."""
    search = cfg.search
    assert search is not None
    sid = server.plan.server_id
    probes = probe_plan(points, search)

    def run_probe(
        point: LoadPoint, pid: str, folder: Path | None, tag: dict[str, Any]
    ) -> PointOutcome:
        source = PointSource(pid, point, server_id=sid, context={**server.context, "search": tag})
        sized = sized_plan(probes, search, point, tag["run"])  # enough prompts; a rerun re-seeded
        return measure_point(sized, point, pid, output_dir=folder, source=source)

    plan = SearchPlan(
        search,
        cfg.workload,
        server_id(cfg),
        server.output_dir,
        run_probe,
        max_concurrency=cfg.load.max_concurrency,
        server_id=sid,
    )
    return search_probes(plan, on_point=server.record, resume=resume, on_skip=on_skip)
