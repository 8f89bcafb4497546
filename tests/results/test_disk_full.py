"""A full disk or an unwritable folder: a clear error, no half-written point, earlier points intact.

The failure is injected where the bytes go (``os.fsync`` of the temporary
file raising ENOSPC for one point), as a full disk would; an unwritable
output folder is a real read-only directory.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import fake_engine
import pytest

from inferx_core.cli.app import main
from inferx_core.config.models import RunConfig
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import ResultWriteError, read_result, write_json_atomic
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.testing import ServerProcess


@pytest.fixture(scope="module")
def server():
    with ServerProcess() as srv:
        yield srv


def fill_disk_for(monkeypatch: pytest.MonkeyPatch, marker: str, after: int = 0) -> None:
    """ENOSPC when a temporary file whose name holds ``marker`` is flushed (after N ok)."""
    real = os.fsync
    seen = {"n": 0}

    def fsync(fd: int) -> None:
        if marker in os.readlink(f"/proc/self/fd/{fd}"):
            seen["n"] += 1
            if seen["n"] > after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def bench_argv(server: ServerProcess, out: Path) -> list[str]:
    return ["bench", "--base-url", server.base_url, "--concurrency", "1,2", "--isl", "8",
            "--osl", "2", "--num-prompts", "2", "--no-progress", "--no-telemetry",
            "--output", str(out)]  # fmt: skip


@pytest.mark.parametrize("which", [".requests.jsonl", "-c2.json"])
def test_disk_full_on_point_2_exits_2_and_leaves_point_1_whole(
    server: ServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], which: str,
) -> None:  # fmt: skip
    # the sidecar (big) or the result (small) of point 2 hits the full disk
    fill_disk_for(monkeypatch, which, after=1 if which.startswith(".") else 0)
    assert main(bench_argv(server, tmp_path)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "No space left on device (errno 28)" in err and "--output" in err
    names = sorted(p.name for p in tmp_path.iterdir())
    # point 1: result and sidecar; point 2: nothing at all (no sidecar without a result)
    assert [n for n in names if "-c2" in n] == []
    assert [n for n in names if n.startswith(".")] == []  # no temporary leftovers
    [point_1] = [n for n in names if n.endswith("-c1.json")]
    assert read_result(tmp_path / point_1).status in ("ok", "invalid")
    assert point_1.removesuffix(".json") + ".requests.jsonl" in names


def test_unwritable_output_folder_is_a_clear_error(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if os.geteuid() == 0:
        # root writes anyway: a file where the folder should be is unwritable for everyone
        out = tmp_path / "taken"
        out.write_text("not a folder")
    else:
        out = tmp_path / "ro"
        out.mkdir()
        out.chmod(stat.S_IRUSR | stat.S_IXUSR)
    assert main(bench_argv(server, out / "results")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "cannot write" in err


def test_inferx_run_stops_at_a_full_disk_and_stops_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = RunConfig.model_validate({
        "engine": "fake", "model": "m", "plugin_options": {"mode": "ok"},
        "readiness_timeout_s": 30, "stop_grace_s": 5, "workload": {"isl": 8, "osl": 2},
        "load": {"concurrency": [1, 2, 4], "num_prompts": 2},
    })  # fmt: skip
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    fill_disk_for(monkeypatch, "-c2.json")
    with pytest.raises(ResultWriteError, match="No space left"):
        run_configs([cfg], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False)
    results = sorted(p.name for p in tmp_path.glob("*.json"))
    assert len(results) == 1 and results[0].endswith("-c1.json")  # point 3 never started
    assert not list(tmp_path.glob(".*.tmp"))


def test_atomic_writer_leaves_nothing_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "x.json"
    write_json_atomic(target, {"old": True})
    fill_disk_for(monkeypatch, "x.json")
    with pytest.raises(ResultWriteError):
        write_json_atomic(target, {"new": True})
    assert target.read_text().strip() == '{\n  "old": true\n}'  # the old file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
