"""Accuracy in ``inferx report``: per point in points.csv, every figure in accuracy.csv, a
table per configuration beside the Pareto chart, and a warning for a point under its
threshold; in ``inferx compare``, accuracy with its standard error."""

from __future__ import annotations

import csv
from pathlib import Path

from result_factory import make_model

from inferx_core.evals.model import AccuracySection
from inferx_core.evals.run import check_task
from inferx_core.report import write_report
from inferx_core.report.table import cell
from inferx_core.results.files import write_result
from inferx_core.sdk.evaluator import AccuracyRecord


def _record(value: float, stderr: float, *, metric: str = "exact_match,strict-match", primary=True):
    return AccuracyRecord(
        task="gsm8k",
        metric=metric,
        value=value,
        stderr=stderr,
        samples=200,
        num_fewshot=5,
        limit=200,
        primary=primary,
        evaluator="lm-eval",
        evaluator_version="0.4.13",
    )


def _section(value: float, stderr: float, threshold: float = 0.9) -> AccuracySection:
    records = [_record(value, stderr), _record(value + 0.01, stderr, metric="x", primary=False)]
    task = check_task("gsm8k", records, threshold)
    return AccuracySection(status=task.status, evaluator="lm-eval", tasks=[task])


def write_accuracy_set(folder: Path, tp2_value: float = 0.85) -> Path:
    """tp1 and tp2 at c4/c16; c16 of each evaluated: tp1 passes 0.9, tp2 (by default) not."""
    for tp in (1, 2):
        for c in (4, 16):
            result = make_model(f"h200-tp{tp}-c{c}", tp=tp, num_gpus=tp, concurrency=c)
            if c == 16:
                section = _section(0.92 if tp == 1 else tp2_value, 0.019)
                result = result.model_copy(update={"accuracy": section})
            write_result(folder, result)
    return folder


def test_points_csv_accuracy_csv_and_the_page(tmp_path: Path) -> None:
    files = write_report([write_accuracy_set(tmp_path / "r")], tmp_path / "out", plots=False)
    with files.csv.open(newline="") as handle:
        points = {row["point_id"]: row for row in csv.DictReader(handle)}
    assert points["h200-tp1-c16"]["accuracy"] == "0.92"
    assert points["h200-tp1-c16"]["accuracy_stderr"] == "0.019"
    assert points["h200-tp1-c16"]["accuracy_status"] == "passed"
    assert points["h200-tp2-c16"]["accuracy_status"] == "below_threshold"
    assert points["h200-tp2-c16"]["accuracy_threshold"] == "0.9"
    assert points["h200-tp1-c4"]["accuracy"] == points["h200-tp1-c4"]["accuracy_status"] == ""
    assert files.accuracy_csv == tmp_path / "out" / "accuracy.csv"
    with files.accuracy_csv.open(newline="") as handle:
        figures = list(csv.DictReader(handle))
    assert len(figures) == 4  # two evaluated points x two metrics
    head = [f for f in figures if f["headline"] == "true"]
    assert {(f["point_id"], f["value"], f["status"]) for f in head} == {
        ("h200-tp1-c16", "0.92", "passed"),
        ("h200-tp2-c16", "0.85", "below_threshold"),
    }
    assert {f["evaluator_version"] for f in figures} == {"0.4.13"}
    page = files.html.read_text()
    assert 'id="accuracy"' in page and "0.8500 ± 0.0190" in page
    assert page.index('id="accuracy"') < page.index('id="points"')
    assert any("under their accuracy threshold" in w for w in files.warnings)


def test_the_accuracy_cell() -> None:
    row = {"accuracy": 0.85, "accuracy_stderr": 0.019, "accuracy_status": "below_threshold"}
    assert cell(row, "accuracy", "accuracy") == "0.850±0.019 ✗"
    assert cell({**row, "accuracy_status": "passed"}, "accuracy", "accuracy") == "0.850±0.019"
    assert cell({"accuracy_status": "error"}, "accuracy", "accuracy") == "error"
    assert cell({}, "accuracy", "accuracy") == "-"


def test_no_evals_no_accuracy_file(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    write_result(folder, make_model("h200-tp1-c4", concurrency=4))
    files = write_report([folder], tmp_path / "out", plots=False)
    assert files.accuracy_csv is None and not (tmp_path / "out" / "accuracy.csv").exists()
    assert 'id="accuracy"' not in files.html.read_text()
