"""The ``slurm`` executor: one batch job per server configuration, submitted with sbatch.

Each job runs ``inferx run-job MANIFEST --index I`` on its node: the same
runner as a local ``inferx run`` (launch, fixes, readiness, telemetry, one
atomic result file per point in the shared output folder, resume on).
Several configurations that ask for the same resources go out as one job
array. The batch script holds no secret: secret values are set only in
sbatch's environment and reach the job through ``--export=ALL``.

Container jobs (``--container-image`` or a config with ``image:``) start the
engine through the ``srun`` launcher, which adds pyxis' ``--container-image``
and ``--container-mounts``; the runner itself stays on the node, outside the
engine's image.

State is read with ``squeue`` (which keeps ended jobs for ``MinJobAge``),
then ``sacct`` where accounting is on, then the status file the job itself
writes when it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
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
from inferx_core.launch.process import tail_lines
from inferx_core.results.files import write_json_atomic
from inferx_core.sdk.executor import (
    ExecutorError,
    JobRef,
    JobState,
    JobStatus,
    Submission,
)
from inferx_core.sdk.redact import redact_text

NAME = "slurm"
#: Where the srun launcher reads extra pyxis mounts from inside the job.
CONTAINER_MOUNTS_ENV = "INFERX_CONTAINER_MOUNTS"

_STATE_MAP: dict[str, JobState] = {
    "PENDING": "pending",
    "CONFIGURING": "pending",
    "REQUEUED": "pending",
    "REQUEUE_HOLD": "pending",
    "REQUEUE_FED": "pending",
    "RESV_DEL_HOLD": "pending",
    "SUSPENDED": "pending",
    "RUNNING": "running",
    "COMPLETING": "running",
    "STAGE_OUT": "running",
    "SIGNALING": "running",
    "RESIZING": "running",
    "COMPLETED": "done",
    "CANCELLED": "cancelled",
    "FAILED": "failed",
    "TIMEOUT": "failed",
    "NODE_FAIL": "failed",
    "OUT_OF_MEMORY": "failed",
    "BOOT_FAIL": "failed",
    "DEADLINE": "failed",
    "PREEMPTED": "failed",
    "SPECIAL_EXIT": "failed",
    "REVOKED": "failed",
}


_SACCT_FIELDS = "JobID,State,ExitCode,NodeList"


def job_state(slurm_state: str) -> JobState:
    """SLURM's word (``CANCELLED by 0``, ``OUT_OF_MEMORY``, ...) as an InferX job state."""
    word = slurm_state.strip().split(" ")[0].rstrip("+").upper()
    return _STATE_MAP.get(word, "unknown")


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
        for key in ("gpus_per_node", "max_parallel"):
            if values.get(key) is not None:
                values[key] = int(values[key])
        if values.get("poll_interval_s") is not None:
            values["poll_interval_s"] = float(values["poll_interval_s"])
        opts = cls(**values)
        for name in ("partition", "account", "time", "job_name", "container_image"):
            value = getattr(opts, name)
            if value is not None and (not str(value).strip() or re.search(r"\s", str(value))):
                raise ExecutorError(f"slurm option {name}={value!r} must be one word")
        for arg in [*opts.sbatch_args, *opts.container_mounts]:
            if "\n" in arg or "\r" in arg:
                raise ExecutorError(f"slurm option value {arg!r} spans lines")
        if opts.gpus_per_node is not None and opts.gpus_per_node < 0:
            raise ExecutorError("gpus_per_node must be >= 0")
        return opts


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

    @property
    def is_array(self) -> bool:
        return len(self.units) > 1


def _unit_config(unit: JobUnit, opts: SlurmOptions) -> JobUnit:
    """Container jobs start the engine with srun + pyxis instead of docker."""
    cfg = unit.config
    image = opts.container_image or (cfg.image if cfg.launcher in ("docker", "srun") else None)
    if image is None:
        return unit
    cfg = cfg.model_copy(update={"image": image, "launcher": "srun"})
    return JobUnit(unit.index, unit.server, cfg, unit.output_dir, unit.points, unit.todo)


