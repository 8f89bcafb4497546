"""``inferx eval``: accuracy of a running server, through an evaluator plugin (lm-eval)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferx_core.evals.model import AccuracySection

ACCURACY_FILE = "accuracy.json"
WORK_DIR = "evals"


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def register_command(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="measure the accuracy of a running server (lm-eval tasks, local task files)",
        description="Run accuracy tasks against an OpenAI-compatible server through an "
        "evaluator plugin and write OUTPUT/accuracy.json. A task is a name the evaluator "
        "knows (gsm8k) or a local file (a task YAML, or a JSONL in GSM8K's question/answer "
        "format).",
    )
    p.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000")
    p.add_argument("--task", action="append", required=True, help="task name or file; repeatable")
    p.add_argument("--model", help="served model name (default: first of /v1/models)")
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    p.add_argument("--evaluator", default="lm-eval", help="evaluator name (default lm-eval)")
    p.add_argument(
        "--evaluator-opt",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="evaluator option, e.g. num_concurrent=16; repeatable",
    )
    p.add_argument("--limit", type=int, help="at most this many samples a task")
    p.add_argument("--num-fewshot", type=int, help="few-shot examples (default: the task's)")
    p.add_argument(
        "--threshold",
        action="append",
        default=[],
        metavar="X|TASK=X",
        help="least accuracy of a task's headline metric (X: every task); repeatable",
    )
    p.add_argument(
        "--require-accuracy",
        action="store_true",
        help="exit 1 also when a task is under its threshold (a task that could not be "
        "evaluated always exits 1)",
    )
    p.add_argument("--output", required=True, help="folder for accuracy.json and raw outputs")
    p.add_argument("--json", action="store_true", help="print accuracy.json")
    p.set_defaults(handler=cmd_eval)


def thresholds_of(values: list[str], tasks: list[str]) -> dict[str, float]:
    """``--threshold`` values: ``X`` for every task, ``TASK=X`` for one (which wins)."""
    out: dict[str, float] = {}
    for value in values:
        task, sep, number = value.rpartition("=")
        try:
            level = float(number)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--threshold {value!r}: not a number") from None
        out.update({task: level} if sep else {t: level for t in tasks if t not in out})
    return out


def _option_value(text: str) -> Any:
    import json

    try:
        return json.loads(text)  # numbers, booleans, lists; anything else stays a string
    except ValueError:
        return text


def render_accuracy(section: AccuracySection, title: str) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from inferx_core.sdk.redact import redact_text

    table = Table(title=Text(redact_text(title)))  # a URL's credentials; data, not markup
    for col in ("task", "metric", "accuracy", "± stderr", "samples", "threshold", "status"):
        table.add_column(col, justify="right" if col in ("accuracy", "± stderr") else "left")
    styles = {"passed": "green", "below_threshold": "red", "error": "red"}
    for task in section.tasks:
        table.add_row(
            Text(task.task),
            task.metric or "-",
            "-" if task.value is None else f"{task.value:.4f}",
            "-" if task.stderr is None else f"{task.stderr:.4f}",
            "-" if task.samples is None else str(task.samples),
            "-" if task.threshold is None else f"{task.threshold:g}",
            "evaluation failed" if task.status == "error" else task.status,
            style=styles.get(task.status),
        )
    Console(soft_wrap=True).print(table)


def print_eval_failures(section: AccuracySection) -> None:
    """Each task that could not be evaluated, with its whole error, below the table
    (a table cell would squeeze a harness's log into one line)."""
    for task in section.failed_tasks:
        sys.stderr.write(f"evaluation of {task.task} failed: {task.error or 'no reason given'}\n")
    if section.failed_tasks:
        sys.stderr.write(
            "the evaluation itself failed (infrastructure_success: false), which is not a "
            "low score; fix the cause above and run it again\n"
        )


def eval_exit_code(section: AccuracySection, require_accuracy: bool) -> int:
    """1 when the evaluation failed, or under ``--require-accuracy`` a task is under its
    threshold; else 0 (bad input is 2, before any task runs)."""
    if not section.infrastructure_success:
        return 1
    return 1 if require_accuracy and not section.ok else 0


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from inferx_core._version import __version__
    from inferx_core.evals.model import EvalReport
    from inferx_core.evals.registry import get_evaluator
    from inferx_core.evals.run import evaluate_tasks
    from inferx_core.pipeline.point.requests import discover_model
    from inferx_core.results.files import write_json_atomic
    from inferx_core.sdk.evaluator import EvalTarget, EvalTask
    from inferx_core.sdk.manager import get_plugin_manager

    output = Path(args.output)
    model = args.model or discover_model(args.base_url)
    options = {key: _option_value(value) for key, value in args.evaluator_opt}
    evaluator = get_evaluator(get_plugin_manager(), args.evaluator, options)
    target = EvalTarget(base_url=args.base_url, model=model, api=args.api)
    tasks = [EvalTask(task=t, limit=args.limit, num_fewshot=args.num_fewshot) for t in args.task]
    thresholds = thresholds_of(args.threshold, args.task)
    workdir = output / WORK_DIR
    section = evaluate_tasks(evaluator, args.evaluator, target, tasks, thresholds, workdir)
    report = EvalReport(
        inferx_version=__version__, base_url=args.base_url, model=model, accuracy=section
    )
    path = write_json_atomic(output / ACCURACY_FILE, report.model_dump(mode="json"))
    if args.json:
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    else:
        render_accuracy(section, f"inferx eval: {model} at {args.base_url}")
        print(f"accuracy: {path} (status {section.status})")
    print_eval_failures(section)
    return eval_exit_code(section, args.require_accuracy)
