"""`make demo`'s two lanes (scripts/demo-lanes), with fakes for the build, the install and inferx.

The fakes hand off through files, so the order is proven without timing: the fake
build cannot finish before the vLLM lane has started (the demo measures while
llama.cpp compiles), nor before the demo has printed its compile progress; the
fake inferx writes down whether the build was done when each lane started.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "demo-lanes"

# Waits (bounded) for a file, then goes on; the bound only stops a broken test hanging.
WAIT_FOR = "for _ in $(seq 600); do {cond} && break; sleep 0.1; done; {cond} || exit 9"

FAKE_BUILD = f"""#!/bin/sh
echo $$ > "$W/build.pid"
{WAIT_FOR.format(cond='[ -f "$W/vllm-started" ]')}
echo "[1/3] Building CXX object ggml.c.o"
echo "[2/3] Building CXX object llama.cpp.o"
[ -n "$FAKE_BUILD_HANG" ] && {{ sleep 60; exit 9; }}
{WAIT_FOR.format(cond='grep -q "] llama-server: compiling 2/3 (66%)" "$W/out"')}
[ -n "$FAKE_BUILD_FAIL" ] && {{ echo "c++: fatal error: killed"; exit 2; }}
echo "[3/3] Linking CXX executable bin/llama-server"
echo "llama-server 0.3.36: /cache/llama-server (12M, 1 s)"
touch "$W/build-done"
"""

FAKE_INFERX = """#!/bin/sh
done=no; [ -f "$W/build-done" ] && done=yes
echo "$* build-done=$done" >> "$W/calls"
case "$*" in *"--engines vllm"*) touch "$W/vllm-started" ;; esac
"""


def _tool(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def start(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[bytes], Path]:
    out = tmp_path / "out"
    fakes = {
        "W": str(tmp_path),
        "DEMO_BUILD": _tool(tmp_path / "build", FAKE_BUILD),
        "DEMO_PREPARE": "true",
        "DEMO_INFERX": _tool(tmp_path / "inferx", FAKE_INFERX),
        "DEMO_OUTPUT": str(tmp_path / "results"),
        "DEMO_PROGRESS_S": "0.1",
        "DEMO_ENV": "INFERX_DISABLE_PLUGINS=example-tpu",
    }
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [str(SCRIPT)], cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT,
            env={**os.environ, **fakes, **env},
        )  # fmt: skip
    return proc, out


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls").read_text().splitlines()


def test_the_vllm_lane_measures_while_llama_server_builds(tmp_path: Path) -> None:
    proc, out = start(tmp_path)
    assert proc.wait(timeout=120) == 0, out.read_text()
    text = out.read_text()
    assert calls(tmp_path) == [
        "doctor build-done=no",
        f"demo --engines vllm --output {tmp_path / 'results'} build-done=no",
        f"demo --engines llamacpp --output {tmp_path / 'results'} build-done=yes",
        f"report {tmp_path / 'results'} --output {tmp_path / 'results' / 'report'} build-done=yes",
        f"compare {tmp_path / 'results' / 'vllm'} {tmp_path / 'results' / 'llamacpp'} "
        "build-done=yes",
    ]
    # the build's own output goes to its log, not between the lanes' lines
    log = (tmp_path / "results" / "llama-server-build.log").read_text()
    assert "[3/3] Linking" in log and "[3/3]" not in text
    # a line per stage, each with the elapsed time
    stages = [line for line in text.splitlines() if line.startswith("demo [")]
    assert all(re.match(r"demo \[ ?\d+:\d\d\] ", line) for line in stages)
    words = [re.sub(r"^demo \[[ \d:]+\] ", "", line) for line in stages]
    assert words[0].startswith("llama-server: build started in the background, niced")
    assert "llama-server: compiling 2/3 (66%)" in words
    assert "vllm lane: measuring (while llama-server builds)" in words
    assert "llama-server: built (llama-server 0.3.36: /cache/llama-server (12M, 1 s))" in words
    assert words.index("vllm lane: done (exit 0)") < words.index("llama.cpp lane: measuring")
    assert words[-1] == "done"


def test_a_failed_build_keeps_the_vllm_results_and_says_so(tmp_path: Path) -> None:
    proc, out = start(tmp_path, FAKE_BUILD_FAIL="1")
    assert proc.wait(timeout=120) == 1
    text = out.read_text()
    assert "llama-server: the build failed (exit 2); its log's end:" in text
    assert "c++: fatal error: killed" in text  # the log's tail, shown
    assert f"the vLLM lane's results stay in {tmp_path / 'results'}/vllm" in text
    assert [c.split()[:3] for c in calls(tmp_path)] == [
        ["doctor", "build-done=no"], ["demo", "--engines", "vllm"],
    ]  # fmt: skip


def test_an_interrupted_demo_ends_the_build_it_started(tmp_path: Path) -> None:
    proc, out = start(tmp_path, FAKE_BUILD_HANG="1")
    try:
        deadline = time.monotonic() + 60
        while "waiting for the llama-server build" not in out.read_text():
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.1)
        build = int((tmp_path / "build.pid").read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 130
        assert "interrupted" in out.read_text()
        deadline = time.monotonic() + 30
        while _alive(build):
            assert time.monotonic() < deadline, "the build outlived the demo"
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize("line", ["demo:", "\tMAKE='$(MAKE)' BIN='$(BIN)' DEMO_ENV='$(DEMO_ENV)'"])
def test_make_demo_runs_the_lanes(line: str) -> None:
    assert line in (ROOT / "Makefile").read_text()


def test_a_failed_install_stops_the_build_and_runs_nothing(tmp_path: Path) -> None:
    proc, out = start(tmp_path, DEMO_PREPARE="false")
    assert proc.wait(timeout=60) == 1
    assert "the install failed (above); the llama-server build stopped too" in out.read_text()
    assert not (tmp_path / "calls").exists()  # no inferx command ran
    build = int((tmp_path / "build.pid").read_text()) if (tmp_path / "build.pid").exists() else 0
    deadline = time.monotonic() + 30
    while build and _alive(build):
        assert time.monotonic() < deadline, "the build outlived the demo"
        time.sleep(0.1)
