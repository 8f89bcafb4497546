"""A small GSM8K-format file and the answer table that gets a known part of it right."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

QUESTIONS = [
    (f"Tom has {i} apples and buys {i + 3} more. How many now?", 2 * i + 3) for i in range(8)
]
RIGHT = 5  # the server answers the first RIGHT questions correctly


def write_gsm8k(path: Path) -> Path:
    lines = [
        json.dumps({"question": q, "answer": f"{q}\nHe has {a}.\n#### {a}"}) for q, a in QUESTIONS
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def answers(right: int = RIGHT) -> dict[str, str]:
    """Replies in GSM8K's solution format; the ones past ``right`` are off by one."""
    return {
        q: f" The total is {a}.\n#### {a}" if i < right else f" The total is {a + 1}.\n#### {a + 1}"
        for i, (q, a) in enumerate(QUESTIONS)
    }


def require_lmeval_python() -> Path:
    """The lm-eval interpreter; under INFERX_REQUIRE_LMEVAL=1 (make test, CI) its absence fails."""
    from inferx_lmeval.evaluator import find_lmeval_python, missing_lmeval_message

    found = find_lmeval_python()
    if found is None:
        if os.environ.get("INFERX_REQUIRE_LMEVAL") == "1":
            pytest.fail(missing_lmeval_message())
        pytest.skip(missing_lmeval_message())
    return found
