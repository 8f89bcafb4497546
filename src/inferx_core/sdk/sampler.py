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
    unit. Accelerators use one vendor-neutral scheme so energy is computed the
    same way for every vendor: ``gpu.<index>.power_w`` (instantaneous board
    power), ``gpu.<index>.energy_j`` (a cumulative energy counter, joules),
    ``gpu.<index>.util_percent``, ``gpu.<index>.mem_util_percent``,
    ``gpu.<index>.mem_used_mib``, ``gpu.<index>.temp_c`` (and ``temp_<where>_c``
    for extra sensors), ``gpu.<index>.sm_clock_mhz``,
    ``gpu.<index>.throttle_reasons`` (vendor bitmask). The host uses
    ``host.cpu_percent``, ``host.mem_used_mib``, ``host.engine_cpu_percent``,
    ``host.engine_rss_mib``, and ``cpu.package<n>.energy_j`` (RAPL, CPU energy,
    never GPU energy). Engine /metrics become ``engine.kv_cache_usage`` (0..1),
    ``engine.requests_running``, ``engine.requests_waiting``,
    ``engine.preemptions_total``.
    A value of None means "read, but not available" (e.g. an unsupported
    counter); an exception means the read failed and the framework records a
    gap with the error.
    """

    @property
    def name(self) -> str:
        """The sampler's name (a class attribute in most samplers: read-only here)."""

    interval_s: float

    def start(self) -> None:
        """Acquire handles; raise SamplerUnavailable with the reason if impossible."""

    def read(self) -> Mapping[str, float | None]:
        """Take one reading now."""

    def stop(self) -> None:
        """Release handles; must not raise."""
