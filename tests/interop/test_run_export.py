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
from inferx_core.pipeline.run import run_configs
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
