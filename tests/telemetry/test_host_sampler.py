"""HostSampler: real psutil readings, a real engine process tree, a fake RAPL sysfs tree."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from inferx_core.builtin import host as builtin_host
from inferx_core.sdk.sampler import Sampler
from inferx_core.telemetry import host as host_mod
from inferx_core.telemetry.host import HostSampler

# A child (busy, or sleeping with argv "idle") that starts a busy grandchild;
# both stop on their own after 30 s.
TREE = textwrap.dedent(
    """
    import subprocess, sys, time
    spin = "import time\\nend = time.time() + 30\\nwhile time.time() < end: pass"
    grandchild = subprocess.Popen([sys.executable, "-c", spin])
    print(grandchild.pid, flush=True)
    end = time.time() + 30
    while time.time() < end:
        if sys.argv[1:] == ["idle"]:
            time.sleep(0.05)
    grandchild.kill()
    """
)


def no_rapl(tmp_path: Path) -> Path:
    return tmp_path / "no-powercap"


@pytest.fixture(params=["busy"])
def engine_tree(request: pytest.FixtureRequest) -> Iterator[tuple[int, int]]:
    """(child pid, grandchild pid): python processes, killed by pid afterwards."""
    child = subprocess.Popen(
        [sys.executable, "-c", TREE, request.param], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    grandchild_pid = int(child.stdout.readline())
    try:
        yield child.pid, grandchild_pid
    finally:
        for pid in (grandchild_pid, child.pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()
        child.wait(timeout=10)
        child.stdout.close()


def test_follows_the_sampler_protocol(tmp_path: Path) -> None:
    sampler = HostSampler()
    assert isinstance(sampler, Sampler)
    assert sampler.name == "host" and sampler.interval_s == 1.0
    assert HostSampler(interval_s=0.2, rapl_root=tmp_path).interval_s == 0.2


def test_real_host_readings_are_sane(tmp_path: Path) -> None:
    sampler = HostSampler(rapl_root=no_rapl(tmp_path))
    sampler.start()
    time.sleep(0.1)
    values = sampler.read()
    assert set(values) == {"host.cpu_percent", "host.mem_used_mib"}
    assert 0.0 <= values["host.cpu_percent"] <= 100.0
    total_mib = psutil.virtual_memory().total / 2**20
    assert 0 < values["host.mem_used_mib"] < total_mib
    assert any("no RAPL interface" in n for n in sampler.notes)
    sampler.stop()


def test_engine_tree_cpu_and_rss(tmp_path: Path, engine_tree: tuple[int, int]) -> None:
    child_pid, grandchild_pid = engine_tree
    sampler = HostSampler(engine_pid=child_pid, interval_s=0.2, rapl_root=no_rapl(tmp_path))
    sampler.start()
    readings = []
    for _ in range(4):
        time.sleep(0.3)
        readings.append(sampler.read())
    cores = psutil.cpu_count() or 1
    last = readings[-1]
    assert 0 < last["host.engine_cpu_percent"] <= 100.0 * cores
    assert last["host.engine_rss_mib"] > 1
    assert {child_pid, grandchild_pid} <= set(sampler._procs)  # the grandchild is counted
    sampler.stop()


def test_tree_cpu_never_passes_the_machine_ceiling(
    tmp_path: Path, engine_tree: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tick rounding per process can sum past 100% per core; the reading cannot."""
    child_pid, _ = engine_tree
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 1)
    sampler = HostSampler(engine_pid=child_pid, interval_s=0.2, rapl_root=no_rapl(tmp_path))
    sampler.start()
    monkeypatch.setattr(psutil.Process, "cpu_percent", lambda self, interval=None: 101.6)
    assert sampler.read()["host.engine_cpu_percent"] == 100.0
    sampler.stop()


@pytest.mark.parametrize("engine_tree", ["idle"], indirect=True)
def test_grandchild_cpu_is_counted(tmp_path: Path, engine_tree: tuple[int, int]) -> None:
    child_pid, _ = engine_tree  # the child sleeps; only its child spins
    sampler = HostSampler(engine_pid=child_pid, rapl_root=no_rapl(tmp_path))
    sampler.start()
    time.sleep(0.5)
    assert sampler.read()["host.engine_cpu_percent"] > 20.0
    sampler.stop()


def test_child_that_exits_mid_run_is_dropped(tmp_path: Path, engine_tree: tuple[int, int]) -> None:
    child_pid, grandchild_pid = engine_tree
    sampler = HostSampler(engine_pid=child_pid, rapl_root=no_rapl(tmp_path))
    sampler.start()
    time.sleep(0.2)
    psutil.Process(grandchild_pid).kill()
    time.sleep(0.2)
    values = sampler.read()  # the grandchild is a zombie or gone: no error
    assert values["host.engine_cpu_percent"] is not None
    assert values["host.engine_rss_mib"] > 0
    sampler.stop()


