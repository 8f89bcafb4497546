"""Load from several processes (and hosts): one schedule, split once, merged back.

The parent builds every request and the whole schedule once
(:mod:`~inferx_core.load.workers.plan`: closed-loop slots split across the
workers, open-loop arrival times computed from the seeded arrival process and
request ``i`` given to worker ``i % N``), pickles each worker's share to a
file and starts ``python -m inferx_core.load.workers PLAN`` per worker (the
same command an srun step runs on a client node). Each worker warms up,
signals ready, waits for the common start instant, runs its share with
:class:`~inferx_core.load.schedule.scheduler.LoadScheduler` and streams every finished
record to its own JSON-lines file (:mod:`~inferx_core.load.workers.worker`).
The parent (:mod:`~inferx_core.load.workers.group`) watches them, forwards
Ctrl-C, stops them when the engine dies, and merges the records into one
:class:`~inferx_core.load.schedule.scheduler.ScheduleResult` on its own clock
(:mod:`~inferx_core.load.workers.merge`, :mod:`~inferx_core.load.workers.clock`).
"""

from __future__ import annotations

from inferx_core.load.workers.group import WorkerGroup, WorkersOutcome
from inferx_core.load.workers.plan import auto_workers, effective_workers, split_load

__all__ = ["WorkerGroup", "WorkersOutcome", "auto_workers", "effective_workers", "split_load"]
