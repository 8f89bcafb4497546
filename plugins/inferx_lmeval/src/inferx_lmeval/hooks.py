"""lm-eval's answer to the InferX hooks: the entry point (``[project.entry-points.inferx]``).

Only the hook implementation lives here; the evaluator it registers is
:mod:`inferx_lmeval.evaluator`. Nothing imports this module back.
"""

from __future__ import annotations

from inferx_core import EvaluatorInfo, hookimpl
from inferx_lmeval import evaluator


@hookimpl
def inferx_evaluators() -> list[EvaluatorInfo]:
    return [evaluator.evaluator_info()]
