"""The SLURM batch script: executor options, job groups and the script text.

Used by :class:`inferx_core.executors.slurm.SlurmExecutor`; everything here
is pure (no sbatch call), so the scripts can be inspected and tested.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from inferx_core.executors.jobs import MANIFEST_NAME, JobUnit
from inferx_core.sdk.executor import ExecutorError

__all__ = [
    "CONTAINER_MOUNTS_ENV",
    "JobGroup",
    "SlurmOptions",
    "default_inferx_command",
    "group_units",
    "log_path_for",
    "log_pattern",
    "render_script",
    "unit_config",
]

#: Where the srun launcher reads extra pyxis mounts from inside the job.
CONTAINER_MOUNTS_ENV = "INFERX_CONTAINER_MOUNTS"
CONTAINER_RUNTIMES = ("auto", "pyxis", "docker")


@dataclass
class SlurmOptions:
    """``inferx run --executor slurm`` options (flags or ``--executor-opt KEY=VALUE``)."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None  # sbatch --time, e.g. 01:00:00
    #: GPUs per job; None: each configuration's tp x pp x dp; 0: request none (CPU engines)
    gpus_per_node: int | None = None
    container_image: str | None = None
    container_mounts: list[str] = field(default_factory=list)  # SRC:DST[:ro] for pyxis
    sbatch_args: list[str] = field(default_factory=list)  # extra #SBATCH lines, verbatim
    job_name: str = "inferx"
    max_parallel: int | None = None  # job array throttle (%N)
    #: argv that runs inferx on the node; default: this inferx (a shared venv)
    inferx_command: list[str] | None = None
    poll_interval_s: float = 2.0
    #: nodes for load generators besides the server's: the load runs as srun steps there
    client_nodes: int = 0
    #: nodes of a deployment's job; None: one per engine process (nodes_needed); fewer
    #: packs the processes onto them in turn (1: all on one node)
    nodes: int | None = None
    #: how a config's ``launcher: docker`` runs in the job: ``pyxis`` (srun
    #: --container-image), ``docker`` (docker run inside the job step), ``auto``: pyxis
    #: where this cluster's srun has it (its --help lists --container-image), else docker
    container_runtime: str = "auto"

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> SlurmOptions:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ExecutorError(
                f"unknown slurm executor option(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        values = dict(options)
        for key in ("container_mounts", "sbatch_args", "inferx_command"):
            if isinstance(values.get(key), str):
                raw = values[key]
                values[key] = raw.split(",") if key == "container_mounts" else shlex.split(raw)
        for key in ("gpus_per_node", "max_parallel", "client_nodes", "nodes"):
            if values.get(key) is not None:
                values[key] = int(values[key])
        if values.get("poll_interval_s") is not None:
            values["poll_interval_s"] = float(values["poll_interval_s"])
        opts = cls(**values)
        opts._check()
        return opts

    def _check(self) -> None:
        for name in ("partition", "account", "time", "job_name", "container_image"):
            value = getattr(self, name)
            if value is not None and (not str(value).strip() or re.search(r"\s", str(value))):
                raise ExecutorError(f"slurm option {name}={value!r} must be one word")
        for arg in [*self.sbatch_args, *self.container_mounts]:
            if "\n" in arg or "\r" in arg:
                raise ExecutorError(f"slurm option value {arg!r} spans lines")
        for name in ("gpus_per_node", "client_nodes"):
            if (getattr(self, name) or 0) < 0:
                raise ExecutorError(f"{name} must be >= 0")
        if self.nodes is not None and self.nodes < 1:
            raise ExecutorError("nodes must be >= 1")
        if self.container_runtime not in CONTAINER_RUNTIMES:
            raise ExecutorError(
                f"slurm option container_runtime={self.container_runtime!r}: "
                f"one of {', '.join(CONTAINER_RUNTIMES)}"
            )


def default_inferx_command() -> list[str]:
    """This installation's ``inferx`` (the job needs it on a shared filesystem)."""
    script = Path(sys.executable).parent / "inferx"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "inferx_core.cli"]


