"""Reasoning and speculative figures in what people read: ``inferx report``'s table (terminal
and report.html) and the lines under ``inferx bench``'s table, from the written files of
a real run against a scripted reasoning model with vLLM's speculative counters."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from result_factory import make_model

from inferx_core.cli.app import main
from inferx_core.report.figures import figure_lines
from inferx_core.results.read import load_results
from inferx_core.tables.points import OPTIONAL_COLUMNS, summary_columns
from inferx_core.telemetry.model import CpuEnergy, GpuPower, TelemetrySection
from inferx_core.testing import SSETestServer


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("figures")
    with SSETestServer(spec_tokens=3, tokens_per_chunk=2, itl_ms=2, reasoning_tokens=6) as s:
        config = tmp / "bench.json"
        config.write_text(json.dumps({
            "base_url": s.base_url,
            "speculative": {"method": "ngram", "num_speculative_tokens": 3},
            "workload": {"api": "chat", "isl": 16, "osl": 24},
            "load": {"concurrency": [2], "num_prompts": 6, "warmup": 0},
            "telemetry_intervals": {"engine_metrics": 0.05},
        }))  # fmt: skip
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main(["bench", str(config), "--engine", "vllm", "--no-progress",
                         "--output", str(tmp / "out")]) == 0  # fmt: skip
    return tmp / "out", printed.getvalue()


def test_bench_prints_the_reasoning_and_speculative_lines(run: tuple[Path, str]) -> None:
    _, printed = run
    assert re.search(r"reasoning: 6 requests, \d+ reasoning tokens; TTFO p50 [\d.]+", printed)
    assert re.search(r"speculative: mean acceptance length [12]\.\d+, acceptance rate", printed)


def test_the_report_shows_the_columns_only_points_that_have_them(
    run: tuple[Path, str], tmp_path: Path, capsys: Any
) -> None:
    out, _ = run
    assert main(["report", str(out), "--no-plots", "--output", str(tmp_path / "r")]) == 0
    terminal = capsys.readouterr().out
    page = html.unescape((tmp_path / "r" / "report.html").read_text())
    (result,) = load_results([out]).results
    ttfo = result.flat()["median_ttfo_ms"]
    for header, field, _ in OPTIONAL_COLUMNS:  # one point: no step between load points
        assert (header in page) is not field.startswith("ttft_layer"), header
    assert f"{ttfo:,.1f}" in page and "TTFO" in terminal
    plain = [{"median_e2el_ms": 1.0}]
    assert all(c not in summary_columns(plain) for c in OPTIONAL_COLUMNS)


def test_an_out_of_bounds_figure_reads_as_a_dash_and_its_reason() -> None:
    result = make_model("p")
    window = {
        "source": "accept_length_gauge",
        "mean_acceptance_length": None,
        "acceptance_rate": None,
        "drafts": None,
        "out_of_bounds": {"mean_acceptance_length": "-3.5: the length is in [1, 4]"},
    }
    telemetry = TelemetrySection(
        gpu=GpuPower(power_valid=False, power_source="none"),
        cpu=CpuEnergy(cpu_energy_scope="package", cpu_energy_source="none"),
        engine_metrics={"spec_decode": window},
    )
    (line,) = figure_lines(result.model_copy(update={"telemetry": telemetry}))
    assert line.startswith("speculative: mean acceptance length -, acceptance rate -")
    assert line.endswith("out of bounds: mean_acceptance_length -3.5: the length is in [1, 4]")
