"""Host telemetry: CPU and memory load, the engine's process tree, CPU package energy (RAPL).

Metric names follow :mod:`inferx_core.sdk.sampler`: ``host.cpu_percent``
(system-wide, 0..100), ``host.mem_used_mib``, ``host.engine_cpu_percent``
(sum over the engine process and all its descendants; 100 = one core busy,
so up to 100 x cores), ``host.engine_rss_mib`` (RSS summed over the tree;
memory shared between processes is counted once per process) and
``cpu.package<n>.energy_j`` (RAPL package domains, CPU energy only).

Nothing here fails a run: what cannot be read is left out or None, with a
line in ``notes`` (copied into the result by the recorder).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
DEFAULT_RAPL_ROOT = "/sys/class/powercap"
ENGINE_CPU = "host.engine_cpu_percent"
ENGINE_RSS = "host.engine_rss_mib"


def _read_int(path: Path) -> int:
    """Read one integer from a sysfs file (tests replace this to fake permission errors)."""
    with open(path, encoding="ascii") as fh:
        return int(fh.read().strip())


@dataclass
class _RaplDomain:
    """One RAPL package counter, unwrapped into a monotonic total."""

    key: str  # cpu.package<n>.energy_j
    energy_path: Path
    max_range_uj: int
    last_raw_uj: int
    total_uj: int  # starts at the first raw value, then only grows

    def update(self, raw_uj: int) -> float:
        """Fold a new raw reading in (handling one wrap since the last read); joules."""
        if raw_uj >= self.last_raw_uj:
            self.total_uj += raw_uj - self.last_raw_uj
        else:  # the counter wrapped at max_energy_range_uj
            self.total_uj += raw_uj + self.max_range_uj - self.last_raw_uj
        self.last_raw_uj = raw_uj
        return self.total_uj / 1e6


class HostSampler:
    """Samples host CPU/memory, the engine process tree and RAPL package energy.

    Attributes: ``engine_pid``, ``interval_s``, ``rapl_root`` (the powercap
    sysfs directory), ``notes`` (lines for the result) and ``rapl_keys`` (the
    ``cpu.package<n>.energy_j`` names found in ``start``).

    Per-process CPU percent needs two readings: each process is primed when
    first seen, so a child that appears between two reads counts from the
    following read on, and the CPU a child used in the interval it exited in
    is lost. The RAPL counter is read every ``interval_s`` and may wrap at
    most once between reads (minutes at several hundred watts).
    """

    name = "host"

    def __init__(
        self,
        engine_pid: int | None = None,
        *,
        interval_s: float = 1.0,
        rapl_root: str | os.PathLike[str] = DEFAULT_RAPL_ROOT,
    ) -> None:
        self.engine_pid = engine_pid
        self.interval_s = interval_s
        self.rapl_root = Path(rapl_root)
        self.notes: list[str] = []
        self.rapl_keys: list[str] = []
        self._psutil: Any = None
        self._engine: Any = None  # psutil.Process of the engine, None once gone
        self._procs: dict[int, Any] = {}  # pid -> primed psutil.Process
        self._cpu_ceiling = 100.0  # percent of one core per logical CPU, set at start
        self._rapl: list[_RaplDomain] = []
        self._rapl_failed: set[str] = set()

    # -- start -------------------------------------------------------------

    def start(self) -> None:
        """Prime CPU counters, find the engine process and the RAPL domains."""
        import psutil

        self._psutil = psutil
        self._cpu_ceiling = 100.0 * (psutil.cpu_count() or 1)
        psutil.cpu_percent(None)  # the first call only sets the baseline
        if self.engine_pid is not None:
            self._start_engine(self.engine_pid)
        self._start_rapl()

    def _start_engine(self, pid: int) -> None:
        psutil = self._psutil
        try:
            self._engine = psutil.Process(pid)
        except psutil.Error as exc:
            self.notes.append(
                f"engine process {pid} not found at start ({type(exc).__name__});"
                " engine CPU/RSS not reported"
            )
            return
        self._tree_values()  # primes cpu_percent for the whole tree

    def _start_rapl(self) -> None:
        root = self.rapl_root
        if not root.is_dir():
            self.notes.append(f"no RAPL interface at {root}; CPU package energy not reported")
            return
        denied: list[str] = []
        for zone in sorted(root.glob("intel-rapl:*")):
            try:
                name = (zone / "name").read_text(encoding="ascii").strip()
            except OSError:
                continue
            if not name.startswith("package-"):
                continue  # core, uncore, dram, psys: not package energy
            key = f"cpu.package{name.removeprefix('package-')}.energy_j"
            if key in self.rapl_keys:
                continue
            try:
                max_range = _read_int(zone / "max_energy_range_uj")
                raw = _read_int(zone / "energy_uj")
            except PermissionError as exc:
                denied.append(str(exc.filename or zone / "energy_uj"))
                continue
            except (OSError, ValueError) as exc:
                self.notes.append(f"RAPL {zone.name} unreadable ({exc}); {key} not reported")
                continue
            self._rapl.append(_RaplDomain(key, zone / "energy_uj", max_range, raw, raw))
            self.rapl_keys.append(key)
        if denied:
            self.notes.append(
                "RAPL energy not readable (permission denied: "
                + ", ".join(denied)
                + "); CPU package energy not reported (needs root or read access)"
            )

    # -- read --------------------------------------------------------------

    def read(self) -> Mapping[str, float | None]:
        """One reading: host load, engine tree (if any), RAPL counters (if readable)."""
        psutil = self._psutil
        values: dict[str, float | None] = {
            "host.cpu_percent": psutil.cpu_percent(None),
            "host.mem_used_mib": psutil.virtual_memory().used / MIB,
        }
        if self.engine_pid is not None:
            values.update(self._tree_values())
        for domain in self._rapl:
            try:
                values[domain.key] = domain.update(_read_int(domain.energy_path))
            except (OSError, ValueError) as exc:
                values[domain.key] = None
                if domain.key not in self._rapl_failed:
                    self._rapl_failed.add(domain.key)
                    self.notes.append(f"{domain.key}: read failed ({exc})")
        return values

    def _tree_values(self) -> dict[str, float | None]:
        """CPU percent and RSS summed over the engine and its descendants."""
        psutil = self._psutil
        root = self._engine
        if root is None:
            return {ENGINE_CPU: None, ENGINE_RSS: None}
        try:
            with root.oneshot():
                if root.status() == psutil.STATUS_ZOMBIE:
                    raise psutil.NoSuchProcess(root.pid)
            children = root.children(recursive=True)
        except psutil.NoSuchProcess:
            self._engine = None
            self._procs.clear()
            self.notes.append(f"engine process {root.pid} exited during sampling")
            return {ENGINE_CPU: None, ENGINE_RSS: None}
        except psutil.AccessDenied:
            children = []
        cpu = 0.0
        rss = 0
        seen: dict[int, Any] = {}
        for proc in (root, *children):
            known = self._procs.get(proc.pid)
            fresh = known is None or known != proc  # != also catches a reused pid
            if not fresh:
                proc = known
            try:
                with proc.oneshot():
                    percent = proc.cpu_percent(None)
                    rss += proc.memory_info().rss
            except psutil.Error:  # exited, zombie or not ours: skip it
                continue
            if not fresh:
                cpu += percent  # a fresh process's first value is only a baseline
            seen[proc.pid] = proc
        self._procs = seen
        # Each process's share is its CPU time over its own wall interval, in
        # clock ticks; summed over a busy tree, tick rounding can pass the
        # machine's ceiling (201.6 on 2 cores), which no tree can use.
        return {ENGINE_CPU: min(cpu, self._cpu_ceiling), ENGINE_RSS: rss / MIB}

    # -- stop --------------------------------------------------------------

    def stop(self) -> None:
        """Drop process handles; never raises."""
        self._procs = {}
        self._engine = None
