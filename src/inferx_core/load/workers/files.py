"""The files parent and workers share in the run folder (a shared filesystem across hosts).

``plan-W.pkl``     the worker's plan (parent -> worker)
``ready-W.json``   warmup done, connected (worker -> parent)
``go.json``        the common start instant (parent -> workers)
``records-W.jsonl`` every finished record, one JSON line each, flushed as it ends
``done-W.json``    the worker's summary: window, clock mapping, its own load, or its error
"""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.workers.plan import WorkerShare

GO_NAME = "go.json"


@dataclass
class WorkerPlan:
    """Everything one worker needs (pickled: it runs ``python -m inferx_core.load.workers``)."""

    share: WorkerShare
    base_url: str
    headers: dict[str, str]
    run_dir: str
    parent_boot: str  # same boot id: the parent's CLOCK_MONOTONIC
    parent_unix_offset: int  # the parent's time_ns() - perf_counter_ns()
    clock_address: tuple[str, int] | None = None  # the parent's ClockServer
    meter_interval_s: float = 0.01
    extra: dict[str, Any] = field(default_factory=dict)
    # Where the engine's replies carry its own clock (a ServerTiming; None: nowhere).
    server_timing: Any = None


def plan_path(run_dir: Path, w: int) -> Path:
    return run_dir / f"plan-{w}.pkl"


def ready_path(run_dir: Path, w: int) -> Path:
    return run_dir / f"ready-{w}.json"


def records_path(run_dir: Path, w: int) -> Path:
    return run_dir / f"records-{w}.jsonl"


def done_path(run_dir: Path, w: int) -> Path:
    return run_dir / f"done-{w}.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """Written whole or not at all: a reader polling for the file never sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_plan(plan: WorkerPlan) -> Path:
    path = plan_path(Path(plan.run_dir), plan.share.index)
    with path.open("wb") as f:
        pickle.dump(plan, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def read_plan(path: Path) -> WorkerPlan:
    with path.open("rb") as f:
        plan = pickle.load(f)  # our own file, written by the parent of this run
    if not isinstance(plan, WorkerPlan):
        raise TypeError(f"{path} holds no worker plan")
    return plan


def record_line(record: RequestRecord) -> str:
    return json.dumps(record.to_json(), separators=(",", ":")) + "\n"


def record_from_row(row: dict[str, Any]) -> RequestRecord:
    return RequestRecord(**row)


def read_records(path: Path) -> list[RequestRecord]:
    """Every complete record line of a worker's file, read afresh (a file another host
    wrote is only sure to be whole once it closed it and it is opened again)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    return [record_from_row(json.loads(line)) for line in data.split(b"\n")[:-1] if line.strip()]


class RecordsTail:
    """Reads a records file as it grows: complete lines only, from where it stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None
        self._rest = b""

    def read_new(self) -> list[RequestRecord]:
        if self._file is None:
            try:
                self._file = self.path.open("rb")
            except OSError:
                return []
        data = self._rest + self._file.read()
        lines = data.split(b"\n")
        self._rest = lines.pop()  # an unfinished last line waits for its end
        return [record_from_row(json.loads(line)) for line in lines if line.strip()]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
