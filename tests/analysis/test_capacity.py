"""The buyer's table beyond searches: a plain sweep's points and imported results (issue 29).

A search on a scripted server of capacity 3 gives the SLO; a plain concurrency sweep
of a server of capacity 5 (the scripted server and limit of tests/scripted_search.py:
past K some requests' TTFT includes a whole ~305 ms generation, at or below K it is
~5 ms; the 150 ms limit sits far from both, so a loaded machine moves neither side
across it, and the client-side checks are opened) has no search, yet its
capacity at that SLO is derived from its points: 5, with the pass at 5 and the fail
at 6 as the evidence, judged from the request records where the report has them,
else from each limit's p99. The same points exported as InferenceX aggregates and
brought back by ``inferx import`` give the same answer, marked as imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted_search import OPEN_VALIDITY, SERVER, SLO_FLAG, TTFT_LIMIT_MS

from inferx_core.analysis.buyer import search_rows
from inferx_core.analysis.cost import CostOptions
from inferx_core.cli.app import main
from inferx_core.config.slo import SloTarget
from inferx_core.report import write_report
from inferx_core.results.read import load_results
from inferx_core.testing import ServerProcess

LEVELS = "1,2,4,5,6,8"


def _bench(url: str, out: Path, *more: str) -> list[str]:
    config = out.parent / f"{out.name}.json"  # the opened client-side checks
    config.write_text(json.dumps({"base_url": url, "validity": OPEN_VALIDITY}))
    return [
        *("bench", str(config), "--isl", "16", "--osl", "6", "--num-prompts", "16"),
        *("--no-telemetry", "--no-progress", "--output", str(out), *more),
    ]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("derived")
    with ServerProcess(max_concurrent=3, **SERVER) as server:
        argv = _bench(server.base_url, root / "search", "--name", "searched")
        assert main([*argv, "--search", "concurrency", "--slo", SLO_FLAG]) == 0
    with ServerProcess(max_concurrent=5, **SERVER) as server:
        argv = _bench(server.base_url, root / "sweep", "--name", "swept")
        assert main([*argv, "--concurrency", LEVELS]) == 0
    export = root / "export"
    argv = ["export", str(root / "sweep"), "--format", "inferencex", "--output", str(export)]
    argv += ["--set", "hw=h100", "--set", "framework=vllm", "--set", "precision=fp8"]
    assert main([*argv, "--set", "tp=1"]) == 0
    listing = root / "agg_all.json"  # collect_results.py's list form
    aggregates = [json.loads(p.read_text()) for p in sorted(export.glob("agg_*.json"))]
    listing.write_text(json.dumps(aggregates))
    assert main(["import", str(listing), "--output", str(root / "imported")]) == 0
    return {"search": root / "search", "sweep": root / "sweep", "imported": root / "imported"}


def _by_source(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {row["source"]: row for row in rows}
    assert len(out) == len(rows), rows
    return out


def test_a_plain_sweep_gets_its_capacity_at_the_searched_slo(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    options = CostOptions(num_gpus=1, usd_per_gpu_hour={"*": 2.0})
    files = write_report([folders["search"], folders["sweep"]], tmp_path / "r", options)
    rows = _by_source(files.search)
    assert set(rows) == {"search", "sweep points"}
    searched, swept = rows["search"], rows["sweep points"]
    assert (searched["status"], searched["capacity"]) == ("found", 3)
    assert (swept["status"], swept["capacity"]) == ("found", 5), swept["reason"]
    assert swept["slo"] == f"concurrency, 0.99 of requests: ttft_ms<={TTFT_LIMIT_MS}"
    assert swept["search_id"].startswith("swept-")
    assert "pass 5 (" in swept["evidence"] and "fail 6 (" in swept["evidence"]
    assert "ttft" in swept["binding_slo"]
    # more capacity at the same SLO: cheaper tokens, ranked first
    assert [r["source"] for r in files.search] == ["sweep points", "search"]
    assert swept["cost_per_mtok_total"] < searched["cost_per_mtok_total"]
    page = files.html.read_text()
    assert 'data-source="sweep points"' in page and 'data-source="search"' in page


def test_with_the_result_files_a_point_is_judged_on_its_request_records(
    folders: dict[str, Path],
) -> None:
    loaded = load_results([folders["sweep"]])
    slo = SloTarget(limits={"ttft_ms": TTFT_LIMIT_MS})
    exact = search_rows([], loaded.results, paths=loaded.paths, slos=[slo])
    [row] = exact
    assert (row["capacity"], row["source"]) == (5, "sweep points")
    assert row["evidence"].endswith("judged on request records")
    [proxy] = search_rows([], loaded.results, slos=[slo])  # no files: each limit's p99
    assert proxy["capacity"] == 5 and "p99 per limit" in proxy["evidence"]
    assert search_rows([], loaded.results) == []  # no SLO from a search nor given: no row


def test_imported_inferencex_points_are_ranked_beside_the_search(
    folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    imported = load_results([folders["imported"]]).results
    assert len(imported) == len(LEVELS.split(","))
    assert all(r.provenance.imported_from is not None for r in imported)
    files = write_report([folders["search"], folders["imported"]], tmp_path / "r", plots=False)
    rows = _by_source(files.search)
    row = rows["import"]
    assert (row["status"], row["capacity"]) == ("found", 5), row["reason"]
    assert row["search_id"].startswith("H100 | vllm")
    assert "p99 per limit (no request records)" in row["evidence"]
    assert row["cost_per_mtok_total"] is not None  # the built-in H100 price
    argv = ["report", str(folders["search"]), str(folders["imported"]), "--no-plots"]
    assert main([*argv, "--output", str(tmp_path / "cli")]) == 0
    printed = capsys.readouterr().out
    assert "Capacity at SLO" in printed and "import" in printed


def test_a_sweep_that_never_fails_is_above_its_highest_point(folders: dict[str, Path]) -> None:
    loaded = load_results([folders["sweep"]])
    slo = SloTarget(limits={"ttft_ms": 5000})
    [row] = search_rows([], loaded.results, slos=[slo])
    assert (row["status"], row["capacity"]) == ("above_max", 8)
    assert "every point passes, up to c8" in row["reason"]


def test_inferx_report_slo_judges_a_sweep_without_any_search(
    folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    argv = ["report", str(folders["sweep"]), "--output", str(out), "--no-plots"]
    assert main([*argv, "--slo", SLO_FLAG, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)  # the buyer's table comes along
    [row] = printed["capacity_at_slo"]
    assert (row["source"], row["status"], row["capacity"]) == ("sweep points", "found", 5)
    assert len(printed["rows"]) == len(LEVELS.split(","))
    assert main([*argv, "--slo", SLO_FLAG]) == 0
    assert "Capacity at SLO" in capsys.readouterr().out  # the table (wrapped to the terminal)
    page = (out / "report.html").read_text()
    assert 'data-source="sweep points"' in page
    assert "judged on request records" in page  # the CLI passes the result files along
    # a bad limit names the flag and the key, exit 2, no traceback
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main([*argv, "--slo", "ttft_ms=0"])
    assert exited.value.code == 2
    assert "SLO ttft_ms: a finite number > 0, got 0.0" in capsys.readouterr().err
