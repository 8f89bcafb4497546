"""``inferx run --export``: each point exported as it finishes, beside the results."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import fake_engine
import pytest

from inferx_core.cli.app import build_parser
from inferx_core.cli.interop import point_exporter
from inferx_core.config.models import RunConfig
from inferx_core.errors import UserFacingError
from inferx_core.pipeline.server.run import run_configs
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform


def test_run_exports_every_point_as_it_finishes(tmp_path: Path) -> None:
    config = RunConfig.model_validate(
        {
            "engine": "fake",
            "model": "org/tiny-model",
            "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 1},
            "readiness_timeout_s": 30,
            "workload": {"isl": 16, "osl": 4},
            "load": {"concurrency": [1, 2], "num_prompts": 4},
            # The InferenceX export takes ok points only: a busy machine's client (a late
            # loop: 30.8 ms at p95 under load average 12) must not turn a point invalid and
            # drop its file; this test is about when files are written.
            "validity": {
                "max_zero_gap_fraction": 1.0,
                "max_whole_reply_fraction": 1.0,
                "max_loop_lag_p95_ms": 1e6,
                "max_client_cpu_fraction": 1.0,
                "max_client_cores_busy": 1.0,
            },
        }
    )
    argv = ["run", "x.yaml", "--export", "vllm,inferencex,csv"]
    args = build_parser().parse_args(
        [*argv, "--export-set", "hw=h200", "--export-set", "precision=fp8"]
    )
    exporter = point_exporter(args, tmp_path)
    seen: list[int] = []

    def on_point(outcome) -> None:
        exporter(outcome)
        seen.append(len(list((tmp_path / "export").glob("agg_*.json"))))

    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    summary = run_configs(
        [config], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False, on_point=on_point
    )
    reasons = [o.result.failure_reason for o in summary.outcomes]
    assert summary.ok and seen == [1, 2], reasons  # written as each point finished
    assert not exporter.report.skipped
    for outcome in summary.outcomes:
        agg = json.loads((tmp_path / "export" / f"agg_{outcome.point_id}.json").read_text())
        assert agg["framework"] == "fake" and agg["hw"] == "h200" and agg["tp"] == 1
        assert agg["conc"] == outcome.result.identity.concurrency
    rows = list(csv.DictReader((tmp_path / "export" / "points.csv").open()))
    assert sorted(r["point_id"] for r in rows) == sorted(o.point_id for o in summary.outcomes)


def test_bad_export_format_fails_before_any_load(tmp_path: Path) -> None:
    args = build_parser().parse_args(["bench", "--export", "vllm,xls"])
    with pytest.raises(UserFacingError, match="unknown format xls; choose from vllm"):
        point_exporter(args, tmp_path)


def test_configs_with_different_output_dirs_export_next_to_their_own_results(
    tmp_path: Path,
) -> None:
    def config(name: str) -> RunConfig:
        return RunConfig.model_validate(
            {
                "engine": "fake",
                "model": f"org/{name}",
                "output_dir": str(tmp_path / name),
                "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 1},
                "readiness_timeout_s": 30,
                "workload": {"isl": 16, "osl": 4},
                "load": {"concurrency": [1], "num_prompts": 2},
            }
        )

    configs = [config("first"), config("second")]
    argv = ["run", "x.yaml", "--export", "inferencex,csv", "--export-set", "precision=fp8"]
    args = build_parser().parse_args([*argv, "--export-set", "hw=h200"])
    roots = [Path(c.output_dir) for c in configs]
    exporter = point_exporter(args, roots[0], roots)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    summary = run_configs(configs, pm=pm, platform=Platform(), progress=False, on_point=exporter)
    assert summary.ok and not exporter.report.skipped
    for name in ("first", "second"):
        aggs = list((tmp_path / name / "export").glob("agg_*.json"))
        assert [json.loads(a.read_text())["model"] for a in aggs] == [f"org/{name}"]
        rows = list(csv.DictReader((tmp_path / name / "export" / "points.csv").open()))
        assert len(rows) == 1  # each folder's table holds its own points only


def test_missing_export_metadata_is_a_skip_not_the_end_of_the_run(tmp_path: Path) -> None:
    config = RunConfig.model_validate(
        {
            "engine": "fake",
            "model": "org/tiny-model",
            "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 1},
            "readiness_timeout_s": 30,
            "workload": {"isl": 16, "osl": 4},
            "load": {"concurrency": [1, 2], "num_prompts": 2},
        }
    )
    args = build_parser().parse_args(["run", "x.yaml", "--export", "inferencex,csv"])
    exporter = point_exporter(args, tmp_path)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    summary = run_configs(
        [config], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False, on_point=exporter
    )
    assert [o.status for o in summary.outcomes] == ["ok", "ok"]  # both points measured
    assert [s[1] for s in exporter.report.skipped] == ["inferencex", "inferencex"]
    # the hint names the flag of this command (inferx export says --set)
    assert all("--export-set precision" in s[2] for s in exporter.report.skipped), (
        exporter.report.skipped
    )
    rows = list(csv.DictReader((tmp_path / "export" / "points.csv").open()))
    assert len(rows) == 2  # the tables need no metadata
