"""``evals:`` in a run config: accuracy evals on the same server after chosen load points.

::

    evals:
      tasks: [gsm8k, evals/my_gsm8k.jsonl]
      at: [max, median]        # or load levels: [8, 64]
      limit: 200
      thresholds: {gsm8k: 0.90}

Each task runs once per chosen load point, right after that server's load
points, and its accuracy is recorded in that point's result.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from inferx_core.config.base import StrictModel

AtChoice = Literal["max", "median", "min"] | float


class EvalsConfig(StrictModel):
    """Which accuracy evals to run, where, and the accuracy each task must reach."""

    tasks: list[str] = Field(
        min_length=1, description="Task names (gsm8k) or local files (task YAML, GSM8K JSONL)"
    )
    evaluator: str = Field(default="lm-eval", description="Evaluator name (see `inferx plugins`)")
    at: list[AtChoice] = Field(
        default_factory=lambda: list[AtChoice](["max"]),
        description="Load points to evaluate at: max, median, min of the levels, or load "
        "levels (concurrency, or request rate in open loop)",
    )
    limit: int | None = Field(default=None, ge=1, description="At most this many samples a task")
    num_fewshot: int | None = Field(default=None, ge=0, description="None: the task's default")
    thresholds: dict[str, float] = Field(
        default_factory=dict, description="Task -> the least accuracy of its headline metric"
    )
    api: Literal["completions", "chat"] | None = Field(
        default=None, description="None: the workload's api"
    )
    options: dict[str, Any] = Field(default_factory=dict, description="Evaluator options")

    @model_validator(mode="after")
    def _consistent(self) -> EvalsConfig:
        unknown = sorted(set(self.thresholds) - set(self.tasks))
        if unknown:
            raise ValueError(f"thresholds for tasks not in 'tasks': {', '.join(unknown)}")
        for level in self.at:
            if not isinstance(level, str) and level <= 0:
                raise ValueError(f"'at' load levels must be > 0, got {level}")
        return self
