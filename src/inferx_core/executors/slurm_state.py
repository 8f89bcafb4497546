"""SLURM's job states and the output of squeue and sacct, read as InferX job states."""

from __future__ import annotations

from inferx_core.sdk.executor import JobState

__all__ = ["job_state", "parse_array_tasks", "parse_sacct", "parse_squeue"]

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


def job_state(slurm_state: str) -> JobState:
    """SLURM's word (``CANCELLED by 0``, ``OUT_OF_MEMORY``, ...) as an InferX job state."""
    word = slurm_state.strip().split(" ")[0].rstrip("+").upper()
    return _STATE_MAP.get(word, "unknown")


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