@dataclass
class JobGroup:
    """Units submitted together (one sbatch; a job array when there are several)."""

    number: int
    gpus: int
    units: list[JobUnit]
    #: nodes of each job; a deployment's (one task per node), else None (one node, one task)
    nodes: int | None = None

    @property
    def is_array(self) -> bool:
        return len(self.units) > 1


def unit_config(unit: JobUnit, opts: SlurmOptions, *, pyxis: bool = False) -> JobUnit:
    """Container jobs start the engine with srun + pyxis: ``--container-image``, an srun
    config with ``image:``, or ``launcher: docker`` where ``pyxis`` (the option
    ``container_runtime``, or its auto-detection by the executor). Without pyxis a docker
    config stays docker: ``docker run`` inside the job step, which the runner stops and
    removes by its label when scancel's SIGTERM reaches it."""
    cfg = unit.config
    boxed = cfg.launcher == "srun" or (cfg.launcher == "docker" and pyxis)
    image = opts.container_image or (cfg.image if boxed else None)
    if image is None:
        return unit
    cfg = cfg.model_copy(update={"image": image, "launcher": "srun"})
    return JobUnit(unit.index, unit.server, cfg, unit.output_dir, unit.points, unit.todo)


def deployment_nodes(unit: JobUnit, opts: SlurmOptions) -> list[str]:
    """Placeholder names of a deployment job's nodes (``node0`` ...), in SLURM's order."""
    from inferx_core.executors.multinode import nodes_needed

    deployment = unit.config.deployment
    assert deployment is not None
    count = opts.nodes or nodes_needed(deployment)
    return [f"node{i}" for i in range(count)]


def deployment_gpus_per_node(unit: JobUnit, opts: SlurmOptions) -> int:
    """GPUs a deployment's job asks on each node: the most its processes use on one node."""
    if opts.gpus_per_node is not None:
        return opts.gpus_per_node
    from inferx_core.executors.multinode import nodes_needed, place
    from inferx_core.executors.slurm_steps import deployment_hosts

    deployment = unit.config.deployment
    assert deployment is not None
    need = nodes_needed(deployment)
    hosts, _ = deployment_hosts(deployment, deployment_nodes(unit, opts), need)
    used: dict[str, int] = {}
    for p in place(deployment, unit.config.server(), hosts):
        used[p.host] = used.get(p.host, 0) + len(p.gpu_ids)
    return max(used.values(), default=0)


def group_units(units: list[JobUnit], opts: SlurmOptions) -> list[JobGroup]:
    by_shape: dict[tuple[int, int], list[JobUnit]] = {}
    for unit in units:
        if unit.config.deployment is not None:
            nodes = len(deployment_nodes(unit, opts))
            gpus = deployment_gpus_per_node(unit, opts)
        else:
            nodes = 0  # one node, one task
            gpus = opts.gpus_per_node if opts.gpus_per_node is not None else unit.config.num_gpus
        by_shape.setdefault((nodes, gpus), []).append(unit)
    return [
        JobGroup(n, gpus, group, nodes or None)
        for n, ((nodes, gpus), group) in enumerate(sorted(by_shape.items()))
    ]


def log_pattern(job_dir: Path, group: JobGroup, opts: SlurmOptions) -> str:
    stem = f"{opts.job_name}-{group.number}"
    return str(job_dir / "logs" / (f"{stem}-%A_%a.log" if group.is_array else f"{stem}-%j.log"))


def log_path_for(pattern: str, job_id: str) -> Path:
    base, _, task = job_id.partition("_")
    return Path(pattern.replace("%A", base).replace("%a", task).replace("%j", base))


def _node_directives(opts: SlurmOptions, group: JobGroup) -> list[str]:
    """One node and task; with client nodes, one task on each of 1 + K nodes; a deployment:
    one task on each of its nodes (its processes are steps there)."""
    if group.nodes:
        return [f"--nodes={group.nodes}", "--ntasks-per-node=1"]
    if not opts.client_nodes:
        return ["--nodes=1", "--ntasks=1"]
    return [f"--nodes={1 + opts.client_nodes}", "--ntasks-per-node=1"]


