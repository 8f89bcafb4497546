"""Batch jobs of a run: the manifest a submission writes, and the job-side entry point.

Submit side: every server configuration with a point still to measure becomes
one *unit* of the manifest (``manifest.json`` in the submission's job folder,
under ``<output>/.inferx-jobs/``). Its config is written with every secret
replaced by ``***``; the secret values travel only in the job's environment
(``INFERX_SECRET_<n>``, JSON-encoded), never in a file.

Job side: ``inferx run-job MANIFEST --index I`` puts the secrets back, drops
the ``INFERX_SECRET_*`` variables from its own environment (the engine never
sees them) and runs the ordinary runner with ``resume`` on: the result files,
launch records, fixes, readiness and telemetry are those of a local
``inferx run``, and a requeued or resubmitted job redoes nothing finished.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets as _secrets
import signal
import socket
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferx_core.config.models import RunConfig
from inferx_core.config.points import point_ids, server_id
from inferx_core.config.secrets import REDACTED
from inferx_core.errors import UserFacingError
from inferx_core.results.files import is_complete, utc_now, write_json_atomic
from inferx_core.sdk.redact import redact

if TYPE_CHECKING:
    from inferx_core.pipeline.server.run import RunSummary

MANIFEST_VERSION = 1
MANIFEST_NAME = "manifest.json"
SUBMISSION_NAME = "submission.json"
JOBS_ROOT = ".inferx-jobs"  # hidden: result loaders skip it
SECRET_ENV_PREFIX = "INFERX_SECRET_"
STATUS_DIR = "status"


@dataclass
class JobUnit:
    """One server configuration to run as one job."""

    index: int
    server: str
    config: RunConfig
    output_dir: Path
    points: list[str]  # every point id of the configuration
    todo: list[str]  # those not complete yet


@dataclass
class Plan:
    """What a submission would contain: units to run and configurations skipped."""

    units: list[JobUnit] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # server id -> why


def refuse_deployment(cfg: RunConfig, sid: str) -> None:
    """An executor whose jobs cannot start a deployment's processes on their nodes refuses
    it: its job would run it as one monolithic server, silently. The ``slurm`` executor
    starts every process as a step of the job (:mod:`inferx_core.executors.slurm_steps`)."""
    if cfg.deployment is not None:
        raise UserFacingError(
            f"{sid}: a deployment ({cfg.deployment.kind}) cannot be run by this executor: "
            "its job would start one server, not every role; use --executor slurm, or run "
            "it on this machine (inferx run without --executor)"
        )


def plan_units(
    configs: list[RunConfig], output_dir: Path | None, *, deployments: bool = False
) -> Plan:
    """Units for every configuration that still has a point to measure (resume semantics).

    ``deployments``: the executor's jobs start a deployment's every process (the
    ``slurm`` executor's do); otherwise a configuration with ``deployment:`` is refused.
    """
    plan = Plan()
    seen: set[str] = set()
    for cfg in configs:
        sid = server_id(cfg)
        if sid in seen:
            raise UserFacingError(
                f"two server configurations share the id {sid!r}; give them distinct `name:`s"
            )
        seen.add(sid)
        if not deployments:
            refuse_deployment(cfg, sid)
        out = Path(output_dir or cfg.output_dir).resolve()
        pids = [pid for _, pid in point_ids(cfg)]
        todo = [pid for pid in pids if not is_complete(out, pid)]
        if not todo:
            plan.skipped[sid] = f"all {len(pids)} point(s) complete in {out}"
            continue
        plan.units.append(JobUnit(len(plan.units), sid, cfg, out, pids, todo))
    return plan


def job_root(units: list[JobUnit], output_dir: Path | None, configs: list[RunConfig]) -> Path:
    base = Path(output_dir) if output_dir else (units[0].output_dir if units else None)
    if base is None:
        base = Path(configs[0].output_dir) if configs else Path("results")
    return base.resolve() / JOBS_ROOT


def new_job_dir(root: Path, executor: str) -> Path:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return root / f"{executor}-{stamp}-{_secrets.token_hex(3)}"


# -- secrets -------------------------------------------------------------------------------------
KeyPath = list[str | int]


def split_secrets(
    data: Any, registry: MutableMapping[str, str]
) -> tuple[Any, list[dict[str, Any]]]:
    """``data`` with every secret replaced by ``***`` and where each secret went.

    A secret is whatever :func:`inferx_core.sdk.redact.redact` hides (``HF_TOKEN``,
    ``*_API_KEY`` keys, ``--api-key`` values, inline ``Authorization:``). Each
    distinct value gets one environment variable name in ``registry`` (value
    JSON -> name); the refs say which path takes which variable.
    """
    refs: list[dict[str, Any]] = []

    def walk(original: Any, redacted: Any, path: KeyPath) -> Any:
        if isinstance(original, dict) and isinstance(redacted, dict):
            return {k: walk(v, redacted[k], [*path, k]) for k, v in original.items()}
        if isinstance(original, list) and isinstance(redacted, list):
            return [
                walk(v, r, [*path, i])
                for i, (v, r) in enumerate(zip(original, redacted, strict=True))
            ]
        if original == redacted:
            return original
        encoded = json.dumps(original, sort_keys=True)
        name = registry.setdefault(encoded, f"{SECRET_ENV_PREFIX}{len(registry)}")
        refs.append({"path": path, "env": name})
        return REDACTED

    return walk(data, redact(data), []), refs


def secret_environment(registry: Mapping[str, str]) -> dict[str, str]:
    """The variables a submission sets in the scheduler client's environment."""
    return {name: encoded for encoded, name in registry.items()}


def restore_secrets(data: Any, refs: list[dict[str, Any]], env: Mapping[str, str]) -> Any:
    missing = sorted({ref["env"] for ref in refs if ref["env"] not in env})
    if missing:
        raise UserFacingError(
            f"this job's environment lacks {', '.join(missing)}: the secrets of its config "
            "travel in the environment of the submitting command (sbatch --export=ALL); "
            "resubmit with `inferx run --executor ...`"
        )
    for ref in refs:
        *parents, last = ref["path"]
        target = data
        for part in parents:
            target = target[part]
        target[last] = json.loads(env[ref["env"]])
    return data


# -- manifest --------------------------------------------------------------------------------------
def manifest_data(units: list[JobUnit], registry: MutableMapping[str, str]) -> dict[str, Any]:
    jobs = []
    for unit in units:
        config = unit.config.model_dump(mode="json")
        config["output_dir"] = str(unit.output_dir)
        clean, refs = split_secrets(config, registry)
        jobs.append(
            {
                "index": unit.index,
                "server": unit.server,
                "output_dir": str(unit.output_dir),
                "points": unit.points,
                "config": clean,
                "secrets": refs,
            }
        )
    from inferx_core._version import __version__

    return {"manifest_version": MANIFEST_VERSION, "inferx_version": __version__, "jobs": jobs}


def read_manifest(path: Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("manifest_version") != MANIFEST_VERSION:
        raise UserFacingError(
            f"{path}: manifest version {data.get('manifest_version')!r}, this inferx reads "
            f"{MANIFEST_VERSION}; submit again with this inferx"
        )
    return data


def status_path(job_dir: Path, index: int) -> Path:
    return job_dir / STATUS_DIR / f"{index}.json"


def read_status(job_dir: Path, index: int) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, json.JSONDecodeError):
        return json.loads(status_path(job_dir, index).read_text(encoding="utf-8"))
    return None


def _terminate_as_interrupt(signum: int, frame: Any) -> None:
    # scancel and the time limit send SIGTERM: end like Ctrl-C, so the point
    # in flight is written as interrupted and the engine is stopped.
    raise KeyboardInterrupt(f"signal {signum}")


def _job_config(manifest_path: Path, index: int) -> tuple[dict[str, Any], RunConfig]:
    """Job ``index`` of the manifest and its config, secrets restored from the environment.

    The secrets' variables are removed once read, so the engine never inherits them.
    """
    manifest = read_manifest(manifest_path)
    jobs = manifest["jobs"]
    if not 0 <= index < len(jobs):
        raise UserFacingError(f"{manifest_path} has jobs 0..{len(jobs) - 1}, not {index}")
    job = jobs[index]
    data = restore_secrets(job["config"], job["secrets"], os.environ)
    for name in [k for k in os.environ if k.startswith(SECRET_ENV_PREFIX)]:
        del os.environ[name]
    return job, RunConfig.model_validate(data)


def run_job(
    manifest_path: Path,
    index: int,
    *,
    progress: bool = False,
    on_summary: Callable[[RunSummary], None] | None = None,
) -> int:
    """The body of one batch job: run unit ``index`` of the manifest with resume on.

    ``on_summary`` gets the run's summary before the job's status is recorded
    (the CLI prints it; rendering is the report layer's, above this one).
    """
    from inferx_core.executors.deployment_run import slurm_deployment_launch_plan
    from inferx_core.pipeline.server.launch_plan import plan_launch
    from inferx_core.pipeline.server.run import run_configs

    manifest_path = Path(manifest_path).resolve()
    job, cfg = _job_config(manifest_path, index)
    # a deployment's processes are steps of this job; a single server is planned as usual
    planner = plan_launch if cfg.deployment is None else slurm_deployment_launch_plan
    job_dir = manifest_path.parent
    record: dict[str, Any] = {
        "index": index,
        "server": job["server"],
        "host": socket.gethostname(),
        "scheduler_job_id": os.environ.get("SLURM_JOB_ID"),
        "started_at": utc_now(),
        "exit_code": None,
    }
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    code = 2  # an error (the CLI's code for one), unless the run ends or is interrupted
    try:
        summary = run_configs(
            [cfg],
            output_dir=Path(job["output_dir"]),
            resume=True,
            progress=progress,
            lock_unit=job["server"],  # sibling jobs write other servers into the folder
            planner=planner,
        )
        if on_summary is not None:
            on_summary(summary)
        if summary.skipped:
            print(f"skipped (already complete): {', '.join(summary.skipped)}", flush=True)
        record.update(
            ok=[o.point_id for o in summary.outcomes if o.status == "ok"],
            failed=[o.point_id for o in summary.failed],
            skipped=summary.skipped,
        )
        code = 0 if summary.ok else 1
        return code
    except KeyboardInterrupt:
        code = 130
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        record["exit_code"] = code
        record["ended_at"] = utc_now()
        with contextlib.suppress(OSError):
            write_json_atomic(status_path(job_dir, index), record)
