"""One launched server's life in ``inferx run``: :class:`LaunchedServer`.

Start the engine (preflight, the configured launcher), wait until its probes pass,
check the workload fits, build the server's :class:`ServerPlan` (target, token
counter asked of the engine's own plugin, telemetry, engine watchdog, speculative
check), run every load point (or the capacity search) through
:func:`~inferx_core.pipeline.point.measure.measure_point`, then the evals, and stop the
engine on every exit path. A failure at any step becomes the failed results of the
points it left, naming the cause; a process that dies names itself (a deployment's
handle says which role and process, on which node).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferx_core.config.points import LoadPoint
from inferx_core.errors import UserFacingError
from inferx_core.launch.interrupts import engine_running
from inferx_core.launch.preflight import run_preflight
from inferx_core.launch.process import ENGINE_EXIT_SETTLE_S, exited_within
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
from inferx_core.load.transport.server_clock import engine_server_timing
from inferx_core.metrics.search_model import SearchSummary
from inferx_core.pipeline.point.assemble import PointSource, never_ran_result
from inferx_core.pipeline.point.inputs import InputError, check_server_context
from inferx_core.pipeline.point.measure import BenchTarget, PointOutcome, measure_point
from inferx_core.pipeline.point.repeats import combine, repeat_dir
from inferx_core.pipeline.point.requests import continuous_usage_for
from inferx_core.pipeline.point.server_plan import ServerPlan
from inferx_core.pipeline.search.launched import search_on_server
from inferx_core.pipeline.server.evals import run_evals
from inferx_core.pipeline.server.launch_plan import LaunchPlan, launch_context
from inferx_core.results.files import ResultWriteError, write_result
from inferx_core.sdk.launcher import (
    HasEngineUrls,
    HasPid,
    HasRouterMetrics,
    KillsNow,
    NamesExitedProcess,
    ServerHandle,
)
from inferx_core.sdk.log import get_logger
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.redact import redact
from inferx_core.sdk.registries import engine_registry
from inferx_core.telemetry.session import build_plan

__all__ = ["LOG_TAIL_LINES", "LaunchedServer", "RunSummary", "RunningServer"]

log = get_logger("inferx.runner")
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


class LaunchedServer:
    """One server's life before its start: the plan, where its points go, the launch.

    :meth:`run` starts the engine and hands the started server (its handle) to a
    :class:`RunningServer`, so no step after the start asks whether it started."""

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

    def start(self, todo: list[tuple[LoadPoint, str]]) -> ServerHandle | None:
        """Preflight and launch; None when the engine could not start (its points failed)."""
        spec = self.plan.resolved.spec
        sid = self.plan.server_id
        try:
            self.context["preflight"] = run_preflight(
                spec,
                self.platform,
                build_plan(self.pm, self.platform, list(spec.gpu_ids)).make_samplers,
            )
            log.info("launching", server=sid, argv=list(spec.argv), env=redact(dict(spec.env)))
            handle = self.plan.launcher.start(spec, self.plan.run_dir)
        except (OSError, ValueError, UserFacingError) as exc:
            # e.g. the engine executable is missing: this server fails, the run moves on
            log.error("engine could not be started", server=sid, error=str(exc))
            self.write_failed(f"engine could not be started: {exc}", todo)
            return None
        return handle

    def client_cpus(self) -> tuple[int, ...]:
        """The client's CPUs while this engine runs here (launched on this host only)."""
        if self.plan.server.launcher not in ("process", "docker"):
            return ()
        return cpu_split(self.plan.server, self.platform).client

    def run(self, todo: list[tuple[LoadPoint, str]], progress: bool | None) -> None:
        handle = self.start(todo)
        if handle is None:
            return
        running = RunningServer(self, handle)
        try:
            # from here a signal names the stop grace, and a second one kills the engine
            with engine_running(id(running), self.plan.server.stop_grace_s, running.kill_now):
                try:
                    with pinned(self.client_cpus()):  # off the engine's CPUs
                        running.measure(todo, progress)
                finally:
                    running.close()
        finally:
            running.close()