def _client_exports(opts: SlurmOptions, job_dir: Path) -> list[str]:
    """Where the runner's load goes: srun steps on the client nodes (load/workers)."""
    if not opts.client_nodes:
        return []
    return [
        f"export INFERX_CLIENT_NODES={opts.client_nodes}",
        f"export INFERX_LOAD_DIR={shlex.quote(str(job_dir / 'load'))}",
    ]


def _directives(group: JobGroup, job_dir: Path, opts: SlurmOptions, workdir: Path) -> list[str]:
    """The ``#SBATCH`` options of one group's script."""
    directives = [
        f"--job-name={opts.job_name}",
        f"--output={log_pattern(job_dir, group, opts)}",
        f"--chdir={workdir}",
        *_node_directives(opts, group),
    ]
    if opts.partition:
        directives.append(f"--partition={opts.partition}")
    if opts.account:
        directives.append(f"--account={opts.account}")
    if opts.time:
        directives.append(f"--time={opts.time}")
    if group.gpus:
        directives.append(f"--gpus-per-node={group.gpus}")
    if group.is_array:
        throttle = f"%{opts.max_parallel}" if opts.max_parallel else ""
        directives.append(f"--array=0-{len(group.units) - 1}{throttle}")
    return directives + list(opts.sbatch_args)


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def render_script(
    group: JobGroup,
    job_dir: Path,
    opts: SlurmOptions,
    *,
    workdir: Path,
    secret_names: Sequence[str] = (),
    steps: Mapping[int, Sequence[str]] | None = None,
) -> str:
    """The batch script for one group of units (inspectable; holds no secret).

    ``steps``: for a deployment unit (by index), the step lines its runner starts
    (comments: the runner starts them, once their nodes are known).
    """
    from inferx_core._version import __version__

    manifest = job_dir / MANIFEST_NAME
    command = opts.inferx_command or default_inferx_command()
    directives = _directives(group, job_dir, opts, workdir)
    lines = [
        "#!/bin/bash",
        *(f"#SBATCH {d}" for d in directives),
        f"# Generated by inferx {__version__}: {len(group.units)} server configuration(s), "
        "one per job, each running its load points.",
        "# The job runs the ordinary InferX runner with resume on; results land in each",
        "# configuration's output folder, one atomic file per point.",
    ]
    if secret_names:
        lines.append(
            f"# Secrets ({', '.join(secret_names)}) are not written here: they come from "
            "sbatch's environment (--export=ALL)."
        )
    for number, unit in enumerate(group.units):
        lines.append(f"#   task {number}: {unit.server} ({len(unit.todo)} point(s) to run)")
        unit_steps = (steps or {}).get(unit.index)
        if unit_steps and unit.config.deployment is not None:
            lines += [
                f"#     a {unit.config.deployment.kind} deployment: the runner (on node0) "
                "starts each process as a step of this job, engines first, the router last;",
                "#     node0, node1, ... are the job's nodes in SLURM's order (scontrol show "
                "hostnames $SLURM_JOB_NODELIST):",
                # one comment line each: an argv item may span lines (python -c SCRIPT)
                *(f"#       {_one_line(line)}" for line in unit_steps),
            ]
    lines += ["set -euo pipefail"]
    if opts.container_mounts:
        mounts = ",".join(opts.container_mounts)
        lines.append(f"export {CONTAINER_MOUNTS_ENV}={shlex.quote(mounts)}")
    lines += _client_exports(opts, job_dir)
    indexes = " ".join(str(u.index) for u in group.units)
    lines += [
        f"INDEXES=({indexes})",
        'INDEX="${INDEXES[${SLURM_ARRAY_TASK_ID:-0}]}"',
        'echo "inferx: job ${SLURM_JOB_ID} on $(hostname): configuration ${INDEX} of '
        f'{manifest}"',
        f'exec {shlex.join(command)} run-job {shlex.quote(str(manifest))} --index "$INDEX"',
        "",
    ]
    return "\n".join(lines)
