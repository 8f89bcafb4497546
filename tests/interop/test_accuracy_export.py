"""Accuracy measured on a point's server is in the exported tables (points.csv, points.parquet)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from result_factory import make_model

from inferx_core.evals.model import AccuracySection
from inferx_core.evals.run import check_task
from inferx_core.interop.export import ExportOptions, export_results
from inferx_core.sdk.evaluator import AccuracyRecord


def _evaluated(point_id: str, value: float):
    record = AccuracyRecord(
        task="gsm8k", metric="exact_match,strict-match", value=value, stderr=0.02, samples=200,
        num_fewshot=5, limit=200, primary=True, evaluator="lm-eval", evaluator_version="0.4.13",
    )  # fmt: skip
    task = check_task("gsm8k", [record], 0.9)
    section = AccuracySection(status=task.status, evaluator="lm-eval", tasks=[task])
    return make_model(point_id, concurrency=4).model_copy(update={"accuracy": section})


def test_points_csv_carries_each_points_accuracy(tmp_path: Path) -> None:
    results = [_evaluated("p-good", 0.93), _evaluated("p-low", 0.81), make_model("p-none")]
    export_results([(r, None) for r in results], ExportOptions(("csv",), tmp_path))
    rows = {r["point_id"]: r for r in csv.DictReader((tmp_path / "points.csv").open())}
    assert rows["p-good"]["accuracy"] == "0.93"
    assert rows["p-good"]["accuracy_status"] == "passed"
    assert rows["p-low"]["accuracy_status"] == "below_threshold"
    assert rows["p-good"]["accuracy_task"] == "gsm8k"
    assert rows["p-none"]["accuracy"] == ""


def test_points_parquet_carries_every_task(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    export_results([(_evaluated("p", 0.93), [])], ExportOptions(("parquet",), tmp_path))
    row = pq.read_table(tmp_path / "points.parquet").to_pylist()[0]
    assert row["accuracy"] == 0.93 and row["accuracy_status"] == "passed"
    tasks = json.loads(row["accuracy_tasks"])
    assert tasks[0]["task"] == "gsm8k" and tasks[0]["value"] == 0.93
