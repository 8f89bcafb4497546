"""Whatever ends ``inferx run``, the engine ends with it, finished points kept.

SIGTERM (kill, systemd, docker stop, SLURM), SIGHUP (a closed terminal),
Ctrl-C twice (kill now), and SIGKILL of InferX itself (the watchdog), each
against the fake engine (the scripted SSE server as a process), with the
process tree checked afterwards. The same against the real vLLM CPU engine:
tests/e2e/test_signals_e2e.py.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from inferx_core.results.files import read_result

TESTS = Path(__file__).parents[2]

# Plays `inferx run`: the fake engine, two points. The signal is the runner's own, sent to
# itself once point 2 has a finished request (its engine's process tree written first), so
# it lands in point 2 however loaded the machine is: no sleep assumed to fit its window.
RUNNER = textwrap.dedent(
    """
    import json, os, signal, sys
    sys.path.insert(0, {tests!r})
    import psutil
    import fake_engine
    from inferx_core.load.schedule import scheduler

    # a run from a terminal: under `nohup make test` SIGHUP comes in ignored, and InferX
    # rightly keeps it so (the run was asked to survive a hang-up): that SIGHUP test then
    # failed on every run, the runner exiting 0
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    options = json.loads(sys.argv[2])
    sig = signal.Signals[options.pop("signal")]
    real_init = scheduler.LoadScheduler.__init__

    def init(self, *args, on_complete=None, **kw):
        def done(record):
            if on_complete is not None:
                on_complete(record)
            if self.config.max_concurrency == 2 and record.ok and not record.warmup:
                if not os.path.exists(sys.argv[3]):
                    tree = [p.pid for c in psutil.Process().children()
                            for p in [c, *c.children(recursive=True)]]
                    with open(sys.argv[3] + ".tmp", "w") as f:
                        json.dump(tree, f)
                    os.replace(sys.argv[3] + ".tmp", sys.argv[3])
                    os.kill(os.getpid(), sig)
        real_init(self, *args, on_complete=done, **kw)

    scheduler.LoadScheduler.__init__ = init
    from inferx_core.config.models import RunConfig
    from inferx_core.pipeline.server.run import run_configs
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.platform import Platform

    if options.pop("stubborn", False):  # the engine's leader ignores SIGTERM
        real = fake_engine.build_argv
        wrapper = ("import signal, subprocess, sys, time; "
                   "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                   "subprocess.call(sys.argv[1:]); time.sleep(600)")
        fake_engine.build_argv = lambda server: [sys.executable, "-c", wrapper, *real(server)]
    cfg = RunConfig.model_validate({{
        "engine": "fake", "model": "org/tiny-model",
        "plugin_options": {{"mode": "ok", "ttft_ms": 5, "itl_ms": 20}},
        "readiness_timeout_s": 30, "stop_grace_s": options.pop("grace", 5),
        "workload": {{"isl": 16, "osl": 20}},
        "load": {{"concurrency": [1, 2], "num_prompts": 40, "duration_s": 6, "warmup": 0}},
    }})
    pm = get_plugin_manager(env={{"INFERX_PLUGINS": ""}}, extra_plugins=[("fake", fake_engine)])
    out = __import__("pathlib").Path(sys.argv[1])
    run_configs([cfg], pm=pm, platform=Platform(), output_dir=out, progress=False)
    """
)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


class Run:
    """The runner as a subprocess, ``signal`` sent to itself in point 2 (see RUNNER);
    ``engine`` is its engine's process tree (and the watchdog) as the signal went."""

    def __init__(self, tmp_path: Path, signal: str, **options: Any) -> None:
        script = tmp_path / "runner.py"
        script.write_text(RUNNER.format(tests=str(TESTS)))
        self.out = tmp_path / "results"
        tree = tmp_path / "engine.json"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(self.out),
                json.dumps({**options, "signal": signal}),
                str(tree),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(tree.exists, timeout=120)  # point 1 written, point 2 has a finished request
        self.engine = json.loads(tree.read_text())
        assert self.engine

    def finish(self, timeout: float = 60) -> str:
        _, err = self.proc.communicate(timeout=timeout)
        return err

    def results(self) -> dict[str, dict[str, Any]]:
        return {p.stem: read_result(p).flat() for p in sorted(self.out.glob("*.json"))}

    def assert_engine_gone(self, timeout: float = 30) -> None:
        wait_for(lambda: not any(alive(p) for p in self.engine), timeout=timeout)


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")])
def test_sigterm_and_sighup_stop_the_engine_and_keep_every_point(
    tmp_path: Path, sig: int, name: str
) -> None:
    run = Run(tmp_path, name)
    err = run.finish()
    assert run.proc.returncode != 0
    assert f"{name}: stopping engine, up to 5 s; Ctrl-C again to kill now" in err
    run.assert_engine_gone(timeout=5)
    results = run.results()
    statuses = sorted((r["max_concurrency"], r["status"]) for r in results.values())
    assert statuses == [(1, "ok"), (2, "interrupted")]
    [interrupted] = [r for r in results.values() if r["status"] == "interrupted"]
    assert interrupted["failure_reason"] == f"interrupted by {name}"
    assert interrupted["completed"] > 0


def test_second_ctrl_c_kills_a_stubborn_engine_at_once(tmp_path: Path) -> None:
    run = Run(tmp_path, "SIGINT", stubborn=True, grace=60)
    # point 2 is written: the first Ctrl-C has ended it and the 60 s stop grace comes next
    # (the engine stays registered until its stop is over, so the second Ctrl-C kills it
    # whether it lands just before the grace or in it)
    wait_for(lambda: len(list(run.out.glob("*c2*.json"))) == 1, timeout=60)
    leader = run.engine[0]
    assert alive(leader)  # it ignores SIGTERM
    started = time.monotonic()
    run.proc.send_signal(signal.SIGINT)
    err = run.finish(timeout=50)
    assert time.monotonic() - started < 30  # not the 60 s grace (half of it: a loaded machine)
    assert "SIGINT: stopping engine, up to 60 s; Ctrl-C again to kill now" in err
    assert "killing the engine now" in err
    run.assert_engine_gone(timeout=3)
    statuses = sorted((r["max_concurrency"], r["status"]) for r in run.results().values())
    assert statuses == [(1, "ok"), (2, "interrupted")]


def test_kill_9_of_inferx_leaves_no_engine(tmp_path: Path) -> None:
    run = Run(tmp_path, "SIGKILL")
    run.finish()
    run.assert_engine_gone(timeout=20)  # the watchdog: SIGTERM, grace, SIGKILL
    [finished] = run.results().values()  # point 1 kept; point 2 never half-written
    assert finished["status"] == "ok"
    assert not list(run.out.glob(".*.tmp"))
