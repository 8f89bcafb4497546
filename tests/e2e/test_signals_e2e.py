"""Whatever ends ``inferx run``, the real vLLM CPU engine ends with it (issue 15).

Each case runs ``inferx run`` as a subprocess on a two-point sweep, waits
until point 1 is written and point 2 is measuring, ends InferX one way, and
then checks the process tree: no process of the engine (whose command line
names the tiny model's folder) is left, nothing listens on its port, the
finished point is kept and the running one is written as interrupted. About
a minute each (vLLM start-up dominates).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from inferx_core.demo.run import demo_config
from inferx_core.results.files import read_result

pytestmark = pytest.mark.engine


def engine_procs(model: str, inferx_pid: int) -> list[psutil.Process]:
    """Processes naming the model folder: the engine (not pytest, not InferX itself)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if model in " ".join(cmdline) and proc.pid not in (os.getpid(), inferx_pid):
            found.append(proc)
    return found


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


class Sweep:
    """``inferx run`` on a 2-point sweep, stopped while point 2 is measuring."""

    def __init__(self, engine_python: Path, root: Path, stop_grace_s: float = 15) -> None:
        config = demo_config(
            output_dir=root / "results",
            engine_python=str(engine_python),
            concurrency=[1, 2],
            isl=32,
            osl=32,
            model_dir=root / "model",
        )
        data = config.model_dump(mode="json")
        # Each point measures 8 s whatever the engine's speed: without num_prompts a
        # duration run cycles its prompts until the duration ends. (With 60 prompts an
        # idle machine finished point 2 in 3.3 s, before the signal was sent.)
        data["load"]["duration_s"] = 8
        data["load"]["num_prompts"] = None
        data["stop_grace_s"] = stop_grace_s
        self.model = str(config.model)
        self.out = config.output_dir
        path = root / "sweep.json"
        path.write_text(json.dumps(data))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "inferx_core.cli", "run", str(path), "--no-progress"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(lambda: list(self.out.glob("*c1*.json")), 240, "point 1 written")
        time.sleep(4)  # point 2 is measuring
        self.engine = engine_procs(self.model, self.proc.pid)
        assert self.engine, "the engine is not running"
        point_1 = read_result(next(self.out.glob("*c1*.json"))).flat()
        self.port = int(point_1["launch"]["spec"]["port"])

    def finish(self, timeout: float = 60) -> str:
        _, err = self.proc.communicate(timeout=timeout)
        return err

    def assert_engine_gone(self, timeout: float) -> None:
        wait_for(lambda: not any(alive(p) for p in self.engine), timeout, "engine tree gone")
        assert not [p for p in engine_procs(self.model, self.proc.pid) if alive(p)]
        listening = [
            c
            for c in psutil.net_connections(kind="tcp")
            if c.laddr and c.laddr.port == self.port and c.status == psutil.CONN_LISTEN
        ]
        assert listening == []

    def statuses(self) -> list[tuple[int, str]]:
        """(concurrency, status); a point stopped while its prompts were still being built
        counts as interrupted when its reason says so (nothing was measured yet)."""
        out = []
        for path in self.out.glob("*.json"):
            r = read_result(path).flat()
            before = r["status"] == "failed" and "before any request" in r["failure_reason"]
            # "invalid": measured to the end, but a busy 2-core box starved the client
            status = {"invalid": "ok"}.get(r["status"], r["status"])
            out.append((r["max_concurrency"], "interrupted" if before else status))
            if status != "ok":
                assert r["failure_reason"].startswith("interrupted by"), r["failure_reason"]
        return sorted(out)


def test_sigterm_stops_vllm_keeps_point_1_and_marks_point_2(
    engine_python: Path, tmp_path: Path
) -> None:
    sweep = Sweep(engine_python, tmp_path)
    sweep.proc.send_signal(signal.SIGTERM)
    err = sweep.finish()
    assert sweep.proc.returncode == 143, err
    assert "SIGTERM: stopping engine, up to 15 s; Ctrl-C again to kill now" in err
    sweep.assert_engine_gone(timeout=5)
    assert sweep.statuses() == [(1, "ok"), (2, "interrupted")]


def test_second_ctrl_c_kills_vllm_at_once(engine_python: Path, tmp_path: Path) -> None:
    sweep = Sweep(engine_python, tmp_path, stop_grace_s=120)
    sweep.proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    sweep.proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    err = sweep.finish(timeout=60)
    assert time.monotonic() - started < 20, err
    assert sweep.proc.returncode == 130, err
    assert "SIGINT: stopping engine, up to 120 s; Ctrl-C again to kill now" in err
    sweep.assert_engine_gone(timeout=5)
    assert sweep.statuses()[0] == (1, "ok")


def test_kill_9_of_inferx_leaves_no_vllm(engine_python: Path, tmp_path: Path) -> None:
    sweep = Sweep(engine_python, tmp_path)
    os.kill(sweep.proc.pid, signal.SIGKILL)
    sweep.finish()
    sweep.assert_engine_gone(timeout=20)  # the watchdog: SIGTERM, up to 10 s, SIGKILL
    assert sweep.statuses() == [(1, "ok")]
    assert not list(sweep.out.glob(".*.tmp"))