def test_engine_gone_before_start(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    sampler = HostSampler(engine_pid=proc.pid, rapl_root=no_rapl(tmp_path))
    sampler.start()
    values = sampler.read()
    assert values["host.engine_cpu_percent"] is None and values["host.engine_rss_mib"] is None
    assert values["host.cpu_percent"] is not None
    assert any(f"engine process {proc.pid} not found" in n for n in sampler.notes)
    sampler.stop()


def test_engine_exits_mid_run(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sampler = HostSampler(engine_pid=proc.pid, rapl_root=no_rapl(tmp_path))
        sampler.start()
        assert sampler.read()["host.engine_rss_mib"] > 0
        proc.kill()
        time.sleep(0.1)  # not reaped yet: a zombie counts as exited
        values = sampler.read()
        assert values["host.engine_cpu_percent"] is None
        proc.wait(timeout=10)
        assert sampler.read()["host.engine_rss_mib"] is None
        assert sum("exited during sampling" in n for n in sampler.notes) == 1
        sampler.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


# -- RAPL ---------------------------------------------------------------------


def rapl_zone(root: Path, zone: str, name: str, energy_uj: int, max_uj: int) -> Path:
    path = root / zone
    path.mkdir(parents=True)
    (path / "name").write_text(name + "\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return path


def test_rapl_packages_with_wraparound_are_monotonic(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    pkg0 = rapl_zone(root, "intel-rapl:0", "package-0", 900_000, 1_000_000)
    rapl_zone(root, "intel-rapl:0:0", "core", 5, 1_000_000)  # subzone: not package energy
    rapl_zone(root, "intel-rapl:1", "package-1", 10_000_000, 262_143_328_850)
    rapl_zone(root, "intel-rapl-mmio:0", "package-0", 1, 1_000_000)  # duplicate interface
    sampler = HostSampler(rapl_root=root)
    sampler.start()
    assert sampler.rapl_keys == ["cpu.package0.energy_j", "cpu.package1.energy_j"]
    seen = []
    for raw in (950_000, 999_000, 50_000, 400_000, 10_000):  # wraps twice
        (pkg0 / "energy_uj").write_text(f"{raw}\n")
        values = sampler.read()
        seen.append(values["cpu.package0.energy_j"])
        assert values["cpu.package1.energy_j"] == pytest.approx(10.0)
        assert not any(k.startswith("cpu.package") and "core" in k for k in values)
    assert seen == pytest.approx([0.95, 0.999, 1.05, 1.4, 2.01])
    assert all(b >= a for a, b in itertools.pairwise(seen))
    assert sampler.notes == []
    sampler.stop()


def test_rapl_permission_denied_is_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "powercap"
    rapl_zone(root, "intel-rapl:0", "package-0", 1, 1_000_000)
    real_read = host_mod._read_int

    def denied(path: Path) -> int:
        if path.name == "energy_uj":  # root-only since the PLATYPUS fix
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path)

    monkeypatch.setattr(host_mod, "_read_int", denied)
    sampler = HostSampler(rapl_root=root)
    sampler.start()
    values = sampler.read()
    assert not any(k.startswith("cpu.") for k in values)
    assert sampler.rapl_keys == []
    assert len(sampler.notes) == 1 and "permission denied" in sampler.notes[0]
    assert "energy_uj" in sampler.notes[0]
    sampler.stop()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_rapl_unreadable_file_mode(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    zone = rapl_zone(root, "intel-rapl:0", "package-0", 1, 1_000_000)
    (zone / "energy_uj").chmod(0)
    sampler = HostSampler(rapl_root=root)
    sampler.start()
    assert "cpu.package0.energy_j" not in sampler.read()
    assert any("permission denied" in n for n in sampler.notes)


def test_rapl_read_failing_mid_run_is_none_with_one_note(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    zone = rapl_zone(root, "intel-rapl:0", "package-0", 1_000_000, 10_000_000)
    sampler = HostSampler(rapl_root=root)
    sampler.start()
    assert sampler.read()["cpu.package0.energy_j"] == pytest.approx(1.0)
    (zone / "energy_uj").unlink()
    assert sampler.read()["cpu.package0.energy_j"] is None
    assert sampler.read()["cpu.package0.energy_j"] is None
    assert len(sampler.notes) == 1


# -- the hook -------------------------------------------------------------------


def test_hook_always_offers_a_host_sampler() -> None:
    (sampler,) = builtin_host.inferx_telemetry_samplers(engine_pid=1234)
    assert isinstance(sampler, HostSampler) and sampler.engine_pid == 1234
    (sampler,) = builtin_host.inferx_telemetry_samplers(engine_pid=None)
    assert sampler.engine_pid is None
