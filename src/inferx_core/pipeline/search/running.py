"""``inferx search`` (and ``inferx bench --search``): a capacity search against a running server.

The server is set up as for ``inferx bench`` (:mod:`~inferx_core.pipeline.point.setup`:
the checked target, the token counter, the local telemetry); each probe is a normal
load point measured in the search's :func:`~.driver.probe_plan`, and
:func:`~.driver.search_probes` drives the search to its answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferx_core.config.models import BenchConfig
from inferx_core.config.points import LoadPoint
from inferx_core.pipeline.point.assemble import PointSource
from inferx_core.pipeline.point.measure import PointOutcome, measure_point
from inferx_core.pipeline.point.output_lock import holding_output
from inferx_core.pipeline.point.setup import bench_plan, bench_target, bench_tools
from inferx_core.pipeline.search.driver import (
    SearchPlan,
    SearchRun,
    SearchSetupError,
    check_searchable,
    probe_plan,
    search_probes,
)
from inferx_core.pipeline.search.probes import sized_plan

__all__ = ["run_search"]


@holding_output(lambda config, **_: config.output_dir)  # OutputFolderBusy: another run there
def run_search(
    config: BenchConfig,
    *,
    on_point: Callable[[PointOutcome], None] | None = None,
    progress: bool | None = None,
    resume: bool = False,
    on_skip: Callable[[str], None] | None = None,
) -> SearchRun:
    """Search ``config.search`` against ``config.base_url``; write and return the answer."""
    search = config.search
    if search is None:
        raise SearchSetupError("run_search needs a `search:` section (or --search)")
    check_searchable(config.workload, config.load, search)
    target, prefix = bench_target(config)
    with bench_tools(config, target) as (counter, telemetry):
        plan = probe_plan(bench_plan(config, target, counter, telemetry, progress), search)

        def run_probe(
            point: LoadPoint, pid: str, folder: Path | None, tag: dict[str, Any]
        ) -> PointOutcome:
            context = {"config": config.model_dump(mode="json"), "search": tag}
            source = PointSource("", point, context=context)
            sized = sized_plan(plan, search, point, tag["run"])  # enough prompts; a rerun re-seeded
            return measure_point(sized, point, pid, output_dir=folder, source=source)

        search_plan = SearchPlan(
            search,
            config.workload,
            prefix,
            config.output_dir,
            run_probe,
            max_concurrency=config.load.max_concurrency,
        )
        return search_probes(search_plan, on_point=on_point, resume=resume, on_skip=on_skip)
