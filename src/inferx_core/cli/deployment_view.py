"""How ``inferx plan`` prints a deployment: every process, the router, the endpoint, the GPUs."""

from __future__ import annotations

import shlex
from typing import Any

from inferx_core.pipeline.server.argv_check import describe
from inferx_core.sdk.argv_check import ArgvVerdict

__all__ = ["render_deployment"]


def _process(console: Any, proc: dict[str, Any]) -> None:
    where = f"{proc['host']}:{proc['port']}"
    gpus = f"GPUs {proc['gpu_ids']}" if proc["gpu_ids"] else "no GPU"
    headless = ", headless (no HTTP)" if proc["headless"] else ""
    console.print(f"[bold]{proc['name']}[/] on {where}, {gpus}{headless} (via {proc['plugin']})")
    console.print("  " + shlex.join(proc["argv"]), markup=False, highlight=False, soft_wrap=True)
    for key, value in sorted(proc["env"].items()):
        console.print(f"  env {key}={value}", markup=False, highlight=False)
    if proc["unset_env"]:
        console.print(f"  unset env {' '.join(proc['unset_env'])}", markup=False)
    for warning in proc["warnings"]:
        console.print(f"  [yellow]warning[/]: {warning}")
    for fix in proc["fixes_applied"]:
        console.print(f"  [green]fix {fix['id']}[/]: {fix['why']}")
    if "argv_check" in proc:
        console.print("  " + describe(ArgvVerdict.model_validate(proc["argv_check"])), markup=False)


def render_deployment(console: Any, item: dict[str, Any]) -> None:
    """One deployment's plan (``item`` is :meth:`DeploymentPlan.view`, secrets masked)."""
    console.rule(f"[bold]{item['server']}[/] ({item['engine']}, {item['deployment']} deployment)")
    console.print(
        f"{len(item['processes'])} process(es) on {item['nodes_needed']} node(s): "
        + ", ".join(item["hosts"])
    )
    for proc in item["processes"]:
        _process(console, proc)
    router = item["router"]
    console.print(
        f"router: {router['name']} on {router['host']}:{router['port']}" if router else "no router"
    )
    console.print(f"load goes to: {item['endpoint']}")
    gpus = item["gpus"]
    by_role = ", ".join(f"{role} {n}" for role, n in gpus["by_role"].items())
    if gpus["num_prefill_gpus"] is not None:
        total = (
            f"{gpus['num_prefill_gpus']} prefill + {gpus['num_decode_gpus']} decode = "
            f"{gpus['num_gpus']}"
        )
    else:
        total = str(gpus["num_gpus"])
    console.print(f"GPUs for per-GPU throughput: {total} (the router counts none; {by_role})")
    for warning in item["warnings"]:
        console.print(f"[yellow]warning[/]: {warning}")
    console.print(f"  points: {', '.join(item['points'])}")
