"""No engine outlives InferX: the watchdog on kill -9 of InferX, Ctrl-C during the stop grace.

The engine here is a small process tree (a child in the group, a grandchild
that escaped with setsid, SIGTERM ignored by the leader); the same cases
against the real vLLM CPU engine are in tests/e2e/test_signals_e2e.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from inferx_core.launch.process import ProcessLauncher, free_port
from inferx_core.sdk.launch_spec import LaunchSpec

TREE = textwrap.dedent(
    """
    import os, subprocess, sys, time, signal
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                               start_new_session=True)
    # a stubborn engine; SIGTERM ignored BEFORE the pids are told, or a stop begun on
    # them could kill the leader at once (and a test's Ctrl-C land after it)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("PIDS", os.getpid(), child.pid, escaped.pid, flush=True)
    time.sleep(600)
    """
)

# What plays InferX: starts the engine, prints its pids, then sleeps until killed.
PARENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from inferx_core.launch.process import ProcessLauncher
    from inferx_core.sdk.launch_spec import LaunchSpec
    spec = LaunchSpec(engine="fake", argv=(sys.executable, sys.argv[1]), port=int(sys.argv[3]))
    handle = ProcessLauncher().start(spec, Path(sys.argv[2]))
    while "PIDS" not in handle.log_tail():
        time.sleep(0.05)
    print(handle.log_tail().split("PIDS", 1)[1].split("\\n")[0], flush=True)
    print("WATCHDOG", handle.watchdog.proc.pid, flush=True)
    time.sleep(600)
    """
)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def ignores(pid: int, sig: int) -> bool:
    """Whether process ``pid`` ignores ``sig`` (SigIgn in /proc/<pid>/status, Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    return script


def test_kill_9_of_inferx_stops_the_whole_engine_tree(tree: Path, tmp_path: Path) -> None:
    parent_script = tmp_path / "parent.py"
    parent_script.write_text(PARENT)
    parent = subprocess.Popen(
        [sys.executable, str(parent_script), str(tree), str(tmp_path / "run"), str(free_port())],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    engine_pids = [int(p) for p in parent.stdout.readline().split()]
    watchdog_pid = int(parent.stdout.readline().split()[1])
    assert len(engine_pids) == 3 and all(not gone(p) for p in engine_pids)
    parent.kill()  # SIGKILL: no handler, no finally
    parent.wait()
    # the leader ignores SIGTERM: everything is SIGKILLed after the watchdog's grace (10 s)
    wait_for(lambda: all(gone(p) for p in engine_pids), timeout=30)
    wait_for(lambda: gone(watchdog_pid), timeout=5)


def test_a_normal_stop_releases_the_watchdog(tree: Path, tmp_path: Path) -> None:
    spec = LaunchSpec(engine="fake", argv=(sys.executable, str(tree)), port=free_port())
    handle = ProcessLauncher().start(spec, tmp_path / "run")
    watchdog = handle.watchdog
    assert watchdog is not None
    wait_for(lambda: "PIDS" in handle.log_tail())
    handle.stop(grace_s=0.5)
    assert handle.watchdog is None
    assert watchdog.proc.poll() == 0  # exited on the release byte, killed nothing


def test_ctrl_c_during_the_stop_grace_kills_at_once(
    tree: Path, tmp_path: Path, ctrl_c_raises: None
) -> None:
    spec = LaunchSpec(engine="fake", argv=(sys.executable, str(tree)), port=free_port())
    handle = ProcessLauncher().start(spec, tmp_path / "run")
    wait_for(lambda: "PIDS" in handle.log_tail())
    pids = [int(p) for p in handle.log_tail().split("PIDS", 1)[1].split()[:3]]
    # the second Ctrl-C, 0.5 s into a 60 s grace: the leader ignores SIGTERM (set before
    # it printed its pids), so stop() is still in its grace when the timer fires
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        handle.stop(grace_s=60)
    assert all(gone(p) for p in pids)
    # not the 60 s grace; half of it is room enough for a loaded machine
    assert time.monotonic() - started < 30
    assert handle.watchdog is None


def test_watchdog_ignores_ctrl_c_and_hangup(tree: Path, tmp_path: Path) -> None:
    spec = LaunchSpec(engine="fake", argv=(sys.executable, str(tree)), port=free_port())
    handle = ProcessLauncher().start(spec, tmp_path / "run")
    assert handle.watchdog is not None
    wait_for(lambda: "PIDS" in handle.log_tail())
    # the watchdog has set its handlers: the kernel says it ignores both (no sleep that a
    # loaded machine may outlast before the watchdog's interpreter got that far)
    pid = handle.watchdog.proc.pid
    wait_for(lambda: ignores(pid, signal.SIGINT) and ignores(pid, signal.SIGHUP))
    os.kill(handle.watchdog.proc.pid, signal.SIGINT)
    os.kill(handle.watchdog.proc.pid, signal.SIGHUP)
    time.sleep(0.3)
    assert handle.watchdog.proc.poll() is None
    handle.stop(grace_s=0.5)


# A stand-in `docker`: a daemon and the image answer, `run` sleeps like an attached
# client, `ps` finds one container (c0ffee), every call is logged.
FAKE_DOCKER = """#!/bin/sh
echo "$@" >> "$FAKE_DOCKER_LOG"
case "$1" in
  run) exec sleep 600 ;;
  version) echo 20.10.24 ;;
  image) echo '[{"Id": "sha256:1"}]' ;;
  ps) echo c0ffee ;;
