"""A real one-node SLURM cluster on this machine, for the executor tests.

``slurm_cluster`` (session scope) installs Debian's ``slurm-wlm`` and
``munge`` when they are missing (as root, ``apt-get -y``, no stdin), writes a
private configuration into a temporary folder (its own munge key and socket,
its own ports, state and spool folders: a SLURM already on the machine is
left alone), starts ``munged``, ``slurmctld`` and ``slurmd`` in the
foreground as children of this process, waits until ``sinfo`` shows the node
idle, and at the end cancels the jobs of that private cluster and stops every
daemon it started (by process id).

Where SLURM cannot be installed the tests skip with the reason; with
``INFERX_REQUIRE_SLURM=1`` (``make test``) they fail instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REQUIRE_ENV = "INFERX_REQUIRE_SLURM"
PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "srun")
SEARCH_PATH = os.pathsep.join(
    [os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin", "/usr/local/sbin"]
)
START_TIMEOUT_S = 60


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slurm: needs the private SLURM cluster (tests/slurm)")


def _which(name: str) -> str | None:
    return shutil.which(name, path=SEARCH_PATH)


def _missing() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if _which(name) is None]


def _install() -> str | None:
    """Install the packages; None when done, else why not."""
    if os.geteuid() != 0:
        return f"SLURM is not installed ({', '.join(_missing())}) and installing needs root"
    if shutil.which("apt-get") is None:
        return "SLURM is not installed and this machine has no apt-get to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "-y", "-q", "install", *PACKAGES]
    log: list[str] = []
    for argv in (install, ["apt-get", "-q", "update"], install):
        try:
            proc = subprocess.run(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"`{' '.join(argv)}` failed: {exc}"
        log.append(proc.stdout[-500:] + proc.stderr[-1500:])
        if argv is install and proc.returncode == 0 and not _missing():
            return None
    return f"`apt-get install {' '.join(PACKAGES)}` failed:\n" + log[-1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _node_line() -> tuple[str, int]:
    """This machine's SLURM node name and CPU count, as slurmd sees them."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            [_which("slurmd") or "slurmd", "-C"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
        fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
        if fields.get("NodeName"):
            return fields["NodeName"], int(fields.get("CPUs", os.cpu_count() or 1))
    return socket.gethostname().split(".")[0], os.cpu_count() or 1


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    node: str
    cpus: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment for SLURM clients: this cluster's config, sbin on PATH."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "INFERX_"))}
        env["SLURM_CONF"] = str(self.conf)
        env["PATH"] = SEARCH_PATH
        return env

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def state(self, job_id: str) -> str:
        """SLURM's state word for a job (``RUNNING``, ``CANCELLED``...), '' if unknown."""
        out = self.run("squeue", "-h", "--states=all", "-j", job_id, "-o", "%i|%T").stdout
        for line in out.splitlines():
            jid, _, state = line.partition("|")
            if jid == job_id:
                return state
        return ""

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            with contextlib.suppress(OSError):
                parts.append(f"--- {path.name}\n" + path.read_text(errors="replace")[-3000:])
        return "\n".join(parts)


def _write_config(root: Path, node: str, cpus: int) -> Path:
    for sub in ("state", "spool", "log"):
        (root / sub).mkdir()
    conf = root / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=inferxtest",
                f"SlurmctldHost={node}(127.0.0.1)",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"SlurmctldPort={_free_port()}",
                f"SlurmdPort={_free_port()}",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={root / 'run' / 'munge.sock'}",
                f"StateSaveLocation={root / 'state'}",
                f"SlurmdSpoolDir={root / 'spool'}",
                f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
                f"SlurmdPidFile={root / 'run' / 'slurmd.pid'}",
                f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
                f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
                # No cgroups here: 22.05 has no "disabled" cgroup plugin, so no
                # cgroup.conf, linuxproc process tracking and no task plugin.
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "JobAcctGatherType=jobacct_gather/none",
                "AccountingStorageType=accounting_storage/none",
                "JobCompType=jobcomp/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_CPU",
                "SchedulerType=sched/backfill",
                "SchedulerParameters=sched_interval=1",
                "MpiDefault=none",
                "ReturnToService=2",
                "MinJobAge=600",
                "KillWait=5",
                "InactiveLimit=0",
                f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
                f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    return conf


def _start(cluster: SlurmCluster, name: str, argv: list[str]) -> None:
    log = (cluster.root / "log" / f"{name}.out").open("ab")
    cluster.procs[name] = subprocess.Popen(
        argv,
        env=cluster.env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()


def _wait(cluster: SlurmCluster, what: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        dead = {n: p.returncode for n, p in cluster.procs.items() if p.poll() is not None}
        if dead:
            raise RuntimeError(f"{dead} exited while waiting for {what}\n{cluster.logs()}")
        if ready():
            return
        time.sleep(0.3)
    raise RuntimeError(f"timed out after {START_TIMEOUT_S} s waiting for {what}\n{cluster.logs()}")


def start_cluster() -> SlurmCluster:
    root = Path(tempfile.mkdtemp(prefix="inferx-slurm-", dir="/tmp"))
    root.chmod(0o755)  # munged wants the socket's folders searchable by all
    node, cpus = _node_line()
    (root / "munge").mkdir(mode=0o700)
    (root / "run").mkdir(mode=0o755)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    cluster = SlurmCluster(root, _write_config(root, node, cpus), node, cpus)
    try:
        socket_path = root / "run" / "munge.sock"
        _start(
            cluster,
            "munged",
            [
                _which("munged") or "munged",
                "--foreground",
                f"--key-file={key}",
                f"--socket={socket_path}",
                f"--pid-file={root / 'run' / 'munged.pid'}",
                f"--log-file={root / 'log' / 'munged.log'}",
                f"--seed-file={root / 'munge' / 'seed'}",
            ],
        )
        _wait(cluster, "munged's socket", socket_path.exists)
        conf = str(cluster.conf)
        _start(cluster, "slurmctld", [_which("slurmctld") or "slurmctld", "-D", "-i", "-f", conf])
        _start(cluster, "slurmd", [_which("slurmd") or "slurmd", "-D", "-f", conf])

        def idle() -> bool:
            out = cluster.run("sinfo", "-h", "-o", "%T", timeout=10).stdout.split()
            return out == ["idle"]

        _wait(cluster, "`sinfo` to show the node idle", idle)
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: SlurmCluster) -> None:
    """Cancel the private cluster's jobs, then stop the daemons this fixture started."""
    if cluster.procs.get("slurmctld") and cluster.procs["slurmctld"].poll() is None:
        with contextlib.suppress(Exception):
            ids = cluster.run("squeue", "-h", "-o", "%A", timeout=10).stdout.split()
            if ids:
                cluster.run("scancel", *ids, timeout=10)
                deadline = time.monotonic() + 15
                while (
                    time.monotonic() < deadline
                    and cluster.run(
                        "squeue", "-h", "-t", "RUNNING,COMPLETING", "-o", "%A", timeout=10
                    ).stdout.split()
                ):
                    time.sleep(0.5)
    for name in ("slurmd", "slurmctld", "munged"):
        proc = cluster.procs.get(name)
        if proc is None or proc.poll() is not None:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    # The state folder holds the jobs' environments (their secrets): remove it all.
    shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    started = time.monotonic()
    reason = _install() if _missing() else None
    if reason:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_ENV}=1: SLURM tests must run)")
        pytest.skip(reason)
    cluster = start_cluster()
    print(f"\nslurm cluster up in {time.monotonic() - started:.1f} s at {cluster.root}")
    try:
        yield cluster
    finally:
        stop_cluster(cluster)
