"""Which CPUs the engine and the load generator run on (``engine_cpus`` / ``client_cpus``).

On a small host an engine that takes every core starves the client: its
timestamps go late and it reads replies in bursts (docs/metrics.md,
validity). So, unless told otherwise, when InferX launches the engine on a
host of 2 to ``SMALL_HOST_CPUS`` CPUs it keeps the last CPU for the client
and gives the engine the rest. Given one side, the other gets the remaining
CPUs; given both, both are used as given; ``cpu_isolation: false`` turns the
default off.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from inferx_core.errors import UserFacingError

SMALL_HOST_CPUS = 16


def client_cores() -> tuple[int, ...]:
    """The CPUs this process may run on (its affinity)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return tuple(range(os.cpu_count() or 1))


@dataclass(frozen=True)
class CpuSplit:
    engine: tuple[int, ...]  # empty: any CPU
    client: tuple[int, ...]
    why: str


def split_cpus(
    available: Sequence[int],
    *,
    engine_cpus: Sequence[int] | None = None,
    client_cpus: Sequence[int] | None = None,
    isolation: bool = True,
) -> CpuSplit:
    """The engine's and the client's CPUs out of ``available`` (see the module doc)."""
    cpus = sorted(set(available))
    for field, given in (("engine_cpus", engine_cpus), ("client_cpus", client_cpus)):
        unknown = sorted(set(given or ()) - set(cpus))
        if unknown:
            raise UserFacingError(
                f"{field}: CPU(s) {unknown} are not on this host (it has {cpus[0]}-{cpus[-1]})"
            )
    if engine_cpus and client_cpus:
        return CpuSplit(tuple(engine_cpus), tuple(client_cpus), "as configured")
    if engine_cpus or client_cpus:
        taken = set(engine_cpus or client_cpus or ())
        rest = tuple(c for c in cpus if c not in taken) or tuple(cpus)
        if engine_cpus:
            return CpuSplit(tuple(engine_cpus), rest, "client: the CPUs the engine does not use")
        return CpuSplit(rest, tuple(client_cpus or ()), "engine: the CPUs the client does not use")
    if isolation and 2 <= len(cpus) <= SMALL_HOST_CPUS:
        return CpuSplit(
            tuple(cpus[:-1]),
            (cpus[-1],),
            f"small host ({len(cpus)} CPUs): the last one kept for the client",
        )
    return CpuSplit((), (), "not pinned")
