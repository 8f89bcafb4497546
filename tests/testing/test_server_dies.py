"""The scripted server's ``die_after`` dies as a real server does (FIXER-2 item 2,
verifier F9's second half): the listener closes and every connection it had accepted
is reset. Before, an accepted connection was left open, so a search against it hung
until the default 300 s first-token timeout. The search here runs with the default
timeout in a subprocess: it must end (the generous deadline is a hang guard, not a
timing assertion) and say the server went away, never that a level failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scripted_search import OPEN_VALIDITY

from inferx_core.testing import ServerProcess

HANG_GUARD_S = 240  # the hang it guards against lasted 300 s per request


def test_a_search_against_a_server_that_dies_ends_with_the_server_gone(tmp_path: Path) -> None:
    out, config = tmp_path / "out", tmp_path / "bench.json"
    # c1 (1 warmup + 4) and c2 (2 + 8) are served: it dies on the first request of c4.
    # A 1 s limit and the client-side checks opened: a loaded machine fails nothing.
    with ServerProcess(ttft_ms=5, itl_ms=2, die_after=15) as server:
        config.write_text(json.dumps({"base_url": server.base_url, "validity": OPEN_VALIDITY}))
        argv = [
            *(sys.executable, "-m", "inferx_core.cli", "bench", str(config)),
            *("--isl", "32", "--osl", "8", "--num-prompts", "4", "--search", "concurrency"),
            *("--slo", "ttft_ms=1000", "--output", str(out), "--no-telemetry", "--no-progress"),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    [summary_path] = (out / "search").glob("*.json")
    summary = json.loads(summary_path.read_text())
    probes = summary["probes"]
    assert all(p["state"] != "fail" for p in probes), probes  # a crash is no fail
    gone = [p for p in probes if "the server stopped answering" in (p["reason"] or "")]
    assert gone and all(p["state"] == "unknown" for p in gone), probes
    assert summary["status"] != "found" and summary["first_fail"] is None, summary
    assert [p["level"] for p in probes if p["state"] == "pass"] == [1.0, 2.0], probes
