"""``inferx run``: launch each server configuration once, run its load points, stop it.

For every server configuration: pick a port, resolve the LaunchSpec (engine
plugin + fixes), start it with the configured launcher, wait until the
engine's probes pass, run every load point through :mod:`inferx_core.pipeline.point`
while watching the engine, and stop it (also on errors and Ctrl-C). Each
point's result is written atomically as soon as it ends, so a killed run
loses nothing already finished and ``--resume`` skips it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferx_core.config.models import RunConfig
from inferx_core.config.points import LoadPoint, point_ids
from inferx_core.errors import UserFacingError
from inferx_core.launch.interrupts import engine_running, handle_interrupts
from inferx_core.launch.preflight import run_preflight
from inferx_core.launch.process import ENGINE_EXIT_SETTLE_S, exited_within, free_port
from inferx_core.launch.readiness import (
    DEFAULT_PROBES,
    EngineExited,
    ReadinessAuthError,
    ReadinessTimeout,
    engine_version,
    wait_until_ready,
)
from inferx_core.launch.resolve import cpu_split
from inferx_core.load.schedule.client_load import pinned
from inferx_core.metrics.search_model import SearchSummary
from inferx_core.pipeline.assemble import PointSource, never_ran_result
from inferx_core.pipeline.evals import run_evals
from inferx_core.pipeline.inputs import InputError, check_server_context, check_workload_files
from inferx_core.pipeline.launch_plan import LaunchPlan, launch_context, plan_launch
from inferx_core.pipeline.output_lock import output_lock
from inferx_core.pipeline.point import BenchTarget, PointOutcome, measure_point
from inferx_core.pipeline.repeats import combine, repeat_dir
from inferx_core.pipeline.requests import continuous_usage_for
from inferx_core.pipeline.run_search import check_run_searchable, search_on_server, search_todo
from inferx_core.pipeline.session_plan import SessionPlan
from inferx_core.results.files import (
    ResultWriteError,
    ensure_writable,
    is_complete,
    write_result,
)
from inferx_core.sdk.launcher import ServerHandle
from inferx_core.sdk.log import get_logger
from inferx_core.sdk.manager import InferxPluginManager, get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.redact import redact
from inferx_core.sdk.registries import detect_platform, engine_registry
from inferx_core.telemetry.session import build_plan

log = get_logger("inferx.runner")
#: (cfg, pm, platform, *, port, output_dir) -> LaunchPlan
LaunchPlanner = Callable[..., LaunchPlan]
LOG_TAIL_LINES = 60


@dataclass
class RunSummary:
    """Every point of a run: written, skipped (resumed) or failed."""

    outcomes: list[PointOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    searches: list[SearchSummary] = field(default_factory=list)  # one per searched server

    @property
    def failed(self) -> list[PointOutcome]:
        return [o for o in self.outcomes if o.status != "ok"]

    @property
    def ok(self) -> bool:
        return not self.failed


class _ServerSession:
    """One server's life: start, readiness, each load point, stop; failures become results."""

    def __init__(
        self,
        plan: LaunchPlan,
        pm: InferxPluginManager,
        platform: Platform,
        output_dir: Path,
        summary: RunSummary,
        on_point: Callable[[PointOutcome], None] | None,
        resume: bool = False,
    ) -> None:
        self.plan = plan
        self.resume = resume  # a search reuses its complete probes
        self.pm = pm
        self.platform = platform
        self.output_dir = output_dir
        self.summary = summary
        self.on_point = on_point
        self.context = launch_context(plan, platform)
        self.handle: ServerHandle | None = None
        self.counter: Any = None
        self.stopped = False

    def source(self, point: LoadPoint, pid: str) -> PointSource:
        return PointSource(pid, point, server_id=self.plan.server_id, context=self.context)

    def record(self, outcome: PointOutcome) -> None:
        self.summary.outcomes.append(outcome)
        if self.on_point:
            self.on_point(outcome)

    def write_failed(self, reason: str, points: list[tuple[LoadPoint, str]], **more: Any) -> None:
        for point, pid in points:
            result = never_ran_result(self.source(point, pid), reason, **more)
            self.record(PointOutcome(pid, result, path=write_result(self.output_dir, result)))

    def log_tail(self) -> Any:
        assert self.handle is not None
        return self.handle.log_tail(LOG_TAIL_LINES)

    def start(self, todo: list[tuple[LoadPoint, str]]) -> bool:
        spec = self.plan.resolved.spec
        sid = self.plan.server_id
        try:
            self.context["preflight"] = run_preflight(
                spec,
                self.platform,
                build_plan(self.pm, self.platform, list(spec.gpu_ids)).make_samplers,
            )
            log.info("launching", server=sid, argv=list(spec.argv), env=redact(dict(spec.env)))
            self.handle = self.plan.launcher.start(spec, self.plan.run_dir)
        except (OSError, ValueError, UserFacingError) as exc:
            # e.g. the engine executable is missing: this server fails, the run moves on
            log.error("engine could not be started", server=sid, error=str(exc))
            self.write_failed(f"engine could not be started: {exc}", todo)
            return False
        return True

    def wait_ready(self, todo: list[tuple[LoadPoint, str]]) -> bool:
        assert self.handle is not None
        server, spec = self.plan.server, self.plan.resolved.spec
        probes = self.pm.call_first("inferx_engine_readiness", server=server, spec=spec)[1]
        names = ", ".join(p.name for p in probes or DEFAULT_PROBES)
        log.info(
            f"waiting up to {server.readiness_timeout_s:.0f} s for the engine to be ready",
            server=self.plan.server_id,
            probes=names,
            log=str(self.plan.run_dir),
        )
        try:
            readiness = wait_until_ready(
                self.handle,
                probes or DEFAULT_PROBES,
                served_model_name=server.name_served,
                model=server.model,
                timeout_s=server.readiness_timeout_s,
                headers=server.auth_headers(),
            )
        except (EngineExited, ReadinessTimeout, ReadinessAuthError) as exc:
            log.error("engine not ready", server=self.plan.server_id, error=exc.reason)
            self.write_failed(exc.reason, todo, engine_log_tail=exc.log_tail)
            return False
        self.context["readiness"] = {"seconds": readiness.seconds, "probes": readiness.probes}
        info = engine_registry(self.pm).get(server.engine).info
        self.context["engine"]["version"] = engine_version(
            self.handle.base_url, info.version_path, info.version_field, server.auth_headers()
        )
        log.info("engine ready", server=self.plan.server_id, seconds=readiness.seconds)
        return True

    def engine_gone(self) -> str | None:
        assert self.handle is not None
        if self.handle.alive():
            return None
        return f"engine exited with code {self.handle.returncode()} during the load"

    def failure_details(self, reason: str) -> tuple[str, dict[str, Any]]:
        """Requests can fail (connection refused) before the watchdog polls: name the cause."""
        assert self.handle is not None
        if not exited_within(self.handle, ENGINE_EXIT_SETTLE_S):
            return reason, {}
        gone = self.engine_gone() or "engine exited"
        if not reason.startswith(gone):
            reason = f"{gone} ({reason})" if reason else gone
        return reason, {"engine_log_tail": self.log_tail()}

    def fits_context(self, todo: list[tuple[LoadPoint, str]]) -> bool:
        """The longest request fits the engine's max length, as /v1/models reports it."""
        assert self.handle is not None
        try:
            server = self.plan.server
            check_server_context(
                self.plan.cfg.workload,
                self.handle.base_url,
                server.name_served,
                server.auth_headers(),
            )
        except InputError as exc:
            log.error("workload does not fit the model", error=str(exc))
            self.write_failed(str(exc), todo)
            return False
        return True

    def telemetry_plan(self, gpu_ids: list[int]) -> Any:
        assert self.handle is not None
        return build_plan(
            self.pm,
            self.platform,
            gpu_ids,
            engine_pid=getattr(self.handle, "pid", None),
            base_url=self.handle.base_url,
            metrics_map=self.pm.call_first("inferx_engine_metrics", server=self.plan.server)[1],
            interval_overrides=self.plan.cfg.telemetry_intervals,
        )

    def run_points(self, todo: list[tuple[LoadPoint, str]], progress: bool | None) -> None:
        from inferx_core.load.tokens.counter import resolve_token_counter

        assert self.handle is not None
        cfg, server, handle = self.plan.cfg, self.plan.server, self.handle
        tokenizer = cfg.workload.tokenizer
        self.counter = resolve_token_counter(
            handle.base_url,
            server.name_served,
            str(tokenizer) if tokenizer else None,
            headers=server.auth_headers(),
        )
        gpu_ids = list(self.plan.resolved.spec.gpu_ids)
        telemetry = self.telemetry_plan(gpu_ids)
        num_gpus = len(gpu_ids) or None  # CPU engines: per-GPU figures stay null
        if not self.fits_context(todo):
            return
        if cfg.search is not None:  # one capacity search: its probes are this server's points
            run = search_on_server(
                self,
                cfg,
                self.target(),
                telemetry=telemetry,
                num_gpus=num_gpus,
                progress=progress,
                resume=self.resume,
                on_skip=self.summary.skipped.append,
            )
            self.summary.searches.append(run.summary)
            return
        session = self.session_plan(telemetry, num_gpus, progress)
        repeats = cfg.load.repeats
        rounds: dict[str, list[PointOutcome]] = {}
        for k in range(1, repeats + 1):
            folder = self.output_dir if repeats == 1 else repeat_dir(self.output_dir, k)
            for index, (point, pid) in enumerate(todo):
                if not handle.alive():
                    self.finish_repeats(todo, rounds)
                    self.write_failed(
                        f"engine exited with code {handle.returncode()} before this point",
                        [(pt, pi) for pt, pi in todo[index:] if pi not in rounds],
                        engine_log_tail=self.log_tail(),
                    )
                    return
                outcome = self.run_one(session, point, pid, folder)
                if outcome is None:
                    continue
                if repeats == 1:
                    self.record(outcome)
                else:
                    rounds.setdefault(pid, []).append(outcome)
        self.finish_repeats(todo, rounds)

    def finish_repeats(
        self, todo: list[tuple[LoadPoint, str]], rounds: dict[str, list[PointOutcome]]
    ) -> None:
        """Each repeated point as its median run, in point order (the runs so far)."""
        for _, pid in todo:
            if rounds.get(pid):
                self.record(combine(rounds.pop(pid), self.output_dir))

    def session_plan(
        self, telemetry: Any, num_gpus: int | None, progress: bool | None
    ) -> SessionPlan:
        """What every point on this engine shares: the target, the watchdog, the counter..."""
        cfg = self.plan.cfg
        return SessionPlan(
            self.target(),
            cfg.workload,
            cfg.load,
            self.counter,
            slo=cfg.slo,
            num_gpus=num_gpus,
            num_gpus_reason=None if num_gpus else "the engine uses no GPU (CPU build)",
            gpu_split=self.plan.gpu_split if num_gpus else None,
            telemetry=telemetry,
            validity_limits=cfg.validity,
            abort_check=self.engine_gone,
            failure_details=self.failure_details,
            progress=progress,
        )

    def run_one(
        self, session: SessionPlan, point: LoadPoint, pid: str, folder: Path
    ) -> PointOutcome | None:
        """One run of one point; a failure is written with its reason (None returned)."""
        try:
            source = self.source(point, pid)
            return measure_point(session, point, pid, output_dir=folder, source=source)
        except ResultWriteError:
            raise  # a full disk fails every point after it too: stop the run, say why
        except Exception as exc:  # this point fails with its reason; the sweep moves on
            log.error("load point failed", point=pid, error=f"{type(exc).__name__}: {exc}")
            reason, details = self.failure_details(f"{type(exc).__name__}: {exc}")
            details.setdefault("engine_log_tail", self.log_tail())
            self.write_failed(reason, [(point, pid)], **details)
            return None

    def target(self) -> BenchTarget:
        """The launched engine as the load's target."""
        assert self.handle is not None
        server = self.plan.server
        info = engine_registry(self.pm).get(server.engine).info
        return BenchTarget(
            self.handle.base_url, server.name_served, server.auth_headers(), **_usage_fields(info)
        )

    def close(self) -> None:
        """Stop the engine (idempotent); a second Ctrl-C during the grace kills it at once."""
        if self.counter is not None and hasattr(self.counter.counter, "close"):
            self.counter.counter.close()  # keep-alive client and threads of a server tokenizer
        self.counter = None
        if self.handle is not None and not self.stopped:
            self.stopped = True
            if self.handle.alive():
                grace = self.plan.server.stop_grace_s
                log.info(f"stopping engine, up to {grace:.0f} s", server=self.plan.server_id)
            self.handle.stop(self.plan.server.stop_grace_s)
            log.info(
                "engine stopped", server=self.plan.server_id, returncode=self.handle.returncode()
            )

    def kill_now(self) -> None:
        """A second signal: no grace (a launcher without ``kill_now`` stops with grace 0)."""
        assert self.handle is not None
        kill = getattr(self.handle, "kill_now", None)
        kill() if kill is not None else self.handle.stop(0.0)

    def measure(self, todo: list[tuple[LoadPoint, str]], progress: bool | None) -> None:
        try:
            if self.wait_ready(todo):
                self.run_points(todo, progress)
                run_evals(
                    self.plan.cfg, self.pm, self.handle, self.summary.outcomes, self.output_dir
                )
        except ResultWriteError:
            raise
        except Exception as exc:  # setup after launch failed: fail what is left, move on
            done = {o.point_id for o in self.summary.outcomes}
            left = [(p, pid) for p, pid in todo if pid not in done]
            log.error(
                "server failed", server=self.plan.server_id, error=f"{type(exc).__name__}: {exc}"
            )
            self.write_failed(f"{type(exc).__name__}: {exc}", left)

    def client_cpus(self) -> tuple[int, ...]:
        """The client's CPUs while this engine runs here (launched on this host only)."""
        if self.plan.server.launcher not in ("process", "docker"):
            return ()
        return cpu_split(self.plan.server, self.platform).client

    def run(self, todo: list[tuple[LoadPoint, str]], progress: bool | None) -> None:
        try:
            if not self.start(todo):
                return
            assert self.handle is not None
            # from here a signal names the stop grace, and a second one kills the engine
            with engine_running(id(self), self.plan.server.stop_grace_s, self.kill_now):
                try:
                    with pinned(self.client_cpus()):  # off the engine's CPUs
                        self.measure(todo, progress)
                finally:
                    self.close()
        finally:
            self.close()


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
    session = _ServerSession(plan, pm, platform, output_dir, summary, on_point, resume)
    try:
        check_workload_files(cfg.workload)  # a bad dataset fails here, not after a 30 s launch
    except UserFacingError as exc:
        log.error("workload unusable; engine not launched", server=plan.server_id, error=str(exc))
        session.write_failed(f"{type(exc).__name__}: {exc}", todo)
        return summary
    session.run(todo, progress)
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


def _usage_fields(engine: Any) -> dict[str, Any]:
    asked, note = continuous_usage_for(engine)
    return {"continuous_usage": asked, "continuous_usage_note": note}
