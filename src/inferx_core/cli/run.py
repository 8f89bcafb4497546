"""``inferx plan``, ``inferx run`` and ``inferx demo``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferx_core.cli.db import add_db_arguments, db_ingester
from inferx_core.cli.demo import register_demo
from inferx_core.cli.interop import add_export_arguments, point_exporter, print_export_report
from inferx_core.cli.numbers import Bounds, number
from inferx_core.cli.plan_view import render_plan
from inferx_core.cli.validity import add_validity_arguments, failed_points
from inferx_core.config.bounds import MAX_REPEATS

if TYPE_CHECKING:
    from inferx_core.config.models import RunConfig
    from inferx_core.pipeline.server.run import RunSummary
    from inferx_core.sdk.executor import Executor
    from inferx_core.sdk.manager import InferxPluginManager
    from inferx_core.sdk.platform import Platform

#: Flags of the slurm executor: (flag, SlurmOptions name, type, metavar, help).
_SLURM_FLAGS: tuple[tuple[str, str, Any, str, str], ...] = (
    ("--partition", "partition", str, "NAME", "sbatch --partition"),
    ("--account", "account", str, "NAME", "sbatch --account"),
    ("--time", "time", str, "LIMIT", "sbatch --time limit per job, e.g. 02:00:00"),
    (
        "--gpus-per-node",
        "gpus_per_node",
        number(int, Bounds(low=0)),
        "N",
        "GPUs per job (default: the configuration's tp x pp x dp; 0: none)",
    ),
    (
        "--container-image",
        "container_image",
        str,
        "IMAGE",
        "run the engine in this image (pyxis srun)",
    ),
    (
        "--container-mounts",
        "container_mounts",
        str,
        "MOUNTS",
        "pyxis mounts SRC:DST[:ro],... for the engine",
    ),
    (
        "--max-parallel",
        "max_parallel",
        number(int, Bounds(low=1)),
        "N",
        "at most N array tasks at once",
    ),
    ("--job-name", "job_name", str, "NAME", "sbatch --job-name (default inferx)"),
    (
        "--inferx-command",
        "inferx_command",
        str,
        "ARGV",
        "how the node runs inferx (default: this one)",
    ),
    (
        "--client-nodes",
        "client_nodes",
        number(int, Bounds(low=1)),
        "K",
        "nodes for the load generators (srun steps)",
    ),
)


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("executor (where the run executes; inferx docs multinode)")
    g.add_argument(
        "--executor",
        default="local",
        help="local: this machine (default); slurm: one batch job per server configuration",
    )
    g.add_argument(
        "--executor-opt",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an executor option by name (any executor, repeatable)",
    )
    for flag, dest, kind, metavar, text in _SLURM_FLAGS:
        g.add_argument(flag, dest=f"x_{dest}", type=kind, metavar=metavar, help=f"slurm: {text}")
    g.add_argument(
        "--sbatch-arg",
        dest="x_sbatch_args",
        action="append",
        metavar="ARG",
        help="slurm: an extra #SBATCH line, verbatim (repeatable), e.g. --sbatch-arg=--exclusive",
    )


def register_command(sub: Any) -> None:
    from inferx_core.cli.filters import add_filter_arguments

    p = sub.add_parser("plan", help="show the exact launch for each server, fixes applied")
    p.add_argument("config")
    p.add_argument("--platform", metavar="FILE", help="platform JSON (e.g. an H200 node)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--output", help="results folder (default: the config's output_dir)")
    p.add_argument(
        "--check-args",
        action="store_true",
        help="parse each launch's argv with the engine's own parser (the engine must be "
        "installed here); exit 2 when one is refused or cannot be checked",
    )
    _add_executor_options(p)
    add_filter_arguments(p)
    p.set_defaults(handler=cmd_plan)

    p = sub.add_parser("run", help="launch engines and run every load point of a config")
    p.add_argument("config")
    p.add_argument(
        "--require-accuracy",
        action="store_true",
        help="exit 1 when a point is under its accuracy threshold or its evals failed (evals:)",
    )
    p.add_argument("--output", help="results folder (default: the config's output_dir)")
    p.add_argument("--resume", action="store_true", help="skip points whose result exists")
    p.add_argument("--platform", metavar="FILE", help="platform JSON instead of detection")
    p.add_argument("--dry-run", action="store_true", help="print what would run, start nothing")
    p.add_argument("--no-progress", action="store_true")
    _add_executor_options(p)
    p.add_argument(
        "--wait", action="store_true", help="executor: follow the jobs until they end, report"
    )
    p.add_argument(
        "--on-interrupt",
        choices=("ask", "cancel", "keep"),
        default="ask",
        help="executor: Ctrl-C while waiting cancels the jobs this command submitted "
        "(ask: prompt on a terminal, cancel otherwise)",
    )
    add_filter_arguments(p)
    add_export_arguments(p)
    add_db_arguments(p)
    add_validity_arguments(p)
    p.add_argument(
        "--repeats",
        type=number(int, Bounds(low=1, high=MAX_REPEATS)),
        metavar="N",
        help="run every point N times (overrides load.repeats)",
    )
    p.set_defaults(handler=cmd_run)

    # Hidden: what a batch job runs on its node (see inferx_core.executors.jobs).
    p = sub.add_parser("run-job")
    p.add_argument("manifest")
    p.add_argument("--index", type=number(int, Bounds(low=0)), required=True)
    p.set_defaults(handler=cmd_run_job)

    register_demo(sub, _execute)


def _platform(pm: InferxPluginManager, path: str | None) -> Platform:
    from inferx_core.sdk.platform import load_platform
    from inferx_core.sdk.registries import detect_platform

    return load_platform(path) if path else detect_platform(pm)


def plan(
    configs: list[RunConfig],
    pm: InferxPluginManager,
    platform: Platform,
    output_dir: Path | None = None,
    *,
    check_args: bool = False,
) -> list[dict[str, Any]]:
    """The resolved launch of every server configuration, without starting anything;
    with ``check_args`` each argv is also parsed by the engine's own parser.

    Each is built by the planner ``inferx run`` uses (``plan_launch``, a deployment's
    ``plan_deployment``), so a configuration the run refuses, the plan refuses too."""
    from inferx_core.cli.plan_view import server_view
    from inferx_core.executors.deployment_plan import plan_deployment
    from inferx_core.sdk.redact import redact

    plans = []
    for cfg in configs:
        if cfg.deployment is not None:
            planned = plan_deployment(cfg, pm, platform, output_dir=output_dir)
            plans.append(redact(planned.view(pm if check_args else None)))
        else:
            plans.append(redact(server_view(cfg, pm, platform, output_dir, check_args=check_args)))
    return plans


def executor_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--executor-opt KEY=VALUE`` pairs plus the executor flags that were given."""
    from inferx_core.errors import UserFacingError

    options: dict[str, Any] = {}
    for item in args.executor_opt:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserFacingError(f"--executor-opt {item!r}: expected KEY=VALUE")
        options[key.strip().replace("-", "_")] = value
    given = {
        name.removeprefix("x_"): value
        for name, value in vars(args).items()
        if name.startswith("x_") and value is not None
    }
    if given and args.executor != "slurm":
        flag_of = {dest: flag for flag, dest, *_ in _SLURM_FLAGS} | {"sbatch_args": "--sbatch-arg"}
        flags = ", ".join(flag_of[k] for k in sorted(given))
        raise UserFacingError(f"{flags}: slurm executor flag(s); add --executor slurm")
    if options and args.executor == "local":
        raise UserFacingError("--executor-opt needs an executor other than local (--executor NAME)")
    return {**options, **given}


