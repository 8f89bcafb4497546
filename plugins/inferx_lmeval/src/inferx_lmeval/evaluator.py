"""The ``lm-eval`` evaluator: one task per lm-eval subprocess, its results as AccuracyRecords.

Which interpreter runs lm-eval: the ``python`` option, else
``$INFERX_LMEVAL_PYTHON``, else this interpreter when it can import lm_eval,
else ``.venv-lmeval/bin/python`` (in the working folder, then in the
checkout this plugin lives in), which ``make install`` creates.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from inferx_core import AccuracyRecord, EvalTarget, EvalTask, EvaluatorInfo
from inferx_lmeval.records import records_from_output
from inferx_lmeval.tasks import task_spec

EVALUATOR_NAME = "lm-eval"
PYTHON_ENV = "INFERX_LMEVAL_PYTHON"
VENV_NAME = ".venv-lmeval"
WORKER = Path(__file__).with_name("_worker.py")
LOG_TAIL_CHARS = 4000

__all__ = ["EVALUATOR_NAME", "LmEvalEvaluator", "LmEvalOptions", "find_lmeval_python"]


class LmEvalOptions(BaseModel):
    """Evaluator options (``evals.options``, ``--evaluator-opt KEY=VALUE``)."""

    model_config = ConfigDict(extra="forbid")

    python: str | None = Field(default=None, description="Interpreter with lm-eval installed")
    num_concurrent: int = Field(
        default=8, ge=1, description="Requests in flight when the task gives no concurrency"
    )
    max_gen_toks: int = Field(default=256, ge=1)
    max_length: int | None = Field(default=None, ge=2, description="Context length lm-eval assumes")
    tokenizer_backend: Literal["none", "remote", "huggingface", "tiktoken"] = Field(
        default="none",
        description="none: prompts sent as text (generation tasks); remote: the server's "
        "/tokenize (loglikelihood tasks on vLLM)",
    )
    request_timeout_s: int = Field(default=300, ge=1)
    max_retries: int = Field(default=3, ge=0)
    timeout_s: float = Field(default=6 * 3600, gt=0, description="Whole task")
    log_samples: bool = Field(default=True, description="Write samples.jsonl (replies, targets)")
    bootstrap_iters: int = Field(default=100000, ge=0)
    strip_thinking: bool = Field(
        default=True,
        description="Score a reasoning model's answer only: text up to the last closing think "
        "tag is cut, a reply that never closes its thinking scores as empty (a reasoning "
        "field the server splits off is never scored); false: the reply as lm-eval reads it",
    )
    think_tags: tuple[str, str] = Field(
        default=("<think>", "</think>"), description="The opening and closing thinking tags"
    )
    model_args: dict[str, Any] = Field(default_factory=dict, description="More lm-eval args")
    env: dict[str, str] = Field(default_factory=dict, description="More environment for lm-eval")

    @field_validator("think_tags")
    @classmethod
    def _tags_not_empty(cls, tags: tuple[str, str]) -> tuple[str, str]:
        if not all(tag.strip() for tag in tags):
            raise ValueError("both think tags must be non-empty, e.g. ['<think>', '</think>']")
        return tags


def find_lmeval_python(explicit: str | None = None) -> Path | None:
    """The interpreter that runs lm-eval (see the module docstring), or None."""
    candidates: list[str | Path | None] = [explicit, os.environ.get(PYTHON_ENV)]
    if importlib.util.find_spec("lm_eval") is not None:
        candidates.append(sys.executable)
    candidates.append(Path.cwd() / VENV_NAME / "bin" / "python")
    # src/inferx_lmeval/evaluator.py -> the checkout holding plugins/inferx_lmeval
    checkout = Path(__file__).resolve().parents[4]
    candidates.append(checkout / VENV_NAME / "bin" / "python")
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate).absolute()
    return None


def missing_lmeval_message() -> str:
    return (
        "lm-eval is not installed: run `make install` (it creates .venv-lmeval), or "
        "`python3 -m venv .venv-lmeval && .venv-lmeval/bin/pip install 'lm-eval[api]'`, "
        f"or point {PYTHON_ENV} (or the evaluator option python) at a python that can "
        "`import lm_eval`"
    )


class LmEvalEvaluator:
    """lm-eval's API models against the server; each task in its own subprocess."""

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = LmEvalOptions(**dict(options or {}))  # unknown keys: ValueError
        self._version: str | None = None

    def python(self) -> Path:
        found = find_lmeval_python(self.options.python)
        if found is None:
            raise RuntimeError(missing_lmeval_message())
        return found

    def version(self) -> str | None:
        if self._version is None:
            code = "import importlib.metadata as m; print(m.version('lm_eval'))"
            out = subprocess.run(
                [str(self.python()), "-c", code], capture_output=True, text=True, timeout=60
            )
            if out.returncode != 0:
                raise RuntimeError(f"lm_eval not importable by {self.python()}: {out.stderr}")
            self._version = out.stdout.strip()
        return self._version

    def model_args(self, target: EvalTarget, task: EvalTask) -> dict[str, Any]:
        route = "/v1/chat/completions" if target.api == "chat" else "/v1/completions"
        opts = self.options
        args: dict[str, Any] = {
            "model": target.model,
            "base_url": target.base_url.rstrip("/") + route,
            "tokenizer_backend": opts.tokenizer_backend,
            "num_concurrent": task.concurrency or opts.num_concurrent,
            "max_retries": opts.max_retries,
            "timeout": opts.request_timeout_s,
            "max_gen_toks": opts.max_gen_toks,
            "seed": task.seed,
        }
        if target.tokenizer:
            args["tokenizer"] = target.tokenizer
        if opts.max_length is not None:
            args["max_length"] = opts.max_length
        if target.headers:
            args["header"] = dict(target.headers)
        return {**args, **opts.model_args, **task.options.get("model_args", {})}

    def request(self, target: EvalTarget, task: EvalTask, workdir: Path) -> dict[str, Any]:
        """What the worker runs (written to ``workdir/request.json``)."""
        chat = target.api == "chat"
        return {
            "task": task_spec(task.task),
            "model": "local-chat-completions" if chat else "local-completions",
            "model_args": self.model_args(target, task),
            "limit": task.limit,
            "num_fewshot": task.num_fewshot,
            "seed": task.seed,
            "apply_chat_template": chat,
            "bootstrap_iters": self.options.bootstrap_iters,
            "answer": {
                "strip_thinking": self.options.strip_thinking,
                "think_tags": list(self.options.think_tags),
            },
            "samples_path": str(workdir / "samples.jsonl") if self.options.log_samples else None,
        }

    def evaluate(self, target: EvalTarget, task: EvalTask, workdir: Path) -> list[AccuracyRecord]:
        workdir.mkdir(parents=True, exist_ok=True)
        request = self.request(target, task, workdir)
        request_path, output_path = workdir / "request.json", workdir / "lm-eval-output.json"
        request_path.write_text(json.dumps(request, indent=2), encoding="utf-8")
        output_path.unlink(missing_ok=True)
        log_path = workdir / "lm-eval.log"
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **self.options.env}
        argv = [str(self.python()), str(WORKER), str(request_path), str(output_path)]
        with log_path.open("w", encoding="utf-8") as log:
            proc = subprocess.run(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=self.options.timeout_s
            )
        if proc.returncode != 0 or not output_path.is_file():
            tail = log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
            code = proc.returncode
            raise RuntimeError(f"lm-eval exited with code {code}; log {log_path}:\n{tail}")
        output = json.loads(output_path.read_text(encoding="utf-8"))
        self._version = self._version or output.get("lm_eval_version")
        return records_from_output(output, evaluator=EVALUATOR_NAME, limit=task.limit)


def evaluator_info() -> EvaluatorInfo:
    """The ``lm-eval`` evaluator as hook ``inferx_evaluators`` registers it."""
    return EvaluatorInfo(
        name=EVALUATOR_NAME,
        description="EleutherAI lm-evaluation-harness (local-completions / "
        "local-chat-completions against the server); task names or local YAML/JSONL files",
        factory=LmEvalEvaluator,
    )