esac
"""


def test_kill_9_of_inferx_docker_removes_the_container_by_its_label(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(FAKE_DOCKER)
    docker.chmod(0o755)
    calls = tmp_path / "docker.log"
    parent_script = tmp_path / "parent.py"
    parent_script.write_text(
        textwrap.dedent(
            """
            import sys, time
            from pathlib import Path
            from inferx_core.launch.docker import DockerLauncher
            from inferx_core.sdk.launch_spec import LaunchSpec
            spec = LaunchSpec(engine="fake", argv=("serve",), image="img:1", port=int(sys.argv[2]))
            handle = DockerLauncher().start(spec, Path(sys.argv[1]))
            print(handle.pid, flush=True)
            time.sleep(600)
            """
        )
    )
    port = free_port()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_DOCKER_LOG": str(calls)}
    parent = subprocess.Popen(
        [sys.executable, str(parent_script), str(tmp_path / "run"), str(port)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert parent.stdout is not None
    client = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    wait_for(lambda: gone(client), timeout=20)
    wait_for(lambda: "rm -f c0ffee" in calls.read_text(), timeout=20)
    lines = calls.read_text().splitlines()
    (run,) = [line for line in lines if line.startswith("run ")]
    assert run.startswith(f"run --rm --init --name inferx-fake-{port} --label inferx.launch=")
    launch = run.split("--label inferx.launch=")[1].split()[0]
    # the container itself, found by this start's label, not only its client
    assert f"ps -aq --filter label=inferx.launch={launch}" in lines


# A stand-in `srun`: logs every SIGINT with its time; two within a second end "the step".
FAKE_SRUN = """
import signal, sys, time
hits = []
def on_int(*_):
    hits.append(time.monotonic())
    print("INT", flush=True)
    if len(hits) >= 2 and hits[-1] - hits[-2] < 1.0:
        print("step terminated", flush=True)
        sys.exit(0)
signal.signal(signal.SIGINT, on_int)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("step running", flush=True)
while True:
    time.sleep(0.1)
"""


def test_srun_kill_now_ends_the_step_with_srun_double_sigint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inferx_core.launch import srun as srun_module

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "srun"
    fake.write_text(f"#!{sys.executable}\n{FAKE_SRUN}")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    spec = LaunchSpec(engine="fake", argv=("serve",), port=free_port())
    handle = srun_module.SrunLauncher().start(spec, tmp_path / "run")
    assert isinstance(handle, srun_module.SrunHandle)
    wait_for(lambda: "step running" in handle.log_tail())
    handle.kill_now()
    assert "step terminated" in handle.log_tail()  # srun's own step kill, before any SIGKILL
    assert not handle.alive() and handle.watchdog is None


# InferX with a secret in the engine's env; the engine prints it, as vLLM prints its args.
SECRET_PARENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from inferx_core.config.secrets import remember_secrets
    from inferx_core.launch.process import ProcessLauncher
    from inferx_core.sdk.launch_spec import LaunchSpec
    secret = sys.argv[3]
    remember_secrets([secret])
    code = "import os, time; print('args: key=' + os.environ['MY_KEY'], flush=True); time.sleep(99)"
    spec = LaunchSpec(engine="fake", argv=(sys.executable, "-c", code), env={"MY_KEY": secret},
                      port=int(sys.argv[2]))
    handle = ProcessLauncher().start(spec, Path(sys.argv[1]))
    while "args:" not in handle.log_tail():
        time.sleep(0.05)
    print("WATCHDOG", handle.watchdog.proc.pid, handle.log_path, flush=True)
    time.sleep(600)
    """
)


def test_kill_9_of_inferx_still_scrubs_the_engine_log(tmp_path: Path) -> None:
    secret = "sk-printed-by-the-engine-4b3a2c"
    script = tmp_path / "parent.py"
    script.write_text(SECRET_PARENT)
    argv = [sys.executable, str(script), str(tmp_path / "run"), str(free_port()), secret]
    parent = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    _, pid, log = parent.stdout.readline().split()
    watchdog = psutil.Process(int(pid))
    assert secret not in " ".join(watchdog.cmdline())  # it came over the pipe, not argv
    assert secret in Path(log).read_text()  # the engine printed it
    parent.kill()  # SIGKILL: InferX's own scrub at stop never runs
    parent.wait()
    wait_for(lambda: gone(int(pid)), timeout=30)
    text = Path(log).read_text()
    assert secret not in text
    assert "args: key=***" in text
