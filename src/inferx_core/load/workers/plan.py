"""One schedule split across worker processes, computed once by the parent.

* Closed loop: the concurrency slots are split as evenly as they go (10 over
  4 workers: 3, 3, 2, 2) and the requests go round-robin, so each worker
  runs its slots over its share; a duration-bound run cycles the prompt pool,
  worker ``w`` sending request ids ``w, w + N, w + 2N...``.
* Open loop: every request's arrival time (``at_s``, seconds after the common
  start) comes from the seeded arrival process exactly as one process would
  draw it (Poisson, gamma, ramps); request ``i`` goes to worker ``i % N``. A
  duration-bound run gets the arrivals that fall inside the duration. An
  open-loop concurrency cap is split like closed-loop slots (each worker caps
  its own share: a cap across processes would need them to talk per request).
* A multi-turn session is one unit, dealt whole (a turn follows the reply
  before it); an endless run cycles sessions as one process does, worker
  ``w`` taking every N-th.

No worker gets fewer than one slot: N is at most the number of slots.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from inferx_core.config.cpus import client_cores
from inferx_core.load.prompts.sessions import Session, cycle_sessions
from inferx_core.load.schedule.scheduler import LoadConfig, PreparedRequest, arrival_intervals
from inferx_core.load.schedule.units import Unit

#: Most workers chosen by default; more is allowed when asked for.
AUTO_MAX_WORKERS = 8

#: Open loop, endless (duration-bound) runs: at most this many arrivals are planned.
MAX_PLANNED_ARRIVALS = 5_000_000


@dataclass
class WorkerShare:
    """One worker's part of the load (picklable: it travels in the plan file)."""

    index: int
    workers: int
    config: LoadConfig
    warmup: list[Unit] = field(default_factory=list)
    measured: list[Unit] = field(default_factory=list)
    # Duration-bound closed loop: the whole prompt pool; the worker cycles it
    # (ids index, index + workers, ...) instead of a fixed list.
    cycle_pool: list[Unit] | None = None

    def requests(self) -> Iterator[Unit]:
        """What this worker sends, in order (endless for a cycled pool)."""
        if self.cycle_pool is None:
            return iter(self.measured)
        return _cycled(self.cycle_pool, self.index, self.workers)

    @property
    def target_rate(self) -> float | None:
        """Requests/s this worker's schedule asks for (open loop), else None.

        From its own arrival times where it has them (a worker keeping up sends
        at exactly that rate), else its share of the point's rate.
        """
        rate = self.config.request_rate
        if not math.isfinite(rate):
            return None
        times = [r.at_s for r in self.measured if r.at_s is not None]
        if len(times) >= 2 and times[-1] > times[0]:
            return (len(times) - 1) / (times[-1] - times[0])
        return rate / self.workers


