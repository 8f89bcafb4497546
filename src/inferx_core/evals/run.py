"""Run tasks through an evaluator and check each headline figure against its threshold."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from inferx_core.config.evals import EvalsConfig
from inferx_core.evals.model import AccuracySection, TaskAccuracy, worst_status
from inferx_core.sdk.evaluator import AccuracyRecord, EvalTarget, EvalTask, Evaluator
from inferx_core.sdk.log import get_logger

__all__ = ["check_task", "evaluate_tasks", "task_slug", "tasks_of"]

log = get_logger("inferx.evals")


def tasks_of(config: EvalsConfig) -> list[EvalTask]:
    """The config's tasks as the evaluator receives them."""
    return [
        EvalTask(
            task=name, limit=config.limit, num_fewshot=config.num_fewshot, options=config.options
        )
        for name in config.tasks
    ]


def task_slug(task: str) -> str:
    """A file-name-safe name for a task (a task may be a path)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(task).name if "/" in task else task) or "task"


def check_task(
    task: str, records: Sequence[AccuracyRecord], threshold: float | None
) -> TaskAccuracy:
    """The task's headline record (the first marked primary, else the first) against
    ``threshold``: passed when it reaches it (or, for a lower-is-better metric, stays
    at or under it)."""
    if not records:
        return TaskAccuracy(task=task, status="error", threshold=threshold, error="no records")
    head = next((r for r in records if r.primary), records[0])
    status: Literal["passed", "below_threshold", "unchecked"]
    if threshold is None:
        status = "unchecked"
    elif head.higher_is_better:
        status = "passed" if head.value >= threshold else "below_threshold"
    else:
        status = "passed" if head.value <= threshold else "below_threshold"
    return TaskAccuracy(
        task=task,
        status=status,
        metric=head.metric,
        value=head.value,
        stderr=head.stderr,
        samples=head.samples,
        threshold=threshold,
        records=list(records),
    )


def _one_task(
    evaluator: Evaluator, target: EvalTarget, task: EvalTask, threshold: float | None, workdir: Path
) -> TaskAccuracy:
    try:
        records = evaluator.evaluate(target, task, workdir / task_slug(task.task))
    except Exception as exc:  # one task failing is recorded; the others still run
        log.error("eval failed", task=task.task, error=f"{type(exc).__name__}: {exc}")
        return TaskAccuracy(
            task=task.task,
            status="error",
            threshold=threshold,
            error=f"{type(exc).__name__}: {exc}",
        )
    outcome = check_task(task.task, records, threshold)
    log.info(
        "eval done",
        task=task.task,
        metric=outcome.metric,
        value=outcome.value,
        stderr=outcome.stderr,
        status=outcome.status,
    )
    return outcome


def evaluate_tasks(
    evaluator: Evaluator,
    evaluator_name: str,
    target: EvalTarget,
    tasks: Sequence[EvalTask],
    thresholds: Mapping[str, float],
    workdir: Path,
) -> AccuracySection:
    """Every task against ``target``, one after another; failures become ``error`` tasks."""
    started = time.monotonic()
    date = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    try:
        version = evaluator.version()
    except Exception as exc:  # a version is provenance, never a reason to fail
        log.warning("evaluator version unknown", error=str(exc))
        version = None
    outcomes = [_one_task(evaluator, target, t, thresholds.get(t.task), workdir) for t in tasks]
    return AccuracySection(
        status=worst_status([o.status for o in outcomes]),
        evaluator=evaluator_name,
        evaluator_version=version,
        api=target.api,
        date=date,
        seconds=round(time.monotonic() - started, 3),
        tasks=outcomes,
    )
