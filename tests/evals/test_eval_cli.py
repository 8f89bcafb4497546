"""``inferx eval`` and the threshold checks: a scripted server answers 5 of 8 GSM8K-format
questions right, so the accuracy is exactly 0.625, and a 0.9 threshold fails the command
under --require-accuracy."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from gsm8k_fixture import QUESTIONS, RIGHT, answers, require_lmeval_python, write_gsm8k

from inferx_core.cli.app import main
from inferx_core.cli.eval import thresholds_of
from inferx_core.evals.model import EvalReport, worst_status
from inferx_core.evals.run import check_task, evaluate_tasks
from inferx_core.evals.select import chosen_levels
from inferx_core.sdk.evaluator import AccuracyRecord, EvalTarget, EvalTask
from inferx_core.testing import AnswerServer


def _record(value: float, *, primary: bool = True, higher: bool = True) -> AccuracyRecord:
    return AccuracyRecord(
        task="t",
        metric="acc",
        value=value,
        stderr=0.01,
        samples=100,
        evaluator="e",
        primary=primary,
        higher_is_better=higher,
    )


def test_the_headline_record_is_checked_against_the_threshold() -> None:
    assert check_task("t", [_record(0.95)], 0.9).status == "passed"
    assert check_task("t", [_record(0.9)], 0.9).status == "passed"  # reaching it is enough
    below = check_task("t", [_record(0.5, primary=False), _record(0.85)], 0.9)
    assert (below.status, below.value) == ("below_threshold", 0.85)
    assert check_task("t", [_record(0.1, higher=False)], 0.2).status == "passed"  # e.g. error rate
    assert check_task("t", [_record(0.3)], None).status == "unchecked"
    assert check_task("t", [], 0.9).status == "error"


def test_the_section_status_is_the_worst_task() -> None:
    assert worst_status(["passed", "unchecked"]) == "passed"
    assert worst_status(["passed", "below_threshold", "unchecked"]) == "below_threshold"
    assert worst_status(["below_threshold", "error"]) == "error"
    assert worst_status([]) == "unchecked"


def test_threshold_flags() -> None:
    assert thresholds_of(["0.9"], ["a", "b"]) == {"a": 0.9, "b": 0.9}
    assert thresholds_of(["a=0.5", "0.9"], ["a", "b"]) == {"a": 0.5, "b": 0.9}
    assert thresholds_of(["path/x.jsonl=0.7"], ["path/x.jsonl"]) == {"path/x.jsonl": 0.7}


def test_at_max_and_median_pick_levels_that_ran() -> None:
    assert chosen_levels(["max", "median"], [1, 4, 16, 64]) == [4, 64]
    assert chosen_levels(["median"], [1, 4, 16]) == [4]
    assert chosen_levels(["min", 16, 7], [16, 1, 4]) == [1, 16]  # 7 never ran
    assert chosen_levels(["max"], []) == []


class _Failing:
    def version(self) -> str:
        return "0"

    def evaluate(self, target: EvalTarget, task: EvalTask, workdir: Path) -> Any:
        if task.task == "broken":
            raise RuntimeError("harness crashed")
        return [_record(0.8)]


def test_a_failing_task_is_an_error_and_the_others_still_run(tmp_path: Path) -> None:
    target = EvalTarget(base_url="http://127.0.0.1:1", model="m")
    tasks = [EvalTask(task="broken"), EvalTask(task="fine")]
    section = evaluate_tasks(_Failing(), "fake", target, tasks, {"fine": 0.5}, tmp_path)
    assert section.status == "error" and not section.ok
    broken, fine = section.tasks
    assert broken.status == "error" and "harness crashed" in (broken.error or "")
    assert (fine.status, fine.value) == ("passed", 0.8)
    assert section.evaluator == "fake" and section.evaluator_version == "0"


# -- the real evaluator (lm-eval) through the command ---------------------------
@pytest.mark.slow
def test_inferx_eval_measures_the_fraction_and_fails_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_lmeval_python()
    data = write_gsm8k(tmp_path / "gsm8k_small.jsonl")
    out = tmp_path / "eval"
    with AnswerServer(answers()) as server:
        argv = ["eval", "--base-url", server.base_url, "--task", str(data), "--output", str(out)]
        code = main([*argv, "--threshold", "0.9", "--require-accuracy"])
    assert code == 1
    report = EvalReport.model_validate(json.loads((out / "accuracy.json").read_text()))
    assert report.model == server.model and report.base_url == server.base_url
    assert report.accuracy.status == "below_threshold"
    (task,) = report.accuracy.tasks
    p = RIGHT / len(QUESTIONS)
    assert (task.task, task.metric, task.value) == (str(data), "exact_match,strict-match", p)
    assert task.stderr == pytest.approx(math.sqrt(p * (1 - p) / (len(QUESTIONS) - 1)))
    assert (task.samples, task.threshold) == (len(QUESTIONS), 0.9)
    assert report.accuracy.evaluator == "lm-eval" and report.accuracy.evaluator_version
    assert "below_threshold" in capsys.readouterr().out
    assert (out / "evals" / "gsm8k_small.jsonl" / "lm-eval.log").is_file()


def test_unknown_evaluator_is_a_user_error(tmp_path: Path, capsys) -> None:
    argv = ["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--task", "gsm8k"]
    code = main([*argv, "--evaluator", "nope", "--output", str(tmp_path)])
    assert code == 2
    assert "unknown evaluator 'nope'" in capsys.readouterr().err


def test_the_table_title_shows_no_url_credentials_and_no_markup(capsys) -> None:
    from inferx_core.cli.eval import render_accuracy
    from inferx_core.evals.model import AccuracySection

    section = AccuracySection(status="passed", evaluator="e", tasks=[])
    render_accuracy(section, "inferx eval: m[/x] at http://user:hunter2secret@h:8000")
    out = capsys.readouterr().out
    assert "hunter2secret" not in out and "http://***@h:8000" in out
    assert "m[/x]" in out  # rich markup in data is text
