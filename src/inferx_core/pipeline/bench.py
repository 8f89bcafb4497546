"""``inferx bench``: every load point of a :class:`BenchConfig` against its running server.

:func:`bench_points` is the loop behind the CLI and behind the public
:func:`inferx_core.api.run_bench` (:mod:`.bench_api`, which adds the per-request
callback and refuses a running event loop); the CLI also passes ``resume``.
The server's session is set up once (:mod:`.bench_setup`: the checked target,
the token counter, telemetry) and becomes the :class:`SessionPlan` of every
point (:func:`~.bench_setup.bench_session`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from inferx_core.config.models import BenchConfig
from inferx_core.config.points import LoadPoint, load_points, point_id_for
from inferx_core.pipeline.assemble import PointSource
from inferx_core.pipeline.bench_setup import bench_session, bench_target, bench_tools
from inferx_core.pipeline.output_lock import holding_output
from inferx_core.pipeline.point import PointOutcome, measure_point
from inferx_core.pipeline.repeats import run_repeated
from inferx_core.pipeline.session_plan import SessionPlan
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
        plan = bench_session(config, target, counter, telemetry, progress)
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
    plan: SessionPlan,
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