def group_units(units: list[JobUnit], opts: SlurmOptions) -> list[JobGroup]:
    by_gpus: dict[int, list[JobUnit]] = {}
    for unit in units:
        gpus = opts.gpus_per_node if opts.gpus_per_node is not None else unit.config.num_gpus
        by_gpus.setdefault(gpus, []).append(unit)
    return [JobGroup(n, gpus, group) for n, (gpus, group) in enumerate(sorted(by_gpus.items()))]


def log_pattern(job_dir: Path, group: JobGroup, opts: SlurmOptions) -> str:
    stem = f"{opts.job_name}-{group.number}"
    return str(job_dir / "logs" / (f"{stem}-%A_%a.log" if group.is_array else f"{stem}-%j.log"))


def log_path_for(pattern: str, job_id: str) -> Path:
    base, _, task = job_id.partition("_")
    return Path(pattern.replace("%A", base).replace("%a", task).replace("%j", base))


def render_script(
    group: JobGroup,
    job_dir: Path,
    opts: SlurmOptions,
    *,
    workdir: Path,
    secret_names: Sequence[str] = (),
) -> str:
    """The batch script for one group of units (inspectable; holds no secret)."""
    from inferx_core._version import __version__

    manifest = job_dir / MANIFEST_NAME
    command = opts.inferx_command or default_inferx_command()
    directives = [
        f"--job-name={opts.job_name}",
        f"--output={log_pattern(job_dir, group, opts)}",
        f"--chdir={workdir}",
        "--nodes=1",
        "--ntasks=1",
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
    directives += list(opts.sbatch_args)
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
    lines += ["set -euo pipefail"]
    if opts.container_mounts:
        mounts = ",".join(opts.container_mounts)
        lines.append(f"export {CONTAINER_MOUNTS_ENV}={shlex.quote(mounts)}")
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


def parse_array_tasks(text: str) -> list[int]:
    """``0-3,7%2`` or ``[0-3]`` -> [0, 1, 2, 3, 7]."""
    text = text.strip().strip("[]").split("%")[0]
    tasks: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return []
        tasks += list(range(int(low), int(high or low) + 1))
    return tasks


def parse_squeue(text: str) -> dict[str, tuple[str, str, str]]:
    """``%i|%F|%K|%T|%r|%N`` rows -> job id (``A`` or ``A_t``) -> (state, reason, node)."""
    found: dict[str, tuple[str, str, str]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 6:
            continue
        job_id, array_id, task, state, reason, node = parts[:6]
        value = (state, "" if reason in ("None", "(null)") else reason, node)
        if task in ("N/A", "(null)", ""):
            found[job_id] = value
            continue
        for number in parse_array_tasks(task):
            found[f"{array_id}_{number}"] = value
    return found


def parse_sacct(text: str) -> dict[str, tuple[str, str, str]]:
    """``JobID|State|ExitCode|NodeList`` rows -> job id -> (state, exit code, node)."""
    found: dict[str, tuple[str, str, str]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 4 and parts[0]:
            found[parts[0]] = (parts[1], parts[2], parts[3])
    return found


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
        plan = plan_units(configs, output_dir)
        plan.units = [_unit_config(u, self.options) for u in plan.units]
        job_dir = new_job_dir(job_root(plan.units, output_dir, configs), NAME)
        registry: dict[str, str] = {}
        manifest = manifest_data(plan.units, registry)
        return plan, job_dir, group_units(plan.units, self.options), registry, manifest

    def describe(self, configs: list[RunConfig], output_dir: Path | None) -> dict[str, Any]:
        plan, job_dir, groups, registry, manifest = self._prepare(configs, output_dir)
        names = sorted(registry.values())
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
                    "sbatch": self._sbatch_argv(job_dir / f"job-{group.number}.sbatch"),
                    "script": render_script(
                        group, job_dir, self.options, workdir=Path.cwd(), secret_names=names
                    ),
                    "tasks": [
                        {"server": u.server, "points": u.points, "todo": u.todo}
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
        try:
            for group in groups:
                script = job_dir / f"job-{group.number}.sbatch"
                script.write_text(
                    render_script(
                        group, job_dir, self.options, workdir=Path.cwd(), secret_names=names
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


def _launch_view(unit: JobUnit) -> dict[str, Any]:
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
