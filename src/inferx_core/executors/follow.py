"""Following submitted jobs: progress while they run, a per-job report when they end.

Executor-neutral: it only calls ``poll``, ``log_tail`` and ``cancel`` and
reads the result files the jobs write.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from inferx_core.results.files import read_result, result_path
from inferx_core.sdk.executor import Executor, JobStatus, Submission

LOG_TAIL_LINES = 25


def _stamp() -> str:
    return dt.datetime.now().strftime("%H:%M:%S")


def _point_status(output_dir: Path, point_id: str) -> str | None:
    try:
        return read_result(result_path(output_dir, point_id)).status
    except (OSError, ValueError):  # ValueError: bad JSON or not the schema
        return None


def _output_of(submission: Submission, status: JobStatus) -> Path:
    return status.job.output_dir or submission.output_dir


def point_counts(submission: Submission, statuses: list[JobStatus]) -> dict[str, int]:
    counts = {"ok": 0, "failed": 0, "missing": 0}
    for st in statuses:
        out = _output_of(submission, st)
        for pid in st.job.points:
            found = _point_status(out, pid)
            key = "missing" if found is None else "ok" if found == "ok" else "failed"
            counts[key] += 1
    return counts


def _describe(st: JobStatus) -> str:
    text: str = st.state
    if st.state == "running" and st.node:
        text += f" on {st.node}"
    if st.state in ("pending", "failed", "unknown") and st.reason:
        text += f" ({st.reason})"
    plain = ("PENDING", "RUNNING", "COMPLETED")
    if st.state != "unknown" and st.scheduler_state and st.scheduler_state.upper() not in plain:
        text += f" [{st.scheduler_state}]"
    return text


def follow(
    executor: Executor,
    submission: Submission,
    *,
    poll_s: float = 2.0,
    stream: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float | None = None,
) -> list[JobStatus]:
    """Poll until every job ended; print each change of state and of points written."""
    out = stream or sys.stdout
    last: dict[str, str] = {}
    last_counts: dict[str, int] | None = None
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        statuses = executor.poll(submission)
        for st in statuses:
            text = _describe(st)
            if last.get(st.job.job_id) != text:
                last[st.job.job_id] = text
                print(f"{_stamp()} job {st.job.job_id} ({st.job.server}): {text}", file=out)
        counts = point_counts(submission, statuses)
        if counts != last_counts:
            last_counts = counts
            total = sum(counts.values())
            by_state: dict[str, int] = {}
            for st in statuses:
                by_state[st.state] = by_state.get(st.state, 0) + 1
            jobs = ", ".join(f"{n} {state}" for state, n in sorted(by_state.items()))
            print(
                f"{_stamp()} points written: {counts['ok'] + counts['failed']}/{total}"
                f" ({counts['failed']} failed); jobs: {jobs}",
                file=out,
            )
        out.flush()
        if all(st.terminal for st in statuses):
            return statuses
        if deadline is not None and time.monotonic() > deadline:
            return statuses
        sleep(poll_s)


def report(
    executor: Executor,
    submission: Submission,
    statuses: list[JobStatus],
    *,
    stream: TextIO | None = None,
) -> int:
    """One line per job, the log tail of each job that did not end well; 0 when all is ok."""
    out = stream or sys.stdout
    print("\njobs:", file=out)
    all_ok = True
    for st in statuses:
        results = {pid: _point_status(_output_of(submission, st), pid) for pid in st.job.points}
        ok = sum(1 for v in results.values() if v == "ok")
        failed = [pid for pid, v in results.items() if v not in (None, "ok")]
        missing = [pid for pid, v in results.items() if v is None]
        line = (
            f"  {st.job.job_id:<12} {st.state:<9} {st.job.server}: "
            f"{ok} ok, {len(failed)} failed, {len(missing)} missing"
        )
        if st.exit_code not in (None, 0):
            line += f", exit code {st.exit_code}"
        print(line, file=out)
        if st.state != "done" or failed or missing:
            all_ok = False
            for pid in failed:
                reason = _failure_reason(_output_of(submission, st), pid)
                print(f"      {pid}: {reason}", file=out)
            if st.state != "done":
                tail = executor.log_tail(st.job, LOG_TAIL_LINES)
                where = f" ({st.job.log_path})" if st.job.log_path else ""
                print(f"    log tail{where}:", file=out)
                for text in (tail or "(empty)").splitlines():
                    print(f"    | {text}", file=out)
    for server, why in submission.skipped.items():
        print(f"  {'-':<12} {'skipped':<9} {server}: {why}", file=out)
    print(f"results: {submission.output_dir}", file=out)
    out.flush()
    return 0 if all_ok else 1


def _failure_reason(output_dir: Path, point_id: str) -> str:
    try:
        result = read_result(result_path(output_dir, point_id))
    except (OSError, ValueError):  # ValueError: bad JSON or not the schema
        return "(unreadable)"
    return f"{result.status}: {result.failure_reason}"
