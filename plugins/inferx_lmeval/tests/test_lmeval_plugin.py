"""inferx-lmeval: task files, lm-eval's output as records, and real lm-eval runs against a
scripted server that answers a known fraction of a GSM8K-format file correctly.

The runs need the lm-eval interpreter (.venv-lmeval, made by `make install`);
`make test` sets INFERX_REQUIRE_LMEVAL=1, so there its absence is a failure.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from gsm8k_fixture import QUESTIONS, RIGHT, answers, require_lmeval_python, write_gsm8k
from inferx_lmeval import hooks
from inferx_lmeval.evaluator import LmEvalEvaluator
from inferx_lmeval.records import records_from_output
from inferx_lmeval.tasks import task_spec

from inferx_core import EvalTarget, EvalTask, Evaluator, evaluators, get_plugin_manager
from inferx_core.testing import AnswerServer


def _manager():
    return get_plugin_manager(
        load_entry_points=False,
        builtins=False,
        extra_plugins=[("lmeval", hooks)],
        env={"INFERX_STRICT_PLUGINS": "1"},
    )


def test_registers_the_lm_eval_evaluator() -> None:
    found = evaluators(_manager())
    assert list(found) == ["lm-eval"]
    owner, info = found["lm-eval"]
    assert owner == "lmeval"
    assert isinstance(info.factory({}), Evaluator)


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ValueError, match="num_concurent"):
        LmEvalEvaluator({"num_concurent": 4})


def test_task_specs(tmp_path: Path) -> None:
    assert task_spec("gsm8k") == {"kind": "name", "name": "gsm8k"}
    spec = task_spec(str(write_gsm8k(tmp_path / "my-gsm8k.jsonl")))
    assert spec["kind"] == "inline" and spec["name"] == "my_gsm8k_jsonl"
    assert spec["config"]["dataset_kwargs"]["data_files"]["test"].endswith("my-gsm8k.jsonl")
    (tmp_path / "t.yaml").write_text("task: t\n")
    assert task_spec(str(tmp_path / "t.yaml"))["kind"] == "yaml"
    with pytest.raises(ValueError, match="not found"):
        task_spec(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: .*'answer'"):
        task_spec(str(bad))


def test_requests_go_to_the_servers_route() -> None:
    evaluator = LmEvalEvaluator({"num_concurrent": 2, "model_args": {"max_length": 4096}})
    task = EvalTask(task="gsm8k", limit=5)
    completions = evaluator.request(EvalTarget(base_url="http://h:1/", model="m"), task, Path("w"))
    assert completions["model"] == "local-completions"
    assert completions["model_args"]["base_url"] == "http://h:1/v1/completions"
    assert completions["model_args"]["num_concurrent"] == 2
    assert completions["model_args"]["max_length"] == 4096
    assert completions["limit"] == 5 and not completions["apply_chat_template"]
    at_c64 = evaluator.request(
        EvalTarget(base_url="http://h:1", model="m"),
        task.model_copy(update={"concurrency": 64}),
        Path("w"),
    )
    assert at_c64["model_args"]["num_concurrent"] == 64  # the load point's concurrency
    chat_target = EvalTarget(base_url="http://h:1", model="m", api="chat", headers={"A": "b"})
    chat = evaluator.request(chat_target, task, Path("w"))
    assert chat["model"] == "local-chat-completions" and chat["apply_chat_template"]
    assert chat["model_args"]["base_url"] == "http://h:1/v1/chat/completions"
    assert chat["model_args"]["header"] == {"A": "b"}


def test_records_from_lm_evals_output() -> None:
    output = {
        "lm_eval_version": "0.4.13",
        "task_name": "gsm8k",
        "seconds": 3.0,
        "results": {
            "gsm8k": {
                "alias": "gsm8k",
                "exact_match,strict-match": 0.75,
                "exact_match_stderr,strict-match": 0.1,
                "exact_match,flexible-extract": 0.8,
                "exact_match_stderr,flexible-extract": None,
            }
        },
        "n-samples": {"gsm8k": {"original": 1319, "effective": 20}},
        "n-shot": {"gsm8k": 5},
        "higher_is_better": {"gsm8k": {"exact_match": True}},
    }
    head, other = records_from_output(output, evaluator="lm-eval", limit=20)
    assert head.primary and not other.primary
    assert (head.task, head.metric, head.value, head.stderr) == (
        "gsm8k",
        "exact_match,strict-match",
        0.75,
        0.1,
    )
    assert (head.samples, head.num_fewshot, head.limit) == (20, 5, 20)
    assert head.evaluator_version == "0.4.13" and head.higher_is_better
    assert other.metric == "exact_match,flexible-extract" and other.stderr is None
    with pytest.raises(RuntimeError, match="no metric"):
        records_from_output({"results": {}}, evaluator="lm-eval", limit=None)


# -- real lm-eval runs ---------------------------------------------------------
def _binomial_stderr(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / (n - 1))  # lm-eval's mean_stderr (sample variance)


@pytest.fixture(scope="module")
def lmeval_python() -> Path:
    return require_lmeval_python()


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_accuracy_equals_the_fraction_answered_right(
    lmeval_python: Path, tmp_path: Path, api: str
) -> None:
    data = write_gsm8k(tmp_path / "gsm8k_small.jsonl")
    evaluator = LmEvalEvaluator({"python": str(lmeval_python)})
    with AnswerServer(answers()) as server:
        target = EvalTarget(base_url=server.base_url, model=server.model, api=api)
        records = evaluator.evaluate(target, EvalTask(task=str(data)), tmp_path / "work")
        asked = server.requests
    assert sorted(asked) == sorted(q for q, _ in QUESTIONS)  # every sample, once, zero-shot
    head = next(r for r in records if r.primary)
    expected = RIGHT / len(QUESTIONS)
    assert head.metric == "exact_match,strict-match"
    assert head.value == expected  # exactly: 5 of 8
    assert head.stderr == pytest.approx(_binomial_stderr(expected, len(QUESTIONS)))
    assert head.samples == len(QUESTIONS) and head.num_fewshot == 0
    assert head.evaluator == "lm-eval" and head.evaluator_version == evaluator.version()
    flexible = next(r for r in records if r.metric == "exact_match,flexible-extract")
    assert flexible.value == expected
    lines = (tmp_path / "work" / "samples.jsonl").read_text().splitlines()
    samples = [json.loads(line) for line in lines]  # one per sample and filter
    strict = [s for s in samples if s["filter"] == "strict-match"]
    assert sorted(s["doc_id"] for s in strict) == list(range(len(QUESTIONS)))


def test_limit_and_a_task_yaml(lmeval_python: Path, tmp_path: Path) -> None:
    """A task YAML of the user's own (here GSM8K's config over the local file) with a limit."""
    from inferx_lmeval.tasks import gsm8k_jsonl_config

    data = write_gsm8k(tmp_path / "data.jsonl")
    config = gsm8k_jsonl_config(data, "my_math")
    (tmp_path / "tasks").mkdir()
    yaml_path = tmp_path / "tasks" / "my_math.yaml"
    yaml_path.write_text(json.dumps(config))  # JSON is YAML
    evaluator = LmEvalEvaluator({"python": str(lmeval_python), "log_samples": False})
    with AnswerServer(answers(right=3)) as server:
        target = EvalTarget(base_url=server.base_url, model=server.model)
        records = evaluator.evaluate(target, EvalTask(task=str(yaml_path), limit=4), tmp_path / "w")
    head = next(r for r in records if r.primary)
    assert head.task == "my_math"
    assert (head.value, head.samples, head.limit) == (3 / 4, 4, 4)


def test_a_failed_run_names_its_log(lmeval_python: Path, tmp_path: Path) -> None:
    evaluator = LmEvalEvaluator({"python": str(lmeval_python), "max_retries": 0})
    target = EvalTarget(base_url="http://127.0.0.1:9", model="m")  # nothing listens
    data = write_gsm8k(tmp_path / "d.jsonl")
    with pytest.raises(RuntimeError, match="lm-eval exited with code") as info:
        evaluator.evaluate(target, EvalTask(task=str(data), limit=1), tmp_path / "w")
    assert str(tmp_path / "w" / "lm-eval.log") in str(info.value)
