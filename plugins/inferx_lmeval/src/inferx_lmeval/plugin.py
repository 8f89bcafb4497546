"""The plugin module named by the ``inferx`` entry point: registers the ``lm-eval`` evaluator."""

from __future__ import annotations

from inferx_core import EvaluatorInfo, hookimpl
from inferx_lmeval.evaluator import EVALUATOR_NAME, LmEvalEvaluator


@hookimpl
def inferx_evaluators() -> list[EvaluatorInfo]:
    return [
        EvaluatorInfo(
            name=EVALUATOR_NAME,
            description="EleutherAI lm-evaluation-harness (local-completions / "
            "local-chat-completions against the server); task names or local YAML/JSONL files",
            factory=LmEvalEvaluator,
        )
    ]
