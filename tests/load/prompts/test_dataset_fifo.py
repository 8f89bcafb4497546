"""A FIFO (or any non-regular file) given as ``--dataset`` is refused, never read: opening a
FIFO for reading waits for a writer, and a run waited forever (issue 39, the reliability
suite). Run as a user would, in a subprocess with a deadline, so a hang fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferx_core.load.prompts.dataset import DatasetError
from inferx_core.load.prompts.dataset_formats import load_dataset


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl"
    os.mkfifo(path)
    return path


def test_bench_refuses_a_fifo_dataset_before_any_load(fifo: Path, tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "inferx_core.cli", "bench", "--base-url", "http://127.0.0.1:9",
        "--no-progress", "--no-telemetry", "--dataset", str(fifo), "--output", str(tmp_path / "o"),
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("inferx bench --dataset FIFO hung instead of refusing the file")
    assert done.returncode == 2, done.stderr
    assert str(fifo) in done.stderr and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "o").rglob("*.json"))  # nothing was measured or written


@pytest.mark.parametrize("name", ["prompts.jsonl", "prompts.json", "prompts.parquet"])
def test_every_format_refuses_a_fifo_without_opening_it(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    os.mkfifo(path)
    with pytest.raises(DatasetError, match="not a regular file"):
        load_dataset(path)
