"""The parent's side: start the workers, hold them to one start, watch them, merge them.

:meth:`WorkerGroup.run` writes each worker's plan, starts it (a local
subprocess, or whatever ``wrap`` turns the command into: an srun step on a
client node), waits until every worker has warmed up, writes the common
start instant a little in the future, then tails the records files (progress,
the engine watchdog) until every worker ended. Ctrl-C (a ``KeyboardInterrupt``
here) and an abort reason (the engine died, a worker died) stop the workers
with SIGTERM: they mark their in-flight requests cancelled and flush, so every
finished record is kept. The result is one merged
:class:`~inferx_core.load.schedule.scheduler.ScheduleResult`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.client_load import WorkerLoad
from inferx_core.load.schedule.scheduler import ScheduleResult
from inferx_core.load.workers.clock import boot_id, unix_offset_ns
from inferx_core.load.workers.files import (
    GO_NAME,
    RecordsTail,
    WorkerPlan,
    done_path,
    read_json,
    read_records,
    ready_path,
    records_path,
    write_json_atomic,
    write_plan,
)
from inferx_core.load.workers.merge import merge
from inferx_core.load.workers.plan import LoadSplit

POLL_S = 0.05
ABORT_POLL_S = 0.25
STOP_GRACE_S = 15.0

#: (worker index, the worker's own command) -> the command to start (e.g. an srun step).
Wrap = Callable[[int, list[str]], list[str]]
#: Asked while the load runs: a reason to stop it (the engine died), else None.
AbortCheck = Callable[[], "str | None"]
OnRecord = Callable[[RequestRecord], None]


@dataclass
class WorkersOutcome:
    result: ScheduleResult
    workers: tuple[WorkerLoad, ...]
    abort_reason: str | None
    interrupted: bool


def worker_command(plan_file: Path, python: str | None = None) -> list[str]:
    """The worker's command line (the entry point an srun step runs too)."""
    return [python or sys.executable, "-m", "inferx_core.load.workers", str(plan_file)]


def _src_root() -> str:
    return str(Path(__file__).resolve().parents[3])


