"""``inferx bench --search ... --slo ...`` and the buyer's table in ``inferx report``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_search import OPEN_VALIDITY, SERVER, SLO_FLAG, TTFT_LIMIT_MS

from inferx_core.cli.app import main
from inferx_core.testing import ServerProcess


def _bench(url: str, out: Path, *more: str) -> list[str]:
    return ["bench", "--base-url", url, "--isl", "16", "--osl", "6", "--num-prompts", "16",
            "--no-telemetry", "--no-progress", "--output", str(out), *more]  # fmt: skip


def test_bench_search_answers_and_report_ranks(tmp_path: Path, capsys) -> None:
    config, out = tmp_path / "bench.json", tmp_path / "out"
    with ServerProcess(max_concurrent=3, **SERVER) as server:
        # the scripted margins and the opened client checks: tests/scripted_search.py
        config.write_text(json.dumps({"base_url": server.base_url, "validity": OPEN_VALIDITY}))
        argv = _bench(server.base_url, out, "--search", "concurrency", "--slo", SLO_FLAG)
        argv.append(str(config))
        assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["capacity"] == 3 and summary["status"] == "found"
    assert summary["slo"] == f"concurrency, 0.99 of requests: ttft_ms<={TTFT_LIMIT_MS}"
    assert main(["report", str(out), "--no-plots", "--gpu-type", "H100"]) == 0
    printed = capsys.readouterr().out
    assert "Capacity at SLO" in printed and summary["search_id"][:20] in printed


def test_bench_search_json_answers_cost_and_tokens_per_mw_at_capacity(
    tmp_path: Path, capsys
) -> None:
    """The buyer's figures in --json, as the report's table has them: cost per million
    tokens and tokens per MW at the capacity probe, with where their inputs came from."""
    config = tmp_path / "bench.json"
    with ServerProcess(max_concurrent=2, **SERVER) as server:
        cost = {"usd_per_gpu_hour": 2.0, "kw_per_gpu": 1.0}
        # the scripted margins and the opened client checks: tests/scripted_search.py
        config.write_text(
            json.dumps({"base_url": server.base_url, "cost": cost, "validity": OPEN_VALIDITY})
        )
        argv = _bench(server.base_url, tmp_path / "out", "--search", "concurrency",
                      "--slo", SLO_FLAG, "--num-gpus", "1", "--json", str(config))  # fmt: skip
        assert main(argv) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["capacity"] == 2 and answer["cost_at_capacity_reason"] is None
    cost = answer["cost_at_capacity"]
    tput = cost["tput_per_gpu"]
    assert tput > 0 and cost["num_gpus"] == 1
    # $2 per GPU-hour over tput tokens/s per GPU: dollars per million tokens
    assert cost["cost_per_mtok_total"] == pytest.approx(2.0 / (tput * 3600) * 1e6)
    assert cost["tok_s_per_mw_provisioned"] == pytest.approx(tput * 1000)


@pytest.mark.parametrize(
    ("slo", "needle"),
    [("ttfb_ms=5", "unknown SLO 'ttfb_ms'"), ("goodput=0.9", "goodput needs per-request")],
)
def test_bad_search_flags_are_one_line_errors(
    slo: str, needle: str, tmp_path: Path, capsys
) -> None:
    argv = _bench("http://127.0.0.1:9", tmp_path, "--search", "rate", "--slo", slo)
    try:
        code = main(argv)
    except SystemExit as exited:  # a key no SLO has: refused by the --slo parser itself
        code = exited.code
    assert code == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize(
    ("slo", "needle"),
    [
        ("p100_ttft_ms=5", "the percentile must be in (0, 100), got 100"),
        ("p101_e2el_ms=5", "the percentile must be in (0, 100), got 101"),
        ("ttft_ms=500,ttft_ms=50", "ttft_ms is given twice (500 and 50); give it once"),
    ],
)
def test_slo_keys_are_checked_before_any_load(slo: str, needle: str, tmp_path: Path, capsys):
    """Before: p100_/p101_ keys raised a traceback after the first probe had sent load, and
    a key given twice kept the last silently. Now argparse refuses them (nothing listens on
    port 9: an error about the server would mean the check came too late)."""
    argv = _bench("http://127.0.0.1:9", tmp_path, "--search", "concurrency", "--slo", slo)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and not (tmp_path / "search").exists()


def test_slo_on_the_command_line_fills_the_config_search_before_validation(
    tmp_path: Path, capsys
) -> None:
    config = tmp_path / "bench.yaml"
    config.write_text("base_url: http://127.0.0.1:9\nsearch: {over: concurrency, max: 8}\n")
    argv = _bench("http://127.0.0.1:9", tmp_path / "out", "--slo", "ttft_ms=50")
    assert main([argv[0], str(config), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert "search.slo" not in err  # the flag filled it: the config is valid
    assert "http://127.0.0.1:9" in err  # ... and only the absent server stopped it


def test_bench_slo_without_a_search_is_the_points_goodput_target(tmp_path: Path, capsys) -> None:
    """--slo without --search fills the config's slo: (one SloTarget): the written result
    counts goodput by its per-request limits (intvty as TPOT); a limit that judges a load
    level is refused before any load, naming where it goes."""
    with ServerProcess(max_concurrent=2, ttft_ms=5, itl_ms=5) as server:
        argv = _bench(server.base_url, tmp_path, "--concurrency", "2", "--slo",
                      "ttft_ms=60000,intvty=0.5")  # fmt: skip
        assert main(argv) == 0
        refused = _bench(server.base_url, tmp_path / "no", "--slo", "p99_ttft_ms=500")
        assert main(refused) == 2
    assert "p99_ttft_ms judges a load level" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    (written,) = [p for p in tmp_path.glob("*.json")]
    result = json.loads(written.read_text())
    assert result["load"]["slo"] == {"ttft_ms": 60000, "tpot_ms": 2000.0}
    # every request meets limits this loose: goodput is the request throughput
    goodput = result["throughput"]["request_goodput"]
    assert goodput == pytest.approx(result["throughput"]["request_throughput"])