def _executor(args: argparse.Namespace, pm: InferxPluginManager) -> Executor:
    from inferx_core.executors.registry import get_executor

    return get_executor(pm, args.executor, executor_options(args))


def _validate_engines(configs: list[RunConfig], pm: InferxPluginManager) -> None:
    """Fail here, not in every job, when an engine has no plugin on this installation."""
    from inferx_core.sdk.registries import engine_registry

    registry = engine_registry(pm)
    for name in sorted({c.engine for c in configs}):
        registry.get(name)


def cmd_plan(args: argparse.Namespace) -> int:
    import json

    from inferx_core.cli.filters import apply_filters
    from inferx_core.cli.plan_view import argv_check_status, render_executor_plan
    from inferx_core.config.loader import load_run_configs
    from inferx_core.config.sweep import count_points
    from inferx_core.sdk.manager import get_plugin_manager

    configs = apply_filters(load_run_configs(args.config), args)
    pm = get_plugin_manager()
    if args.executor != "local":
        view = _executor(args, pm).describe(configs, Path(args.output) if args.output else None)
        if args.json:
            sys.stdout.write(json.dumps(view, indent=2) + "\n")
        else:
            render_executor_plan(view)
        return 0
    executor_options(args)  # executor flags without --executor are an error
    output = Path(args.output) if args.output else None
    plans = plan(configs, pm, _platform(pm, args.platform), output, check_args=args.check_args)
    if args.json:
        sys.stdout.write(json.dumps(plans, indent=2) + "\n")
    else:
        render_plan(plans)
        print(f"{len(configs)} server configuration(s), {count_points(configs)} load point(s)")
    return argv_check_status(plans)


