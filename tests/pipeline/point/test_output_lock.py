"""One run at a time per output folder; a crashed run leaves neither the lock nor its scratch.

The other run is a real process that holds the folder (``output_lock``) and a
scratch folder (``scratch_dir``) until it is killed, SIGKILL included.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import fake_engine
import pytest

from inferx_core.cli.app import main
from inferx_core.config.models import RunConfig
from inferx_core.pipeline.point.output_lock import (
    LOCK_NAME,
    OWNER_NAME,
    SCRATCH_NAME,
    OutputFolderBusy,
    output_lock,
    scratch_dir,
)
from inferx_core.pipeline.server.run import run_configs
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform

HOLD = """
import sys, time
from pathlib import Path
from inferx_core.pipeline.point.output_lock import output_lock, scratch_dir
folder = Path(sys.argv[1])
with output_lock(folder, unit=sys.argv[2] or None):
    with scratch_dir(folder / ".inferx-tmp") as scratch:
        print(scratch, flush=True)
        time.sleep(600)
"""

Holder = Callable[..., tuple[subprocess.Popen[str], Path]]


@pytest.fixture
def holder() -> Iterator[Holder]:
    """Start a process that holds a folder (as a run, or as batch job ``unit``)."""
    procs: list[subprocess.Popen[str]] = []

    def start(folder: Path, unit: str = "") -> tuple[subprocess.Popen[str], Path]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(folder), unit], stdout=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()  # printed once both are held
        assert line, "the holder died before holding the folder"
        return proc, Path(line)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def kill9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_second_run_is_refused_naming_the_folder_the_holder_and_the_fix(
    tmp_path: Path, holder: Holder
) -> None:
    proc, _ = holder(tmp_path)
    with pytest.raises(OutputFolderBusy) as refused, output_lock(tmp_path):
        pass
    message = str(refused.value)
    assert str(tmp_path) in message and f"pid {proc.pid} on {socket.gethostname()}" in message
    assert "--output" in message and "\n" not in message


def test_after_a_sigkill_of_the_holder_the_next_run_proceeds_and_clears_its_scratch(
    tmp_path: Path, holder: Holder
) -> None:
    proc, scratch = holder(tmp_path)
    assert scratch.parent == tmp_path / SCRATCH_NAME and scratch.is_dir()
    kill9(proc)
    assert scratch.is_dir()  # nothing ran to remove it
    with output_lock(tmp_path):  # the kernel dropped the dead holder's lock
        assert not scratch.exists()  # and the next run cleared its scratch folder
        assert (tmp_path / LOCK_NAME).exists()
    assert not (tmp_path / LOCK_NAME).exists()  # a finished run leaves no lock file


def test_a_live_runs_scratch_folder_is_kept_and_dead_ones_go(
    tmp_path: Path, holder: Holder
) -> None:
    # a batch job holds the folder shared, so this process can take it and sweep beside it
    _, live = holder(tmp_path, "server-a")
    root = tmp_path / SCRATCH_NAME
    dead = root / "otherhost-123-dead"
    dead.mkdir()
    (dead / OWNER_NAME).touch()  # its owner is gone: nobody holds the lock
    (dead / "records-0.jsonl").write_text("{}\n")
    old_unlocked = root / "otherhost-124-old"
    old_unlocked.mkdir()
    os.utime(old_unlocked, (time.time() - 3600, time.time() - 3600))
    being_made = root / "otherhost-125-new"  # no lock file yet, just made
    being_made.mkdir()
    with output_lock(tmp_path, unit="server-b"):
        assert live.is_dir() and being_made.is_dir()
        assert not dead.exists() and not old_unlocked.exists()
    with scratch_dir(root) as mine:  # a new scratch folder sweeps too, and keeps the live one
        assert mine.parent == root and (mine / OWNER_NAME).exists() and live.is_dir()
    assert not mine.exists()


def test_batch_jobs_share_a_folder_but_each_holds_its_own_server(
    tmp_path: Path, holder: Holder
) -> None:
    holder(tmp_path, "server-a")
    with output_lock(tmp_path, unit="server-b"):
        pass
    with pytest.raises(OutputFolderBusy, match="pid"), output_lock(tmp_path, unit="server-a"):
        pass
    with pytest.raises(OutputFolderBusy, match="batch jobs"), output_lock(tmp_path):
        pass


def test_a_run_nested_in_one_process_takes_its_own_folder_again(tmp_path: Path) -> None:
    with output_lock(tmp_path), output_lock(tmp_path):
        pass
    with output_lock(tmp_path):  # and lets go of it at the end
        pass


def test_inferx_bench_into_a_held_folder_exits_2_and_leaves_its_points(
    tmp_path: Path, holder: Holder, capsys: pytest.CaptureFixture[str]
) -> None:
    point = tmp_path / "m-completions-isl8-osl4-c1.json"
    point.write_text('{"the": "first run\'s point"}')
    holder(tmp_path)
    flags = ["--model", "m", "--num-prompts", "2", "--isl", "8", "--osl", "4"]
    code = main(["bench", "--base-url", "http://127.0.0.1:9", "--output", str(tmp_path), *flags])
    err = capsys.readouterr().err
    assert code == 2 and "in use by another InferX run" in err and "Traceback" not in err
    assert point.read_text() == '{"the": "first run\'s point"}'


@pytest.mark.parametrize("resume", [False, True])
def test_inferx_run_into_a_held_folder_refuses_before_any_engine(
    tmp_path: Path, holder: Holder, resume: bool
) -> None:
    holder(tmp_path)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    cfg = RunConfig.model_validate({"engine": "fake", "model": "m"})
    with pytest.raises(OutputFolderBusy):
        run_configs([cfg], pm=pm, platform=Platform(), output_dir=tmp_path, resume=resume)
    assert not (tmp_path / "servers").exists()  # nothing launched, nothing written