class WorkerGroup:
    """Several worker processes running one split load (see the module doc)."""

    def __init__(
        self,
        split: LoadSplit,
        base_url: str,
        headers: dict[str, str],
        run_dir: Path,
        *,
        wrap: Wrap | None = None,
        clock_address: tuple[str, int] | None = None,
        start_lead_s: float = 0.25,
        server_timing: Any = None,
    ) -> None:
        self.split = split
        self.server_timing = server_timing  # the engine's own clock, for each worker's pool
        self.base_url = base_url
        self.headers = headers
        self.run_dir = run_dir
        self.wrap = wrap
        self.clock_address = clock_address
        self.start_lead_s = start_lead_s
        self.procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []
        n = len(split.shares)
        self._tails = [RecordsTail(records_path(run_dir, w)) for w in range(n)]
        self.finished = 0  # records read so far (every worker's)

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        offset = unix_offset_ns()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_src_root(), env.get("PYTHONPATH")) if p)
        for share in self.split.shares:
            plan = WorkerPlan(
                share,
                self.base_url,
                self.headers,
                str(self.run_dir),
                boot_id(),
                offset,
                self.clock_address,
                extra={} if self.wrap else {"parent_pid": os.getpid()},
                server_timing=self.server_timing,
            )
            argv = worker_command(write_plan(plan))
            if self.wrap is not None:
                argv = self.wrap(share.index, argv)
            log = (self.run_dir / f"worker-{share.index}.log").open("wb")
            self._logs.append(log)
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
            self.procs.append(proc)

    def _exit_note(self, w: int) -> str | None:
        code = self.procs[w].poll() if w < len(self.procs) else None
        if code is None or code == 0:
            return None
        done = read_json(done_path(self.run_dir, w)) or {}
        error = (done.get("error") or "").strip().splitlines()
        if error:
            return f"worker {w} failed: {error[-1]}"
        return f"worker {w} exited with code {code}{self._log_tail(w)}"

    def _log_tail(self, w: int) -> str:
        try:
            text = (self.run_dir / f"worker-{w}.log").read_text(errors="replace").strip()
        except OSError:
            return ""
        return f": {text.splitlines()[-1]}" if text else ""

    def _wait_ready(self, abort: AbortCheck | None) -> str | None:
        """None once every worker is ready, else why not (one died, an abort)."""
        last_abort = 0.0
        while not all(ready_path(self.run_dir, w).exists() for w in range(len(self.procs))):
            for w, proc in enumerate(self.procs):
                if proc.poll() is not None and not ready_path(self.run_dir, w).exists():
                    return self._exit_note(w) or f"worker {w} ended before it was ready"
            self.poll()  # warmup records, for the progress display
            if abort is not None and time.monotonic() - last_abort >= ABORT_POLL_S:
                last_abort = time.monotonic()
                if reason := abort():
                    return reason
            time.sleep(0.01)
        return None

    def _go(self) -> None:
        lead_ns = int(self.start_lead_s * 1e9)
        write_json_atomic(
            self.run_dir / GO_NAME,
            {
                "start_perf_ns": time.perf_counter_ns() + lead_ns,
                "start_unix_ns": time.time_ns() + lead_ns,
            },
        )

    def poll(self) -> list[RequestRecord]:
        """Records finished since the last poll (every worker's)."""
        new: list[RequestRecord] = []
        for tail in self._tails:
            new.extend(tail.read_new())
        self.finished += len(new)
        return new

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs)

    def stop(self) -> None:
        """SIGTERM every worker still running (they flush and write their summary)."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)

    def _wait_all(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.running()

    def close(self) -> None:
        """Stop whatever still runs (SIGKILL after the grace), close logs and tails."""
        self.stop()
        if not self._wait_all(STOP_GRACE_S):
            for proc in self.procs:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
            self._wait_all(5.0)
        for log in self._logs:
            log.close()
        self._logs.clear()

    # -- the run --------------------------------------------------------------

    def _watch(self, on_record: OnRecord | None, abort: AbortCheck | None) -> str | None:
        """Tail the records until every worker ended; a reason when stopped early."""
        last_abort = 0.0
        while self.running():
            time.sleep(POLL_S)
            new = self.poll()
            if on_record is not None:
                for record in new:
                    on_record(record)
            refused = any(r.error_kind == "connection" for r in new)
            if abort is not None and (refused or time.monotonic() - last_abort >= ABORT_POLL_S):
                last_abort = time.monotonic()
                if reason := abort():
                    return reason
            for w in range(len(self.procs)):
                if note := self._exit_note(w):
                    return f"{note}; the load stopped there"
        return None

    def run(self, on_record: OnRecord | None = None, abort: AbortCheck | None = None):
        """Start, warm up, go, watch, merge: a :class:`WorkersOutcome`."""
        reason: str | None = None
        interrupted = False
        try:
            self.start()
            reason = self._wait_ready(abort)
            if reason is None:
                self._go()
                reason = self._watch(on_record, abort)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            # a Ctrl-C as a finished load closes is still the run's end, not lost here
            interrupted = _close_or_kill(self) or interrupted
        result, loads = self.collect()
        if interrupted:
            result.cancelled = True
        return WorkersOutcome(result, loads, None if interrupted else reason, interrupted)

    def collect(self) -> tuple[ScheduleResult, tuple[WorkerLoad, ...]]:
        """The merged run, from the records files read afresh once every worker ended."""
        for tail in self._tails:
            tail.close()
        n = len(self.split.shares)
        records = [read_records(records_path(self.run_dir, w)) for w in range(n)]
        summaries = [read_json(done_path(self.run_dir, w)) for w in range(n)]
        notes = [self._exit_note(w) for w in range(n)]
        return merge(self.split, records, summaries, notes, unix_offset_ns=unix_offset_ns())


def _close_or_kill(group: WorkerGroup) -> bool:
    """Close the workers; a Ctrl-C meanwhile kills them instead of waiting (True).

    That Ctrl-C is a second one while the workers flush, or the first one landing just as
    a load that ended by itself closes: True tells the caller the run was interrupted
    (before, this swallowed it and ``inferx run`` went on to its next point).
    """
    try:
        group.close()
    except KeyboardInterrupt:
        for proc in group.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        group.close()
        return True
    return False
