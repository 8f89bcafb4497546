"""One definition of tok/s/gpu in `inferx run` and `inferx report`, and the report table's
requests, failed, validity, TTFT p99 and engine version columns (issue 19)."""

from __future__ import annotations

import io

from result_factory import make_model
from rich.console import Console

from inferx_core.analysis.points import build_rows
from inferx_core.report.console import ASSUMED_GPUS_NOTE, per_gpu_cell, print_summary
from inferx_core.tables.points import SUMMARY_COLUMNS, cell, print_table


def _text(render, *args) -> str:
    out = io.StringIO()
    render(*args, console=Console(file=out, width=400))
    return out.getvalue()


def test_run_table_per_gpu_matches_the_report_when_the_gpu_count_is_assumed() -> None:
    unknown = make_model("a", tput_per_gpu=700.0, num_gpus=None)
    assert unknown.metric("tput_per_gpu") is None  # the result itself has no per-GPU figure
    (row,) = build_rows([unknown])
    assert per_gpu_cell(unknown) == f"{cell(row, 'tput_per_gpu', ',.1f')}*"
    assert per_gpu_cell(unknown) == "700.0*"
    text = _text(print_summary, [unknown])
    assert "700.0*" in text and ASSUMED_GPUS_NOTE.split(";")[0] in " ".join(text.split())


def test_run_table_per_gpu_is_the_results_own_when_counted() -> None:
    counted = make_model("b", tput_per_gpu=350.0, num_gpus=2)
    assert per_gpu_cell(counted) == "350.0"
    assert "assumed" not in _text(print_summary, [counted])


def test_report_table_has_counts_validity_p99_and_engine_version() -> None:
    headers = [h for h, _, _ in SUMMARY_COLUMNS]
    for header in ("ok", "failed", "valid", "TTFT p99 ms", "engine"):
        assert header in headers
    (row,) = build_rows([make_model("c", completed=90)])
    row = {
        **row,
        "engine_version": "0.11.0",
        "failed": 3,
        "valid": False,
        "validity_failing": "chunk_coalescing",
    }
    assert cell(row, "engine", "engine") == "vllm 0.11.0"
    assert cell(row, "completed", "d") == "90" and cell(row, "failed", "d") == "3"
    assert cell(row, "valid", "valid") == "no: chunk_coalescing"
    assert cell({**row, "valid": True}, "valid", "valid") == "yes"
    assert cell({**row, "valid": None}, "valid", "valid") == "-"
    assert cell(row, "p99_ttft_ms", ",.1f") != "-"
    text = _text(print_table, [row])
    assert "vllm 0.11.0" in text and "no: chunk_coalescing" in text
