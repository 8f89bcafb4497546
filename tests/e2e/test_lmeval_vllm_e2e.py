"""End to end: ``evals:`` in a run on the real engine (vLLM's CPU build, the tiny demo model)
through inferx-lmeval and real lm-eval.

The tiny model's weights are random, so its accuracy is near zero; what this
proves is the pipeline: the load points ran, lm-eval then asked the very same
server every sample of a local GSM8K-format file, the figure and its standard
error landed in the max-concurrency point's result, and the threshold marked
it. Slow (vLLM start-up); `make test` requires the engine and lm-eval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gsm8k_fixture import QUESTIONS, require_lmeval_python, write_gsm8k

from inferx_core.demo.run import SERVED_NAME, demo_config
from inferx_core.pipeline.server.run import run_configs
from inferx_core.report import write_report
from inferx_core.results.files import read_result

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def run_with_evals(engine_python, tmp_path_factory: pytest.TempPathFactory):
    python = engine_python
    lmeval_python = require_lmeval_python()
    root = tmp_path_factory.mktemp("lmeval-e2e")
    data = write_gsm8k(root / "gsm8k_small.jsonl")
    config = demo_config(
        output_dir=root / "results",
        engine_python=str(python),
        concurrency=[1, 2],
        isl=32,
        osl=16,
        num_prompts=2,
        model_dir=root / "model",
    )
    evals = {
        "tasks": [str(data)],
        "at": ["max"],
        "thresholds": {str(data): 0.5},
        "options": {"python": str(lmeval_python), "max_gen_toks": 24},
    }
    config = config.model_validate({**config.model_dump(), "evals": evals})
    summary = run_configs([config], progress=False)
    return config, summary, data, root


def test_accuracy_recorded_at_the_max_concurrency_point(run_with_evals) -> None:
    _, summary, data, _ = run_with_evals
    # measured (a starved 2-core client may flag its own timing 'invalid'; the server served)
    statuses = {o.status for o in summary.outcomes}
    assert statuses <= {"ok", "invalid"}, [o.result.failure_reason for o in summary.outcomes]
    by_c = {o.result.identity.concurrency: o for o in summary.outcomes}
    assert read_result(by_c[1].path).accuracy is None
    section = read_result(by_c[2].path).accuracy
    assert section is not None, "the max-concurrency point carries no accuracy"
    (task,) = section.tasks
    assert task.error is None, task.error
    assert task.task == str(data) and task.metric == "exact_match,strict-match"
    assert task.samples == len(QUESTIONS)
    assert task.value is not None and 0 <= task.value <= 0.25  # random weights: near zero
    assert task.stderr is not None
    assert (task.threshold, task.status) == (0.5, "below_threshold")
    assert section.status == "below_threshold" and not section.ok
    assert section.evaluator == "lm-eval" and section.evaluator_version
    assert section.api == "completions"


def test_lm_eval_asked_the_running_engine(run_with_evals) -> None:
    _, summary, _, root = run_with_evals
    top = max(summary.outcomes, key=lambda o: o.result.identity.concurrency)
    workdir = root / "results" / "evals" / top.point_id
    (task_dir,) = [p for p in workdir.iterdir() if p.is_dir()]
    request = json.loads((task_dir / "request.json").read_text())
    assert request["model_args"]["model"] == SERVED_NAME
    assert request["model_args"]["num_concurrent"] == 2  # the point's concurrency
    launched = top.result.provenance.launch or {}
    assert str(launched["spec"]["port"]) in request["model_args"]["base_url"]
    samples = [json.loads(line) for line in (task_dir / "samples.jsonl").read_text().splitlines()]
    strict = [s for s in samples if s["filter"] == "strict-match"]
    assert len(strict) == len(QUESTIONS)
    assert all(isinstance(s["resps"][0][0], str) for s in strict)  # the engine's real replies


def test_the_report_shows_the_accuracy(run_with_evals, tmp_path: Path) -> None:
    _, _, _, root = run_with_evals
    files = write_report([root / "results"], tmp_path / "report", plots=False)
    assert files.accuracy_csv is not None
    assert 'id="accuracy"' in files.html.read_text()
