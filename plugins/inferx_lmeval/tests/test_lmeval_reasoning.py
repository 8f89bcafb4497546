"""lm-eval scores a reasoning model's answer, not its thinking (issue 30).

The scripted server thinks before each answer; the thinking holds a wrong
``#### 999`` first, so GSM8K's strict-match (the first ``#### N`` of the reply)
scores 0 wherever the thinking is read. Read right, the accuracy stays exactly
the fraction answered right (5 of 8), whether the server splits the thinking
off (``reasoning_content``, ``reasoning``) or leaves it inline as
``<think>...</think>`` (chat without a reasoning parser; completions always).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gsm8k_fixture import QUESTIONS, RIGHT, answers, require_lmeval_python, write_gsm8k
from inferx_lmeval._answers import AnswerCounts, answer_of
from inferx_lmeval.evaluator import LmEvalEvaluator

from inferx_core import AccuracyRecord, EvalTarget, EvalTask
from inferx_core.testing import AnswerServer

THINKING = "First guess: #### 999. That is wrong, let me count again."


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<think>a #### 9</think>\n #### 4", "#### 4"),
        ("a #### 9</think> #### 4", "#### 4"),  # the template opened the block in the prompt
        ("<think>x</think>y<think>z</think> #### 4", "#### 4"),
        ("  <think>never closed #### 9", ""),  # cut by max_gen_toks: no answer
        (" #### 4", " #### 4"),  # no thinking: untouched
        ("", ""),
        (None, ""),  # no content: the answer never came
    ],
)
def test_the_answer_of_a_reply(text: str | None, answer: str) -> None:
    assert answer_of(text) == answer


def test_other_tags() -> None:
    tags = ("<reasoning>", "</reasoning>")
    assert answer_of("<reasoning>r</reasoning>a", tags) == "a"
    assert answer_of("<think>r</think>a", tags) == "<think>r</think>a"


def test_counts() -> None:
    counts = AnswerCounts()
    counts.see({"content": "#### 4", "reasoning_content": "hm"})
    counts.see({"content": None, "reasoning": "hm"})
    counts.see({"text": "<think>hm</think>#### 4"})
    counts.see({"text": "<think>hm"})
    counts.see({"content": "#### 4"})
    assert counts.as_dict() == {
        "replies": 5,
        "with_reasoning_field": 2,
        "reasoning_fields": {"reasoning_content": 1, "reasoning": 1},
        "think_tags_cut": 2,
        "no_answer": 2,
    }


def test_the_options_reach_the_worker() -> None:
    target = EvalTarget(base_url="http://h:1", model="m")
    request = LmEvalEvaluator({}).request(target, EvalTask(task="gsm8k"), Path("w"))
    assert request["answer"] == {"strip_thinking": True, "think_tags": ["<think>", "</think>"]}
    off = LmEvalEvaluator({"strip_thinking": False, "think_tags": ["<r>", "</r>"]})
    assert off.request(target, EvalTask(task="gsm8k"), Path("w"))["answer"] == {
        "strip_thinking": False,
        "think_tags": ["<r>", "</r>"],
    }
    with pytest.raises(ValueError, match="non-empty"):
        LmEvalEvaluator({"think_tags": ["<think>", ""]})


# -- real lm-eval runs ---------------------------------------------------------
@pytest.fixture(scope="module")
def lmeval_python() -> Path:
    return require_lmeval_python()


def _evaluate(
    lmeval_python: Path, work: Path, api: str, options: dict | None = None, **server: object
) -> tuple[dict[str, AccuracyRecord], dict]:
    data = write_gsm8k(work / "gsm8k_small.jsonl")
    evaluator = LmEvalEvaluator({"python": str(lmeval_python), **(options or {})})
    with AnswerServer(answers(), thinking=THINKING, **server) as scripted:  # type: ignore[arg-type]
        target = EvalTarget(base_url=scripted.base_url, model=scripted.model, api=api)
        records = evaluator.evaluate(target, EvalTask(task=str(data)), work / "w")
    output = json.loads((work / "w" / "lm-eval-output.json").read_text())
    return {r.metric: r for r in records}, output["answers"]


@pytest.mark.parametrize(
    ("api", "field"),
    [
        ("chat", "reasoning_content"),
        ("chat", "reasoning"),
        ("chat", "content"),  # no reasoning parser: <think>...</think> in the content
        ("completions", "content"),  # the completions API never splits it
    ],
)
def test_the_answer_is_scored_not_the_thinking(
    lmeval_python: Path, tmp_path: Path, api: str, field: str
) -> None:
    records, seen = _evaluate(lmeval_python, tmp_path, api, reasoning_field=field)
    assert records["exact_match,strict-match"].value == RIGHT / len(QUESTIONS)
    assert records["exact_match,flexible-extract"].value == RIGHT / len(QUESTIONS)
    assert seen["replies"] == len(QUESTIONS) and seen["no_answer"] == 0
    inline = field == "content"
    assert seen["think_tags_cut"] == (len(QUESTIONS) if inline else 0)
    assert seen["reasoning_fields"] == ({} if inline else {field: len(QUESTIONS)})
    samples = (tmp_path / "w" / "samples.jsonl").read_text()
    assert "999" not in samples and "<think>" not in samples


def test_with_stripping_off_the_inline_thinking_is_scored(
    lmeval_python: Path, tmp_path: Path
) -> None:
    """The control: the trap in the thinking bites where the reply is read whole."""
    records, seen = _evaluate(
        lmeval_python, tmp_path, "completions", {"strip_thinking": False}, reasoning_field="content"
    )
    assert records["exact_match,strict-match"].value == 0.0  # #### 999, every time
    assert seen["think_tags_cut"] == len(QUESTIONS)  # still counted


def test_a_reply_that_never_leaves_its_thinking_scores_as_no_answer(
    lmeval_python: Path, tmp_path: Path
) -> None:
    records, seen = _evaluate(
        lmeval_python, tmp_path, "chat", reasoning_field="content", answer_after_thinking=False
    )
    assert records["exact_match,strict-match"].value == 0.0
    assert records["exact_match,flexible-extract"].value == 0.0
    assert seen["no_answer"] == len(QUESTIONS)
