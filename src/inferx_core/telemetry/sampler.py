"""The Sampler protocol: one source of telemetry readings (a GPU library, the host, ...).

A sampler only knows how to take one reading; the core's framework calls it
at ``interval_s``, stamps each reading with the load generator's monotonic
clock (``time.perf_counter_ns``), keeps going when a read fails and computes
energy once, centrally.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable


class SamplerUnavailable(RuntimeError):
    """Raised by ``Sampler.start`` when the source cannot be read here.

    The message is the reason a person reads in the result, e.g.
    "no supported GPU: NVML shared library not found".
    """


@runtime_checkable
class Sampler(Protocol):
    """A telemetry source.

    ``read`` returns metric name -> value; names are dotted and carry their
    unit, e.g. ``gpu.0.power_w``, ``gpu.0.energy_j``, ``host.cpu_percent``.
    A value of None means "read, but not available" (e.g. an unsupported
    counter); an exception means the read failed and the framework records a
    gap with the error.
    """

    name: str
    interval_s: float

    def start(self) -> None:
        """Acquire handles; raise SamplerUnavailable with the reason if impossible."""

    def read(self) -> Mapping[str, float | None]:
        """Take one reading now."""

    def stop(self) -> None:
        """Release handles; must not raise."""
