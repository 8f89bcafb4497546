"""An evaluation that did not happen is not a low score: ``infrastructure_success`` false,
the whole error printed on its own lines, and a non-zero exit from ``inferx eval`` and
``inferx run`` alike (a low score exits 1 only under ``--require-accuracy``)."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import fake_engine
import pytest

from inferx_core import AccuracyRecord, EvalTarget, EvalTask, EvaluatorInfo, hookimpl
from inferx_core.cli.app import main
from inferx_core.config.models import RunConfig
from inferx_core.evals.model import AccuracySection, EvalReport, TaskAccuracy
from inferx_core.results.files import read_result
from inferx_core.sdk import manager
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform

CRASH = "harness crashed\nTraceback (most recent call last):\n  File 'x'\nValueError: boom"


class Scripted:
    """Scores ``low`` at 0.5, ``high`` at 0.95 and crashes on ``crash``."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def version(self) -> str:
        return "1"

    def evaluate(self, target: EvalTarget, task: EvalTask, workdir: Path) -> list[AccuracyRecord]:
        if task.task == "crash":
            raise RuntimeError(CRASH)
        value = {"low": 0.5, "high": 0.95}[task.task]
        return [AccuracyRecord(task=task.task, metric="acc", value=value, samples=10,
                               evaluator="scripted")]  # fmt: skip


def _plugin() -> types.ModuleType:
    module = types.ModuleType("scripted_eval_failures")

    @hookimpl
    def inferx_evaluators() -> list[EvaluatorInfo]:
        return [EvaluatorInfo(name="scripted", description="test", factory=Scripted)]

    module.inferx_evaluators = inferx_evaluators  # type: ignore[attr-defined]
    return module


@pytest.fixture
def pm(monkeypatch: pytest.MonkeyPatch) -> Any:
    plugins = get_plugin_manager(
        env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine), ("s", _plugin())]
    )
    monkeypatch.setattr(manager, "get_plugin_manager", lambda *a, **k: plugins)
    return plugins


def test_infrastructure_success_is_false_only_when_a_task_could_not_be_evaluated() -> None:
    low = TaskAccuracy(task="low", status="below_threshold", value=0.5, threshold=0.9)
    crashed = TaskAccuracy(task="crash", status="error", error=CRASH)
    assert AccuracySection(status="below_threshold", evaluator="e", tasks=[low]).model_dump()[
        "infrastructure_success"
    ]
    failed = AccuracySection(status="error", evaluator="e", tasks=[low, crashed])
    assert not failed.infrastructure_success and failed.failed_tasks == [crashed]
    # a result written before the field: derived from its tasks, then kept on a round trip
    old = failed.model_dump(mode="json")
    del old["infrastructure_success"]
    assert not AccuracySection.model_validate(old).infrastructure_success
    again = AccuracySection.model_validate_json(failed.model_dump_json())
    assert again == failed


def _eval(tmp_path: Path, *tasks: str, extra: tuple[str, ...] = ()) -> list[str]:
    argv = ["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--evaluator", "scripted"]
    for task in tasks:
        argv += ["--task", task]
    return [*argv, "--output", str(tmp_path), *extra]


def _report(tmp_path: Path) -> EvalReport:
    return EvalReport.model_validate(json.loads((tmp_path / "accuracy.json").read_text()))


def test_inferx_eval_exits_1_when_the_harness_crashed_and_prints_the_whole_error(
    tmp_path: Path, pm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_eval(tmp_path, "high", "crash")) == 1  # without --require-accuracy too
    captured = capsys.readouterr()
    assert f"evaluation of crash failed: RuntimeError: {CRASH}\n" in captured.err
    assert "infrastructure_success: false" in captured.err
    assert "ValueError: boom" not in captured.out  # not squeezed into the table
    report = _report(tmp_path)
    assert not report.accuracy.infrastructure_success
    assert [t.status for t in report.accuracy.tasks] == ["unchecked", "error"]


def test_inferx_eval_keeps_a_low_score_apart_from_a_failure(
    tmp_path: Path, pm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_eval(tmp_path, "low", extra=("--threshold", "0.9"))) == 0
    assert _report(tmp_path).accuracy.infrastructure_success
    assert _report(tmp_path).accuracy.status == "below_threshold"
    assert "failed" not in capsys.readouterr().err
    assert main(_eval(tmp_path, "low", extra=("--threshold", "0.9", "--require-accuracy"))) == 1
    assert main(_eval(tmp_path, "high", extra=("--threshold", "0.9", "--require-accuracy"))) == 0


def test_inferx_run_records_a_failed_evaluation_and_exits_1(
    tmp_path: Path, pm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    config = RunConfig.model_validate(
        {
            "engine": "fake", "model": "org/tiny-model",
            "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 25},
            "readiness_timeout_s": 30, "stop_grace_s": 5,
            "workload": {"isl": 16, "osl": 4}, "load": {"concurrency": [1], "num_prompts": 4},
            "evals": {"tasks": ["crash"], "evaluator": "scripted"},
            "output_dir": str(tmp_path / "r"),
        }
    )  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(config.model_dump_json())
    platform = tmp_path / "platform.json"
    platform.write_text(Platform().model_dump_json())
    code = main(["run", str(path), "--no-progress", "--platform", str(platform)])
    err = capsys.readouterr().err
    [result] = [read_result(p) for p in (tmp_path / "r").glob("*.json")]
    assert result.status in ("ok", "invalid")  # the load point measured: exit 1 is the eval's
    assert result.accuracy is not None and not result.accuracy.infrastructure_success
    assert code == 1 and "failed: crash: RuntimeError: harness crashed\nTraceback" in err
