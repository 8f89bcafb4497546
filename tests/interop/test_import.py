"""Round trips: InferX -> vLLM/InferenceX files -> ``inferx import`` -> report and compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_core.cli import main
from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.read import load_results
from inferx_core.testing import ServerProcess


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("roundtrip")
    with ServerProcess(ttft_ms=10, itl_ms=2) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload=Workload(isl=16, osl=6),
            load=LoadProfile(concurrency=[2], num_prompts=6),
            output_dir=root / "results",
        )
        run_bench(config, progress=False)
    argv = ["export", str(root / "results"), "--format", "vllm,inferencex,csv,parquet"]
    argv += ["--output", str(root / "export"), "--set", "hw=h200", "--set", "precision=fp8"]
    argv += ["--set", "framework=vllm", "--set", "tp=1", "--metadata", "run=nightly"]
    assert main(argv) == 0
    return root / "results", root / "export"


def test_vllm_file_imports_with_its_own_figures(exported, tmp_path: Path) -> None:
    _, export = exported
    [vllm_path] = [p for p in export.glob("*.json") if not p.name.startswith(("agg_", "power_"))]
    vllm = json.loads(vllm_path.read_text())
    assert vllm["run"] == "nightly"  # --metadata pairs are top-level strings, as in vLLM
    assert main(["import", str(vllm_path), "--output", str(tmp_path)]) == 0
    [result] = load_results([tmp_path]).results
    assert result.provenance.imported_from.tool == "vllm bench serve"
    assert result.provenance.imported_from.path == str(vllm_path)
    assert result.metric("median_ttft_ms") == pytest.approx(vllm["median_ttft_ms"])
    assert result.metric("p99_itl_ms") == pytest.approx(vllm["p99_itl_ms"])
    assert result.metric("completed") == vllm["completed"]
    assert result.metric("output_throughput") == pytest.approx(vllm["output_throughput"])
    assert result.identity.mode == "closed" and result.identity.concurrency == 2
    # figures a vLLM file does not carry are None with a reason, never invented
    assert result.metric("warmup_excluded") is None
    assert "vllm bench serve" in result.null_reasons["warmup_excluded"]
    assert result.provenance.extra["run"] == "nightly"


def test_inferencex_aggregate_imports_and_reports_beside_inferx(exported, tmp_path) -> None:
    results, export = exported
    [agg_path] = export.glob("agg_*.json")
    agg = json.loads(agg_path.read_text())
    listing = tmp_path / "agg_all.json"  # collect_results.py's list form
    listing.write_text(json.dumps([agg]))
    imported = tmp_path / "imported"
    assert main(["import", str(listing), "--output", str(imported)]) == 0
    [result] = load_results([imported]).results
    assert result.provenance.imported_from.tool == "InferenceX aggregate"
    assert result.metric("tput_per_gpu") == pytest.approx(agg["tput_per_gpu"])
    assert result.metric("median_ttft_ms") == pytest.approx(agg["median_ttft"] * 1000)
    assert result.metric("median_intvty") == pytest.approx(agg["median_intvty"])
    assert result.metric("completed") is None  # aggregates carry no counts
    report = tmp_path / "report"
    assert main(["report", str(results), str(imported), "--output", str(report), "--no-plots"]) == 0
    csv_text = (report / "points.csv").read_text()
    assert "H200" in csv_text and result.point_id in csv_text


def test_tables_hold_every_point_and_request(exported) -> None:
    import pyarrow.parquet as pq

    results, export = exported
    [result] = load_results([results]).results
    header = (export / "points.csv").read_text().splitlines()[0]
    assert header.startswith("point_id,status,valid,validity_failing,group")
    points = pq.read_table(export / "points.parquet").to_pylist()
    assert [p["point_id"] for p in points] == [result.point_id]
    assert points[0]["median_ttft_ms"] == pytest.approx(result.metric("median_ttft_ms"))
    requests = pq.read_table(export / "requests.parquet").to_pylist()
    measured = [r for r in requests if not r["warmup"]]
    assert len(measured) == result.metric("total_requests") == 6
    assert all(r["ttft_ms"] > 0 for r in measured)


def test_import_refuses_unknown_files(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    assert main(["import", str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "neither a vLLM bench serve result" in capsys.readouterr().err
