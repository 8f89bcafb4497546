"""``inferx run``: launch each server configuration once, run its load points, stop it.

For every server configuration: pick a port, resolve the LaunchSpec (engine
plugin + fixes), start it with the configured launcher, wait until the
engine's probes pass, run every load point through :mod:`inferx_core.pipeline.point`
while watching the engine, and stop it (also on errors and Ctrl-C). Each
point's result is written atomically as soon as it ends, so a killed run
loses nothing already finished and ``--resume`` skips it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.config.points import LoadPoint, point_ids, server_id
from inferx_core.errors import UserFacingError
from inferx_core.launch.preflight import run_preflight
from inferx_core.launch.process import free_port
from inferx_core.launch.readiness import (
    DEFAULT_PROBES,
    EngineExited,
    ReadinessTimeout,
    engine_version,
    wait_until_ready,
)
from inferx_core.launch.resolve import ResolvedLaunch, resolve_launch
from inferx_core.pipeline.point import (
    BenchTarget,
    PointOutcome,
    run_point,
)
from inferx_core.results.files import (
    is_complete,
    result_header,
    result_path,
    write_json_atomic,
)
from inferx_core.sdk.launcher import ServerHandle
from inferx_core.sdk.log import get_logger
from inferx_core.sdk.manager import InferxPluginManager, get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.redact import redact
from inferx_core.sdk.registries import detect_platform, engine_registry, launchers
from inferx_core.telemetry.session import build_plan

log = get_logger("inferx.runner")
LOG_TAIL_LINES = 60


@dataclass
class RunSummary:
    """Every point of a run: written, skipped (resumed) or failed."""

    outcomes: list[PointOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[PointOutcome]:
        return [o for o in self.outcomes if o.status != "ok"]

    @property
    def ok(self) -> bool:
        return not self.failed


def _failed_result(point_id: str, reason: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A point that never ran (engine failed to start or died earlier): status and why."""
    return {
        **result_header(point_id, "failed", reason),
        # No request ran: no latency or throughput field is written, never a zero.
        **redact(extra),
    }


