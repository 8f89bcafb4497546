"""Evaluators: accuracy measured against a running server, beside its throughput.

Plugins register evaluators by name through the ``inferx_evaluators`` hook
(inferx-lmeval registers ``lm-eval``). An evaluator runs one task (a task
name it knows, or a local file) against an OpenAI-compatible server that
InferX launched, or any ``--base-url``, and answers with typed
:class:`AccuracyRecord` values. The engine never runs in InferX's process and
neither need the evaluator's heavy dependencies: an evaluator may run its
harness in a subprocess or another virtual environment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AccuracyRecord", "EvalTarget", "EvalTask", "Evaluator", "EvaluatorInfo"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EvalTarget(_Frozen):
    """The server an evaluator talks to."""

    base_url: str = Field(pattern=r"^https?://", description="e.g. http://127.0.0.1:8000")
    model: str = Field(min_length=1, description="The served model name")
    api: Literal["completions", "chat"] = "completions"
    headers: dict[str, str] = Field(default_factory=dict, description="e.g. Authorization")
    tokenizer: str | None = Field(
        default=None, description="A local tokenizer, for tasks that need one (loglikelihood)"
    )


class EvalTask(_Frozen):
    """One task to run: a name the evaluator knows, or a local file."""

    task: str = Field(min_length=1, description="gsm8k, or a task YAML / GSM8K-style JSONL path")
    limit: int | None = Field(default=None, ge=1, description="At most this many samples")
    num_fewshot: int | None = Field(default=None, ge=0, description="None: the task's default")
    concurrency: int | None = Field(
        default=None, ge=1, description="Requests in flight (the load point's); None: default"
    )
    seed: int = 1234
    options: dict[str, Any] = Field(default_factory=dict, description="Evaluator-specific")


class AccuracyRecord(_Frozen):
    """One accuracy figure of one task, with what is needed to trust and compare it."""

    task: str
    metric: str = Field(description="e.g. exact_match,strict-match (lm-eval's metric,filter)")
    value: float
    stderr: float | None = Field(default=None, ge=0, description="Standard error of the value")
    samples: int = Field(ge=0, description="Samples scored")
    num_fewshot: int | None = None
    limit: int | None = None
    higher_is_better: bool = True
    primary: bool = Field(
        default=True, description="The task's headline figure (thresholds apply to it)"
    )
    evaluator: str = Field(description="The evaluator's name, e.g. lm-eval")
    evaluator_version: str | None = Field(default=None, description="e.g. lm-eval's version")
    seconds: float | None = Field(default=None, ge=0, description="Wall time of the task")


@runtime_checkable
class Evaluator(Protocol):
    """Runs one task against a server and says how accurate the answers were."""

    def version(self) -> str | None:
        """The version of the harness behind it (recorded with every figure)."""

    def evaluate(self, target: EvalTarget, task: EvalTask, workdir: Path) -> list[AccuracyRecord]:
        """Run ``task`` against ``target``; raw outputs may go under ``workdir``.

        Returns one record per metric, the task's headline figure marked
        ``primary``. Raises on failure (the caller records the reason).
        """


@dataclass(frozen=True, slots=True)
class EvaluatorInfo:
    """A named evaluator factory (``inferx eval --evaluator NAME``, ``evaluator:`` in evals)."""

    name: str
    description: str
    factory: Callable[[Mapping[str, Any]], Evaluator]
