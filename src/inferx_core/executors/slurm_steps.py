"""A deployment inside one SLURM job: every process a job step on its node.

The batch job asks for the deployment's nodes (``--nodes=N
--ntasks-per-node=1``); its runner (``inferx run-job``, on the first node)
reads the allocation (``scontrol show hostnames $SLURM_JOB_NODELIST``),
places the processes on it (:func:`deployment_hosts`; the router on the
first node) and starts each one as an ``srun --overlap --nodes=1 --ntasks=1
--nodelist=NODE`` step of the same job (:class:`StepLauncher`): the pattern
of multi-node serving scripts on SLURM (srt-slurm, which InferenceX's
disaggregated GB200 runs use, starts each prefill/decode worker and the
router so), here driven by the runner so that readiness, the watchdog and
the stop are the local deployment's (:mod:`inferx_core.executors.deployment_run`).

Stopping: each step's ``srun`` client gets SIGTERM (srun forwards it to the
step), then the double SIGINT that makes srun end the step, then SIGKILL;
and since the batch script ``exec``s the runner, the job ends with it, so
SLURM ends every step still there on every node whatever way the runner
went (normal end, error, signal, ``scancel``, the time limit).

A job with fewer nodes than the deployment asks (``--executor-opt nodes=N``)
packs the processes onto its nodes in turn; on one node they all talk over
``127.0.0.1`` (distinct ports, as the local executor places them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inferx_core.config.deployment import Deployment
from inferx_core.errors import UserFacingError
from inferx_core.executors.multinode import RoleLaunch
from inferx_core.launch.process import LOG_NAME, ProcessHandle
from inferx_core.launch.srun import engine_view, srun_argv, start_srun_client
from inferx_core.sdk.launch_spec import LaunchSpec

__all__ = [
    "LOCAL_HOST",
    "StepLauncher",
    "allocation_nodes",
    "deployment_hosts",
    "step_argv",
]

#: Where processes packed onto the runner's own node are reached.
LOCAL_HOST = "127.0.0.1"


def allocation_nodes(env: Mapping[str, str] | None = None) -> list[str]:
    """The nodes of the SLURM job this process runs in, in SLURM's order (first: the batch
    node, where the runner is)."""
    env = os.environ if env is None else env
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not env.get("SLURM_JOB_ID") or not nodelist:
        raise UserFacingError(
            "a deployment's SLURM steps start inside a SLURM job (SLURM_JOB_ID and "
            "SLURM_JOB_NODELIST unset); submit it with `inferx run --executor slurm`"
        )
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        raise UserFacingError("scontrol not found on the job's node: cannot read its nodes")
    proc = subprocess.run(
        [scontrol, "show", "hostnames", nodelist],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    nodes = proc.stdout.split()
    if proc.returncode != 0 or not nodes:
        raise UserFacingError(
            f"scontrol show hostnames {nodelist} failed: {proc.stderr.strip() or proc.stdout}"
        )
    return nodes


def deployment_hosts(
    deployment: Deployment, nodes: list[str], need: int
) -> tuple[list[str], dict[str, str]]:
    """The host of each of the ``need`` node slots of :func:`~.multinode.place`, and the SLURM
    node of each host.

    With as many nodes as slots, one slot per node (hosts are the node names;
    the processes listen on every address). With fewer, slots go to the nodes
    in turn; a replica spanning nodes still needs that many distinct nodes.
    All on one node: the host is ``127.0.0.1`` (the runner is on that node).
    """
    if not nodes:
        raise UserFacingError("the SLURM job has no nodes")
    widest = max(g.nodes for g in deployment.roles)  # the router is on one node
    if widest > len(nodes):
        raise UserFacingError(
            f"a replica of the {deployment.kind} deployment spans {widest} nodes, the job has "
            f"{len(nodes)}: {', '.join(nodes)}"
        )
    if len(nodes) == 1:
        return [LOCAL_HOST] * need, {LOCAL_HOST: nodes[0]}
    hosts = [nodes[i % len(nodes)] for i in range(need)]
    return hosts, {node: node for node in nodes}


def step_argv(
    spec: LaunchSpec, run_dir: Path, *, node: str | None, process: str, srun: str = "srun"
) -> list[str]:
    """The ``srun`` step of one process: the srun launcher's argv, pinned to the process's node
    (``--nodelist``) and named after the process (``--job-name=inferx-both-1``)."""
    if not node:
        raise ValueError(f"the deployment step of {process} needs the node it runs on")
    argv = [
        f"--job-name=inferx-{process}" if arg.startswith("--job-name=") else arg
        for arg in srun_argv(spec, run_dir, srun=srun)
    ]
    at = argv.index("--ntasks=1") + 1
    return [*argv[:at], f"--nodelist={node}", *argv[at:]]


def _step(launch: RoleLaunch, run_dir: Path) -> list[str]:
    return step_argv(launch.spec, run_dir, node=launch.node, process=launch.process)


class StepLauncher:
    """Starts one process of a deployment as a step of the current SLURM job on its node
    (a :class:`~inferx_core.executors.multinode.RoleLauncher`: it is given the process's
    ``RoleLaunch``, whose ``node`` and ``process`` pin and name the step)."""

    name = "srun-step"

    def describe_role(self, launch: RoleLaunch, run_dir: Path) -> dict[str, Any]:
        spec = launch.spec
        return {
            "launcher": self.name,
            "node": launch.node,
            "argv": _step(launch, run_dir),
            "env": dict(engine_view(spec, run_dir).env),
            "unset_env": list(spec.unset_env),
            "log": str(run_dir / LOG_NAME),
        }

    def start_role(self, launch: RoleLaunch, run_dir: Path) -> ProcessHandle:
        if not os.environ.get("SLURM_JOB_ID"):
            raise ValueError(
                "a deployment's steps start inside a SLURM job; submit with "
                "`inferx run --executor slurm`"
            )
        # cpus are bound inside the step (--cpu-bind), not on the client
        return start_srun_client(launch.spec, run_dir, _step(launch, run_dir), cpus=())
