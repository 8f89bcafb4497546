"""Ports and GPUs given out per host, so processes sharing a machine never share either.

Every port a deployment's process listens on is booked here on its host: the
HTTP ``--port``, the rendezvous port of a replica (``deployment.dist_port``:
vLLM's ``--master-port``/``--data-parallel-rpc-port``, SGLang's
``--dist-init-addr``), the router's metrics port, and every port an engine
plugin names through ``EngineInfo.role_ports`` (vLLM's NIXL side channel,
SGLang's disaggregation bootstrap port). A port taken on that host moves the
booking to the next free one up; no free port below 65536 is an error that
says which process and which port, never a pydantic dump later.

Booking is linear in the ports booked: each (host, wanted port) keeps where
its last search ended, so a thousand processes asking for 8000 on one machine
do not rescan 8000..8999 each (a plan of huge counts took minutes).
"""

from __future__ import annotations

from inferx_core.config.models import ServerConfig
from inferx_core.errors import UserFacingError

__all__ = ["MAX_PORT", "HostBook"]

MAX_PORT = 65535


class HostBook:
    """Ports and GPUs already given on each host (see the module doc)."""

    def __init__(self, base: ServerConfig) -> None:
        self.base = base
        self.ports: set[tuple[str, int]] = set()
        self._resume: dict[tuple[str, int], int] = {}
        self.next_gpu: dict[str, int] = {}

    def port(self, host: str, wanted: int, what: str = "a process", span: int = 1) -> int:
        """The first of ``span`` consecutive free ports at or above ``wanted`` on ``host``."""
        port = max(wanted, self._resume.get((host, wanted), wanted))
        while not self._free(host, port, span):
            port += 1
            if port + span - 1 > MAX_PORT:
                break
        if port + span - 1 > MAX_PORT:
            raise UserFacingError(
                f"{what} on {host}: no free port from {wanted} up to {MAX_PORT} (ports "
                f"{wanted}.. are taken by the deployment's other processes on that host, or "
                "the port asked is too high); give a lower port (deployment.port, the role's "
                "port, deployment.dist_port or the plugin's port option) or spread the "
                "processes over more nodes"
            )
        self._resume[(host, wanted)] = port + span
        self.ports.update((host, p) for p in range(port, port + span))
        return port

    def _free(self, host: str, port: int, span: int) -> bool:
        return all((host, p) not in self.ports for p in range(port, port + span))

    def gpus(self, host: str, count: int) -> tuple[int, ...]:
        first = self.next_gpu.get(host, 0)
        self.next_gpu[host] = first + count
        indices = range(first, first + count)
        pool = self.base.gpu_ids
        if pool is None:
            return tuple(indices)
        if first + count > len(pool):
            raise UserFacingError(
                f"gpu_ids {pool}: {first + count} GPUs are needed on {host}; list more gpu_ids"
            )
        return tuple(pool[i] for i in indices)
