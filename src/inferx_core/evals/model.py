"""The accuracy section of a point result, and the file ``inferx eval`` writes.

A task's ``status``: ``passed`` (its headline figure reached the threshold),
``below_threshold``, ``unchecked`` (no threshold given) or ``error`` (the
evaluator failed; ``error`` says why). The section's status is the worst of
its tasks (error, then below_threshold, then passed, then unchecked).

``infrastructure_success`` (InferenceX's name) keeps an evaluation that did
not happen apart from a low score: false when a task could not be evaluated
(the harness missing, crashed, or scored nothing), whatever the other tasks
scored; a score under its threshold is a measured score, and leaves it true.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from inferx_core.sdk.evaluator import AccuracyRecord

AccuracyStatus = Literal["passed", "below_threshold", "unchecked", "error"]
_SEVERITY: dict[str, int] = {"unchecked": 0, "passed": 1, "below_threshold": 2, "error": 3}

__all__ = ["AccuracySection", "AccuracyStatus", "EvalReport", "TaskAccuracy", "worst_status"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskAccuracy(_Section):
    """One task's outcome: its headline figure, the threshold and every record."""

    task: str
    status: AccuracyStatus
    metric: str | None = None
    value: float | None = None
    stderr: float | None = None
    samples: int | None = None
    threshold: float | None = None
    error: str | None = None
    records: list[AccuracyRecord] = Field(default_factory=list)

    @property
    def headline(self) -> AccuracyRecord | None:
        return next((r for r in self.records if r.primary), None)


class AccuracySection(_Section):
    """Accuracy measured on the point's server right after the load points."""

    status: AccuracyStatus
    evaluator: str
    evaluator_version: str | None = None
    api: str | None = None
    date: str | None = None
    seconds: float | None = None
    tasks: list[TaskAccuracy] = Field(default_factory=list)
    # False: the evaluation itself failed (not a low score); derived from the tasks when
    # not given, so results written before the field read as they were
    infrastructure_success: bool = True

    @model_validator(mode="before")
    @classmethod
    def _derive_infrastructure(cls, data: Any) -> Any:
        if isinstance(data, dict) and "infrastructure_success" not in data:
            failed = any(_status_of(t) == "error" for t in data.get("tasks") or ())
            data = {**data, "infrastructure_success": not failed}
        return data

    @property
    def failed_tasks(self) -> list[TaskAccuracy]:
        """The tasks that could not be evaluated (each with its ``error``)."""
        return [t for t in self.tasks if t.status == "error"]

    @property
    def ok(self) -> bool:
        """False when a task is under its threshold or could not be evaluated."""
        return self.status in ("passed", "unchecked")

    def task(self, name: str) -> TaskAccuracy | None:
        return next((t for t in self.tasks if t.task == name), None)


class EvalReport(_Section):
    """What ``inferx eval`` writes (``accuracy.json``): one server, its accuracy."""

    kind: Literal["inferx-eval"] = "inferx-eval"
    inferx_version: str
    base_url: str
    model: str
    accuracy: AccuracySection


def _status_of(task: Any) -> Any:
    if isinstance(task, TaskAccuracy):
        return task.status
    return task.get("status") if isinstance(task, dict) else None


def worst_status(statuses: list[AccuracyStatus]) -> AccuracyStatus:
    """The section's status: the most severe of its tasks' (unchecked when none)."""
    return max(statuses, key=_SEVERITY.__getitem__, default="unchecked")