def _execute(
    configs: list[RunConfig], args: argparse.Namespace, pm: InferxPluginManager, platform: Platform
) -> int:
    from inferx_core.executors.deployment_run import deployment_launch_plan
    from inferx_core.pipeline.server.evals import accuracy_failures, evaluation_failures
    from inferx_core.pipeline.server.run import run_configs
    from inferx_core.report.console import print_summary

    output = Path(args.output) if args.output else None
    roots = [output] if output else [Path(c.output_dir) for c in configs]
    exporter = point_exporter(args, roots[0], roots)
    summary = run_configs(
        configs,
        output_dir=output,
        resume=getattr(args, "resume", False),
        platform=platform,
        pm=pm,
        progress=False if args.no_progress else None,
        on_point=db_ingester(args, exporter),
        planner=deployment_launch_plan,
    )
    print_summary([o.result for o in summary.outcomes], title="inferx run")
    unanswered = print_searches(summary)
    if summary.skipped:
        print(f"skipped (already complete, --resume): {', '.join(summary.skipped)}")
    folders = sorted({str(output or c.output_dir) for c in configs})
    print(f"results: {', '.join(folders)}")
    export_failed = exporter is not None and print_export_report(exporter.report, sys.stderr)
    inaccurate = getattr(args, "require_accuracy", False) and accuracy_failures(summary.outcomes)
    eval_failed = evaluation_failures(summary.outcomes)  # not a low score: always exit 1
    for message in eval_failed:
        sys.stderr.write(message + "\n")
    failed = failed_points(summary.outcomes, args)
    return 0 if not (failed or export_failed or inaccurate or eval_failed or unanswered) else 1


def print_searches(summary: Any) -> list[str]:
    """The capacity searches' answers (``search:``); the ids of those without one."""
    if not summary.searches:
        return []
    from inferx_core.analysis.buyer import search_rows
    from inferx_core.tables.buyer import search_table_text

    search_table_text(search_rows(summary.searches, [o.result for o in summary.outcomes]))
    answered = ("found", "above_max", "below_min")  # as `inferx bench --search`
    return [s.search_id for s in summary.searches if s.status not in answered]


def with_repeats(configs: list[RunConfig], repeats: int | None) -> list[RunConfig]:
    """``--repeats N`` over every configuration's ``load.repeats``."""
    if repeats is None:
        return configs
    if repeats < 1:
        from inferx_core.errors import UserFacingError

        raise UserFacingError(f"--repeats {repeats}: give 1 or more")
    return [
        c.model_copy(update={"load": c.load.model_copy(update={"repeats": repeats})})
        for c in configs
    ]


