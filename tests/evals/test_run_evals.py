"""``evals:`` in a run config: after a server's load points, on the same running server, at
the points ``at`` names; accuracy lands in those points' results (on disk too), and a task
under its threshold is marked."""

from __future__ import annotations

import json
import types
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

import fake_engine
import pytest

from inferx_core import AccuracyRecord, EvalTarget, EvalTask, EvaluatorInfo, hookimpl
from inferx_core.config.models import RunConfig
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import read_result
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform

ACCURACY = {"good": 0.95, "bad": 0.5}


class ScriptedEvaluator:
    """Asks the server for its models (it must still run) and answers a fixed accuracy."""

    calls: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def version(self) -> str:
        return "9.9"

    def evaluate(self, target: EvalTarget, task: EvalTask, workdir: Path) -> list[AccuracyRecord]:
        with urllib.request.urlopen(target.base_url + "/v1/models", timeout=5) as reply:
            served = [m["id"] for m in json.load(reply)["data"]]
        self.calls.append(
            {"task": task.task, "model": target.model, "served": served, "c": task.concurrency}
        )
        return [
            AccuracyRecord(
                task=task.task,
                metric="exact_match",
                value=ACCURACY[task.task],
                stderr=0.02,
                samples=task.limit or 100,
                limit=task.limit,
                evaluator="scripted",
                evaluator_version="9.9",
            )
        ]


def _evaluator_plugin() -> types.ModuleType:
    module = types.ModuleType("scripted_evaluator")

    @hookimpl
    def inferx_evaluators() -> list[EvaluatorInfo]:
        return [EvaluatorInfo(name="scripted", description="test", factory=ScriptedEvaluator)]

    module.inferx_evaluators = inferx_evaluators  # type: ignore[attr-defined]
    return module


def _config(tmp_path: Path, evals: dict[str, Any]) -> RunConfig:
    return RunConfig.model_validate(
        {
            "engine": "fake",
            "model": "org/tiny-model",
            # ITL well above zero: the points stay valid on a busy 2-core machine
            "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 25},
            "readiness_timeout_s": 30,
            "stop_grace_s": 5,
            "workload": {"isl": 16, "osl": 4},
            "load": {"concurrency": [1, 2, 4], "num_prompts": 4},
            "evals": evals,
            "output_dir": str(tmp_path),
        }
    )


def _run(config: RunConfig) -> Any:
    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("fake", fake_engine), ("scripted", _evaluator_plugin())],
    )
    return run_configs([config], pm=pm, platform=Platform(), progress=False)


def test_evals_run_at_max_and_median_on_the_same_server(tmp_path: Path) -> None:
    ScriptedEvaluator.calls = []
    evals = {
        "tasks": ["good", "bad"],
        "evaluator": "scripted",
        "at": ["max", "median"],
        "limit": 20,
        "thresholds": {"good": 0.9, "bad": 0.9},
    }
    summary = _run(_config(tmp_path, evals))
    assert {o.status for o in summary.outcomes} <= {"ok", "invalid"}  # all measured
    by_c = {o.result.identity.concurrency: o for o in summary.outcomes}
    assert by_c[1].result.accuracy is None
    # evaluated at c2 (the median of 1, 2, 4) and c4, with that many requests in flight
    assert [(c["c"], c["task"]) for c in ScriptedEvaluator.calls] == [
        (2, "good"),
        (2, "bad"),
        (4, "good"),
        (4, "bad"),
    ]
    assert all(c["served"] == ["org/tiny-model"] for c in ScriptedEvaluator.calls)
    for level in (2, 4):
        outcome = by_c[level]
        on_disk = read_result(outcome.path)
        assert on_disk.accuracy == outcome.result.accuracy
        section = on_disk.accuracy
        assert section is not None and section.status == "below_threshold" and not section.ok
        good, bad = section.tasks
        assert (good.status, good.value, good.samples) == ("passed", 0.95, 20)
        assert (bad.status, bad.value, bad.threshold) == ("below_threshold", 0.5, 0.9)
        assert section.evaluator == "scripted" and section.evaluator_version == "9.9"


def test_an_unknown_evaluator_is_an_error_section_not_a_lost_point(tmp_path: Path) -> None:
    summary = _run(_config(tmp_path, {"tasks": ["good"], "evaluator": "nope"}))
    assert {o.status for o in summary.outcomes} <= {"ok", "invalid"}
    top = max(summary.outcomes, key=lambda o: o.result.identity.concurrency)
    section = read_result(top.path).accuracy
    assert section is not None and section.status == "error"
    assert "unknown evaluator 'nope'" in (section.tasks[0].error or "")


def test_evals_config_is_checked() -> None:
    with pytest.raises(ValueError, match="thresholds for tasks not in 'tasks': other"):
        RunConfig.model_validate(
            {"engine": "fake", "model": "m", "evals": {"tasks": ["a"], "thresholds": {"other": 1}}}
        )
    with pytest.raises(ValueError, match="tasks"):
        RunConfig.model_validate({"engine": "fake", "model": "m", "evals": {"tasks": []}})


def test_inferx_run_require_accuracy_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from inferx_core.cli.app import main
    from inferx_core.sdk import manager

    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("fake", fake_engine), ("scripted", _evaluator_plugin())],
    )
    monkeypatch.setattr(manager, "get_plugin_manager", lambda *a, **k: pm)
    config = _config(
        tmp_path / "r",
        {"tasks": ["bad"], "evaluator": "scripted", "thresholds": {"bad": 0.9}},
    )
    path = tmp_path / "run.json"
    path.write_text(config.model_dump_json())
    platform = tmp_path / "platform.json"
    platform.write_text(Platform().model_dump_json())
    argv = ["run", str(path), "--no-progress", "--platform", str(platform)]
    code = main(argv)
    statuses = {read_result(p).status for p in (tmp_path / "r").glob("*.json")}
    # below the threshold, but not required: the exit code is the load points' alone
    out = capsys.readouterr().out
    assert code == (0 if statuses == {"ok"} else 1), (statuses, out)
    assert "accuracy bad exact_match 0.5000 ± 0.0200 (threshold 0.9: below_threshold)" in out, out
    assert main([*argv, "--require-accuracy"]) == 1
