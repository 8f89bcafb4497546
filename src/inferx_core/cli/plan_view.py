"""How `inferx plan` shows an executor's plan and the engines' verdicts on the argv."""

from __future__ import annotations

import sys
from typing import Any


def render_executor_plan(view: dict[str, Any]) -> None:
    import shlex

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
