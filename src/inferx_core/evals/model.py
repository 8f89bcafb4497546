"""The accuracy section of a point result, and the file ``inferx eval`` writes.

A task's ``status``: ``passed`` (its headline figure reached the threshold),
``below_threshold``, ``unchecked`` (no threshold given) or ``error`` (the
evaluator failed; ``error`` says why). The section's status is the worst of
its tasks (error, then below_threshold, then passed, then unchecked).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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


def worst_status(statuses: list[AccuracyStatus]) -> AccuracyStatus:
    """The section's status: the most severe of its tasks' (unchecked when none)."""
    return max(statuses, key=_SEVERITY.__getitem__, default="unchecked")
