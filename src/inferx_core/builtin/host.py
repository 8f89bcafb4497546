"""Built-in host detector (CPU model, cores, memory, OS; psutil) and host telemetry
(:class:`~inferx_core.telemetry.host.HostSampler`). Both are ``trylast`` fallbacks."""

from __future__ import annotations

import platform as pyplatform
import socket
from pathlib import Path

from inferx_core import hookimpl
from inferx_core.sdk.platform import HostInfo, Platform
from inferx_core.sdk.sampler import Sampler
from inferx_core.telemetry.host import HostSampler


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return pyplatform.processor() or None


def host_info() -> HostInfo:
    import psutil

    return HostInfo(
        hostname=socket.gethostname(),
        os=pyplatform.system(),
        kernel=pyplatform.release(),
        machine=pyplatform.machine(),
        cpu_model=_cpu_model(),
        cpu_logical_cores=psutil.cpu_count(logical=True),
        cpu_physical_cores=psutil.cpu_count(logical=False),
        memory_total_mib=psutil.virtual_memory().total // (1024 * 1024),
        python=pyplatform.python_version(),
    )


@hookimpl(trylast=True)
def inferx_platform() -> Platform:
    return Platform(host=host_info())


@hookimpl(trylast=True)
def inferx_telemetry_samplers(engine_pid: int | None) -> list[Sampler]:
    """Host load, the engine's process tree (when launched by InferX) and RAPL energy."""
    return [HostSampler(engine_pid=engine_pid)]
