"""``inferx bench --search ... --slo ...`` and the buyer's table in ``inferx report``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_core.cli.app import main
from inferx_core.testing import ServerProcess


def _bench(url: str, out: Path, *more: str) -> list[str]:
    return ["bench", "--base-url", url, "--isl", "16", "--osl", "6", "--num-prompts", "16",
            "--no-telemetry", "--no-progress", "--output", str(out), *more]  # fmt: skip


def test_bench_search_answers_and_report_ranks(tmp_path: Path, capsys) -> None:
    with ServerProcess(max_concurrent=3, ttft_ms=5, itl_ms=20) as server:
        argv = _bench(server.base_url, tmp_path, "--search", "concurrency", "--slo", "ttft_ms=50")
        assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["capacity"] == 3 and summary["status"] == "found"
    assert summary["slo"] == "concurrency, 0.99 of requests: ttft_ms<=50"
    assert main(["report", str(tmp_path), "--no-plots", "--gpu-type", "H100"]) == 0
    out = capsys.readouterr().out
    assert "Capacity at SLO" in out and summary["search_id"][:20] in out


@pytest.mark.parametrize(
    ("slo", "needle"),
    [("ttfb_ms=5", "unknown SLO 'ttfb_ms'"), ("goodput=0.9", "goodput needs per-request")],
)
def test_bad_search_flags_are_one_line_errors(
    slo: str, needle: str, tmp_path: Path, capsys
) -> None:
    argv = _bench("http://127.0.0.1:9", tmp_path, "--search", "rate", "--slo", slo)
    assert main(argv) == 2
    assert needle in capsys.readouterr().err