def auto_workers(cores: Sequence[int] | None = None) -> int:
    """The default: one worker per two cores the client may use, 1 to AUTO_MAX_WORKERS.

    Half the cores, because each worker's loop should keep a core to itself
    and the kernel's network work and the parent need some too; a 2-core box
    gets 1 (today's in-process load).
    """
    n = len(cores if cores is not None else client_cores())
    return max(1, min(n // 2, AUTO_MAX_WORKERS))


def is_closed_loop(config: LoadConfig) -> bool:
    return math.isinf(config.request_rate) and config.max_concurrency is not None


def effective_workers(asked: int, config: LoadConfig, n_requests: int | None) -> int:
    """Workers a point really uses: no more than its slots (or requests, uncapped).

    A point of load stages runs in one process (its stages are not split yet).
    """
    if getattr(config, "stages", ()):
        return 1
    slots = config.max_concurrency or n_requests or asked
    return max(1, min(asked, slots))


def _shares(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _owner(i: int, unit: Unit, workers: int) -> int:
    """A session unit is dealt whole; a request that belongs to a session (its record
    says so) goes with the session's other requests."""
    session = getattr(getattr(unit, "record", None), "session_id", None)
    return (session if session is not None else i) % workers


def _deal(requests: Iterable[Unit], workers: int) -> list[list[Unit]]:
    out: list[list[Unit]] = [[] for _ in range(workers)]
    for i, req in enumerate(requests):
        out[_owner(i, req, workers)].append(req)
    return out


def endless_pool(units: Iterator[Unit], n_requests: int) -> list[Unit]:
    """The first cycle of an endless run: the units whose requests add up to ``n_requests``
    (a request is one, a session its turns)."""
    pool: list[Unit] = []
    total = 0
    while total < n_requests and (unit := next(units, None)) is not None:
        pool.append(unit)
        total += unit.n_requests if isinstance(unit, Session) else 1
    return pool


def _cycled(pool: list[Unit], index: int, workers: int) -> Iterator[Unit]:
    """Worker ``index``'s units of the endless cycle over ``pool`` (every ``workers``-th)."""
    # a pool holds one kind of unit (its first tells which): the checker sees the union
    if pool and isinstance(pool[0], Session):
        # the same sessions and ids cycle_sessions gives one process; this worker's share
        return itertools.islice(cycle_sessions(pool), index, None, workers)  # type: ignore[arg-type]  # all sessions
    return _cycled_requests(pool, index, workers)  # type: ignore[arg-type]  # all requests


def _cycled_requests(
    pool: list[PreparedRequest], index: int, workers: int
) -> Iterator[PreparedRequest]:
    first_id = pool[0].record.request_id if pool else 0
    for k in itertools.count(index, workers):
        template = pool[k % len(pool)]
        record = dataclasses.replace(template.record, request_id=first_id + k, chunk_ns=[])
        yield PreparedRequest(template.path, template.payload, record, template.at_s)


def with_arrival_times(requests: Iterable[Unit], config: LoadConfig) -> tuple[list[Unit], bool]:
    """The requests with ``at_s`` set from the arrival process (kept where already set).

    The first arrival is at 0, each next one a gap later, exactly as
    :class:`~inferx_core.load.schedule.scheduler.LoadScheduler` draws them; with a
    duration only the arrivals before it are kept (a later one is never sent);
    the flag says that some were left out so.
    """
    gaps = arrival_intervals(
        config.request_rate,
        config.arrival,
        config.seed,
        burstiness=config.burstiness,
        ramp=config.ramp,
    )
    out: list[Unit] = []
    t = 0.0
    for req in requests:
        if out:
            t += next(gaps)
        at = req.at_s if req.at_s is not None else t
        if config.duration_s is not None and at >= config.duration_s:
            return out, True
        out.append(dataclasses.replace(req, at_s=at))
        if len(out) >= MAX_PLANNED_ARRIVALS:
            return out, True
    return out, False


@dataclass
class LoadSplit:
    shares: list[WorkerShare]
    # Open loop: arrivals after the duration were left out of the plan (the
    # one-process scheduler would have stopped there: ``stopped_by_duration``).
    cut_by_duration: bool = False


def split_load(
    config: LoadConfig,
    measured: Iterable[Unit],
    warmup: Sequence[Unit],
    workers: int,
    *,
    endless_pool: list[Unit] | None = None,
) -> LoadSplit:
    """The workers' shares of one point (see the module doc).

    ``endless_pool``: a duration-bound run's prompt pool (``measured`` is then
    the endless iterator over it and is only read in an open loop).
    """
    slots = _shares(config.max_concurrency, workers) if config.max_concurrency else None
    configs = [
        dataclasses.replace(config, max_concurrency=slots[w] if slots else None)
        for w in range(workers)
    ]
    warm = _deal(warmup, workers)
    closed = is_closed_loop(config)
    if closed and endless_pool is not None:
        return LoadSplit(
            [
                WorkerShare(w, workers, configs[w], warm[w], cycle_pool=endless_pool)
                for w in range(workers)
            ]
        )
    planned, cut = (list(measured), False) if closed else with_arrival_times(measured, config)
    dealt = _deal(planned, workers)
    shares = [WorkerShare(w, workers, configs[w], warm[w], dealt[w]) for w in range(workers)]
    return LoadSplit(shares, cut)