def cmd_run(args: argparse.Namespace) -> int:
    from inferx_core.cli.filters import apply_filters
    from inferx_core.config.loader import load_run_configs
    from inferx_core.pipeline.point.inputs import check_workload_files
    from inferx_core.sdk.manager import get_plugin_manager

    configs = with_repeats(apply_filters(load_run_configs(args.config), args), args.repeats)
    pm = get_plugin_manager()
    if args.executor != "local":
        return _submit(configs, args, pm)  # files are read on the nodes, maybe elsewhere
    for config in configs:  # datasets and tokenizers before any engine starts
        check_workload_files(config.workload)
    executor_options(args)
    if args.wait:
        from inferx_core.errors import UserFacingError

        raise UserFacingError("--wait follows executor jobs; add --executor slurm (or drop it)")
    platform = _platform(pm, args.platform)
    if args.dry_run:
        render_plan(plan(configs, pm, platform, Path(args.output) if args.output else None))
        return 0
    return _execute(configs, args, pm, platform)


def _confirm_cancel(ids: list[str], mode: str) -> bool:
    if mode != "ask":
        return mode == "cancel"
    if not sys.stdin.isatty():
        return True
    try:
        answer = input(f"\ncancel the job(s) this command submitted ({' '.join(ids)})? [Y/n] ")
    except (EOFError, KeyboardInterrupt):
        return True
    return answer.strip().lower() in ("", "y", "yes")


def _submit(configs: list[RunConfig], args: argparse.Namespace, pm: InferxPluginManager) -> int:
    """``inferx run --executor NAME``: submit, then (``--wait``) follow and report."""
    from inferx_core.cli.plan_view import render_executor_plan
    from inferx_core.executors.follow import follow, report

    executor = _executor(args, pm)
    output = Path(args.output) if args.output else None
    if args.dry_run:
        render_executor_plan(executor.describe(configs, output))
        return 0
    if args.platform:
        print("note: --platform is ignored with an executor; each job detects its node")
    _validate_engines(configs, pm)
    submission = None
    try:
        submission = executor.submit(configs, output)
        for server, why in submission.skipped.items():
            print(f"skip {server}: {why}")
        for job in submission.jobs:
            print(f"submitted job {job.job_id}: {job.server} ({len(job.points)} point(s))")
        if submission.jobs:
            print(f"job folder: {submission.job_dir}")
        if not submission.jobs and not submission.adopted:
            print("nothing to submit: every point is complete")
            return 0
        if not args.wait:
            print(
                "follow with --wait (the same command attaches to queued jobs and submits "
                "only what is missing)"
            )
            return 0
        poll_s = getattr(getattr(executor, "options", None), "poll_interval_s", 2.0)
        statuses = follow(executor, submission, poll_s=poll_s)
        return report(executor, submission, statuses)
    except KeyboardInterrupt:
        ids = list(submission.cancel_ids) if submission else []
        if not ids:
            print("\ninterrupted; nothing of this command's is queued", flush=True)
            return 130
        if submission is not None and _confirm_cancel(ids, args.on_interrupt):
            cancelled = executor.cancel(submission)
            print(f"\ncancelled job(s) {' '.join(cancelled)} (scancel)", flush=True)
        else:
            print(f"\ninterrupted; job(s) {' '.join(ids)} keep running", flush=True)
        return 130


def cmd_run_job(args: argparse.Namespace) -> int:
    from inferx_core.executors.jobs import run_job
    from inferx_core.report.console import print_summary

    def show(summary: RunSummary) -> None:
        results = [o.result for o in summary.outcomes]
        print_summary(results, title=f"inferx run-job {args.index}")

    return run_job(Path(args.manifest), args.index, on_summary=show)
