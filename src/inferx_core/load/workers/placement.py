"""Where the workers run: local processes, or srun steps on a SLURM job's client nodes.

The SLURM executor's ``client_nodes: K`` asks for 1 + K nodes and sets
``INFERX_CLIENT_NODES`` and ``INFERX_LOAD_DIR`` (a folder in the job's shared
directory) in the batch script. Inside that job the runner's load then starts
each worker as an srun step (``--overlap``: it shares the node with the engine
step where it lands on the engine's node), worker ``w`` on client node
``1 + w % K`` (node 0 serves). An allocation with fewer nodes (``sbatch_args:
[--nodes=1]``, a one-node test cluster) puts the steps on the nodes it has.
Where steps land on other nodes, the server's loopback URL is rewritten to
this node's host name and the workers map their clocks by a Cristian exchange
with this process.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

CLIENT_NODES_ENV = "INFERX_CLIENT_NODES"
LOAD_DIR_ENV = "INFERX_LOAD_DIR"
_LOOPBACK = {"127.0.0.1", "localhost", "0.0.0.0", "::1", "::"}


@dataclass(frozen=True)
class SrunPlacement:
    """Workers as srun steps of the running job."""

    client_nodes: int
    num_nodes: int  # nodes of the allocation
    load_dir: Path | None
    srun: str = "srun"

    @property
    def remote(self) -> bool:
        """Some worker runs on another node than this one (node 0)."""
        return self.num_nodes > 1

    def node_of(self, worker: int) -> int:
        """The relative node of worker ``worker`` in the allocation."""
        if self.num_nodes > self.client_nodes:
            return 1 + worker % self.client_nodes
        return worker % self.num_nodes

    def wrap(self, worker: int, argv: list[str]) -> list[str]:
        return [
            self.srun,
            "--nodes=1",
            "--ntasks=1",
            f"--relative={self.node_of(worker)}",
            "--overlap",
            "--kill-on-bad-exit=1",
            f"--job-name=inferx-load-{worker}",
            *argv,
        ]

    def reachable_url(self, base_url: str) -> str:
        """``base_url`` as the client nodes reach it (loopback: this node's name)."""
        parts = urlsplit(base_url)
        if not self.remote or parts.hostname not in _LOOPBACK:
            return base_url
        netloc = socket.gethostname() + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))


def slurm_placement(env: Mapping[str, str] | None = None) -> SrunPlacement | None:
    """The job's client-node placement, when the executor asked for one."""
    env = os.environ if env is None else env
    try:
        client_nodes = int(env.get(CLIENT_NODES_ENV) or 0)
    except ValueError:
        return None
    if client_nodes < 1 or not env.get("SLURM_JOB_ID"):
        return None
    num_nodes = int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or 1)
    load_dir = Path(env[LOAD_DIR_ENV]) if env.get(LOAD_DIR_ENV) else None
    return SrunPlacement(client_nodes, num_nodes, load_dir, shutil.which("srun") or "srun")
