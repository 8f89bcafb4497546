"""Client and engine on separate CPUs: the split, and each launcher applying it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from inferx_core.config.cpus import split_cpus
from inferx_core.errors import UserFacingError
from inferx_core.launch.docker import docker_run_argv
from inferx_core.launch.process import ProcessLauncher
from inferx_core.launch.srun import srun_argv
from inferx_core.load.schedule.client_load import pinned
from inferx_core.sdk.launch_spec import LaunchSpec


def test_small_host_keeps_the_last_cpu_for_the_client() -> None:
    split = split_cpus([0, 1, 2, 3])
    assert split.engine == (0, 1, 2) and split.client == (3,)
    assert split_cpus(range(64)).engine == ()  # a big host is left alone
    assert split_cpus([0, 1], isolation=False).client == ()
    assert split_cpus([0]).client == ()  # one CPU: nothing to split


def test_one_side_given_the_other_gets_the_rest() -> None:
    assert split_cpus(range(4), engine_cpus=[0, 1]).client == (2, 3)
    assert split_cpus(range(4), client_cpus=[0]).engine == (1, 2, 3)
    both = split_cpus(range(4), engine_cpus=[0], client_cpus=[1])
    assert (both.engine, both.client) == ((0,), (1,))
    with pytest.raises(
        UserFacingError, match="engine_cpus: CPU\\(s\\) \\[9\\] are not on this host"
    ):
        split_cpus(range(4), engine_cpus=[9])


def spec(**kw) -> LaunchSpec:
    return LaunchSpec(engine="x", argv=("serve",), port=8000, **kw)


def test_docker_and_srun_bind_the_engine(tmp_path: Path) -> None:
    argv = docker_run_argv(spec(image="img", cpus=(0, 2)), tmp_path)
    assert argv[argv.index("--cpuset-cpus") + 1] == "0,2"
    assert "--cpu-bind=mask_cpu:0x5" in srun_argv(spec(cpus=(0, 2)), tmp_path)
    assert not any(a.startswith("--cpu") for a in srun_argv(spec(), tmp_path))


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux CPU affinity")
def test_process_launcher_pins_the_engine_tree(tmp_path: Path) -> None:
    cpu = sorted(os.sched_getaffinity(0))[0]
    show = "import os; print(sorted(os.sched_getaffinity(0)), flush=True)"
    child = f"{show}; import subprocess, sys; subprocess.run([sys.executable, '-c', {show!r}])"
    handle = ProcessLauncher().start(
        LaunchSpec(engine="x", argv=(sys.executable, "-c", child), port=8000, cpus=(cpu,)),
        tmp_path,
    )
    deadline = time.monotonic() + 20
    while handle.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = handle.log_path.read_text().split()
    assert lines.count(f"[{cpu}]") == 2, lines  # the engine and its child


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux CPU affinity")
def test_client_pinning_is_restored() -> None:
    before = os.sched_getaffinity(0)
    one = min(before)
    with pinned((one,)):
        assert os.sched_getaffinity(0) == {one}
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux CPU affinity")
def test_bench_client_cpus_pin_the_client_while_it_runs() -> None:
    from inferx_core.config.models import BenchConfig, LoadProfile, Workload
    from inferx_core.pipeline.bench.api import run_bench
    from inferx_core.testing import ServerProcess

    before = os.sched_getaffinity(0)
    cpu = max(before)
    seen: list[set[int]] = []
    with ServerProcess(ttft_ms=2, itl_ms=1) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload=Workload(isl=8, osl=2),
            load=LoadProfile(concurrency=[1], num_prompts=2),
            client_cpus=[cpu],
            output_dir=None,
        )
        run_bench(config, progress=False, on_point=lambda _: seen.append(os.sched_getaffinity(0)))
        assert (seen == [{cpu}] and os.sched_getaffinity(0) != {cpu}) or len(
            os.sched_getaffinity(0)
        ) == 1
        bad = config.model_copy(update={"client_cpus": [4096]})
        with pytest.raises(UserFacingError, match="client_cpus: CPU"):
            run_bench(bad, progress=False)
