"""Accuracy evals of ``inferx run``: after a server's load points, on the same server.

For a config with ``evals:``, the load points ``at`` names (``max``, ``median``,
``min`` or load levels, among the points that were measured) are each evaluated
with the point's concurrency as the requests in flight; the accuracy section
goes into that point's result, which is written again. A failure to evaluate
is an ``error`` section, never a lost result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inferx_core.config.evals import EvalsConfig
from inferx_core.config.models import RunConfig
from inferx_core.evals.model import AccuracySection, TaskAccuracy
from inferx_core.evals.registry import get_evaluator
from inferx_core.evals.run import evaluate_tasks, tasks_of
from inferx_core.evals.select import chosen_levels
from inferx_core.pipeline.point.measure import PointOutcome
from inferx_core.results.files import write_result
from inferx_core.sdk.evaluator import EvalTarget, Evaluator
from inferx_core.sdk.log import get_logger
from inferx_core.sdk.manager import InferxPluginManager

__all__ = [
    "EVALS_DIR",
    "accuracy_failures",
    "evaluation_failures",
    "points_to_evaluate",
    "run_evals",
]

EVALS_DIR = "evals"
_MEASURED = ("ok", "invalid")
log = get_logger("inferx.evals")


def points_to_evaluate(evals: EvalsConfig, outcomes: Sequence[PointOutcome]) -> list[PointOutcome]:
    """The measured points (ok, or invalid: the server served, the client's timing is what
    was flagged) at the chosen load levels, the first point of each level."""
    ok = [o for o in outcomes if o.status in _MEASURED and o.result.identity.load_level is not None]
    levels = chosen_levels(
        evals.at, [o.result.identity.load_level or 0.0 for o in ok]
    )  # not None: ok
    picked: dict[float, PointOutcome] = {}
    for outcome in ok:
        level = outcome.result.identity.load_level
        if level in levels and level not in picked:
            picked[level] = outcome
    return [picked[level] for level in sorted(picked)]


def _error_section(evals: EvalsConfig, reason: str) -> AccuracySection:
    tasks = [
        TaskAccuracy(task=t, status="error", threshold=evals.thresholds.get(t), error=reason)
        for t in evals.tasks
    ]
    return AccuracySection(status="error", evaluator=evals.evaluator, tasks=tasks)


def _evaluate_one(
    evaluator: Evaluator, cfg: RunConfig, base_url: str, outcome: PointOutcome, output_dir: Path
) -> AccuracySection:
    evals = cfg.evals
    assert evals is not None
    ident = outcome.result.identity
    concurrency = ident.concurrency if ident.mode == "closed" else ident.max_concurrency
    target = EvalTarget(base_url=base_url, model=cfg.name_served, api=evals.api or cfg.workload.api)
    tasks = [t.model_copy(update={"concurrency": concurrency}) for t in tasks_of(evals)]
    workdir = output_dir / EVALS_DIR / outcome.point_id
    log.info("evaluating", point=outcome.point_id, tasks=evals.tasks, concurrency=concurrency)
    return evaluate_tasks(evaluator, evals.evaluator, target, tasks, evals.thresholds, workdir)


def run_evals(
    cfg: RunConfig,
    pm: InferxPluginManager,
    handle: Any,
    outcomes: Sequence[PointOutcome],
    output_dir: Path,
) -> list[PointOutcome]:
    """Run ``cfg.evals`` on the server behind ``handle``; the points it evaluated, updated
    in place (``outcome.result``) and rewritten on disk. No evals, or no server: nothing."""
    evals = cfg.evals
    if evals is None or handle is None:
        return []
    chosen = points_to_evaluate(evals, outcomes)
    if not chosen:
        return []
    evaluator: Evaluator | None = None
    reason = "the engine exited before the evals"
    if handle.alive():
        try:
            evaluator = get_evaluator(pm, evals.evaluator, evals.options)
        except Exception as exc:  # unknown evaluator, bad options: recorded on each point
            reason = f"{type(exc).__name__}: {exc}"
    for outcome in chosen:
        if evaluator is not None and handle.alive():
            section = _evaluate_one(evaluator, cfg, handle.base_url, outcome, output_dir)
        else:
            section = _error_section(evals, reason)
            log.error("evals not run", point=outcome.point_id, reason=reason)
        outcome.result = outcome.result.model_copy(update={"accuracy": section})
        outcome.path = write_result(output_dir, outcome.result)
    return list(chosen)


def accuracy_failures(outcomes: Sequence[PointOutcome]) -> list[str]:
    """Points under an accuracy threshold, or not evaluated (``--require-accuracy``)."""
    return [
        o.point_id for o in outcomes if o.result.accuracy is not None and not o.result.accuracy.ok
    ]


def evaluation_failures(outcomes: Sequence[PointOutcome]) -> list[str]:
    """Why each evaluation that did not happen failed (``infrastructure_success`` false),
    one message a task, whole: a failed evaluation fails the run, a low score does not."""
    return [
        f"evals of {o.point_id} failed: {task.task}: {task.error or 'no reason given'}"
        for o in outcomes
        if o.result.accuracy is not None and not o.result.accuracy.infrastructure_success
        for task in o.result.accuracy.failed_tasks
    ]
