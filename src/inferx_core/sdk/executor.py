"""Executors: where a whole ``inferx run`` executes (this machine, a SLURM cluster, ...).

A *launcher* starts one engine server from a LaunchSpec and hands the runner
a handle to benchmark it; the runner, its load generator and its telemetry
stay in the calling process. An *executor* moves the whole runner: it turns
server configurations into batch jobs, each of which runs the ordinary
runner (``inferx run-job``) on a compute node, so launch, fixes, readiness,
telemetry and result files are those of a local run. The two compose: a
SLURM job's runner still starts its engine with a launcher (``process``, or
``srun`` for pyxis containers).

Executors are registered by name through the ``inferx_executors`` hook;
the core registers ``slurm``. ``local`` (the default) is the in-process
runner itself and needs no executor object. This module holds the contract
types only; looking executors up by name is :mod:`inferx_core.executors.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from inferx_core.errors import UserFacingError

if TYPE_CHECKING:
    from inferx_core.config.models import RunConfig

LOCAL = "local"

#: What a person needs to know about a job, whatever the scheduler calls it.
JobState = Literal["pending", "running", "done", "failed", "cancelled", "unknown"]
TERMINAL_STATES: frozenset[str] = frozenset({"done", "failed", "cancelled"})


@dataclass
class JobRef:
    """One submitted job: a server configuration and its load points."""

    job_id: str  # scheduler id, e.g. "1234" or "1234_3" for an array task
    index: int  # position in the submission's manifest
    server: str  # runner.server_id of the configuration
    points: list[str]
    log_path: Path | None = None
    output_dir: Path | None = None  # where its result files land


@dataclass
class JobStatus:
    """A job's state now, as the executor sees it."""

    job: JobRef
    state: JobState
    scheduler_state: str = ""  # the scheduler's own word (PENDING, NODE_FAIL, ...)
    reason: str = ""
    node: str = ""
    exit_code: int | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass
class Submission:
    """What one ``inferx run --executor X`` submitted (persisted in ``job_dir``)."""

    executor: str
    job_dir: Path
    output_dir: Path
    jobs: list[JobRef] = field(default_factory=list)
    #: scheduler ids to cancel this submission (array ids cancel every task)
    cancel_ids: list[str] = field(default_factory=list)
    #: server id -> why it was not submitted (complete, already queued as job N)
    skipped: dict[str, str] = field(default_factory=dict)
    #: jobs of an earlier submission still queued or running for these servers:
    #: followed, never cancelled by this one
    adopted: list[JobRef] = field(default_factory=list)

    @property
    def all_jobs(self) -> list[JobRef]:
        return [*self.jobs, *self.adopted]

    @property
    def point_ids(self) -> list[str]:
        return [p for job in self.all_jobs for p in job.points]


@runtime_checkable
class Executor(Protocol):
    """Runs server configurations somewhere else and reports on them."""

    name: str

    def describe(self, configs: list[RunConfig], output_dir: Path | None) -> dict[str, Any]:
        """What ``submit`` would do (scripts, commands, jobs), without doing it."""

    def submit(self, configs: list[RunConfig], output_dir: Path | None) -> Submission:
        """Submit one job per server configuration whose points are not all complete.

        Jobs always resume: a point whose result is complete is never run
        again (a requeued or resubmitted job redoes nothing).
        """

    def poll(self, submission: Submission) -> list[JobStatus]:
        """The state of every job of ``submission``, in its order."""

    def cancel(self, submission: Submission) -> list[str]:
        """Cancel this submission's jobs (and nothing else); returns the ids cancelled."""

    def log_tail(self, job: JobRef, lines: int = 40) -> str:
        """The last lines of a job's log."""


@dataclass(frozen=True, slots=True)
class ExecutorInfo:
    """A named executor factory (``inferx run --executor NAME``).

    ``factory(options)`` gets the executor options as a mapping (from
    ``--executor-opt KEY=VALUE`` and the executor's own flags) and must reject
    keys it does not know.
    """

    name: str
    description: str
    factory: Callable[[Mapping[str, Any]], Executor]


class ExecutorError(UserFacingError):
    """An executor could not do what was asked (scheduler missing, submit refused)."""
