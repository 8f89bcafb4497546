"""Several scripted-server processes behind one port, so the server is not the bottleneck.

``ServerPool(processes=4, itl_ms=1)`` starts that many
``python -m inferx_core.testing.server_pool`` children, each the scripted
server of :mod:`inferx_core.testing.sse_server` listening on the same port
with ``SO_REUSEPORT`` (Linux spreads the connections over them). It takes
the same knobs as :class:`~inferx_core.testing.ServerProcess`; used by
``benchmarks/scale_out.py`` to measure how many chunks per second the load
generator sustains with 1, 2, ... worker processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from typing import Any

from inferx_core.testing.server import ServerProtocol, SSETestServer
from inferx_core.testing.sse_server import (
    ServerProcess,
    build_parser,
    knobs_from_args,
    serve_until_signal,
)

__all__ = ["ServerPool"]


class _SharedPortServer(SSETestServer):
    """The scripted server, listening with SO_REUSEPORT beside its siblings."""

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ServerProtocol(self), self.host, self.port, backlog=4096, reuse_port=True
        )
        self.port = self._server.sockets[0].getsockname()[1]


class _Child(ServerProcess):
    """One member of the pool: the same command line, this module's entry point."""

    def argv(self) -> list[str]:
        argv = super().argv()
        return [argv[0], "-m", "inferx_core.testing.server_pool", *argv[3:]]


class ServerPool:
    """``processes`` scripted servers on one port (a context manager, like ServerProcess)."""

    def __init__(self, processes: int = 2, host: str = "127.0.0.1", **knobs: Any) -> None:
        self.processes = processes
        self.host = host
        self.knobs = knobs
        self.members: list[_Child] = []
        self.base_url = ""

    def __enter__(self) -> ServerPool:
        # Hold the port with a bound (not listening) socket until every member listens.
        with socket.socket() as holder:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            holder.bind((self.host, 0))
            port = holder.getsockname()[1]
            try:
                for _ in range(self.processes):
                    member = _Child(self.host, port, **self.knobs)
                    member.__enter__()
                    self.members.append(member)
            except BaseException:
                self.__exit__()
                raise
        self.base_url = f"http://{self.host}:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        for member in self.members:
            with contextlib.suppress(Exception):
                member.__exit__()
        self.members.clear()


def main(argv: list[str] | None = None) -> None:
    """One member: the scripted server's command line, on a shared port."""
    a = build_parser().parse_args(argv)
    serve_until_signal(_SharedPortServer(a.host, a.port, knobs_from_args(a)))


if __name__ == "__main__":
    main(sys.argv[1:])
