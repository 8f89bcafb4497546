"""The process launcher: its own group, logs, env handling, and nothing survives stop()."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from inferx_core.launch.process import ProcessLauncher, free_port, port_is_free
from inferx_core.sdk.launch_spec import LaunchSpec

TREE = textwrap.dedent(
    """
    import os, subprocess, sys, time, signal
    # a child in our group, and a grandchild that escapes into its own session
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                               start_new_session=True)
    print("PIDS", os.getpid(), child.pid, escaped.pid, flush=True)
    print("SECRET", os.environ.get("INFERX_TEST_SECRET"), "GONE", os.environ.get("SLURM_JOB_ID"),
          flush=True)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a stubborn engine
    time.sleep(600)
    """
)


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture
def tree_spec(tmp_path: Path) -> LaunchSpec:
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    return LaunchSpec(
        engine="fake",
        argv=(sys.executable, str(script)),
        env={"INFERX_TEST_SECRET": "s3"},
        unset_env=("SLURM_*",),
        port=free_port(),
        ulimits={"core": 0},
    )


def test_stop_kills_whole_tree_even_when_sigterm_is_ignored(
    tree_spec: LaunchSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "123")
    handle = ProcessLauncher().start(tree_spec, tmp_path / "run")
    wait_for(lambda: "PIDS" in handle.log_tail())
    pids = [int(p) for p in handle.log_tail().split("PIDS", 1)[1].split()[:3]]
    assert "SECRET s3 GONE None" in handle.log_tail()
    assert os.getpgid(handle.pid) == handle.pid != os.getpgid(0)  # its own group
    assert psutil.Process(handle.pid).rlimit(psutil.RLIMIT_CORE) == (0, 0)
    assert handle.alive()
    handle.stop(grace_s=1.0)
    assert not handle.alive()
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    handle.stop()  # idempotent


def test_exit_is_noticed_and_log_tail_kept(tmp_path: Path) -> None:
    spec = LaunchSpec(
        engine="fake",
        argv=(sys.executable, "-c", "print('loading weights'); raise SystemExit(3)"),
        port=free_port(),
    )
    handle = ProcessLauncher().start(spec, tmp_path)
    wait_for(lambda: not handle.alive())
    assert handle.returncode() == 3
    assert "loading weights" in handle.log_tail()
    assert (tmp_path / "engine.log").exists()


def test_image_is_refused(tmp_path: Path) -> None:
    spec = LaunchSpec(engine="x", argv=("x",), port=1, image="vllm/vllm-openai")
    with pytest.raises(ValueError, match="launcher: docker"):
        ProcessLauncher().start(spec, tmp_path)


def test_free_port_is_free_and_avoids_given() -> None:
    port = free_port()
    assert port_is_free(port)
    assert free_port(avoid={port}) != port
