"""What each probe reached is written in the search summary (verifier finding F5, issue 38
item 1): a "held" verdict can be checked from the files, not only read in a reason."""

from __future__ import annotations

import json
from pathlib import Path

from inferx_core.cli.app import main
from inferx_core.metrics.search_held import MIN_HELD_SHARE
from inferx_core.testing import ServerProcess

LENIENT = {"max_loop_lag_p95_ms": 1000, "max_client_cpu_fraction": 1.0}


def test_every_judged_probe_writes_what_it_reached(tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = tmp_path / "bench.json"
    search = {"over": "concurrency", "slo": {"ttft_ms": 50}, "max": 8}
    config.write_text(json.dumps({"base_url": "", "validity": LENIENT, "search": search}))
    with ServerProcess(ttft_ms=5, itl_ms=20, max_concurrent=3) as server:
        data = json.loads(config.read_text()) | {"base_url": server.base_url}
        config.write_text(json.dumps(data))
        argv = [
            *("bench", str(config), "--isl", "16", "--osl", "6", "--num-prompts", "8"),
            *("--no-telemetry", "--no-progress", "--output", str(out)),
        ]
        assert main(argv) in (0, 1)
    [path] = (out / "search").glob("*.json")
    summary = json.loads(path.read_text())
    judged = [p for p in summary["probes"] if p["state"] in ("pass", "fail")]
    assert judged, summary
    for probe in judged:
        assert probe["reached"] and len(probe["reached"]) <= probe["runs"], probe
        for run in probe["reached"]:
            keys = {"requests", "peak_in_flight", "mean_in_flight", "achieved_rate"}
            assert keys <= set(run), run
            if probe["state"] == "pass":  # a pass was held: the file shows it
                assert run["peak_in_flight"] >= probe["level"]
                assert run["mean_in_flight"] >= MIN_HELD_SHARE * probe["level"]
