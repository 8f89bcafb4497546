"""A FIFO (or any non-regular file) given as ``--trace`` is refused, never opened, as
``--dataset`` already is (issue 39 item 10; verifier finding F4,
/work/notes/s3/verify_findings.md): opening a FIFO for reading waits for a writer, and
``inferx bench --trace FIFO`` waited forever in open(). Run as a user would, in a
subprocess with a deadline, so a hang fails the test. The multi-turn session trace's
reader (load/prompts/session_trace.py) read its file the same way: checked too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_bench_refuses_a_fifo_trace_before_any_load(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    argv = [
        sys.executable, "-m", "inferx_core.cli", "bench", "--base-url", "http://127.0.0.1:9",
        "--no-progress", "--no-telemetry", "--trace", str(fifo), "--trace-format", "mooncake",
        "--output", str(tmp_path / "o"),
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("inferx bench --trace FIFO hung instead of refusing the file")
    assert done.returncode == 2, done.stderr
    assert str(fifo) in done.stderr and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_fifo_session_trace_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "sessions.jsonl"
    os.mkfifo(fifo)
    code = (
        "import sys\n"
        "from inferx_core.load.prompts.session_trace import SessionTraceError, read_session_trace\n"
        "try:\n    read_session_trace(sys.argv[1])\n"
        "except SessionTraceError as exc:\n    print(exc)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading a FIFO session trace hung instead of refusing the file")
    assert "not a regular file" in done.stdout and str(fifo) in done.stdout, done.stderr
