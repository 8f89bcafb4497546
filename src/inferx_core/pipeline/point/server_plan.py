"""What every load point against one server shares: the :class:`ServerPlan`.

A server (``inferx bench`` against a running server, one launched
engine of ``inferx run``, a capacity search's probes) runs many points. The
server, the workload and load settings, the token counter, the telemetry,
the GPU count, the SLOs, the engine watchdog and the speculative decoding the
server was asked for are fixed for all of them;
only the point (its load level, id, output folder and provenance) changes.
The plan is built once per server and handed to every point, instead of a
long list of arguments repeated at each call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.config.slo import SloTarget
from inferx_core.config.speculative import SpeculativeConfig
from inferx_core.config.validity import ValidityLimits
from inferx_core.load.tokens.counter import CounterResolution
from inferx_core.pipeline.point.requests import BenchTarget
from inferx_core.telemetry.session import TelemetryPlan

__all__ = ["AbortCheck", "FailureDetails", "ServerPlan"]

#: Called while a point runs; returns a reason to abort (e.g. "engine exited"), else None.
AbortCheck = Callable[[], "str | None"]

#: Called when a point failed: (its reason) -> (the real reason, provenance fields to add).
FailureDetails = Callable[[str], "tuple[str, dict[str, Any]]"]


@dataclass(frozen=True)
class ServerPlan:
    """The fixed part of every point against one server.

    ``num_gpus_reason``: why ``num_gpus`` is unknown (the per-GPU figures' null
    reason); ``gpu_split``: a deployment's ``num_prefill_gpus``/``num_decode_gpus``
    (or ``num_gpus``), replacing ``num_gpus`` when given. ``abort_check``: the
    engine watchdog; ``failure_details``: asked when a point failed, names the real
    cause (e.g. the engine died). ``progress``: None shows a live bar on a terminal.
    ``speculative``: the server's speculative decoding (``server.speculative``, or a
    bench config's ``speculative:``); each point then checks the engine's measured
    acceptance against it (``metrics.speculative.acceptance_check``).
    """

    target: BenchTarget
    workload: Workload
    load: LoadProfile
    counter: CounterResolution
    slo: SloTarget | None = None
    percentiles: Sequence[float] | None = None
    num_gpus: int | None = None
    num_gpus_reason: str | None = None
    gpu_split: Mapping[str, int] | None = None
    telemetry: TelemetryPlan | None = None
    validity_limits: ValidityLimits | None = None
    abort_check: AbortCheck | None = None
    failure_details: FailureDetails | None = None
    progress: bool | None = None
    speculative: SpeculativeConfig | None = None
