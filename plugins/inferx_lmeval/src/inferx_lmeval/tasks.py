"""What the worker loads for a task: an lm-eval task name, a task YAML, or a GSM8K JSONL.

No hub is needed for a local file: a JSONL in GSM8K's format (``question``,
and ``answer`` ending in ``#### <number>``) becomes lm-eval's own GSM8K task
config (the same prompt, stop strings, metric and filters) over that file; a
task YAML is loaded by lm-eval with its folder on the include path (so its
``include:`` and ``!function`` references resolve).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["GSM8K_ANSWER", "TaskSpec", "gsm8k_jsonl_config", "task_spec"]

# The final-answer marker of GSM8K's reference solutions.
GSM8K_ANSWER = re.compile(r"####\s*(-?[0-9.,]+)\s*$")
TaskSpec = dict[str, Any]


def _check_gsm8k_jsonl(path: Path) -> int:
    """Samples in the file; a line that is not a GSM8K record is an error naming it."""
    count = 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not (
                isinstance(row, dict)
                and isinstance(row.get("question"), str)
                and isinstance(row.get("answer"), str)
            ):
                raise ValueError(
                    f"{path}:{number}: a GSM8K-format JSONL line needs string 'question' and "
                    "'answer' fields (the answer ending in '#### <number>')"
                )
            count += 1
    if not count:
        raise ValueError(f"{path}: no samples")
    return count


def gsm8k_jsonl_config(path: Path, name: str) -> dict[str, Any]:
    """lm-eval's gsm8k task (v3 config) over a local JSONL file instead of the hub dataset."""
    return {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(path.resolve())}},
        "output_type": "generate_until",
        "test_split": "test",
        "fewshot_split": "test",
        "doc_to_text": "Question: {{question}}\nAnswer:",
        "doc_to_target": "{{answer}}",
        "metric_list": [
            {
                "metric": "exact_match",
                "aggregation": "mean",
                "higher_is_better": True,
                "ignore_case": True,
                "ignore_punctuation": False,
                "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"],
            }
        ],
        "generation_kwargs": {
            "until": ["Question:", "</s>", "<|im_end|>"],
            "do_sample": False,
            "temperature": 0.0,
        },
        "repeats": 1,
        "num_fewshot": 0,
        "filter_list": [
            {
                "name": "strict-match",
                "filter": [
                    {"function": "regex", "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                    {"function": "take_first"},
                ],
            },
            {
                "name": "flexible-extract",
                "filter": [
                    {
                        "function": "regex",
                        "group_select": -1,
                        "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)",
                    },
                    {"function": "take_first"},
                ],
            },
        ],
        "metadata": {"version": 3.0, "source": str(path)},
    }


def task_spec(task: str) -> TaskSpec:
    """How the worker loads ``task``: a ``.jsonl`` or ``.yaml`` file that exists, else a name."""
    path = Path(task).expanduser()
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".yaml", ".yml"):
        if not path.is_file():
            raise ValueError(f"task file not found: {path}")
        if suffix == ".jsonl":
            _check_gsm8k_jsonl(path)
            name = re.sub(r"\W+", "_", path.stem).strip("_") or "local"
            name = f"{name}_jsonl"
            return {"kind": "inline", "name": name, "config": gsm8k_jsonl_config(path, name)}
        return {"kind": "yaml", "path": str(path.resolve())}
    return {"kind": "name", "name": task}
