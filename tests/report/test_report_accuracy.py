"""Accuracy in ``inferx report``: per point in points.csv, every figure in accuracy.csv, a
table per configuration beside the Pareto chart, and a warning for a point under its
threshold; in ``inferx compare``, accuracy with its standard error."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from result_factory import make_model

from inferx_core.evals.model import AccuracySection
from inferx_core.evals.run import check_task
from inferx_core.report import write_report
from inferx_core.results.files import write_result
from inferx_core.sdk.evaluator import AccuracyRecord
from inferx_core.tables.points import cell


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


def test_the_pareto_chart_carries_the_accuracy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inferx_core.report import plots

    files = write_report([write_accuracy_set(tmp_path / "r")], tmp_path / "out", plots=False)
    drawn: list[str] = []
    real = plots._annotate_accuracy

    def spy(ax, points, x_field):
        real(ax, points, x_field)
        drawn.extend(t.get_text() for t in ax.texts if t.get_text().startswith("acc "))

    monkeypatch.setattr(plots, "_annotate_accuracy", spy)
    assert plots.throughput_vs_interactivity(files.rows, tmp_path / "chart.png") is not None
    assert sorted(drawn) == ["acc 0.850", "acc 0.920"]


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


# -- inferx compare -------------------------------------------------------------
def test_accuracy_verdicts_use_the_standard_error() -> None:
    from inferx_core.analysis.accuracy import accuracy_verdict

    worse = accuracy_verdict(0.92, 0.019, 0.80, 0.02)  # diff -0.12, se 0.0276: z = -4.35
    assert worse["verdict"] == "worse" and worse["z"] == pytest.approx(-0.12 / 0.027586, rel=1e-3)
    assert accuracy_verdict(0.92, 0.019, 0.90, 0.02)["verdict"] == "same"  # z = -0.72
    assert accuracy_verdict(0.5, 0.05, 0.7, 0.05)["verdict"] == "better"
    assert accuracy_verdict(0.2, 0.01, 0.1, 0.01, higher_is_better=False)["verdict"] == "better"
    assert accuracy_verdict(1.0, 0.0, 1.0, 0.0)["verdict"] == "same"
    assert accuracy_verdict(0.5, None, 0.6, 0.1)["verdict"] == "n/a"


def test_inferx_compare_compares_accuracy_with_its_stderr(tmp_path: Path, capsys) -> None:
    from inferx_core.cli.app import main

    a = write_accuracy_set(tmp_path / "a", tp2_value=0.85)
    b = write_accuracy_set(tmp_path / "b", tp2_value=0.60)
    assert main(["compare", str(a), str(b), "--json"]) == 0
    accuracy = json.loads(capsys.readouterr().out)["accuracy"]
    by_point = {row["label"]: row for row in accuracy}
    assert set(by_point) == {"h200-tp1-c16", "h200-tp2-c16"}
    same, worse = by_point["h200-tp1-c16"], by_point["h200-tp2-c16"]
    assert (same["a"], same["b"], same["verdict"]) == (0.92, 0.92, "same")
    assert (worse["a"], worse["b"], worse["verdict"]) == (0.85, 0.60, "worse")
    assert worse["diff_stderr"] == pytest.approx(math.sqrt(2) * 0.019)
    assert main(["compare", str(a), str(b), "--fail-on-regression"]) == 1
    out = capsys.readouterr().out
    assert "Accuracy B vs A" in out and "accuracy gsm8k 0.8500 -> 0.6000" in out
