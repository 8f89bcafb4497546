"""Free port spans for tests that start several servers on a base port and its successors
(deployments: router, replicas, exporters).

A base port from ``bind(0)`` is in the kernel's ephemeral range, where this busy
machine's outgoing connections take ports too, and only the base was checked: a
deployment test failed one run in three with "Address already in use" on base + 1..3
while another test run was going. So the base is drawn below the ephemeral range, and
every port of the span is checked.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_base_port(span: int) -> int:
    """A base port whose ``span`` ports (base .. base + span - 1) are all free now."""
    low = int(_RANGE.read_text().split()[0]) if _RANGE.exists() else 32768
    top = max(low, 10000 + 2 * span) - span
    for _ in range(200):
        port = random.randrange(10000, top)
        if all(_bindable(p) for p in range(port, port + span)):
            return port
    raise RuntimeError(f"no {span} free ports in a row below {top + span}")
