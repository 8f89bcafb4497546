"""How `inferx plan` shows a server's launch, an executor's plan and the engines' verdicts.

A server's plan is the ``LaunchPlan`` that ``inferx run`` starts
(``pipeline.server.launch_plan.plan_launch``), shown as data: the plan does not build
a launch of its own, so both accept and refuse the same configurations.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferx_core.config.models import RunConfig
    from inferx_core.sdk.manager import InferxPluginManager
    from inferx_core.sdk.platform import Platform


def server_view(
    cfg: RunConfig,
    pm: InferxPluginManager,
    platform: Platform,
    output_dir: Path | None,
    *,
    check_args: bool = False,
) -> dict[str, Any]:
    """One server's launch as ``inferx run`` plans it (secrets not yet masked).

    The port is the configured one or, with none, the engine's default, shown as a
    placeholder: the run picks a free one (``port_note``)."""
    from inferx_core.config.points import point_ids
    from inferx_core.pipeline.server.argv_check import check_argv
    from inferx_core.pipeline.server.launch_plan import plan_launch
    from inferx_core.sdk.registries import engine_registry

    port = cfg.port or engine_registry(pm).get(cfg.engine).info.default_port
    folder = Path(output_dir or cfg.output_dir)
    launch = plan_launch(cfg, pm, platform, port=port, output_dir=folder)
    resolved = launch.resolved
    view = {
        "server": launch.server_id,
        "engine": cfg.engine,
        "plugin": resolved.plugin,
        "port": port,
        "port_note": None if cfg.port else "picked free at run time",
        "spec": resolved.spec.model_dump(mode="json"),
        "launcher": launch.launcher_view(),
        "fixes_applied": [f.model_dump() for f in resolved.applied_fixes],
        "fixes_not_applied": [d.model_dump() for d in resolved.decisions if not d.applied],
        "points": [pid for _, pid in point_ids(cfg)],
        "num_gpus": len(resolved.spec.gpu_ids),
    }
    if check_args:
        view["argv_check"] = check_argv(pm, launch.server, resolved.spec).model_dump()
    return view


def render_plan(plans: list[dict[str, Any]]) -> None:
    """Every server's plan (``server_view`` or a deployment's view) in the terminal."""
    from rich.console import Console

    from inferx_core.cli.deployment_view import render_deployment

    # No repr highlighting: its regexes take time quadratic in a long word (a model path).
    console = Console(width=None if sys.stdout.isatty() else 160, highlight=False)
    for item in plans:
        if "deployment" in item:
            render_deployment(console, item)
        else:
            _render_server(console, item)


def _render_server(console: Any, item: dict[str, Any]) -> None:
    from inferx_core.pipeline.server.argv_check import describe
    from inferx_core.sdk.argv_check import ArgvVerdict

    spec = item["spec"]
    console.rule(f"[bold]{item['server']}[/] ({item['engine']} via {item['plugin']})")
    argv = item["launcher"]["argv"]  # what the launcher runs: the engine's argv, maybe wrapped
    console.print(shlex.join(argv), markup=False, highlight=False, soft_wrap=True)
    for key, value in sorted(spec["env"].items()):
        console.print(f"  env {key}={value}", markup=False, highlight=False)
    if spec["unset_env"]:
        console.print(f"  unset env {' '.join(spec['unset_env'])}", markup=False)
    if item["port_note"]:  # one port story with --json: the shown port is a placeholder
        console.print(
            f"  port {item['port']}: the engine's default, shown here; no port is configured, "
            "so the run picks a free one"
        )
    if spec["gpu_ids"]:
        console.print(f"  gpus {spec['gpu_ids']}")
    for warning in spec["warnings"]:
        console.print(f"  [yellow]warning[/]: {warning}")
    for fix in item["fixes_applied"]:
        console.print(f"  [green]fix {fix['id']}[/]: {fix['why']}")
    console.print(f"  points: {', '.join(item['points'])}")
    if "argv_check" in item:
        verdict = ArgvVerdict.model_validate(item["argv_check"])
        console.print(f"  {describe(verdict)}", markup=False, highlight=False)


def render_executor_plan(view: dict[str, Any]) -> None:
    print(f"executor {view['executor']}: job folder {view['job_dir']}")
    for server, why in view["skipped"].items():
        print(f"skip {server}: {why}")
    if not view["jobs"]:
        print("nothing to submit")
    for job in view["jobs"]:
        kind = f"job array of {len(job['tasks'])}" if job["array"] else "job"
        print(f"\n== {kind}, {job['gpus_per_node']} GPU(s) per node: {shlex.join(job['sbatch'])}")
        print(job["script"], end="")
        for task, launch in zip(job["tasks"], job["launch"], strict=True):
            engine = launch["launcher"] + (f" image {launch['image']}" if launch["image"] else "")
            print(f"  {task['server']}: engine via {engine}; results in {launch['output_dir']}")
            print(f"    points to run: {', '.join(task['todo'])}")
    for ref in view["secret_env"]:
        print(f"secret {ref['server']}:{ref['path']} travels as ${ref['env']} (sbatch environment)")


def argv_check_status(plans: list[dict[str, Any]]) -> int:
    """Exit 2, naming each server, when an engine refused an argv or none could check it."""
    failed = [p for p in plans if "argv_check" in p and p["argv_check"]["accepted"] is not True]
    for item in failed:
        verdict = item["argv_check"]
        kind = "refused" if verdict["accepted"] is False else "not checked"
        print(f"inferx: {item['server']}: argv {kind}: {verdict['message']}", file=sys.stderr)
    return 2 if failed else 0
