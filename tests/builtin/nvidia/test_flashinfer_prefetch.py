"""The FlashInfer prefetch wrapper, run for real against a fake ``flashinfer`` package.

The fake package has distribution metadata (so the wrapper reads its version
the way it reads the real one) and a ``__main__`` that records each
``--download-cubin`` call and takes a moment, so concurrent starts would
overlap if the lock did not serialize them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from inferx_core.builtin.nvidia import flashinfer_prefetch as wrapper
from inferx_core.builtin.nvidia.fixes import prefetch_source

SCRIPT = Path(wrapper.__file__)
FAKE_MAIN = textwrap.dedent(
    """
    import os, sys, time
    assert sys.argv[1:] == ["--download-cubin"], sys.argv
    base = os.environ["FLASHINFER_WORKSPACE_BASE"]
    with open(os.path.join(base, "downloads.log"), "a") as f:
        f.write(f"start {os.getpid()} {time.monotonic()}\\n")
    time.sleep(float(os.environ.get("FAKE_DOWNLOAD_S", "0.3")))
    if os.environ.get("FAKE_DOWNLOAD_FAIL"):
        sys.exit(3)
    with open(os.path.join(base, "downloads.log"), "a") as f:
        f.write(f"end {os.getpid()} {time.monotonic()}\\n")
    """
)


def fake_flashinfer(root: Path, version: str) -> Path:
    site = root / "site"
    (site / "flashinfer").mkdir(parents=True)
    (site / "flashinfer" / "__init__.py").write_text("")
    (site / "flashinfer" / "__main__.py").write_text(FAKE_MAIN)
    meta = site / f"flashinfer_python-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: flashinfer-python\nVersion: {version}\n"
    )
    return site


def run(
    tmp_path: Path, version: str | None, *, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLASHINFER")}
    env["FLASHINFER_WORKSPACE_BASE"] = str(tmp_path / "cache")
    if version is not None:
        site = tmp_path / "site"
        if not site.exists():
            fake_flashinfer(tmp_path, version)
        env["PYTHONPATH"] = str(site)
    env.update(extra_env or {})
    engine = [sys.executable, "-c", "import os; print('ENGINE', os.getpid(), flush=True)"]
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), "--timeout", "30", "--", *engine],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out, err


def downloads(tmp_path: Path) -> list[str]:
    log = tmp_path / "cache" / "downloads.log"
    return log.read_text().splitlines() if log.exists() else []


def test_fills_once_then_execs_the_engine_in_the_same_process(tmp_path: Path) -> None:
    proc = run(tmp_path, "0.3.1")
    out, err = finish(proc)
    assert out.strip() == f"ENGINE {proc.pid}"  # exec: the engine is the wrapper's process
    assert "filling" in err and "cache filled" in err
    assert [line.split()[0] for line in downloads(tmp_path)] == ["start", "end"]
    assert (tmp_path / "cache" / ".inferx-flashinfer-prefetched-0.3.1").is_file()
    out, err = finish(run(tmp_path, "0.3.1"))
    assert "already filled for FlashInfer 0.3.1" in err
    assert len(downloads(tmp_path)) == 2  # no second download


def test_concurrent_starts_download_once(tmp_path: Path) -> None:
    fake_flashinfer(tmp_path, "0.3.1")
    procs = [run(tmp_path, "0.3.1", extra_env={"FAKE_DOWNLOAD_S": "1.0"}) for _ in range(4)]
    errs = [finish(p)[1] for p in procs]
    assert [line.split()[0] for line in downloads(tmp_path)] == ["start", "end"]
    assert sum("cache filled in" in e for e in errs) == 1
    assert sum("while waiting" in e or "already filled" in e for e in errs) == 3


def test_fixed_flashinfer_needs_no_prefetch(tmp_path: Path) -> None:
    _, err = finish(run(tmp_path, "0.4.1"))
    assert "has the download-lock fix; no prefetch needed" in err
    assert downloads(tmp_path) == []


def test_no_flashinfer_or_no_download_still_starts_the_engine(tmp_path: Path) -> None:
    out, err = finish(run(tmp_path, None))
    assert "ENGINE" in out and "FlashInfer is not installed" in err
    out, err = finish(run(tmp_path, "0.3.1", extra_env={"FLASHINFER_NO_DOWNLOAD": "1"}))
    assert "ENGINE" in out and "downloads are off" in err


def test_failed_download_leaves_no_marker_and_starts_the_engine(tmp_path: Path) -> None:
    out, err = finish(run(tmp_path, "0.3.1", extra_env={"FAKE_DOWNLOAD_FAIL": "1"}))
    assert "ENGINE" in out and "the download failed" in err
    assert not (tmp_path / "cache" / ".inferx-flashinfer-prefetched-0.3.1").exists()


def test_usage_errors_exit_2() -> None:
    assert wrapper.main(["--timeout", "3"]) == 2
    assert wrapper.main(["--"]) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.3.1", (0, 3, 1)), ("0.2.14.post1", (0, 2, 14)), ("0.4.0rc1", (0, 4, 0)), ("x", ())],
)
def test_version_tuple(text: str, expected: tuple[int, ...]) -> None:
    assert wrapper.version_tuple(text) == expected


def test_engine_python_from_a_console_script_shebang(tmp_path: Path) -> None:
    script = tmp_path / "vllm"
    script.write_text(f"#!{sys.executable}\nprint('hi')\n")
    script.chmod(0o755)
    assert wrapper.engine_python(str(script)) == sys.executable
    env_script = tmp_path / "sglang-tool"
    env_script.write_text("#!/usr/bin/env python3\n")
    env_script.chmod(0o755)
    assert os.path.basename(wrapper.engine_python(str(env_script))).startswith("python3")
    assert wrapper.engine_python(sys.executable) == sys.executable


def test_the_fix_ships_this_very_source() -> None:
    assert prefetch_source() == SCRIPT.read_text()
