"""Runs one lm-eval task; executed as a script by the lm-eval interpreter, never imported.

``python _worker.py REQUEST.json OUTPUT.json``: the request names the task
(a name, a task YAML, or an inline config), the lm-eval API model and its
arguments; the output holds lm-eval's results, sample counts, few-shot
counts, metric directions and version, as plain JSON. Only the standard
library and lm_eval are used, so any interpreter with lm-eval installed can
run it (InferX's own packages need not be there); ``_answers`` beside it is
imported from this folder.

lm-eval's API model is subclassed so that a reasoning model's answer, not its
thinking, is scored (``_answers``; the request's ``answer`` says whether and
with which tags); what that reading saw goes into the output as ``answers``.
"""

from __future__ import annotations

import json
import math
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any


def _plain(value: Any) -> Any:
    """numpy scalars to floats, NaN and lm-eval's "N/A" stderr to None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, bool, int)) or value is None:
        return None if value == "N/A" else value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return number if math.isfinite(number) else None


def _load_task(spec: dict[str, Any]) -> tuple[Any, Any]:
    """(the task argument for simple_evaluate, the TaskManager to load it with)."""
    from lm_eval.tasks import TaskManager

    if spec["kind"] == "yaml":
        from lm_eval.tasks._yaml_loader import load_yaml

        path = Path(spec["path"])
        name = load_yaml(path, resolve_func=False, recursive=True)["task"]
        return name, TaskManager(include_path=str(path.parent))
    if spec["kind"] == "inline":
        return spec["config"], TaskManager()
    return spec["name"], TaskManager()


def _answer_only_model(name: str, answer: dict[str, Any]) -> tuple[str, Any]:
    """(the registered name of ``name``'s answer-only subclass, its AnswerCounts)."""
    from _answers import DEFAULT_THINK_TAGS, AnswerCounts, answer_of, reply_messages
    from lm_eval.api.registry import get_model, register_model

    tags = tuple(answer.get("think_tags") or DEFAULT_THINK_TAGS)
    strip = bool(answer.get("strip_thinking", True))
    counts = AnswerCounts()
    base = get_model(name)

    class AnswerOnly(base):  # type: ignore[misc, valid-type]
        def parse_generations(self, outputs: Any, **kwargs: Any) -> list[str | None]:
            texts = super().parse_generations(outputs, **kwargs)
            for reply in reply_messages(outputs):
                counts.see(reply, tags)
            return [answer_of(t, tags) for t in texts] if strip else texts

    registered = f"inferx-answer-only-{name}"
    register_model(registered)(AnswerOnly)
    return registered, counts


_SAMPLE_KEYS = ("doc_id", "filter", "target", "filtered_resps", "resps")


def _write_samples(results: dict[str, Any], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for task, rows in (results.get("samples") or {}).items():
            for row in rows:
                keep = {k: row.get(k) for k in _SAMPLE_KEYS}
                handle.write(json.dumps({"task": task, **keep}, default=str) + "\n")


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    started = time.monotonic()
    from lm_eval import simple_evaluate

    task, manager = _load_task(request["task"])
    model, counts = _answer_only_model(request["model"], request.get("answer") or {})
    results = simple_evaluate(
        model=model,
        model_args=request["model_args"],
        tasks=[task],
        task_manager=manager,
        limit=request.get("limit"),
        num_fewshot=request.get("num_fewshot"),
        apply_chat_template=request.get("apply_chat_template", False),
        random_seed=request.get("seed", 0),
        log_samples=bool(request.get("samples_path")),
        bootstrap_iters=request.get("bootstrap_iters", 100000),
    )
    if results is None:
        raise SystemExit("lm-eval returned no results")
    if request.get("samples_path"):
        _write_samples(results, Path(request["samples_path"]))
    out = {
        "lm_eval_version": metadata.version("lm_eval"),
        "task_name": task if isinstance(task, str) else task["task"],
        "seconds": round(time.monotonic() - started, 3),
        "answers": counts.as_dict(),
    }
    for key in ("results", "groups", "n-samples", "n-shot", "higher_is_better", "versions"):
        out[key] = _plain(results.get(key) or {})
    Path(argv[2]).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
