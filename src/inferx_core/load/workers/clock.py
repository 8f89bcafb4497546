"""One clock for every worker: the parent's ``perf_counter_ns()``.

A worker on the parent's host reads the same CLOCK_MONOTONIC (one per boot,
shared by every process and container of the host: the boot id tells), so
its stamps need no mapping. A worker on another host measures its offset to
the parent by a Cristian exchange over TCP (:class:`ClockServer`, the round
trip with the smallest delay wins; the uncertainty is half of it); where the
parent cannot be reached it falls back to the wall clocks of both hosts
(NTP-close, uncertainty unknown). The mapping goes into the result.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ClockMethod = Literal["same_host", "exchange", "wall_clock"]

EXCHANGE_ROUNDS = 32
_STAMP = struct.Struct("!q")


def boot_id() -> str:
    """This host's boot id (one CLOCK_MONOTONIC per boot), else its name."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return f"host:{socket.gethostname()}"


def unix_offset_ns() -> int:
    """``time_ns() - perf_counter_ns()``: maps this host's load clock onto the wall clock."""
    return time.time_ns() - time.perf_counter_ns()


@dataclass(frozen=True)
class ClockMap:
    """parent clock = worker clock + ``offset_ns`` (give or take ``uncertainty_ns``)."""

    method: ClockMethod
    offset_ns: int = 0
    uncertainty_ns: int | None = 0  # None: unknown (wall clock)

    def to_parent(self, worker_ns: int) -> int:
        return worker_ns + self.offset_ns if worker_ns else 0


class ClockServer:
    """The parent's side of the exchange: answers each byte with its ``perf_counter_ns``."""

    def __init__(self, host: str = "0.0.0.0") -> None:
        self._sock = socket.create_server((host, 0), backlog=64)
        self.port: int = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="inferx-clock", daemon=True)
        self._closed = False

    def __enter__(self) -> ClockServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.close()

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _answer(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while conn.recv(1):
                conn.sendall(_STAMP.pack(time.perf_counter_ns()))


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = conn.recv(n - len(data))
        if not part:
            raise OSError("clock server closed the connection")
        data += part
    return data


def exchange(host: str, port: int, rounds: int = EXCHANGE_ROUNDS) -> ClockMap:
    """Cristian's exchange with the parent's :class:`ClockServer`: the tightest round wins."""
    best: tuple[int, int] | None = None  # (round trip, offset)
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            conn.sendall(b"t")
            (parent_ns,) = _STAMP.unpack(_recv_exact(conn, _STAMP.size))
            t1 = time.perf_counter_ns()
            rtt = t1 - t0
            if best is None or rtt < best[0]:
                best = (rtt, parent_ns - (t0 + t1) // 2)
    assert best is not None
    return ClockMap("exchange", best[1], best[0] // 2)


def clock_map(
    parent_boot: str, parent_unix_offset: int, address: tuple[str, int] | None
) -> tuple[ClockMap, str | None]:
    """How this worker's stamps map onto the parent's clock, and why not better when not."""
    if boot_id() == parent_boot:
        return ClockMap("same_host"), None
    why = "no clock server address in the plan"
    if address is not None:
        try:
            return exchange(*address), None
        except OSError as exc:
            why = f"clock exchange with {address[0]}:{address[1]} failed: {exc}"
    return ClockMap("wall_clock", unix_offset_ns() - parent_unix_offset, None), why
