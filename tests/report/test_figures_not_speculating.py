"""A server that does not speculate but publishes the speculative counters (llama-server,
vLLM: at 0 from the start) gets no "speculative: ... drafts 0" line under the bench table,
and its written result holds the counts as null with the reason (FIXER-3 item 4): a figure
that does not apply is never a 0 read as a measurement. Asserted on a real bench run's
console and written result against the scripted server, whose /metrics publishes vLLM's
counters at 0 when it drafts nothing."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

from result_factory import make_model

from inferx_core.cli.app import main
from inferx_core.report.figures import figure_lines
from inferx_core.telemetry.model import CpuEnergy, GpuPower, TelemetrySection
from inferx_core.testing import SSETestServer

COUNTS = ("drafts", "draft_tokens", "accepted_tokens")


def test_a_server_that_drafts_nothing_prints_no_line_and_writes_null_counts(
    tmp_path: Path,
) -> None:
    config = tmp_path / "bench.json"
    printed = io.StringIO()
    with SSETestServer(itl_ms=2) as server:  # spec_tokens 0: the counters stay at 0
        config.write_text(json.dumps({
            "base_url": server.base_url,
            "workload": {"api": "chat", "isl": 16, "osl": 8},
            "load": {"concurrency": [2], "num_prompts": 6, "warmup": 0},
            "telemetry_intervals": {"engine_metrics": 0.05},
        }))  # fmt: skip
        argv = ["bench", str(config), "--engine", "vllm", "--no-progress"]
        with contextlib.redirect_stdout(printed):
            assert main([*argv, "--output", str(tmp_path / "out")]) == 0
    console = printed.getvalue()
    assert "speculative:" not in console and not re.search(r"drafts \d", console), console
    [path] = (tmp_path / "out").glob("*.json")
    flat = json.loads(path.read_text())
    window = flat["telemetry"]["engine_metrics"]["spec_decode"]
    assert all(window[c] is None for c in COUNTS), window
    assert window["mean_acceptance_length"] is None and window["acceptance_rate"] is None
    assert "speculative decoding did not run" in window["why"]
    assert window["out_of_bounds"] == {}  # not impossible: it does not apply


def _line(window: dict) -> list[str]:
    telemetry = TelemetrySection(
        gpu=GpuPower(power_valid=False, power_source="none"),
        cpu=CpuEnergy(cpu_energy_scope="package", cpu_energy_source="none"),
        engine_metrics={"spec_decode": window},
    )
    return figure_lines(make_model("p").model_copy(update={"telemetry": telemetry}))


def test_a_result_written_before_with_drafts_0_prints_no_line_either() -> None:
    old = {"source": "counters", "acceptance_rate": None, "mean_acceptance_length": None,
           "acceptance_per_position": [], "drafts": 0.0, "draft_tokens": 0.0,
           "accepted_tokens": 0.0, "why": "no drafts", "out_of_bounds": {}}  # fmt: skip
    assert _line(old) == []
    rejected = {**old, "acceptance_rate": 0.0, "mean_acceptance_length": 1.0, "drafts": 12.0,
                "draft_tokens": 36.0, "why": None}  # fmt: skip
    (line,) = _line(rejected)  # every draft rejected is a figure: 0% is printed
    assert "acceptance rate 0.0%" in line and "drafts 12" in line
