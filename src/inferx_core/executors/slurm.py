"""The ``slurm`` executor: one batch job per server configuration, submitted with sbatch.

Each job runs ``inferx run-job MANIFEST --index I`` on its node: the same
runner as a local ``inferx run`` (launch, fixes, readiness, telemetry, one
atomic result file per point in the shared output folder, resume on).
Several configurations that ask for the same resources go out as one job
array. The batch script holds no secret: secret values are set only in
sbatch's environment and reach the job through ``--export=ALL``.

Container jobs (``--container-image``, or a config with ``image:`` where the
cluster's srun has pyxis) start the engine through the ``srun`` launcher, which
adds pyxis' ``--container-image`` and ``--container-mounts``; the runner itself
stays on the node, outside the engine's image. Without pyxis (``srun --help``
lists no ``--container-image``; or ``container_runtime=docker``) a ``launcher:
docker`` config runs ``docker run`` inside the job step: the container carries
the job's id as a label (``inferx.slurm.job``), and scancel's SIGTERM reaches the
runner, which stops and removes it by its launch label, as on Ctrl-C.

State is read with ``squeue`` (which keeps ended jobs for ``MinJobAge``),
then ``sacct`` where accounting is on, then the status file the job itself
writes when it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inferx_core.config.models import RunConfig
from inferx_core.executors.jobs import (
    MANIFEST_NAME,
    SUBMISSION_NAME,
    JobUnit,
    Plan,
    job_root,
    manifest_data,
    new_job_dir,
    plan_units,
    read_status,
    secret_environment,
)
from inferx_core.executors.slurm_runtime import uses_pyxis
from inferx_core.executors.slurm_script import (
    CONTAINER_MOUNTS_ENV,
    JobGroup,
    SlurmOptions,
    default_inferx_command,
    deployment_nodes,
    group_units,
    log_path_for,
    log_pattern,
    render_script,
    unit_config,
)
from inferx_core.executors.slurm_state import (
    job_state,
    parse_array_tasks,
    parse_sacct,
    parse_squeue,
)
from inferx_core.launch.process import tail_lines
from inferx_core.results.files import write_json_atomic
from inferx_core.sdk.executor import (
    ExecutorError,
    JobRef,
    JobStatus,
    Submission,
)
from inferx_core.sdk.redact import redact, redact_text

# The script and state readers live in slurm_script.py / slurm_state.py; their
# public names stay importable from here.
__all__ = [
    "CONTAINER_MOUNTS_ENV",
    "NAME",
    "JobGroup",
    "SlurmExecutor",
    "SlurmOptions",
    "default_inferx_command",
    "factory",
    "group_units",
    "job_state",
    "load_submission",
    "log_path_for",
    "log_pattern",
    "parse_array_tasks",
    "parse_sacct",
    "parse_squeue",
    "render_script",
    "save_submission",
]

NAME = "slurm"

_SACCT_FIELDS = "JobID,State,ExitCode,NodeList"


class SlurmExecutor:
    """Submits, follows and cancels SLURM jobs that run InferX on compute nodes."""

    name = NAME

    def __init__(self, options: Mapping[str, Any] | SlurmOptions | None = None) -> None:
        self.options = (
            options
            if isinstance(options, SlurmOptions)
            else SlurmOptions.from_mapping(options or {})
        )

    # -- building ----------------------------------------------------------------------------
    def _prepare(
        self, configs: list[RunConfig], output_dir: Path | None
    ) -> tuple[Plan, Path, list[JobGroup], dict[str, str], dict[str, Any]]:
        plan = plan_units(configs, output_dir, deployments=True)
        pyxis = any(u.config.launcher == "docker" for u in plan.units) and uses_pyxis(self.options)
        plan.units = [unit_config(u, self.options, pyxis=pyxis) for u in plan.units]
        deployments = [u.server for u in plan.units if u.config.deployment is not None]
        if deployments and self.options.client_nodes:
            raise ExecutorError(
                f"client_nodes with a deployment ({', '.join(deployments)}): the job's nodes "
                "are the deployment's; drop --client-nodes"
            )
        job_dir = new_job_dir(job_root(plan.units, output_dir, configs), NAME)
        registry: dict[str, str] = {}
        manifest = manifest_data(plan.units, registry)
        return plan, job_dir, group_units(plan.units, self.options), registry, manifest

    def _steps(self, groups: list[JobGroup]) -> dict[int, list[dict[str, Any]]]:
        """Each deployment unit's processes as the steps its runner starts (by unit index)."""
        return {
            unit.index: deployment_steps(unit, self.options)
            for group in groups
            for unit in group.units
            if unit.config.deployment is not None
        }

    def describe(self, configs: list[RunConfig], output_dir: Path | None) -> dict[str, Any]:
        plan, job_dir, groups, registry, manifest = self._prepare(configs, output_dir)
        names = sorted(registry.values())
        steps = self._steps(groups)
        return {
            "executor": NAME,
            "job_dir": str(job_dir),
            "skipped": plan.skipped,
            "secret_env": _secret_refs(manifest),
            "jobs": [
                {
                    "group": group.number,
                    "array": group.is_array,
                    "gpus_per_node": group.gpus,
                    "nodes": group.nodes or 1,
                    "sbatch": self._sbatch_argv(job_dir / f"job-{group.number}.sbatch"),
                    "script": render_script(
                        group,
                        job_dir,
                        self.options,
                        workdir=Path.cwd(),
                        secret_names=names,
                        steps=_step_lines(steps),
                    ),
                    "tasks": [
                        {
                            "server": u.server,
                            "points": u.points,
                            "todo": u.todo,
                            **({"steps": steps[u.index]} if u.index in steps else {}),
                        }
                        for u in group.units
                    ],
                    "launch": [_launch_view(u) for u in group.units],
                }
                for group in groups
            ],
        }

    @staticmethod
    def _sbatch_argv(script: Path) -> list[str]:
        return ["sbatch", "--parsable", "--export=ALL", str(script)]

    # -- submitting --------------------------------------------------------------------------
    def submit(self, configs: list[RunConfig], output_dir: Path | None) -> Submission:
        plan, job_dir, groups, registry, manifest = self._prepare(configs, output_dir)
        submission = Submission(NAME, job_dir, job_dir.parent.parent, skipped=dict(plan.skipped))
        adopted = self._active_jobs(job_dir.parent, {u.server for u in plan.units})
        for group in groups:
            group.units = [u for u in group.units if u.server not in adopted]
        groups = [g for g in groups if g.units]
        for server, job in adopted.items():
            submission.skipped[server] = f"already queued or running as job {job.job_id}"
            submission.adopted.append(job)
        if not groups:
            return submission
        _require("sbatch")
        job_dir.mkdir(parents=True, exist_ok=False)
        (job_dir / "logs").mkdir()
        write_json_atomic(job_dir / MANIFEST_NAME, manifest)
        env = {**os.environ, **secret_environment(registry)}
        names = sorted(registry.values())
        step_lines = _step_lines(self._steps(groups))
        try:
            for group in groups:
                script = job_dir / f"job-{group.number}.sbatch"
                script.write_text(
                    render_script(
                        group,
                        job_dir,
                        self.options,
                        workdir=Path.cwd(),
                        secret_names=names,
                        steps=step_lines,
                    ),
                    encoding="utf-8",
                )
                job_id = self._sbatch(script, env)
                submission.cancel_ids.append(job_id)
                pattern = log_pattern(job_dir, group, self.options)
                for number, unit in enumerate(group.units):
                    ref_id = f"{job_id}_{number}" if group.is_array else job_id
                    submission.jobs.append(
                        JobRef(
                            ref_id,
                            unit.index,
                            unit.server,
                            unit.todo,
                            log_path_for(pattern, ref_id),
                            unit.output_dir,
                        )
                    )
                save_submission(submission)
        except BaseException:
            # Ctrl-C or a refused sbatch half-way: take back what went out, nothing else.
            if submission.cancel_ids:
                self.cancel(submission)
            raise
        return submission

    def _sbatch(self, script: Path, env: Mapping[str, str]) -> str:
        proc = subprocess.run(
            self._sbatch_argv(script),
            capture_output=True,
            text=True,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            raise ExecutorError(
                f"sbatch refused {script}: {redact_text(proc.stderr.strip() or proc.stdout)}"
            )
        job_id = proc.stdout.strip().split(";")[0]
        if not job_id.isdigit():
            raise ExecutorError(f"sbatch printed no job id: {proc.stdout!r}")
        return job_id

    def _active_jobs(self, root: Path, servers: set[str]) -> dict[str, JobRef]:
        """Jobs of earlier submissions into this output folder that are still queued or running."""
        earlier: list[Submission] = []
        for path in sorted(root.glob(f"*/{SUBMISSION_NAME}")):
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                earlier.append(load_submission(path))
        refs = [j for s in earlier for j in s.jobs if j.server in servers]
        if not refs or shutil.which("squeue") is None:
            return {}
        states = self._squeue([j.job_id for j in refs])
        return {
            j.server: j
            for j in refs
            if j.job_id in states and job_state(states[j.job_id][0]) in ("pending", "running")
        }

    # -- following ---------------------------------------------------------------------------
    def _squeue(self, job_ids: list[str]) -> dict[str, tuple[str, str, str]]:
        bases = sorted({j.split("_")[0] for j in job_ids}, key=int)
        if not bases:
            return {}
        proc = subprocess.run(
            ["squeue", "-h", "--states=all", "-j", ",".join(bases), "-o", "%i|%F|%K|%T|%r|%N"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return parse_squeue(proc.stdout) if proc.returncode == 0 else {}

    def _sacct(self, job_ids: list[str]) -> dict[str, tuple[str, str, str]]:
        if not job_ids or shutil.which("sacct") is None:
            return {}
        proc = subprocess.run(
            ["sacct", "-n", "-P", "-X", "-j", ",".join(job_ids), "-o", _SACCT_FIELDS],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return parse_sacct(proc.stdout) if proc.returncode == 0 else {}

    def poll(self, submission: Submission) -> list[JobStatus]:
        _require("squeue")
        jobs = [*submission.jobs, *submission.adopted]
        queue = self._squeue([j.job_id for j in jobs])
        accounting = self._sacct([j.job_id for j in jobs if j.job_id not in queue])
        statuses = []
        for job in jobs:
            marker = read_status(_job_dir_of(job), job.index)
            exit_code = marker.get("exit_code") if marker else None
            if job.job_id in queue:
                state_word, reason, node = queue[job.job_id]
                state = job_state(state_word)
            elif job.job_id in accounting:
                state_word, code, node = accounting[job.job_id]
                reason = f"exit code {code}"
                state = job_state(state_word)
            elif marker is not None:
                state_word, node = "(gone)", marker.get("host") or ""
                state = "done" if exit_code == 0 else "failed"
                reason = "ended; the scheduler no longer lists it"
            else:
                state_word, reason, node = "(gone)", "the scheduler no longer lists it", ""
                state = "unknown"
            if state == "done" and exit_code not in (None, 0):
                state = "failed"
            statuses.append(JobStatus(job, state, state_word, reason, node, exit_code))
        return statuses

    def cancel(self, submission: Submission) -> list[str]:
        """scancel exactly the job (array) ids this submission created."""
        ids = list(submission.cancel_ids)
        if not ids:
            return []
        _require("scancel")
        proc = subprocess.run(
            ["scancel", *ids], capture_output=True, text=True, timeout=60, check=False
        )
        if proc.returncode != 0:
            raise ExecutorError(f"scancel {' '.join(ids)} failed: {proc.stderr.strip()}")
        return ids

    def log_tail(self, job: JobRef, lines: int = 40) -> str:
        if job.log_path is None:
            return ""
        return redact_text(tail_lines(job.log_path, lines))


def _job_dir_of(job: JobRef) -> Path:
    # logs/<file> -> the submission's job folder (adopted jobs keep their own)
    return job.log_path.parent.parent if job.log_path else Path(".")


def _secret_refs(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"server": job["server"], "path": ".".join(str(p) for p in ref["path"]), "env": ref["env"]}
        for job in manifest["jobs"]
        for ref in job["secrets"]
    ]


def deployment_steps(unit: JobUnit, opts: SlurmOptions) -> list[dict[str, Any]]:
    """The steps a deployment unit's runner starts, on placeholder nodes (``node0`` ...),
    planned without the nodes' platform (the job plans again on its node); no secret."""
    from inferx_core.executors.deployment_plan import plan_deployment
    from inferx_core.executors.multinode import nodes_needed
    from inferx_core.executors.slurm_steps import StepLauncher, deployment_hosts
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.platform import Platform

    deployment = unit.config.deployment
    assert deployment is not None
    hosts, node_of = deployment_hosts(
        deployment, deployment_nodes(unit, opts), nodes_needed(deployment)
    )
    plan = plan_deployment(
        unit.config,
        get_plugin_manager(),
        Platform(),
        hosts=hosts,
        output_dir=unit.output_dir,
        launcher=StepLauncher(),
        node_of=node_of,
    )
    steps = []
    for proc in plan.view()["processes"]:
        steps.append(
            {
                "name": proc["name"],
                "role": proc["role"],
                "node": proc["node"],
                "url": proc["url"],
                "argv": redact(proc["argv"]),
            }
        )
    return steps


def _step_lines(steps: dict[int, list[dict[str, Any]]]) -> dict[int, list[str]]:
    return {
        index: [f"{s['name']} on {s['node']} ({s['url']}): {shlex.join(s['argv'])}" for s in unit]
        for index, unit in steps.items()
    }


def _launch_view(unit: JobUnit) -> dict[str, Any]:
    if unit.config.deployment is not None:
        return {
            "server": unit.server,
            "launcher": "srun-step (a step per process of the deployment)",
            "image": unit.config.image,
            "output_dir": str(unit.output_dir),
        }
    return {
        "server": unit.server,
        "launcher": unit.config.launcher,
        "image": unit.config.image,
        "output_dir": str(unit.output_dir),
    }


def _require(command: str) -> None:
    if shutil.which(command) is None:
        raise ExecutorError(
            f"{command} not found on PATH: submit from a SLURM login node (or install the "
            "SLURM client tools)"
        )


# -- persistence: a submission survives the command that made it --------------------------------
def save_submission(submission: Submission) -> Path:
    data = {
        "executor": submission.executor,
        "output_dir": str(submission.output_dir),
        "cancel_ids": submission.cancel_ids,
        "jobs": [
            {
                "job_id": j.job_id,
                "index": j.index,
                "server": j.server,
                "points": j.points,
                "log_path": str(j.log_path) if j.log_path else None,
                "output_dir": str(j.output_dir) if j.output_dir else None,
            }
            for j in submission.jobs
        ],
    }
    return write_json_atomic(submission.job_dir / SUBMISSION_NAME, data)


def load_submission(path: Path) -> Submission:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    jobs = [
        JobRef(
            j["job_id"],
            j["index"],
            j["server"],
            list(j["points"]),
            Path(j["log_path"]) if j.get("log_path") else None,
            Path(j["output_dir"]) if j.get("output_dir") else None,
        )
        for j in data["jobs"]
    ]
    return Submission(
        data["executor"],
        Path(path).parent,
        Path(data["output_dir"]),
        jobs=jobs,
        cancel_ids=list(data["cancel_ids"]),
    )


def factory(options: Mapping[str, Any]) -> SlurmExecutor:
    return SlurmExecutor(options)