class RunningServer(LaunchedServer):
    """The started server: the plan's state and the launcher's handle (never None): readiness,
    the points or the search, the evals, and the stop."""

    def __init__(self, life: LaunchedServer, handle: ServerHandle) -> None:
        # the plan's state as the start left it, shared (the context holds the preflight);
        # nothing is computed again here, so nothing can fail between the start and the stop
        self.plan, self.pm, self.platform = life.plan, life.pm, life.platform
        self.output_dir, self.summary, self.on_point = life.output_dir, life.summary, life.on_point
        self.resume, self.context = life.resume, life.context
        self.handle: ServerHandle = handle
        self.counter: Any = None
        self.stopped = False

    def log_tail(self) -> Any:
        return self.handle.log_tail(LOG_TAIL_LINES)

    def wait_ready(self, todo: list[tuple[LoadPoint, str]]) -> bool:
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
            reason = exc.reason
            if isinstance(exc, EngineExited):  # a deployment names the process that died
                reason = self.exited("before it was ready")
            log.error("engine not ready", server=self.plan.server_id, error=reason)
            self.write_failed(reason, todo, engine_log_tail=exc.log_tail)
            return False
        self.context["readiness"] = {"seconds": readiness.seconds, "probes": readiness.probes}
        info = engine_registry(self.pm).get(server.engine).info
        self.context["engine"]["version"] = engine_version(
            self.handle.base_url, info.version_path, info.version_field, server.auth_headers()
        )
        log.info("engine ready", server=self.plan.server_id, seconds=readiness.seconds)
        return True

    def who_exited(self) -> str:
        """What exited: ``engine``, or a deployment's role and process where its handle
        says (``role decode (decode-1 on node0)``)."""
        handle = self.handle
        named = handle.exited_process() if isinstance(handle, NamesExitedProcess) else None
        return named or "engine"

    def exited(self, when: str) -> str:
        """``<who> exited with code N <when>`` (``during the load``, ``before this point``)."""
        return f"{self.who_exited()} exited with code {self.handle.returncode()} {when}"

    def engine_gone(self) -> str | None:
        if self.handle.alive():
            return None
        return self.exited("during the load")

    def failure_details(self, reason: str) -> tuple[str, dict[str, Any]]:
        """Requests can fail (connection refused) before the watchdog polls: name the cause."""
        if not exited_within(self.handle, ENGINE_EXIT_SETTLE_S):
            return reason, {}
        gone = self.engine_gone() or "engine exited"
        if not reason.startswith(gone):
            reason = f"{gone} ({reason})" if reason else gone
        return reason, {"engine_log_tail": self.log_tail()}

    def fits_context(self, todo: list[tuple[LoadPoint, str]]) -> bool:
        """The longest request fits the engine's max length, as /v1/models reports it."""
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
        """A single server's engine metrics come from its URL; a deployment's (its handle
        names its engine processes and its router's exporter) from every engine process,
        and its router's own from the router's exporter."""
        handle = self.handle
        router = handle.router_metrics_url() if isinstance(handle, HasRouterMetrics) else None
        return build_plan(
            self.pm,
            self.platform,
            gpu_ids,
            engine_pid=handle.pid if isinstance(handle, HasPid) else None,
            base_url=handle.engine_urls() if isinstance(handle, HasEngineUrls) else handle.base_url,
            metrics_map=self.pm.call_first("inferx_engine_metrics", server=self.plan.server)[1],
            interval_overrides=self.plan.cfg.telemetry_intervals,
            router_metrics_url=router,
        )

    def run_points(self, todo: list[tuple[LoadPoint, str]], progress: bool | None) -> None:
        from inferx_core.load.tokens.counter import resolve_token_counter

        cfg, server, handle = self.plan.cfg, self.plan.server, self.handle
        tokenizer = cfg.workload.tokenizer
        self.counter = resolve_token_counter(  # the tokenize routes of this engine's plugin
            handle.base_url,
            server.name_served,
            str(tokenizer) if tokenizer else None,
            headers=server.auth_headers(),
            server=server,
            pm=self.pm,
        )
        gpu_ids = list(self.plan.resolved.spec.gpu_ids)
        telemetry = self.telemetry_plan(gpu_ids)
        num_gpus = len(gpu_ids) or None  # CPU engines: per-GPU figures stay null
        if not self.fits_context(todo):
            return
        points = self.server_plan(telemetry, num_gpus, progress)
        if cfg.search is not None:  # one capacity search: its probes are this server's points
            run = search_on_server(
                self, cfg, points, resume=self.resume, on_skip=self.summary.skipped.append
            )
            self.summary.searches.append(run.summary)
            return
        repeats = cfg.load.repeats
        rounds: dict[str, list[PointOutcome]] = {}
        for k in range(1, repeats + 1):
            folder = self.output_dir if repeats == 1 else repeat_dir(self.output_dir, k)
            for index, (point, pid) in enumerate(todo):
                if not handle.alive():
                    self.finish_repeats(todo, rounds)
                    self.write_failed(
                        self.exited("before this point"),
                        [(pt, pi) for pt, pi in todo[index:] if pi not in rounds],
                        engine_log_tail=self.log_tail(),
                    )
                    return
                outcome = self.run_one(points, point, pid, folder)
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

    def server_plan(
        self, telemetry: Any, num_gpus: int | None, progress: bool | None
    ) -> ServerPlan:
        """What every point on this engine shares: the target, the watchdog, the counter..."""
        cfg = self.plan.cfg
        return ServerPlan(
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
            speculative=cfg.speculative,
        )

    def run_one(
        self, points: ServerPlan, point: LoadPoint, pid: str, folder: Path
    ) -> PointOutcome | None:
        """One run of one point; a failure is written with its reason (None returned)."""
        try:
            source = self.source(point, pid)
            return measure_point(points, point, pid, output_dir=folder, source=source)
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
        server = self.plan.server
        info = engine_registry(self.pm).get(server.engine).info
        return BenchTarget(
            self.handle.base_url,
            server.name_served,
            server.auth_headers(),
            **_usage_fields(info),
            server_timing=engine_server_timing(server, self.pm),  # the engine's own clock
        )

    def close(self) -> None:
        """Stop the engine (idempotent); a second Ctrl-C during the grace kills it at once."""
        if self.counter is not None and hasattr(self.counter.counter, "close"):
            self.counter.counter.close()  # keep-alive client and threads of a server tokenizer
        self.counter = None
        if not self.stopped:
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
        if isinstance(self.handle, KillsNow):
            self.handle.kill_now()
        else:
            self.handle.stop(0.0)

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


def _usage_fields(engine: Any) -> dict[str, Any]:
    asked, note = continuous_usage_for(engine)
    return {"continuous_usage": asked, "continuous_usage_note": note}
