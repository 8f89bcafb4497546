"""The InferenceX aggregate: process_result.py's fields and aggregate_power.py's power fields.

Values are computed here independently from the vLLM export (the contract in
our words: seconds without ``_ms``, ``intvty = 1000 / tpot``, throughput per
``tp * pp * pcp`` GPUs, energy over the benchmark window).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.errors import UserFacingError
from inferx_core.interop.export import ExportOptions, export_paths
from inferx_core.interop.inferencex import NotExportable, inferencex_aggregate, power_fields
from inferx_core.interop.metadata import InferenceXMetadata, resolve_metadata
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.read import load_results
from inferx_core.telemetry.model import TelemetrySection
from inferx_core.testing import ServerProcess

SETTINGS = {"hw": "h200", "precision": "fp8", "framework": "vllm", "tp": "2"}
IDENTITY = [
    "hw", "conc", "image", "model", "infmax_model_prefix", "framework", "precision",
    "spec_decoding", "disagg", "recipe_fingerprint", "isl", "osl", "is_multinode", "tp", "pp",
    "dcp_size", "pcp_size", "ep", "dp_attention", "tput_per_gpu", "output_tput_per_gpu",
    "input_tput_per_gpu",
]  # fmt: skip


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    with ServerProcess(ttft_ms=15, itl_ms=3) as server:
        config = BenchConfig(
            base_url=server.base_url,
            workload=Workload(isl=32, osl=8),
            load=LoadProfile(concurrency=[1, 3], num_prompts=6),
            output_dir=out,
        )
        run_bench(config, progress=False)
    return out


@pytest.fixture(scope="module")
def exported(results_dir: Path) -> Path:
    out = results_dir.parent / "exported"
    settings_list = dict(SETTINGS)
    report = export_paths([results_dir], ExportOptions(("vllm", "inferencex"), out, settings_list))
    assert not report.skipped
    return out


def test_aggregate_is_process_results_arithmetic(exported: Path) -> None:
    for agg_path in exported.glob("agg_*.json"):
        agg = json.loads(agg_path.read_text())
        vllm = json.loads((exported / f"{agg_path.stem.removeprefix('agg_')}.json").read_text())
        ms_keys = [k for k in vllm if k.endswith("ms")]
        tpot_keys = [k for k in vllm if "tpot" in k]
        expected_keys = set(IDENTITY) | {k[: -len("_ms")] for k in ms_keys}
        expected_keys |= {k[: -len("_ms")].replace("tpot", "intvty") for k in tpot_keys}
        expected_keys |= {"power_metric_schema_version", "power_valid", "power_invalid_reasons"}
        assert set(agg) == expected_keys
        assert agg["conc"] == vllm["max_concurrency"] and agg["model"] == vllm["model_id"]
        assert agg["hw"] == "h200" and agg["precision"] == "fp8" and agg["tp"] == 2
        assert agg["isl"] == 32 and agg["osl"] == 8 and agg["disagg"] is False
        assert agg["dp_attention"] == "false" and agg["spec_decoding"] == "none"
        assert agg["tput_per_gpu"] == pytest.approx(vllm["total_token_throughput"] / 2, rel=1e-9)
        input_rate = vllm["total_token_throughput"] - vllm["output_throughput"]
        assert agg["input_tput_per_gpu"] == pytest.approx(input_rate / 2, rel=1e-9)
        for key in ms_keys:
            assert agg[key[:-3]] == pytest.approx(vllm[key] / 1000, rel=1e-9)
        # interactivity of every TPOT statistic, the slow tail included
        assert agg["median_intvty"] == pytest.approx(1000 / vllm["median_tpot_ms"], rel=1e-9)
        assert agg["p99_intvty"] == pytest.approx(1000 / vllm["p99_tpot_ms"], rel=1e-9)


def test_no_power_is_power_valid_zero_with_the_reason(exported: Path) -> None:
    [agg_path] = exported.glob("agg_*-c3.json")
    agg = json.loads(agg_path.read_text())
    assert agg["power_valid"] == 0 and agg["power_metric_schema_version"] == 2
    assert "avg_power_w" not in agg and agg["power_invalid_reasons"] == ["power_not_measured"]
    pid = agg_path.stem.removeprefix("agg_")
    sidecar = json.loads((exported / f"power_validation_{pid}.json").read_text())
    assert sidecar["power_valid"] is False and sidecar["reasons"] == ["power_not_measured"]
    assert "no supported GPU" in (sidecar["inferx_reason"] or "") or sidecar["inferx_reason"]


def _with_power(result, energy_j: float, gpus: int, gap_s: float = 0.1):
    flat = result.flat()
    flat |= {
        "power_valid": True,
        "power_invalid_reason": None,
        "power_source": "nvml",
        "gpu_ids": list(range(gpus)),
        "gpu_energy_j": energy_j,
        "max_sample_gap_s": gap_s,
    }
    return result.model_copy(update={"telemetry": TelemetrySection.from_flat(flat)})


def test_measured_power_is_aggregate_powers_definitions(exported: Path, results_dir: Path) -> None:
    [result] = [r for r in load_results([results_dir]).results if r.point_id.endswith("-c3")]
    vllm = json.loads((exported / f"{result.point_id}.json").read_text())
    meta = resolve_metadata(result, SETTINGS)
    fields, sidecar = power_fields(_with_power(result, 1234.5678, 2), vllm, meta)
    window = vllm["benchmark_end_time_unix"] - vllm["benchmark_start_time_unix"]
    tokens_in, tokens_out = vllm["total_input_tokens"], vllm["total_output_tokens"]
    assert fields["power_valid"] == 1 and sidecar["reasons"] == []
    assert fields["total_gpu_energy_j"] == 1234.568  # _j and _w keys: 3 decimals
    assert fields["avg_total_gpu_power_w"] == round(1234.5678 / window, 3)
    assert fields["avg_power_w"] == round(1234.5678 / window / 2, 3)
    assert fields["joules_per_output_token"] == round(1234.5678 / tokens_out, 6)
    assert fields["joules_per_total_token"] == round(1234.5678 / (tokens_in + tokens_out), 6)
    assert fields["joules_per_successful_query"] == round(1234.5678 / vllm["completed"], 6)
    # the wrong number of GPUs, or a sampling gap over 3 s, invalidates it
    fields, _ = power_fields(_with_power(result, 1000.0, 1), vllm, meta)
    assert fields["power_invalid_reasons"] == ["expected_gpu_count_mismatch"]
    fields, _ = power_fields(_with_power(result, 1000.0, 2, gap_s=4.0), vllm, meta)
    assert fields["power_invalid_reasons"] == ["sampling_gap_exceeded"]


def test_missing_metadata_names_the_set_to_add(results_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(UserFacingError, match=r"hw, framework, precision, tp .*--set hw=\.\.\."):
        export_paths([results_dir], ExportOptions(("inferencex",), tmp_path / "x"))
    assert not (tmp_path / "x").exists()  # nothing half-exported
    with pytest.raises(UserFacingError, match="not an InferenceX field"):
        export_paths([results_dir], ExportOptions(("inferencex",), tmp_path, {"gpu": "h200"}))


def _meta(**values) -> InferenceXMetadata:
    base = {"hw": "h200", "framework": "vllm", "precision": "fp8", "spec_decoding": "none",
            "disagg": False, "model_prefix": "m", "image": "", "isl": 1, "osl": 1, "tp": 1,
            "ep": 1, "dp_attention": "false", "pp": 1, "dcp_size": 1, "pcp_size": 1,
            "recipe_fingerprint": ""}  # fmt: skip
    return InferenceXMetadata(base | values)


def test_unexportable_points_say_why() -> None:
    vllm = {"model_id": "m", "max_concurrency": None, "total_token_throughput": 1.0,
            "output_throughput": 0.5, "median_tpot_ms": 5.0}  # fmt: skip
    with pytest.raises(NotExportable, match="max_concurrency"):
        inferencex_aggregate(vllm, _meta())
    vllm["max_concurrency"] = 4
    with pytest.raises(NotExportable, match="multinode"):
        inferencex_aggregate(vllm, _meta(disagg=True))
    vllm["median_tpot_ms"] = 0.0  # vLLM's value for "no request had two tokens"
    with pytest.raises(NotExportable, match="1000/TPOT"):
        inferencex_aggregate(vllm, _meta())


@settings(max_examples=50, deadline=None)
@given(
    st.floats(0.1, 1e4),
    st.floats(0.01, 1e3),
    st.integers(1, 8),
    st.integers(1, 4),
    st.integers(1, 2),
)
def test_per_gpu_and_interactivity_properties(total, tpot, tp, pp, pcp) -> None:
    vllm = {
        "model_id": "m",
        "max_concurrency": 8,
        "total_token_throughput": total,
        "output_throughput": total / 3,
        "mean_tpot_ms": tpot,
        "p90_ttft_ms": tpot * 2,
    }
    agg = inferencex_aggregate(vllm, _meta(tp=tp, pp=pp, pcp_size=pcp))
    gpus = tp * pp * pcp
    assert agg["tput_per_gpu"] * gpus == pytest.approx(total)
    assert agg["output_tput_per_gpu"] + agg["input_tput_per_gpu"] == pytest.approx(
        agg["tput_per_gpu"]
    )
    assert agg["mean_intvty"] * agg["mean_tpot"] == pytest.approx(1.0)
    assert agg["p90_ttft"] == pytest.approx(tpot * 2 / 1000)
