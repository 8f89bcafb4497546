"""The examples keep working: they are what embedding users copy."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_embed_in_pipeline_runs_and_reports_both_points() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "embed_in_pipeline.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    for line, conc in zip(lines, ("c1", "c8"), strict=True):
        assert conc in line and ": 16 ok," in line
        ttft = float(re.search(r"TTFT p50 ([\d.]+) ms", line).group(1))
        assert 30 <= ttft < 60  # the server's injected 30 ms, measured
