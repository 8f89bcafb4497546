"""``inferx bench``: every load point of a :class:`BenchConfig` against its running server.

:func:`bench_points` is the loop behind the CLI and behind the public
:func:`inferx_core.api.run_bench` (:mod:`.api`, which adds the per-request
callback and refuses a running event loop); the CLI also passes ``resume``.
The server is set up once (:mod:`~inferx_core.pipeline.point.setup`: the checked target,
the token counter, telemetry) and becomes the :class:`ServerPlan` of every
point (:func:`~inferx_core.pipeline.point.setup.bench_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from inferx_core.config.models import BenchConfig
from inferx_core.config.points import LoadPoint, load_points, point_id_for
from inferx_core.pipeline.point.assemble import PointSource
from inferx_core.pipeline.point.measure import PointOutcome, measure_point
from inferx_core.pipeline.point.output_lock import holding_output
from inferx_core.pipeline.point.repeats import run_repeated
from inferx_core.pipeline.point.server_plan import ServerPlan
from inferx_core.pipeline.point.setup import bench_plan, bench_target, bench_tools
from inferx_core.results.files import is_complete

__all__ = ["bench_points"]


@holding_output(lambda config, **_: config.output_dir)  # OutputFolderBusy: another run there
def bench_points(
    config: BenchConfig,
    *,
    on_point: Callable[[PointOutcome], None] | None = None,
    progress: bool | None = None,
    resume: bool = False,
    on_skip: Callable[[str], None] | None = None,
) -> list[PointOutcome]:
    """Benchmark every load point of ``config``; returns their outcomes.

    Results are also written to ``config.output_dir`` (unless None), one JSON per point and
    a ``.requests.jsonl``; ``resume`` skips points complete there (``on_skip`` gets their ids).
    """
    target, prefix = bench_target(config)
    points = _points_to_run(config, prefix, resume, on_skip)
    if not points:
        return []
    with bench_tools(config, target) as (counter, telemetry):
        plan = bench_plan(config, target, counter, telemetry, progress)
        return _run_points(config, plan, prefix, points, on_point)


def _points_to_run(
    config: BenchConfig, prefix: str, resume: bool, on_skip: Callable[[str], None] | None
) -> list[LoadPoint]:
    """The config's load points, less those ``resume`` finds complete in the output folder."""
    points = load_points(config.load, config.workload)
    if not resume or config.output_dir is None:
        return points
    todo = []
    for point in points:
        pid = point_id_for(prefix, config.workload, point)
        if is_complete(config.output_dir, pid):
            if on_skip is not None:
                on_skip(pid)
        else:
            todo.append(point)
    return todo


def _run_points(
    config: BenchConfig,
    plan: ServerPlan,
    prefix: str,
    points: list[LoadPoint],
    on_point: Callable[[PointOutcome], None] | None,
) -> list[PointOutcome]:
    """Each point (``load.repeats`` times, interleaved); Ctrl-C keeps the points done."""
    outcomes: list[PointOutcome] = []

    def run_one(point: LoadPoint, output_dir: Path | None) -> PointOutcome:
        pid = point_id_for(prefix, config.workload, point)
        source = PointSource("", point, context={"config": config.model_dump(mode="json")})
        outcome = measure_point(plan, point, pid, output_dir=output_dir, source=source)
        if config.load.repeats == 1:
            outcomes.append(outcome)  # kept as it finishes: Ctrl-C keeps the earlier points
        return outcome

    combined = run_repeated(points, config.load.repeats, run_one, config.output_dir, on_point)
    if config.load.repeats > 1:
        outcomes.extend(combined)
    return outcomes