def _run_context(
    cfg: RunConfig,
    server: ServerConfig,
    resolved: ResolvedLaunch,
    platform: Platform,
    launcher_view: dict[str, Any],
) -> dict[str, Any]:
    """What every result of this server carries: config, platform, launch, fixes."""
    return {
        "config": cfg.model_dump(mode="json"),
        "engine": {"name": server.engine, "plugin": resolved.plugin, "version": None},
        "platform": platform.model_dump(mode="json"),
        "launch": {
            "spec": resolved.spec.model_dump(mode="json"),
            "launcher": launcher_view,
        },
        "fixes_applied": [f.model_dump() for f in resolved.applied_fixes],
        "fix_decisions": [d.model_dump() for d in resolved.decisions],
    }


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
) -> RunSummary:
    """Launch one server configuration, run its load points, stop it."""
    summary = RunSummary()
    todo = []
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
    server = cfg.server().model_copy(update={"port": port})
    resolved = resolve_launch(pm, server, platform)
    launcher_entry = launchers(pm).get(server.launcher)
    if launcher_entry is None:
        raise UserFacingError(
            f"unknown launcher {server.launcher!r}; known: {', '.join(sorted(launchers(pm)))}"
        )
    launcher = launcher_entry[1].factory()
    sid = server_id(cfg)
    run_dir = output_dir / "servers" / sid
    context = _run_context(
        cfg, server, resolved, platform, launcher.describe(resolved.spec, run_dir)
    )
    info = engine_registry(pm).get(server.engine).info
    num_gpus = len(resolved.spec.gpu_ids) or None  # CPU engines: per-GPU figures stay null

    def write_failed(reason: str, points: list[tuple[LoadPoint, str]], **more: Any) -> None:
        for _, pid in points:
            result = _failed_result(pid, reason, {**context, **more})
            path = write_json_atomic(result_path(output_dir, pid), result)
            outcome = PointOutcome(pid, result, path=path)
            summary.outcomes.append(outcome)
            if on_point:
                on_point(outcome)

    handle: ServerHandle | None = None
    counter: Any = None
    try:
        try:
            context["preflight"] = run_preflight(
                resolved.spec,
                platform,
                build_plan(pm, platform, list(resolved.spec.gpu_ids)).make_samplers,
            )
            log.info("launching", server=sid, argv=list(resolved.spec.argv), env=resolved.spec.env)
            handle = launcher.start(resolved.spec, run_dir)
        except (OSError, ValueError, UserFacingError) as exc:
            # e.g. the engine executable is missing: this server fails, the run moves on
            log.error("engine could not be started", server=sid, error=str(exc))
            write_failed(f"engine could not be started: {exc}", todo)
            return summary
        try:
            readiness = wait_until_ready(
                handle,
                pm.call_first("inferx_engine_readiness", server=server, spec=resolved.spec)[1]
                or DEFAULT_PROBES,
                served_model_name=server.name_served,
                model=server.model,
                timeout_s=server.readiness_timeout_s,
            )
        except (EngineExited, ReadinessTimeout) as exc:
            log.error("engine not ready", server=sid, error=exc.reason)
            write_failed(exc.reason, todo, engine_log_tail=exc.log_tail)
            return summary
        context["readiness"] = {"seconds": readiness.seconds, "probes": readiness.probes}
        context["engine"]["version"] = engine_version(
            handle.base_url, info.version_path, info.version_field
        )
        log.info("engine ready", server=sid, seconds=readiness.seconds)
        from inferx_core.load.token_counter import resolve_token_counter

        tokenizer = cfg.workload.tokenizer
        counter = resolve_token_counter(
            handle.base_url, server.name_served, str(tokenizer) if tokenizer else None
        )
        target = BenchTarget(handle.base_url, server.name_served)
        telemetry = build_plan(
            pm,
            platform,
            list(resolved.spec.gpu_ids),
            engine_pid=getattr(handle, "pid", None),
            base_url=handle.base_url,
            metrics_map=pm.call_first("inferx_engine_metrics", server=server)[1],
            interval_overrides=cfg.telemetry_intervals,
        )

        def engine_gone() -> str | None:
            if handle.alive():
                return None
            return f"engine exited with code {handle.returncode()} during the load"

        for index, (point, pid) in enumerate(todo):
            if not handle.alive():
                write_failed(
                    f"engine exited with code {handle.returncode()} before this point",
                    todo[index:],
                    engine_log_tail=handle.log_tail(LOG_TAIL_LINES),
                )
                break
            try:
                outcome = run_point(
                    target,
                    point,
                    workload=cfg.workload,
                    load=cfg.load,
                    slo=cfg.slo,
                    counter=counter,
                    point_id=pid,
                    num_gpus=num_gpus,
                    output_dir=output_dir,
                    extra=context,
                    abort_check=engine_gone,
                    progress=progress,
                    num_gpus_reason=None if num_gpus else "the engine uses no GPU (CPU build)",
                    telemetry=telemetry,
                )
            except Exception as exc:  # this point fails with its reason; the sweep moves on
                log.error("load point failed", point=pid, error=f"{type(exc).__name__}: {exc}")
                write_failed(
                    f"{type(exc).__name__}: {exc}",
                    [(point, pid)],
                    engine_log_tail=handle.log_tail(LOG_TAIL_LINES),
                )
                continue
            if outcome.status != "ok" and not handle.alive():
                # Requests can fail (connection refused) before the watchdog
                # polls: name the real cause either way.
                gone = engine_gone() or "engine exited"
                reason = outcome.result.get("failure_reason") or ""
                if not reason.startswith(gone):
                    outcome.result["failure_reason"] = f"{gone} ({reason})" if reason else gone
                outcome.result["engine_log_tail"] = handle.log_tail(LOG_TAIL_LINES)
                write_json_atomic(result_path(output_dir, pid), outcome.result)
            summary.outcomes.append(outcome)
            if on_point:
                on_point(outcome)
    except Exception as exc:  # setup after launch failed: fail what is left, move on
        done = {o.point_id for o in summary.outcomes}
        left = [(p, pid) for p, pid in todo if pid not in done]
        log.error("server failed", server=sid, error=f"{type(exc).__name__}: {exc}")
        write_failed(f"{type(exc).__name__}: {exc}", left)
    finally:
        if counter is not None and hasattr(counter.counter, "close"):
            counter.counter.close()  # keep-alive client and threads of a server tokenizer
        if handle is not None:
            handle.stop(server.stop_grace_s)
            log.info("engine stopped", server=sid, returncode=handle.returncode())
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
) -> RunSummary:
    """The Python API of ``inferx run``: every server configuration, one after another.

    A server that fails to start fails its points and the run moves on.
    """
    pm = pm or get_plugin_manager()
    platform = platform or detect_platform(pm)
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
        )
        total.outcomes += summary.outcomes
        total.skipped += summary.skipped
    return total
