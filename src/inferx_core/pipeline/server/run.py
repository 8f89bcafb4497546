"""``inferx run``: launch each server configuration once, run its load points, stop it.

For every server configuration: pick a port, resolve the LaunchSpec (engine
plugin + fixes), start it with the configured launcher, wait until the
engine's probes pass, run every load point through :mod:`inferx_core.pipeline.point.measure`
while watching the engine, and stop it (also on errors and Ctrl-C): one server's
life is :class:`~inferx_core.pipeline.server.lifecycle.LaunchedServer`. Each
point's result is written atomically as soon as it ends, so a killed run
loses nothing already finished and ``--resume`` skips it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from inferx_core.config.models import RunConfig
from inferx_core.config.points import point_ids
from inferx_core.errors import UserFacingError
from inferx_core.launch.interrupts import handle_interrupts
from inferx_core.launch.process import free_port
from inferx_core.pipeline.point.inputs import check_workload_files
from inferx_core.pipeline.point.measure import PointOutcome
from inferx_core.pipeline.point.output_lock import output_lock
from inferx_core.pipeline.search.launched import check_run_searchable, search_todo
from inferx_core.pipeline.server.launch_plan import LaunchPlan, plan_launch
from inferx_core.pipeline.server.lifecycle import LaunchedServer, RunSummary
from inferx_core.results.files import ensure_writable, is_complete
from inferx_core.sdk.log import get_logger
from inferx_core.sdk.manager import InferxPluginManager, get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.registries import detect_platform, engine_registry

__all__ = ["LaunchPlanner", "RunSummary", "run_configs", "run_server"]

log = get_logger("inferx.runner")
#: (cfg, pm, platform, *, port, output_dir) -> LaunchPlan
LaunchPlanner = Callable[..., LaunchPlan]


def run_server(
    cfg: RunConfig,
    *,
    pm: InferxPluginManager,
    platform: Platform,
    output_dir: Path,
    resume: bool = False,
    used_ports: set[int] | None = None,
    progress: bool | None = None,
    on_point: Callable[[PointOutcome], None] | None = None,
    planner: LaunchPlanner = plan_launch,
) -> RunSummary:
    """Launch one server configuration, run its load points, stop it.

    ``planner`` makes the launch (a deployment's comes from the executors layer)."""
    summary = RunSummary()
    todo = []
    if cfg.search is not None:  # launched every time: --resume reuses its complete probes
        todo = search_todo(cfg)
    else:
        for point, pid in point_ids(cfg):
            if resume and is_complete(output_dir, pid):
                summary.skipped.append(pid)
            else:
                todo.append((point, pid))
    if not todo:
        return summary
    used_ports = used_ports if used_ports is not None else set()
    port = cfg.port or free_port(cfg.host, avoid=used_ports)
    used_ports.add(port)
    plan = planner(cfg, pm, platform, port=port, output_dir=output_dir)
    ensure_writable(output_dir)  # before the engine starts, not after its first point
    server = LaunchedServer(plan, pm, platform, output_dir, summary, on_point, resume)
    try:
        check_workload_files(cfg.workload)  # a bad dataset fails here, not after a 30 s launch
    except UserFacingError as exc:
        log.error("workload unusable; engine not launched", server=plan.server_id, error=str(exc))
        server.write_failed(f"{type(exc).__name__}: {exc}", todo)
        return summary
    server.run(todo, progress)
    return summary


def run_configs(
    configs: list[RunConfig],
    *,
    output_dir: Path | None = None,
    resume: bool = False,
    platform: Platform | None = None,
    pm: InferxPluginManager | None = None,
    progress: bool | None = None,
    on_point: Callable[[PointOutcome], None] | None = None,
    lock_unit: str | None = None,
    planner: LaunchPlanner = plan_launch,
) -> RunSummary:
    """The Python API of ``inferx run``: every server configuration, one after another.

    A server that fails to start fails its points and the run moves on. Each output
    folder is held for the run (``OutputFolderBusy`` when another run writes there);
    ``lock_unit``: a batch job's server, which shares the folder with its sibling jobs.
    """
    check_run_searchable(configs)  # before any engine starts
    pm = pm or get_plugin_manager()
    platform = platform or detect_platform(pm)
    registry = engine_registry(pm)
    for engine in sorted({cfg.engine for cfg in configs}):
        registry.get(engine)  # an unknown engine is refused before any folder is made
    folders = sorted({str(output_dir or cfg.output_dir) for cfg in configs})
    with contextlib.ExitStack() as held:
        for folder in folders:  # all at the start: a busy one refuses before any engine
            held.enter_context(output_lock(folder, unit=lock_unit))
        with handle_interrupts():  # SIGTERM and SIGHUP stop the engine as Ctrl-C does
            return _run_all(configs, output_dir, resume, platform, pm, progress, on_point, planner)


def _run_all(
    configs: list[RunConfig],
    output_dir: Path | None,
    resume: bool,
    platform: Platform,
    pm: InferxPluginManager,
    progress: bool | None,
    on_point: Callable[[PointOutcome], None] | None,
    planner: LaunchPlanner,
) -> RunSummary:
    total = RunSummary()
    used_ports: set[int] = set()
    for cfg in configs:
        out = output_dir or cfg.output_dir
        summary = run_server(
            cfg,
            pm=pm,
            platform=platform,
            output_dir=out,
            resume=resume,
            used_ports=used_ports,
            progress=progress,
            on_point=on_point,
            planner=planner,
        )
        total.outcomes += summary.outcomes
        total.skipped += summary.skipped
        total.searches += summary.searches
    return total
